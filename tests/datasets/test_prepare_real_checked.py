"""vision.prepare.real_checked (``vision prepare real-checked``): the hand-checked labels file, and the converter on
a photograph made here (always) and on whichever labelled sources this machine holds (skipped without any)."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from vision.data.coco import load_split
from vision.errors import InputError
from vision.prepare import real_checked as rc
from vision.prepare.teacher import COCO_CATEGORY_IDS, ROLES
from vision.weights.nets.onnx_models import COCO_CLASSES

from tests.conftest import REPO, shared_folder
from tests.datasets.staging import add_user_file, assert_left_as_it_was, fail_late, snapshot

LABELS = json.loads(rc.LABELS.read_text())


# ------------------------------------------------------------------------------------------ the labels file

def test_the_labels_file_follows_its_rules():
    rc.check_labels(LABELS, rc.LABELS)
    frames = LABELS["frames"]
    assert 40 <= len(frames) <= 60
    keys = [(f["source"], f["frame"]) for f in frames]
    assert len(set(keys)) == len(keys)
    for i, frame in enumerate(frames):
        width, height = frame["size"]
        assert max(width, height) <= LABELS["max_side"]
        for vocabulary in ("coco", "open"):
            boxes = [(b["name"], tuple(b["bbox"])) for b in frame[vocabulary]]
            assert len(set(boxes)) == len(boxes), (i, vocabulary, "duplicate box")
            for name, (x, y, w, h) in boxes:
                assert w > 0 and h > 0 and x >= 0 and y >= 0 and x + w <= width and y + h <= height, (i, name)
        assert {b["name"] for b in frame["coco"]} <= set(COCO_CLASSES), i
        absent = frame["absent"]
        assert len(absent) == 3 and len(set(absent)) == 3, i
        assert not set(absent) & {b["name"] for b in frame["open"]}, (i, absent)
        assert all(b.get("iscrowd", 0) in (0, 1) for b in frame["coco"] + frame["open"])


def test_no_labelled_source_is_training_footage():
    """Each source is held out in vision prepare real-detection's roles (test, or val for mmaction2_pool)."""
    for name, source in LABELS["sources"].items():
        stem = Path(name).stem
        assert ROLES.get(stem) in ("test", "val"), f"{name}: role {ROLES.get(stem)!r}"
        assert len(source["sha256"]) == 64 and source["licence"] and source["origin"]


def test_every_labelled_frame_names_objects():
    """Every frame has open boxes, most have COCO boxes, and each source gives at least one frame."""
    assert all(f["open"] for f in LABELS["frames"])
    assert sum(bool(f["coco"]) for f in LABELS["frames"]) >= 35
    assert {f["source"] for f in LABELS["frames"]} == set(LABELS["sources"])


@pytest.mark.parametrize("change, message", [
    (lambda f: f["coco"].append({"name": "cellphone", "bbox": [0, 0, 5, 5]}), "not a COCO-80 name"),
    (lambda f: f["absent"].__setitem__(0, f["open"][0]["name"]), "is boxed in this frame's open list"),
    (lambda f: f["absent"].pop(), "must be 3 distinct names"),
    (lambda f: f["open"].append(dict(f["open"][0])), "a duplicate"),
    (lambda f: f["open"].append({"name": "thing", "bbox": [f["size"][0] - 2, 0, 5, 5]}), "leaves the"),
    (lambda f: f["coco"].append({"name": "cup", "bbox": [1, 1, 0, 4]}), "is empty"),
])
def test_a_broken_label_is_refused_naming_the_entry(change, message):
    labels = copy.deepcopy(LABELS)
    change(labels["frames"][2])
    with pytest.raises(InputError, match=message) as caught:
        rc.check_labels(labels, "L.json")
    assert "frames[2]" in str(caught.value) and "L.json" in str(caught.value)


# ------------------------------------------------------------------------------------------ the converter

def _photo_labels(tmp_path: Path) -> tuple[Path, Path, dict]:
    """A labels file for one photograph made here (a 700x350 image: stored at 640x320)."""
    import cv2

    photos = tmp_path / "photos"
    photos.mkdir()
    image = np.zeros((350, 700, 3), np.uint8)
    image[70:210, 140:420] = (40, 180, 220)
    cv2.imwrite(str(photos / "card.png"), image)
    digest = hashlib.sha256((photos / "card.png").read_bytes()).hexdigest()
    labels = {"max_side": 640,
              "sources": {"card.png": {"kind": "photo", "where": "photos", "sha256": digest, "origin": "made here",
                                       "licence": "none"}},
              "frames": [{"source": "card.png", "frame": None, "size": [640, 320],
                          "coco": [{"name": "book", "bbox": [128, 64, 256, 128]},
                                   {"name": "person", "bbox": [500, 10, 100, 300], "iscrowd": 1}],
                          "open": [{"name": "card", "bbox": [128, 64, 256, 128]}],
                          "absent": ["dog", "cup", "lamp"]}]}
    path = tmp_path / "labels.json"
    path.write_text(json.dumps(labels))
    return path, photos, labels


