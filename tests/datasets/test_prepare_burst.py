"""vision.prepare.burst (vision-prepare-burst): a BURST annotation file (TAO frames) -> one COCO-video split.

The fixture is written by the tests in the upstream layout: TAO frames ``frames/<split>/<dataset>/<seq_name>/``
(8x6 JPEGs, cv2) and a BURST JSON (``sequences`` with per-annotated-frame ``{track id: {rle}}``,
``track_category_ids``, ``neg_category_ids``, ``not_exhaustive_category_ids``; LVIS-style ``categories``).
"""

import json

import cv2
import numpy as np
import pytest
from pycocotools import mask as mask_utils

from tests.datasets.staging import add_user_file, assert_left_as_it_was, fail_late, snapshot
from vision.data.coco import load_split
from vision.data.masks import decode_rle
from vision.errors import DataError
from vision.evaluation.evaluate import evaluate
from vision.prepare import burst, instances

W, H = 8, 6


def _box(x0, y0, x1, y1, size=(H, W)):
    mask = np.zeros(size, bool)
    mask[y0:y1, x0:x1] = True
    return mask


def _rle(mask):
    return mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))["counts"].decode("ascii")


def _dataset(root):
    """Sequence 7 (ArgoVerse/seq_a): 3 frames, frames 0 and 2 annotated; a person (track 1) and an aerosol can
    (track 2, category not exhaustive); dog verified absent. Sequence 9 (LaSOT/seq_b): 3 frames all annotated; a
    bicycle (track 5) with an empty mask on frame 1."""
    for dataset, seq, value in (("ArgoVerse", "seq_a", 50), ("LaSOT", "seq_b", 150)):
        for t in range(3):
            path = root / "frames" / "val" / dataset / seq / f"frame{t:04d}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            assert cv2.imwrite(str(path), np.full((H, W, 3), value + t, np.uint8))
    masks = {("seq_a", 0, 1): _box(0, 0, 3, 4), ("seq_a", 0, 2): _box(5, 3, 8, 6), ("seq_a", 1, 1): _box(1, 0, 4, 4),
             ("seq_b", 0, 5): _box(2, 1, 6, 5), ("seq_b", 2, 5): _box(3, 1, 7, 6)}
    doc = {
        "split": "val",
        "categories": [{"id": 1, "name": "aerosol_can", "synset": "aerosol.n.02"}, {"id": 2, "name": "person"},
                       {"id": 3, "name": "dog"}, {"id": 4, "name": "bicycle"}],
        "sequences": [
            {"id": 7, "width": W, "height": H, "dataset": "ArgoVerse", "seq_name": "seq_a", "fps": 30,
             "all_image_paths": [f"frame{t:04d}.jpg" for t in range(3)],
             "annotated_image_paths": ["frame0000.jpg", "frame0002.jpg"],
             "track_category_ids": {"1": 2, "2": 1}, "neg_category_ids": [3], "not_exhaustive_category_ids": [1],
             "segmentations": [{"1": {"rle": _rle(masks["seq_a", 0, 1]), "is_gt": True, "score": 1.0},
                                "2": {"rle": _rle(masks["seq_a", 0, 2]), "is_gt": True, "score": 1.0}},
                               {"1": {"rle": _rle(masks["seq_a", 1, 1]), "is_gt": True, "score": 1.0}}]},
            {"id": 9, "width": W, "height": H, "dataset": "LaSOT", "seq_name": "seq_b", "fps": 30,
             "all_image_paths": [f"frame{t:04d}.jpg" for t in range(3)],
             "annotated_image_paths": [f"frame{t:04d}.jpg" for t in range(3)],
             "track_category_ids": {"5": 4}, "neg_category_ids": [], "not_exhaustive_category_ids": [],
             "segmentations": [{"5": {"rle": _rle(masks["seq_b", 0, 5])}},
                               {"5": {"rle": _rle(np.zeros((H, W), bool))}},
                               {"5": {"rle": _rle(masks["seq_b", 2, 5])}}]},
        ],
    }
    path = root / "annotations" / "val" / "all_classes.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(doc))
    return path, doc, masks


def test_the_conversion_validates_and_round_trips_every_mask(tmp_path):
    path, _, masks = _dataset(tmp_path / "burst")
    out = burst.convert_burst(path, tmp_path / "burst" / "frames", tmp_path / "out")
    assert out == tmp_path / "out" / "val_all_classes.json"
    split = load_split(out)
    d = split.dataset
    assert [(c["id"], c["name"], c.get("source_name")) for c in d["categories"]] == [
        (1, "aerosol can", "aerosol_can"), (2, "person", None), (3, "dog", None), (4, "bicycle", None)]
    # present and exhaustive (person) + verified absent (dog); the not-exhaustive aerosol can is not queried
    assert [(v["id"], v["name"], v["concepts"], v["fps"]) for v in d["videos"]] == [
        (7, "ArgoVerse/seq_a", [2, 3], 30.0), (9, "LaSOT/seq_b", [4], 30.0)]
    # annotated frames only, in order
    assert [im["file_name"] for im in split.images_by_video[7]] == [
        "val_all_classes/val/ArgoVerse/seq_a/frame0000.jpg", "val_all_classes/val/ArgoVerse/seq_a/frame0002.jpg"]
    assert [im["frame_index"] for im in split.images_by_video[9]] == [0, 1, 2]
    assert [(t["video_id"], t["object_id"], t["category_id"]) for t in d["tracks"]] == [(7, 1, 2), (7, 2, 1),
                                                                                       (9, 5, 4)]
    image = {im["id"]: im for im in d["images"]}
    got = {}
    for ann in d["annotations"]:
        track = split.tracks[ann["track_id"]]
        seq = image[ann["image_id"]]["file_name"].split("/")[3]
        got[seq, image[ann["image_id"]]["frame_index"], track["object_id"]] = decode_rle(ann["segmentation"])
        assert ann["area"] == got[seq, image[ann["image_id"]]["frame_index"], track["object_id"]].sum()
    assert sorted(got) == sorted(masks)  # the empty mask gives no annotation
    for key, mask in masks.items():
        np.testing.assert_array_equal(got[key], mask)


