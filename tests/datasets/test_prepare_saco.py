"""vision.prepare.saco (vision-prepare-saco): an SA-Co annotation file -> one COCO-video split.

The fixtures are written by the tests in sam3's layouts: SA-Co/Gold (``images`` = (image, noun phrase) pairs with
``text_input``, annotations for positive pairs only, normalised ``bbox``) and SA-Co/VEval (YouTube-VIS videos with
phrase categories and ``video_np_pairs``); 8x6 images / frames written with cv2.
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
from vision.prepare import instances, saco

W, H = 8, 6
POLYGON = [[4.0, 0.0, 8.0, 0.0, 8.0, 3.0]]


def _box(x0, y0, x1, y1, size=(H, W)):
    mask = np.zeros(size, bool)
    mask[y0:y1, x0:x1] = True
    return mask


def _rle(mask):
    rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": list(mask.shape), "counts": rle["counts"].decode("ascii")}


def _runs(mask):
    """Uncompressed RLE counts: column-major runs, starting with zeros."""
    flat = np.asarray(mask, np.uint8).flatten(order="F")
    change = np.flatnonzero(np.diff(flat)) + 1
    bounds = np.concatenate([[0], change, [flat.size]])
    runs = np.diff(bounds).tolist()
    return runs if flat[0] == 0 else [0] + runs


def _image(path, value):
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), np.full((H, W, 3), value, np.uint8))


def _gold(root):
    """Three images: a.jpeg asks "chili" (2 instances: RLE + polygon) and "the fish ball" (negative); b.jpeg asks
    "chili" (1 instance, uncompressed RLE) and "spoon" (not exhaustive, 1 instance); c.jpeg asks "the fish ball"
    (negative, a string pair id)."""
    for name, value in (("a", 30), ("b", 90), ("c", 200)):
        _image(root / "images" / "1" / "1001" / f"{name}.jpeg", value)
    _image(root / "outside.jpeg", 0)  # a real image outside the media folder
    pair = {"width": W, "height": H, "queried_category": "0", "is_instance_exhaustive": 1, "is_pixel_exhaustive": 1}
    doc = {
        "images": [
            {"id": 10000000, "file_name": "1/1001/a.jpeg", "text_input": "chili", **pair},
            {"id": 10000001, "file_name": "1/1001/a.jpeg", "text_input": "the fish ball", **pair},
            {"id": 10000002, "file_name": "1/1001/b.jpeg", "text_input": "chili", **pair},
            {"id": 10000003, "file_name": "1/1001/b.jpeg", "text_input": "spoon", **pair,
             "is_instance_exhaustive": 0},
            {"id": "s-1", "file_name": "1/1001/c.jpeg", "text_input": "the fish ball", **pair},
        ],
        "annotations": [
            {"id": 1, "image_id": 10000000, "source": "manual", "area": 0.25, "bbox": [0.0, 0.0, 0.375, 0.5],
             "segmentation": _rle(_box(0, 0, 3, 3)), "category_id": 1, "iscrowd": 0},
            {"id": 2, "image_id": 10000000, "source": "manual", "area": 0.1, "bbox": [0.5, 0.0, 0.5, 0.5],
             "segmentation": POLYGON, "category_id": 1, "iscrowd": 1},
            {"id": 3, "image_id": 10000002, "area": 0.2, "bbox": [0.25, 0.5, 0.5, 0.5],
             "segmentation": {"size": [H, W], "counts": _runs(_box(2, 3, 6, 6))}, "category_id": 1, "iscrowd": 0},
            {"id": 4, "image_id": 10000003, "area": 0.1, "bbox": [0.0, 0.5, 0.25, 0.5],
             "segmentation": _rle(_box(0, 3, 2, 6)), "category_id": 1, "iscrowd": 0},
        ],
        "categories": [{"id": 1, "name": "object"}],
    }
    polygon = mask_utils.decode(mask_utils.merge(mask_utils.frPyObjects(POLYGON, H, W))).astype(bool)
    masks = {1: _box(0, 0, 3, 3), 2: polygon, 3: _box(2, 3, 6, 6), 4: _box(0, 3, 2, 6)}
    path = root / "gold_fg_food_merged_a_release_test.json"
    path.write_text(json.dumps(doc))
    return path, doc, masks


def _veval(root):
    """Two videos of 3 frames; video 1 asks "a red car" (a masklet absent on frame 1) and "dog" (negative); video 2
    asks "the white mug" (a masklet) and "dog" (negative)."""
    for video, value in (("sav_000001", 40), ("sav_000002", 140)):
        for t in range(3):
            _image(root / "JPEGImages_24fps" / video / f"{t:05d}.jpg", value + t)
    masks = {(1, 0): _box(0, 0, 4, 3), (1, 2): _box(1, 1, 5, 4), (2, 0): _box(3, 2, 8, 6), (2, 1): _box(3, 2, 7, 6),
             (2, 2): _box(4, 2, 7, 5)}
    doc = {
        "info": {"version": "v1", "description": "SA-Co/VEval fixture"},
        "videos": [{"id": 1, "file_names": [f"sav_000001/{t:05d}.jpg" for t in range(3)], "height": H, "width": W,
                    "length": 3},
                   {"id": 2, "file_names": [f"sav_000002/{t:05d}.jpg" for t in range(3)], "height": H, "width": W,
                    "length": 3}],
        "annotations": [
            {"id": 11, "video_id": 1, "category_id": 1, "noun_phrase": "a red car", "iscrowd": 0, "height": H,
             "width": W, "areas": [12, None, 12], "bboxes": [[0, 0, 4, 3], None, [1, 1, 4, 3]],
             "segmentations": [_rle(masks[1, 0]), None, _rle(masks[1, 2])]},
            {"id": 12, "video_id": 2, "category_id": 3, "noun_phrase": "the white mug", "iscrowd": 0, "height": H,
             "width": W, "segmentations": [_rle(masks[2, t]) for t in range(3)]},
        ],
        "categories": [{"id": 1, "name": "a red car"}, {"id": 2, "name": "dog"}, {"id": 3, "name": "the white mug"},
                       {"id": 4, "name": "a_phrase_never_asked"}],
        "video_np_pairs": [{"id": 1, "video_id": 1, "category_id": 1, "noun_phrase": "a red car"},
                           {"id": 2, "video_id": 1, "category_id": 2, "noun_phrase": "dog"},
                           {"id": 3, "video_id": 2, "category_id": 3, "noun_phrase": "the white mug"},
                           {"id": 4, "video_id": 2, "category_id": 2, "noun_phrase": "dog"}],
    }
    path = root / "saco_veval_sav_val.json"
    path.write_text(json.dumps(doc))
    return path, doc, masks


def test_image_pairs_become_single_image_videos_with_positive_and_negative_concepts(tmp_path):
    path, _, masks = _gold(tmp_path / "gold")
    out = saco.convert_saco(path, tmp_path / "gold" / "images", tmp_path / "out")
    split = load_split(out)
    d = split.dataset
    assert [(c["id"], c["name"]) for c in d["categories"]] == [(1, "chili"), (2, "the fish ball"), (3, "spoon")]
    # the negative phrase stays queried; the non-exhaustive "spoon" is not
    assert [(v["name"], v["concepts"]) for v in d["videos"]] == [("1/1001/a.jpeg", [1, 2]), ("1/1001/b.jpeg", [1]),
                                                                 ("1/1001/c.jpeg", [2])]
    assert [im["file_name"] for im in d["images"]] == [
        f"gold_fg_food_merged_a_release_test/1/1001/{n}.jpeg" for n in "abc"]
    assert all(im["frame_index"] == 0 for im in d["images"])
    assert [(t["source_id"], t["video_id"], t["category_id"]) for t in d["tracks"]] == [(1, 1, 1), (2, 1, 1),
                                                                                       (3, 2, 1), (4, 2, 3)]
    assert [a["iscrowd"] for a in d["annotations"]] == [0, 1, 0, 0]
    for ann in d["annotations"]:
        mask = decode_rle(ann["segmentation"])
        np.testing.assert_array_equal(mask, masks[split.tracks[ann["track_id"]]["source_id"]])
        ys, xs = np.nonzero(mask)  # in pixels, not upstream's normalised box
        assert ann["bbox"] == [xs.min(), ys.min(), xs.max() - xs.min() + 1, ys.max() - ys.min() + 1]


def test_video_pairs_keep_the_phrase_categories_and_negative_phrases(tmp_path):
    path, _, masks = _veval(tmp_path / "veval")
    out = saco.convert_saco(path, tmp_path / "veval" / "JPEGImages_24fps", tmp_path / "out", name="veval",
                            link=True)
    split = load_split(out)
    d = split.dataset
    assert [c["name"] for c in d["categories"]] == ["a red car", "dog", "the white mug", "a_phrase_never_asked"]
    assert [(v["id"], v["name"], v["concepts"]) for v in d["videos"]] == [(1, "sav_000001", [1, 2]),
                                                                          (2, "sav_000002", [2, 3])]
    frame = {im["id"]: (im["video_id"], im["frame_index"]) for im in d["images"]}
    got = {frame[a["image_id"]]: decode_rle(a["segmentation"]) for a in d["annotations"]}
    assert sorted(got) == sorted(masks)
    for key, mask in masks.items():
        np.testing.assert_array_equal(got[key], mask)
    src = tmp_path / "veval" / "JPEGImages_24fps" / "sav_000002" / "00001.jpg"
    assert (split.root / "veval" / "sav_000002" / "00001.jpg").stat().st_ino == src.stat().st_ino


def _wrong_size(d):
    d["annotations"][2]["segmentation"] = _rle(_box(0, 0, 2, 2, size=(H, W + 1)))


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d["images"][1].pop("text_input"), r"images\[1\]\.text_input.*missing required key"),
    (_wrong_size, r"annotations\[2\]\.segmentation\.size=\[6, 9\].*does not match"),
    (lambda d: d["images"][4].__setitem__("file_name", "../outside.jpeg"),
     r"images\[4\]\.file_name.*escapes"),
    (lambda d: d["annotations"][0].__setitem__("image_id", 5), r"annotations\[0\]\.image_id=5.*not in 'images'"),
    (lambda d: d["images"][2].__setitem__("text_input", "the fish ball") or
     d["images"][1].__setitem__("file_name", "1/1001/b.jpeg"), r"images\[2\]\.text_input.*listed twice"),
], ids=["missing field", "mask of the wrong size", "path escaping the root", "unknown pair", "pair twice"])
def test_bad_image_input_is_one_data_error_and_writes_nothing(tmp_path, capsys, mutate, match):
    path, doc, _ = _gold(tmp_path / "gold")
    mutate(doc)
    path.write_text(json.dumps(doc))
    out = tmp_path / "out"
    with pytest.raises(DataError, match=r"release_test\.json: " + match):
        saco.convert_saco(path, tmp_path / "gold" / "images", out)
    assert not out.exists()
    assert saco.main([str(path), "--media", str(tmp_path / "gold" / "images"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "release_test.json" in err[0]


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d["video_np_pairs"][3].__setitem__("video_id", 3), r"video_np_pairs\[3\]\.video_id=3"),
    (lambda d: d["video_np_pairs"][3].__setitem__("category_id", 3), r"video_np_pairs\[3\]\.category_id=3.*twice"),
    (lambda d: d["annotations"][1]["segmentations"].__setitem__(1, {"size": [H, W], "counts": "0"}),
     r"annotations\[1\]\.segmentations\[1\]\.counts"),
], ids=["unknown video", "pair twice", "bad counts"])
def test_bad_video_input_is_one_data_error(tmp_path, mutate, match):
    path, doc, _ = _veval(tmp_path / "veval")
    mutate(doc)
    path.write_text(json.dumps(doc))
    with pytest.raises(DataError, match=r"sav_val\.json: " + match):
        saco.convert_saco(path, tmp_path / "veval" / "JPEGImages_24fps", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_late_failure_leaves_the_old_output_whole(tmp_path, capsys, monkeypatch):
    path, doc, _ = _gold(tmp_path / "gold")
    out = tmp_path / "out"
    add_user_file(out)
    argv = [str(path), "--media", str(tmp_path / "gold" / "images"), "--out", str(out)]
    assert saco.main(argv) == 0
    before = snapshot(out)
    doc["images"][0]["text_input"] = "red chili"
    path.write_text(json.dumps(doc))
    written = fail_late(monkeypatch, instances, "write_split")  # after every image was placed
    capsys.readouterr()
    assert saco.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert written and len(err) == 1 and "injected late failure" in err[0]
    assert_left_as_it_was(out, before, {"gold", "out"})
