"""evaluate() / format_table() and results-file validation with clear DataErrors."""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest

from tests.evaluation.conftest import evaluate_cli, make_detection_case
from vision.errors import DataError, InputError
from vision.evaluation.detection import COCO_STAT_KEYS, coco_ap
from vision.evaluation.evaluate import evaluate, format_table
from vision.tasks import task_names


@pytest.fixture(scope="module")
def small_case():
    return make_detection_case(seed=7, num_images=8)


def test_detection_bbox_and_segm_keys(small_case):
    split, results = small_case
    m = evaluate(split, results, "detection")
    assert all(k in m for k in COCO_STAT_KEYS) and all(f"segm_{k}" in m for k in COCO_STAT_KEYS)
    assert m["AP"] == pytest.approx(coco_ap(split, results, "bbox")["AP"])
    assert m["segm_AP"] == pytest.approx(coco_ap(split, results, "segm")["AP"])
    no_masks = [{k: v for k, v in r.items() if k != "segmentation"} for r in results]
    m2 = evaluate(split, no_masks, "detection")
    assert "segm_AP" not in m2 and m2["AP"] == pytest.approx(m["AP"])
    iv = evaluate(split, results, "detection", category_ids=[1, 2])
    assert iv["AP"] == pytest.approx(coco_ap(split, results, "bbox", category_ids=[1, 2])["AP"])


@pytest.mark.parametrize("seed", [7, 11])
def test_mask_ap_in_a_second_process_gives_the_same_figures(seed):
    split, results = make_detection_case(seed=seed, num_images=12)
    one = evaluate(split, results, "detection", processes=1)
    two = evaluate(split, results, "detection", processes=2)
    assert one == two and "segm_AP" in two
    for bad in (0, 1.5, True, "2"):
        with pytest.raises(InputError, match="processes"):
            evaluate(split, results, "detection", processes=bad)


def test_files_and_empty_results(small_case, tmp_path):
    split, results = small_case
    (tmp_path / "split.json").write_text(json.dumps(split))
    (tmp_path / "res.json").write_text(json.dumps(results))
    (tmp_path / "empty.json").write_text("[]")
    m = evaluate(tmp_path / "split.json", str(tmp_path / "res.json"), "detection")
    assert m == evaluate(split, results, "detection")
    empty = evaluate(tmp_path / "split.json", tmp_path / "empty.json", "detection")
    assert empty["AP"] == 0.0 and empty["AR100"] == 0.0 and empty["num_results"] == 0
    no_gt = {"images": [{"id": 1, "width": 4, "height": 4}], "annotations": [], "categories": [{"id": 1}]}
    assert evaluate(no_gt, [], "detection")["AP"] == -1.0  # undefined, as in COCO


