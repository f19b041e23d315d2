"""vision.prepare.ytvis (vision-prepare-ytvis): a YouTube-VIS / LV-VIS annotation file -> one COCO-video split.

The fixture is written by the tests in the upstream layout: ``JPEGImages/<video>/<frame>.jpg`` (8x6, cv2) and a
``train.json`` whose segmentations mix uncompressed RLE, compressed RLE, polygons and nulls.
"""

import json

import cv2
import numpy as np
import pytest
from pycocotools import mask as mask_utils

from tests.datasets.staging import add_user_file, assert_left_as_it_was, fail_late, snapshot
from vision.data.coco import load_split
from vision.data.masks import decode_rle
from vision.errors import DataError, InputError
from vision.prepare import instances, ytvis

W, H = 8, 6
POLYGON = [[1.0, 1.0, 6.0, 1.0, 6.0, 4.0, 1.0, 4.0]]


def _box(x0, y0, x1, y1):
    mask = np.zeros((H, W), bool)
    mask[y0:y1, x0:x1] = True
    return mask


def _uncompressed(mask):
    """pycocotools' uncompressed RLE: column-major runs, starting with zeros (what YouTube-VIS 2019 ships)."""
    flat = np.asarray(mask, np.uint8).flatten(order="F")
    runs, current, count = [], 0, 0
    for v in flat:
        if v != current:
            runs.append(count)
            current, count = v, 0
        count += 1
    runs.append(count)
    return {"size": [H, W], "counts": [int(r) for r in runs]}


def _compressed(mask):
    rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": [H, W], "counts": rle["counts"].decode("ascii")}


def _polygon_mask(polygons):
    return mask_utils.decode(mask_utils.merge(mask_utils.frPyObjects(polygons, H, W))).astype(bool)


def _dataset(root):
    """Two videos of 3 frames. Video 10: a panda (uncompressed RLE, compressed RLE, null) and a person entering on
    frame 1 (null, polygon, polygon). Video 20: a panda whose frame-1 mask is empty. Category 3 (dog) is absent."""
    for video, value in (("vid_a", 60), ("vid_b", 120)):
        for t in range(3):
            path = root / "JPEGImages" / video / f"{t * 5:05d}.jpg"
            path.parent.mkdir(parents=True, exist_ok=True)
            assert cv2.imwrite(str(path), np.full((H, W, 3), value + t, np.uint8))
    masks = {
        (1, 0): _box(0, 0, 3, 3), (1, 1): _box(1, 0, 4, 3),
        (2, 1): _polygon_mask(POLYGON), (2, 2): _polygon_mask(POLYGON),
        (3, 0): _box(4, 2, 8, 6), (3, 2): _box(5, 2, 8, 6),
    }
    doc = {
        "info": {"description": "fixture"},
        "videos": [{"id": 10, "width": W, "height": H, "length": 3,
                    "file_names": [f"vid_a/{t * 5:05d}.jpg" for t in range(3)]},
                   {"id": 20, "width": W, "height": H, "length": 3,
                    "file_names": [f"vid_b/{t * 5:05d}.jpg" for t in range(3)]}],
        "annotations": [
            {"id": 1, "video_id": 10, "category_id": 1, "iscrowd": 0, "areas": [9, 9, None], "bboxes": [],
             "segmentations": [_uncompressed(masks[1, 0]), _compressed(masks[1, 1]), None]},
            {"id": 2, "video_id": 10, "category_id": 2, "iscrowd": 0,
             "segmentations": [None, POLYGON, POLYGON]},
            {"id": 3, "video_id": 20, "category_id": 1, "iscrowd": 0,
             "segmentations": [_compressed(masks[3, 0]), _uncompressed(np.zeros((H, W), bool)),
                               _compressed(masks[3, 2])]},
        ],
        "categories": [{"id": 1, "name": "giant_panda"}, {"id": 2, "name": "person"}, {"id": 3, "name": "dog"}],
    }
    path = root / "train.json"
    path.write_text(json.dumps(doc))
    return path, doc, masks


def test_the_conversion_validates_and_round_trips_every_mask(tmp_path):
    path, _, masks = _dataset(tmp_path / "ytvis")
    out = ytvis.convert_ytvis(path, tmp_path / "ytvis" / "JPEGImages", tmp_path / "out")
    assert out == tmp_path / "out" / "train.json"
    split = load_split(out)  # validates, and checks every frame file exists under out/
    d = split.dataset
    assert [(c["id"], c["name"], c.get("source_name")) for c in d["categories"]] == [
        (1, "giant panda", "giant_panda"), (2, "person", None), (3, "dog", None)]
    assert [(v["id"], v["name"], v["ordered"], v["concepts"]) for v in d["videos"]] == [
        (10, "vid_a", True, [1, 2]), (20, "vid_b", True, [1])]
    frames = split.images_by_video[10]
    assert [im["frame_index"] for im in frames] == [0, 1, 2]
    assert [im["file_name"] for im in frames] == [f"train/vid_a/{t * 5:05d}.jpg" for t in range(3)]
    assert (split.root / frames[1]["file_name"]).read_bytes() == \
        (tmp_path / "ytvis" / "JPEGImages" / "vid_a" / "00005.jpg").read_bytes()
    assert [(t["source_id"], t["video_id"], t["category_id"]) for t in d["tracks"]] == [(1, 10, 1), (2, 10, 2),
                                                                                       (3, 20, 1)]
    frame_of = {im["id"]: (im["video_id"], im["frame_index"]) for im in d["images"]}
    got = {}
    for ann in d["annotations"]:
        assert isinstance(ann["segmentation"]["counts"], str)
        mask = decode_rle(ann["segmentation"])
        ys, xs = np.nonzero(mask)
        assert ann["bbox"] == [xs.min(), ys.min(), xs.max() - xs.min() + 1, ys.max() - ys.min() + 1]
        assert ann["area"] == mask.sum()
        got[ann["track_id"], frame_of[ann["image_id"]][1]] = mask
    # nulls and the empty mask give no annotation; every other mask comes back pixel for pixel
    assert sorted(got) == sorted(masks)
    for key, mask in masks.items():
        np.testing.assert_array_equal(got[key], mask)


