"""class_agnostic_ap agrees with pycocotools: all 12 summary statistics, on crowds and empty images, tied scores, a
split of one class, empty results, and the category subsets (kept, dropped or ignored objects; kept or dropped
detections).

Two references: pycocotools' own class-agnostic mode (``params.useCats = 0``) where scores are distinct, and
pycocotools on a one-class copy made here. They differ only in the order of detections with equal scores in one
image: ``useCats = 0`` ranks them by category, a one-class copy by their order in the results, which is the order
class_agnostic_ap keeps."""

from __future__ import annotations

import copy

import pytest

from tests.evaluation.conftest import make_detection_case, pycocotools_stats
from vision.evaluation.detection import COCO_STAT_KEYS, class_agnostic_ap, coco_ap


def agnostic_reference(split: dict, results: list[dict], use_cats: bool = False) -> dict:
    """pycocotools (:func:`pycocotools_stats`) with ``useCats = 0`` or, ``use_cats``, with categories (the caller
    passes a one-class copy, :func:`one_class_reference`)."""
    return pycocotools_stats(split, results, "bbox", use_cats=use_cats)


def one_class_reference(split: dict, results: list[dict]) -> dict:
    """pycocotools on copies of ``split`` and ``results`` with every category id set to 1."""
    one = dict(split, categories=[{"id": 1, "name": "object"}],
               annotations=[dict(a, category_id=1) for a in split["annotations"]])
    return agnostic_reference(one, [dict(r, category_id=1) for r in results], use_cats=True)


def assert_same(ours: dict, ref: dict) -> None:
    assert list(ours) == list(COCO_STAT_KEYS)
    for key in COCO_STAT_KEYS:
        assert ours[key] == pytest.approx(ref[key], abs=1e-9), key


def _image_split(annotations: list[tuple[int, int, list[float], int]], categories=(1, 2, 7)) -> dict:
    """Two 100x100 images; ``annotations`` as (image_id, category_id, bbox XYWH, iscrowd)."""
    return {"images": [{"id": 1, "width": 100, "height": 100}, {"id": 2, "width": 100, "height": 100}],
            "categories": [{"id": c, "name": f"c{c}"} for c in categories],
            "annotations": [{"id": i, "image_id": im, "category_id": c, "bbox": box, "area": box[2] * box[3],
                             "iscrowd": crowd} for i, (im, c, box, crowd) in enumerate(annotations, start=1)]}


def test_matches_pycocotools_on_the_detection_fixture(detection_case):
    split, results = detection_case  # three classes, crowds, images without ground truth or without detections
    before = copy.deepcopy((split, results))
    assert_same(class_agnostic_ap(split, results), agnostic_reference(split, results))
    assert (split, results) == before  # the inputs are not modified


def test_class_swaps_are_hits():
    split = _image_split([(1, 1, [0, 0, 10, 10], 0), (1, 2, [30, 30, 10, 10], 0)])
    swapped = [{"image_id": 1, "category_id": 2, "bbox": [0, 0, 10, 10], "score": 0.9},
               {"image_id": 1, "category_id": 1, "bbox": [30, 30, 10, 10], "score": 0.8}]
    assert coco_ap(split, swapped, category_ids=[1, 2])["AP50"] == pytest.approx(0.0)
    assert class_agnostic_ap(split, swapped)["AP50"] == pytest.approx(1.0)


def test_tied_scores():
    """Equal scores on hits and false positives, across images and labels: the ranking of ties is pycocotools'."""
    split = _image_split([(1, 1, [0, 0, 20, 20], 0), (1, 2, [50, 50, 20, 20], 0), (2, 7, [10, 10, 30, 30], 0),
                          (2, 1, [60, 0, 30, 30], 0)])
    results = [{"image_id": 1, "category_id": 2, "bbox": [0, 0, 20, 20], "score": 0.5},
               {"image_id": 1, "category_id": 1, "bbox": [80, 80, 10, 10], "score": 0.5},     # false positive
               {"image_id": 1, "category_id": 7, "bbox": [50, 50, 20, 19], "score": 0.5},
               {"image_id": 2, "category_id": 1, "bbox": [0, 60, 20, 20], "score": 0.5},      # false positive
               {"image_id": 2, "category_id": 7, "bbox": [10, 10, 30, 30], "score": 0.5},
               {"image_id": 2, "category_id": 2, "bbox": [12, 10, 30, 30], "score": 0.5},     # duplicate
               {"image_id": 2, "category_id": 1, "bbox": [60, 0, 30, 30], "score": 0.25}]
    ours = class_agnostic_ap(split, results)
    assert_same(ours, one_class_reference(split, results))
    assert 0.0 < ours["AP50"] < 1.0


def test_one_class_split_equals_coco_ap():
    split, results = make_detection_case(seed=3, num_images=12)
    for ann in split["annotations"]:
        ann["category_id"] = 5
    results = [dict(r, category_id=5) for r in results]
    ours = class_agnostic_ap(split, results)
    assert_same(ours, agnostic_reference(split, results))
    plain = coco_ap(split, results, category_ids=[5])
    assert all(ours[k] == pytest.approx(plain[k], abs=1e-9) for k in COCO_STAT_KEYS)


def test_empty_results():
    split, _ = make_detection_case(seed=2, num_images=8)
    ours = class_agnostic_ap(split, [])
    assert_same(ours, agnostic_reference(split, []))
    assert ours["AP50"] == 0.0


def test_empty_split_is_undefined():
    split = {"images": [], "annotations": [], "categories": [{"id": 1, "name": "a"}]}
    assert class_agnostic_ap(split, []) == {key: -1.0 for key in COCO_STAT_KEYS}


def test_category_subsets():
    """Kept objects, other objects dropped or ignored (crowd), detections of kept labels only."""
    split = _image_split([(1, 1, [0, 0, 10, 10], 0), (1, 2, [30, 30, 10, 10], 0), (1, 7, [50, 0, 10, 10], 0)])
    results = [{"image_id": 1, "category_id": 2, "bbox": [0, 0, 10, 10], "score": 0.9},
               {"image_id": 1, "category_id": 1, "bbox": [30, 30, 10, 10], "score": 0.8},
               {"image_id": 1, "category_id": 1000, "bbox": [50, 0, 10, 10], "score": 0.95}]
    # detections of the kept labels only: both objects found
    assert class_agnostic_ap(split, results, gt_category_ids=[1, 2], result_category_ids=[1, 2])["AP50"] == 1.0
    # every detection, the 'other' object dropped: the top-scoring detection is a false positive
    dropped = class_agnostic_ap(split, results, gt_category_ids=[1, 2])
    kept = [a for a in split["annotations"] if a["category_id"] != 7]
    assert_same(dropped, one_class_reference(dict(split, annotations=kept), results))
    assert dropped["AP50"] < 0.9
    # the 'other' object as an ignored (crowd) region: the detection on it counts neither way
    ignored = class_agnostic_ap(split, results, gt_category_ids=[1, 2], ignore_other=True)
    crowd = [dict(a, iscrowd=int(a["category_id"] == 7)) for a in split["annotations"]]
    assert_same(ignored, one_class_reference(dict(split, annotations=crowd), results))
    assert ignored["AP50"] == pytest.approx(1.0)