BAD_RESULTS = [
    ({"not": "a list"}, None, "JSON list"),
    ([5], r"results\[0\]", "object"),
    ([{"image_id": 1, "category_id": 1, "score": 0.5}], r"results\[0\]\.bbox", "missing required key 'bbox'"),
    ([{"image_id": 1, "category_id": 1, "bbox": [1, 2, 3], "score": 0.5}], r"results\[0\]\.bbox", "4 finite"),
    ([{"image_id": 1, "category_id": 1, "bbox": [1, 2, 3, "x"], "score": 0.5}], r"results\[0\]\.bbox", "4 finite"),
    ([{"image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4], "score": "high"}], r"results\[0\]\.score", "number"),
    ([{"image_id": 1.5, "category_id": 1, "bbox": [1, 2, 3, 4], "score": 1}], r"results\[0\]\.image_id", "integer"),
    ([{"image_id": 999, "category_id": 1, "bbox": [1, 2, 3, 4], "score": 1}], r"results\[0\]\.image_id", "not in"),
    ([{"image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4], "score": 1},
      {"image_id": 1, "category_id": 42, "bbox": [1, 2, 3, 4], "score": 1}], r"results\[1\]\.category_id", "not in"),
    ([{"image_id": 1, "category_id": 1, "bbox": [1, 2, 3, 4], "score": 1, "segmentation": {"size": [1, 1],
                                                                                           "counts": "0"}}],
     r"results\[0\]\.segmentation\.size", "does not match"),
]


@pytest.mark.parametrize("results, field, message", BAD_RESULTS)
def test_bad_detection_results_name_file_index_field(small_case, tmp_path, results, field, message):
    split, _ = small_case
    path = tmp_path / "preds.json"
    path.write_text(json.dumps(results))
    with pytest.raises(DataError, match=message) as info:
        evaluate(split, path, "detection")
    assert str(path) in str(info.value)
    if field:
        assert info.value.field is not None
        assert re.search(field, str(info.value))


def test_bad_files_and_arguments(small_case, tmp_path):
    split, results = small_case
    with pytest.raises(DataError, match="file not found"):
        evaluate(split, tmp_path / "missing.json", "detection")
    (tmp_path / "broken.json").write_text("[{")
    with pytest.raises(DataError, match="invalid JSON"):
        evaluate(split, tmp_path / "broken.json", "detection")
    with pytest.raises(InputError, match="unknown task"):
        evaluate(split, results, "segmentation")
    with pytest.raises(InputError, match="unknown option"):
        evaluate(split, results, "detection", prompted_image_ids=[1])
    assert evaluate(split, results + [dict(results[0], category_id=77)], "detection",
                    extra_category_ids=[77])["num_results"] == len(results) + 1


def _tracking_case():
    from tests.evaluation.conftest import label_sequence
    from tests.evaluation.test_tracking import _results_from_labels, _video_split_from_labels
    maps = {1: label_sequence(np.random.default_rng(8), 4, 30, 40, 2)}
    split = _video_split_from_labels(maps)
    return split, _results_from_labels(split, maps)


def test_tracking_task_and_validation():
    split, results = _tracking_case()
    m = evaluate(split, results, "tracking")
    assert m["J&F"] == 1.0 and m["num_tracks"] == 2
    assert evaluate(split, [], "tracking")["J"] < 1.0
    for bad, field in (
        (dict(results[0], video_id=5), r"results\[0\]\.video_id"),
        (dict(results[0], image_id=999), r"results\[0\]\.image_id"),
        ({k: v for k, v in results[0].items() if k != "segmentation"}, r"results\[0\]\.segmentation"),
        (dict(results[0], segmentation={"size": [3, 3], "counts": "9"}), r"results\[0\]\.segmentation\.size"),
        (dict(results[0], score=None), r"results\[0\]\.score"),
    ):
        with pytest.raises(DataError) as info:
            evaluate(split, [bad], "tracking")
        assert re.search(field, str(info.value))
    broken = copy.deepcopy(split)
    del broken["images"][0]["height"]
    with pytest.raises(DataError, match=r"images\[0\]"):
        evaluate(broken, results, "tracking")


def test_format_table():
    text = format_table({"AP": 0.5, "AP50": -1.0, "num_results": 3, "per_track": [{"J": 1.0}], "x": float("nan")})
    lines = text.splitlines()
    assert lines[0].split() == ["metric", "value"]
    assert "0.5000" in lines[2] and "-1.0000" in lines[3] and lines[4].split() == ["num_results", "3"]
    assert "per_track" not in text and "nan" in lines[5]


def test_tracking_on_a_split_without_cameras_through_the_cli(tmp_path, capsys):
    """A plain COCO-video split (no cameras, no depth) scores J&F; 3D IoU is left out, not an error."""
    main = evaluate_cli.main

    split, results = _tracking_case()
    assert not any("camera" in img or "depth_file" in img for img in split["images"])
    (tmp_path / "split.json").write_text(json.dumps(split))
    (tmp_path / "res.json").write_text(json.dumps(results))
    out = tmp_path / "metrics.json"
    code = main(["--split", str(tmp_path / "split.json"), "--results", str(tmp_path / "res.json"),
                 "--task", "tracking", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    metrics = json.loads(out.read_text())
    assert metrics["J&F"] == 1.0 and "iou3d" not in metrics and metrics["protocol"] == "vos-benchmark"
    assert "J&F" in capsys.readouterr().out
    direct = evaluate(split, results, "tracking", split_root=str(tmp_path))
    assert direct["J&F"] == 1.0 and "iou3d" not in direct


def test_tracking_protocol_option(tmp_path):
    main = evaluate_cli.main

    split, results = _tracking_case()
    davis = evaluate(split, results, "tracking", protocol="davis2017")
    assert davis["protocol"] == "davis2017" and davis["J&F"] == 1.0
    with pytest.raises(InputError, match="protocol"):
        evaluate(split, results, "tracking", protocol="sav")
    (tmp_path / "split.json").write_text(json.dumps(split))
    (tmp_path / "res.json").write_text(json.dumps(results))
    args = ["--split", str(tmp_path / "split.json"), "--results", str(tmp_path / "res.json"), "--task", "tracking",
            "--protocol", "davis2017", "--out", str(tmp_path / "m.json")]
    assert main(args) == 0
    assert json.loads((tmp_path / "m.json").read_text())["protocol"] == "davis2017"


def test_masks_on_a_box_only_split_score_the_boxes_and_say_the_masks_were_skipped(small_case):
    """pycocotools scores what the split supports: the bbox figures, and a note that mask AP was skipped."""
    split, results = small_case
    boxes = copy.deepcopy(split)
    for ann in boxes["annotations"]:
        ann.pop("segmentation", None)
    metrics = evaluate(boxes, results, "detection")
    assert metrics["AP"] == pytest.approx(evaluate(split, results, "detection")["AP"])
    assert not any(k.startswith("segm_") for k in metrics)
    assert len(metrics["notes"]) == 1 and "box-only split" in metrics["notes"][0]
    assert "annotations[0]" in metrics["notes"][0]


def test_one_result_without_a_mask_drops_segm_with_a_note(small_case):
    split, results = small_case
    partial = copy.deepcopy(results)
    del partial[3]["segmentation"]
    metrics = evaluate(split, partial, "detection")
    assert "segm_AP" not in metrics and "AP" in metrics
    assert metrics["notes"] == [f"segm figures skipped: {len(results) - 1} of {len(results)} results in the "
                                f"results carry a segmentation, results[3] has none; mask AP needs one on every "
                                f"result"]
    assert "notes" not in evaluate(split, [{k: v for k, v in r.items() if k != "segmentation"} for r in results],
                                   "detection")


def test_the_cli_prints_the_notes_and_writes_them(small_case, tmp_path, capsys):
    split, results = small_case
    partial = copy.deepcopy(results)
    del partial[0]["segmentation"]
    (tmp_path / "split.json").write_text(json.dumps(split))
    (tmp_path / "res.json").write_text(json.dumps(partial))
    out = tmp_path / "m.json"
    assert evaluate_cli.main(["--split", str(tmp_path / "split.json"), "--results", str(tmp_path / "res.json"),
                              "--task", "detection", "--out", str(out)]) == 0
    notes = [line for line in capsys.readouterr().out.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "results[0] has none" in notes[0]
    assert json.loads(out.read_text())["notes"] == [notes[0].removeprefix("note: ")]


@pytest.mark.parametrize("hostile", ["dev_zero", "fifo", "urandom", "loop", "folder"])
@pytest.mark.parametrize("which", ["--split", "--results"])
@pytest.mark.parametrize("task", task_names())  # every task reads its files through the one reader
def test_the_cli_refuses_what_is_not_a_regular_file_in_one_line(small_case, tmp_path, capsys, hostile, which, task):
    """/dev/zero read 6-8 GB before a MemoryError; a FIFO or /dev/urandom never returned."""
    import os
    from pathlib import Path

    split, results = small_case
    files = {"--split": tmp_path / "split.json", "--results": tmp_path / "res.json"}
    files["--split"].write_text(json.dumps(split))
    files["--results"].write_text(json.dumps(results))
    bad = {"dev_zero": Path("/dev/zero"), "urandom": Path("/dev/urandom"), "fifo": tmp_path / "fifo.json",
           "loop": tmp_path / "loop.json", "folder": tmp_path}[hostile]
    if hostile == "fifo":
        os.mkfifo(bad)
    elif hostile == "loop":
        os.symlink(bad, bad)
    files[which] = bad
    assert evaluate_cli.main(["--split", str(files["--split"]), "--results", str(files["--results"]),
                              "--task", task]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: {bad}: ")
    assert "not a regular file" in err[0] or "symbolic-link loop" in err[0]


@pytest.mark.parametrize("target", ["results", "split", "empty", "folder"])
def test_the_cli_never_writes_its_metrics_over_an_input(small_case, tmp_path, capsys, target):
    split, results = small_case
    (tmp_path / "split.json").write_text(json.dumps(split))
    (tmp_path / "res.json").write_text(json.dumps(results))
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    out = {"results": str(tmp_path / "res.json"), "split": str(tmp_path / "." / "split.json"), "empty": "",
           "folder": str(tmp_path)}[target]
    assert evaluate_cli.main(["--split", str(tmp_path / "split.json"), "--results", str(tmp_path / "res.json"),
                              "--task", "detection", "--out", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --out")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