def test_a_file_without_annotations_gives_unannotated_frames(tmp_path):
    path, doc, _ = _dataset(tmp_path / "ytvis")
    doc["annotations"] = None  # valid.json / test.json
    (tmp_path / "ytvis" / "valid.json").write_text(json.dumps(doc))
    split = load_split(ytvis.convert_ytvis(tmp_path / "ytvis" / "valid.json", tmp_path / "ytvis" / "JPEGImages",
                                           tmp_path / "out", link=True))
    assert not split.dataset["annotations"] and not split.dataset["tracks"]
    assert not any(im["annotated"] for im in split.dataset["images"])
    src = tmp_path / "ytvis" / "JPEGImages" / "vid_b" / "00000.jpg"
    assert (split.root / "valid" / "vid_b" / "00000.jpg").stat().st_ino == src.stat().st_ino


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d["videos"][1].pop("file_names"), r"train\.json: videos\[1\]\.file_names.*missing required key"),
    (lambda d: d["annotations"][0]["segmentations"][1].__setitem__("size", [H + 1, W]),
     r"train\.json: annotations\[0\]\.segmentations\[1\]\.size.*does not match"),
    (lambda d: d["videos"][0]["file_names"].__setitem__(2, "../../../etc/passwd"),
     r"train\.json: videos\[0\]\.file_names\[2\].*escapes"),
    (lambda d: d["annotations"][2]["segmentations"].pop(), r"annotations\[2\]\.segmentations=2: 2 segmentations "
                                                           r"but video 20 has 3 frames"),
], ids=["missing field", "mask of the wrong size", "path escaping the root", "segmentations too short"])
def test_bad_input_is_one_data_error_and_writes_nothing(tmp_path, capsys, mutate, match):
    path, doc, _ = _dataset(tmp_path / "ytvis")
    mutate(doc)
    path.write_text(json.dumps(doc))
    out = tmp_path / "out"
    with pytest.raises(DataError, match=match):
        ytvis.convert_ytvis(path, tmp_path / "ytvis" / "JPEGImages", out)
    assert not out.exists()
    assert ytvis.main([str(path), "--frames", str(tmp_path / "ytvis" / "JPEGImages"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "train.json" in err[0]
    assert not out.exists()


def test_the_cli_prints_the_split(tmp_path, capsys):
    path, _, _ = _dataset(tmp_path / "ytvis")
    out = tmp_path / "out"
    assert ytvis.main([str(path), "--frames", str(tmp_path / "ytvis" / "JPEGImages"), "--out", str(out),
                       "--name", "ytvis19_train"]) == 0
    assert capsys.readouterr().out.strip() == str(out / "ytvis19_train.json")
    assert load_split(out / "ytvis19_train.json").dataset["videos"][0]["concepts"] == [1, 2]


def test_converting_into_the_frame_folder_itself_keeps_the_frames(tmp_path):
    """``OUT/<name>`` may be the frame folder (``--out ytvis --name JPEGImages``): the frames are the split's files
    already and are left as they are, never replaced by themselves."""
    path, _, _ = _dataset(tmp_path / "ytvis")
    frame = tmp_path / "ytvis" / "JPEGImages" / "vid_a" / "00000.jpg"
    before = frame.read_bytes()
    split = load_split(ytvis.convert_ytvis(path, tmp_path / "ytvis" / "JPEGImages", tmp_path / "ytvis",
                                           name="JPEGImages"))
    assert frame.read_bytes() == before and split.dataset["images"][0]["file_name"] == "JPEGImages/vid_a/00000.jpg"


def test_a_late_failure_leaves_the_old_output_whole(tmp_path, capsys, monkeypatch):
    path, doc, _ = _dataset(tmp_path / "ytvis")
    out = tmp_path / "out"
    add_user_file(out)
    argv = [str(path), "--frames", str(tmp_path / "ytvis" / "JPEGImages"), "--out", str(out)]
    assert ytvis.main(argv) == 0
    before = snapshot(out)
    doc["categories"][0]["name"] = "panda"
    path.write_text(json.dumps(doc))
    written = fail_late(monkeypatch, instances, "write_split")  # after every frame was placed
    capsys.readouterr()
    assert ytvis.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert written and len(err) == 1 and "injected late failure" in err[0]
    assert_left_as_it_was(out, before, {"ytvis", "out"})


def test_a_frame_folder_inside_the_one_written_is_refused_before_writing(tmp_path):
    """``--frames ytvis/all/JPEGImages --out ytvis --name all``: writing ``ytvis/all`` anew would replace the
    frames it copies from."""
    path, _, _ = _dataset(tmp_path / "ytvis" / "all")
    before = snapshot(tmp_path / "ytvis")
    with pytest.raises(InputError, match="lies inside .*all.*another --out or --name"):
        ytvis.convert_ytvis(path, tmp_path / "ytvis" / "all" / "JPEGImages", tmp_path / "ytvis", name="all")
    assert snapshot(tmp_path / "ytvis") == before and sorted(p.name for p in tmp_path.iterdir()) == ["ytvis"]