def test_a_photograph_becomes_two_splits(tmp_path):
    path, photos, _ = _photo_labels(tmp_path)
    out = tmp_path / "out"
    paths = rc.prepare(out, path, photos=photos, log=lambda line: None)
    coco, opened = load_split(paths["coco"]), load_split(paths["open"])  # validated, files checked
    assert [c["id"] for c in coco.dataset["categories"]] == list(COCO_CATEGORY_IDS)
    assert coco.dataset["info"]["vocabulary"] == list(COCO_CLASSES)
    image = coco.dataset["images"][0]
    assert image["file_name"] == "frames/photos/card.png" and (image["width"], image["height"]) == (640, 320)
    import cv2

    stored = cv2.imread(str(out / image["file_name"]))
    assert stored.shape == (320, 640, 3) and tuple(stored[100, 300]) == (40, 180, 220)  # lossless PNG
    anns = coco.dataset["annotations"]
    assert [(a["category_id"], a["bbox"], a["iscrowd"]) for a in anns] == [
        (84, [128.0, 64.0, 256.0, 128.0], 0), (1, [500.0, 10.0, 100.0, 300.0], 1)]
    names = {c["id"]: c["name"] for c in opened.dataset["categories"]}
    assert sorted(names.values()) == ["card", "cup", "dog", "lamp"]
    open_image = opened.dataset["images"][0]
    assert sorted(names[i] for i in open_image["neg_category_ids"]) == ["cup", "dog", "lamp"]
    assert open_image["not_exhaustive_category_ids"] == []
    assert [names[a["category_id"]] for a in opened.dataset["annotations"]] == ["card"]


def test_an_altered_or_absent_source_is_one_error_line_naming_it(tmp_path, capsys):
    path, photos, _ = _photo_labels(tmp_path)
    (photos / "card.png").write_bytes((photos / "card.png").read_bytes() + b"\0")
    argv = ["--out", str(tmp_path / "out"), "--labels", str(path), "--photos", str(photos)]
    assert rc.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: source ") and "card.png differs" in err and err.count("\n") == 1
    (photos / "card.png").unlink()
    assert rc.main(argv) == 2
    err = capsys.readouterr().err
    assert "source card.png is absent" in err and "--photos" in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()
    assert rc.main([*argv, "--if-present"]) == 2  # every source skipped: nothing to write
    assert "no labelled frame" in capsys.readouterr().err


def test_a_late_failure_leaves_the_old_output_whole(tmp_path, capsys, monkeypatch):
    import vision.data.coco

    path, photos, labels = _photo_labels(tmp_path)
    out = tmp_path / "out"
    add_user_file(out)
    argv = ["--out", str(out), "--labels", str(path), "--photos", str(photos)]
    assert rc.main(argv) == 0
    before = snapshot(out)
    labels["frames"][0]["coco"][0]["bbox"] = [130, 64, 250, 128]
    path.write_text(json.dumps(labels))
    written = fail_late(monkeypatch, vision.data.coco, "write_split", call=2)  # the second split, frames written
    capsys.readouterr()
    assert rc.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(written) == 2 and len(err) == 1 and "injected late failure" in err[0]
    assert_left_as_it_was(out, before, {"photos", "labels.json", "out"})


def test_the_shipped_labels_on_the_sources_present(tmp_path):
    """Every labelled frame whose source this machine holds (../shared/footage, datasets/opencv_samples,
    datasets/real_checked_photos): the splits validate with their files, and every box lies in its image."""
    footage = shared_folder("footage")
    labels = rc.load_labels()
    paths = rc.locate_sources(labels, [footage] if footage else [], REPO / rc.DEFAULT_OPENCV_SAMPLES,
                              REPO / rc.DEFAULT_PHOTOS)
    present = {name for name, p in paths.items() if p is not None}
    if not present:
        pytest.skip("no labelled source here: ../shared/footage, datasets/opencv_samples (vision prepare "
                    "opencv-samples) and datasets/real_checked_photos (--fetch-photos) are absent")
    out = tmp_path / "real_checked"
    written = rc.prepare(out, footage=[footage] if footage else [], opencv_samples=REPO / rc.DEFAULT_OPENCV_SAMPLES,
                         photos=REPO / rc.DEFAULT_PHOTOS, if_present=True, log=lambda line: None)
    expected = [f for f in labels["frames"] if f["source"] in present]
    for name in ("coco", "open"):
        split = load_split(written[name])
        images = {img["id"]: img for img in split.dataset["images"]}
        assert len(images) == len(expected)
        for ann in split.dataset["annotations"]:
            img = images[ann["image_id"]]
            x, y, w, h = ann["bbox"]
            assert w > 0 and h > 0 and x >= 0 and y >= 0 and x + w <= img["width"] and y + h <= img["height"]
        boxes = sum(len(f[name]) for f in expected)
        assert len(split.dataset["annotations"]) == boxes