def test_the_converted_split_scores_with_the_concept_metrics(tmp_path):
    """The ground truth's own masks, as concept results for the queried phrases, score HOTA 1; the track of the
    not-exhaustive category is outside every queried phrase, and dropping a record scores below 1."""
    path, _, _ = _dataset(tmp_path / "burst")
    out = burst.convert_burst(path, tmp_path / "burst" / "frames", tmp_path / "out")
    d = load_split(out).dataset
    video_of = {im["id"]: im["video_id"] for im in d["images"]}
    queried = {v["id"]: v["concepts"] for v in d["videos"]}
    phrase = {c["id"]: c["name"] for c in d["categories"]}
    results = [{"video_id": video_of[a["image_id"]], "image_id": a["image_id"], "track_id": a["track_id"],
                "category_id": a["category_id"], "phrase": phrase[a["category_id"]], "segmentation": a["segmentation"],
                "bbox": a["bbox"], "score": 1.0, "prompt_type": "concept"}
               for a in d["annotations"] if a["category_id"] in queried[video_of[a["image_id"]]]]
    assert len(results) == len(d["annotations"]) - 1  # the aerosol can is not queried
    metrics = evaluate(out, results, "concept")
    assert metrics["HOTA"] == pytest.approx(1.0) and metrics["outside_accepted"] == 0.0
    assert evaluate(out, results[1:], "concept")["HOTA"] < 1.0


def _bad_rle_size(d):
    d["sequences"][1]["segmentations"][2]["5"]["rle"] = _rle(_box(0, 0, 2, 2, size=(H + 1, W)))


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d["sequences"][0].pop("seq_name"), r"sequences\[0\]\.seq_name.*missing required key"),
    (_bad_rle_size, r"sequences\[1\]\.segmentations\[2\]\.5\.rle\.counts.*sum to 56, not height\*width = 48"),
    (lambda d: d["sequences"][1]["annotated_image_paths"].__setitem__(0, "../../../../../etc/passwd"),
     r"sequences\[1\]\.annotated_image_paths\[0\].*escapes"),
    (lambda d: d["sequences"][0]["segmentations"][1].__setitem__("4", {"rle": "06"}),
     r"sequences\[0\]\.segmentations\[1\]\.4.*not in the sequence's track_category_ids"),
    (lambda d: d["sequences"][0]["neg_category_ids"].append(2), r"sequences\[0\]\.neg_category_ids=\[2\].*absent"),
    (lambda d: d["sequences"][0]["not_exhaustive_category_ids"].append(77),
     r"sequences\[0\]\.not_exhaustive_category_ids\[1\]=77.*not in the file's categories"),
], ids=["missing field", "mask of the wrong size", "path escaping the root", "unknown track", "present and negative",
        "unknown category"])
def test_bad_input_is_one_data_error_and_writes_nothing(tmp_path, capsys, mutate, match):
    path, doc, _ = _dataset(tmp_path / "burst")
    mutate(doc)
    path.write_text(json.dumps(doc))
    out = tmp_path / "out"
    with pytest.raises(DataError, match=r"all_classes\.json: " + match):
        burst.convert_burst(path, tmp_path / "burst" / "frames", out)
    assert not out.exists()
    assert burst.main([str(path), "--frames", str(tmp_path / "burst" / "frames"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "all_classes.json" in err[0]


def test_the_cli_prints_the_split(tmp_path, capsys):
    path, _, _ = _dataset(tmp_path / "burst")
    out = tmp_path / "out"
    assert burst.main([str(path), "--frames", str(tmp_path / "burst" / "frames"), "--out", str(out), "--link",
                       "--name", "burst_val"]) == 0
    assert capsys.readouterr().out.strip() == str(out / "burst_val.json")
    src = tmp_path / "burst" / "frames" / "val" / "LaSOT" / "seq_b" / "frame0001.jpg"
    assert (out / "burst_val" / "val" / "LaSOT" / "seq_b" / "frame0001.jpg").stat().st_ino == src.stat().st_ino
    assert load_split(out / "burst_val.json").dataset["videos"][1]["concepts"] == [4]


def test_a_late_failure_leaves_the_old_output_whole(tmp_path, capsys, monkeypatch):
    path, doc, _ = _dataset(tmp_path / "burst")
    out = tmp_path / "out"
    add_user_file(out)
    argv = [str(path), "--frames", str(tmp_path / "burst" / "frames"), "--out", str(out)]
    assert burst.main(argv) == 0
    before = snapshot(out)
    doc["categories"][1]["name"] = "pedestrian"
    path.write_text(json.dumps(doc))
    written = fail_late(monkeypatch, instances, "write_split")  # after every frame was placed
    capsys.readouterr()
    assert burst.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert written and len(err) == 1 and "injected late failure" in err[0]
    assert_left_as_it_was(out, before, {"burst", "out"})
