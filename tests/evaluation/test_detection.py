"""COCO AP through faster-coco-eval agrees with pycocotools (bbox and segm, crowds, empty images, IV subsets,
one class, empty results, non-default max_dets): all 12 summary statistics."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from vision.errors import DataError
from tests.evaluation.conftest import make_detection_case, pycocotools_stats
from vision.evaluation.detection import COCO_STAT_KEYS, coco_ap, coco_ground_truth


def crowded_case(seed: int = 1) -> tuple[dict, list[dict]]:
    """The fixture's split with many scored duplicates per object (over 100 detections on some images), so that
    10, 50, 100 or 300 detections per image give different figures."""
    split, results = make_detection_case(seed=seed, num_images=12)
    rng = np.random.default_rng(seed)
    extra = []
    for r in results:
        for _ in range(int(rng.integers(10, 50))):
            x, y, w, h = r["bbox"]
            jitter = rng.normal(0, 0.15, 4) * [w, h, w, h]
            extra.append(dict(r, bbox=[x + jitter[0], y + jitter[1], max(1.0, w + jitter[2]), max(1.0, h + jitter[3])],
                              score=float(rng.random())))
    return split, results + extra


def test_fixture_has_the_hard_cases(detection_case):
    split, results = detection_case
    assert len(split["images"]) >= 30
    assert any(a["iscrowd"] for a in split["annotations"])
    with_gt = {a["image_id"] for a in split["annotations"]}
    with_dt = {r["image_id"] for r in results}
    ids = {img["id"] for img in split["images"]}
    assert ids - with_gt - with_dt, "some images have neither ground truth nor detections"
    assert with_gt - with_dt, "some images have ground truth but no detections"
    assert with_dt - with_gt, "some images have detections but no ground truth"
    assert len({a["category_id"] for a in split["annotations"]}) == 3
    assert "info" not in split and "videos" in split


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_matches_pycocotools(detection_case, iou_type):
    split, results = detection_case
    ours = coco_ap(split, results, iou_type)
    ref = pycocotools_stats(split, results, iou_type)
    assert set(ours) == set(COCO_STAT_KEYS)
    for key in COCO_STAT_KEYS:
        assert ours[key] == pytest.approx(ref[key], abs=1e-4), key
    assert 0.05 < ours["AP"] < 0.95 and ours["APs"] >= 0 and ours["APl"] >= 0  # non-trivial, all ranges defined


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_category_subset_matches_pycocotools(detection_case, iou_type):
    split, results = detection_case
    ours = coco_ap(split, results, iou_type, category_ids=[1, 2])
    ref = pycocotools_stats(split, results, iou_type, cat_ids=[1, 2])
    for key in COCO_STAT_KEYS:
        assert ours[key] == pytest.approx(ref[key], abs=1e-4), key
    assert ours["AP"] != pytest.approx(coco_ap(split, results, iou_type)["AP"], abs=1e-6)


def test_all_twelve_pycocotools_stats_are_reported():
    assert COCO_STAT_KEYS == ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
@pytest.mark.parametrize("max_dets", [(1, 10, 100), (1, 10, 50), (5, 20, 100), (1, 100, 300)])
def test_max_dets_match_pycocotools(iou_type, max_dets):
    # pycocotools: AP at 100 detections per image (-1 when 100 is not among max_dets), the other AP figures and
    # ARs/ARm/ARl at max_dets[2], one AR per max_dets entry
    split, results = crowded_case()
    per_image = np.bincount([r["image_id"] for r in results])
    assert per_image.max() > 100
    ours = coco_ap(split, results, iou_type, max_dets=max_dets)
    ref = pycocotools_stats(split, results, iou_type, max_dets=max_dets)
    assert list(ours) == list(ref)
    for key in ref:
        assert ours[key] == pytest.approx(ref[key], abs=1e-4), key
    assert (ours["AP"] == -1.0) == (100 not in max_dets)


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_one_class_and_empty_results_match_pycocotools(detection_case, iou_type):
    split, results = detection_case
    one = dict(split, categories=[c for c in split["categories"] if c["id"] == 2],
               annotations=[a for a in split["annotations"] if a["category_id"] == 2])
    one_results = [r for r in results if r["category_id"] == 2]
    assert any(a["iscrowd"] for a in one["annotations"])
    for case_split, case_results in ((one, one_results), (split, []), (one, [])):
        ours = coco_ap(case_split, case_results, iou_type)
        ref = pycocotools_stats(case_split, case_results, iou_type)
        for key in COCO_STAT_KEYS:
            assert ours[key] == pytest.approx(ref[key], abs=1e-4), key


def test_input_split_is_not_modified(detection_case):
    split, results = detection_case
    before_split, before_results = copy.deepcopy(split), copy.deepcopy(results)
    coco_ap(split, results, "segm")
    assert split == before_split and results == before_results


def test_perfect_and_empty_results(detection_case):
    split, _ = detection_case
    perfect = [{"image_id": a["image_id"], "category_id": a["category_id"], "bbox": a["bbox"], "score": 1.0,
                "segmentation": a["segmentation"]} for a in split["annotations"] if not a["iscrowd"]]
    for iou_type in ("bbox", "segm"):
        stats = coco_ap(split, perfect, iou_type)
        assert stats["AP"] == pytest.approx(1.0) and stats["AP50"] == pytest.approx(1.0)
    empty = coco_ap(split, [], "bbox")
    assert all(v in (0.0, -1.0) for v in empty.values()) and empty["AP"] == 0.0


def test_bad_ground_truth_and_categories(detection_case):
    split, results = detection_case
    with pytest.raises(DataError, match="category_ids"):
        coco_ap(split, results, "bbox", category_ids=[99])
    bad = {"images": [{"id": 1, "width": 10}], "annotations": [], "categories": []}
    with pytest.raises(DataError, match=r"images\[0\]"):
        coco_ground_truth(bad, file="gt.json")
    nosegm = {"images": [{"id": 1, "width": 10, "height": 10}], "categories": [{"id": 1}],
              "annotations": [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 2, 2]}]}
    with pytest.raises(DataError, match=r"annotations\[0\]\.segmentation"):
        coco_ground_truth(nosegm, need_segmentation=True)
    assert coco_ground_truth(nosegm)["annotations"][0]["area"] == 4.0


def test_uncompressed_rle_results(detection_case):
    from pycocotools import mask as mask_utils

    from vision.data.masks import decode_rle
    split, results = detection_case
    converted = []
    for r in results:
        m = decode_rle(r["segmentation"])
        flat = m.T.ravel().astype(np.uint8)  # column-major run lengths, starting with a run of zeros
        change = np.flatnonzero(np.diff(flat)) + 1
        bounds = np.concatenate([[0], change, [flat.size]])
        runs = np.diff(bounds).tolist()
        if flat[0] == 1:
            runs = [0] + runs
        rle = {"size": list(m.shape), "counts": runs}
        assert np.array_equal(mask_utils.decode(mask_utils.frPyObjects(rle, *m.shape)).astype(bool), m)
        converted.append(dict(r, segmentation=rle))
    assert coco_ap(split, converted, "segm") == coco_ap(split, results, "segm")


def test_mask_results_load_as_loadres_loads_them(detection_case):
    from faster_coco_eval import COCO

    from vision.evaluation.detection import _load_mask_results, _results_for

    split, results = detection_case
    coco_gt = COCO(coco_ground_truth(split, need_segmentation=True))
    theirs = coco_gt.loadRes(_results_for(results, "segm"))
    ours = _load_mask_results(coco_gt, _results_for(results, "segm"))
    assert {k: v for k, v in ours.dataset.items() if k != "annotations"} == \
        {k: v for k, v in theirs.dataset.items() if k != "annotations"}
    assert len(ours.dataset["annotations"]) == len(theirs.dataset["annotations"]) == len(results)
    for a, b in zip(ours.dataset["annotations"], theirs.dataset["annotations"]):
        assert a.keys() == b.keys()
        assert a["area"] == b["area"] and type(a["area"]) is type(b["area"])
        assert np.array_equal(a["bbox"], b["bbox"]) and a["bbox"].dtype == b["bbox"].dtype
        assert all(a[k] == b[k] for k in a if k not in ("area", "bbox", "segmentation"))
        assert a["segmentation"] == b["segmentation"]
    assert ours.imgToAnns.keys() == theirs.imgToAnns.keys() and ours.catToImgs == theirs.catToImgs
    assert _load_mask_results(coco_gt, []).dataset["annotations"] == []
