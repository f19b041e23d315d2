"""Open-set metrics against hand-computed values (no reference implementation of WI / A-OSE is installable), in
both conventions: ``coco`` (ours) and ``opendet2`` (OpenDet2's evaluator)."""

import math

import numpy as np
import pytest

from tests.evaluation.conftest import evaluate_cli
from vision.errors import DataError, InputError
from vision.evaluation.openset import box_iou_xywh, evaluate_openset, unknown_recall, voc07_ap, wilderness_impact

UNK = 99


def _ann(i, image_id, cat, bbox):
    return {"id": i, "image_id": image_id, "category_id": cat, "bbox": bbox, "area": bbox[2] * bbox[3], "iscrowd": 0}


@pytest.fixture()
def gt():
    anns = [
        _ann(1, 1, 1, [0, 0, 10, 10]),  # cat
        _ann(2, 1, 3, [50, 50, 10, 10]),  # zebra (unknown) U1
        _ann(3, 2, 1, [0, 0, 10, 10]),  # cat
        _ann(4, 2, 2, [20, 20, 10, 10]),  # dog
        _ann(5, 2, 3, [50, 50, 10, 10]),  # U2
        _ann(6, 2, 3, [70, 70, 10, 10]),  # U3
    ]
    return {"images": [{"id": 1, "width": 100, "height": 100}, {"id": 2, "width": 100, "height": 100}],
            "annotations": anns,
            "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}, {"id": 3, "name": "zebra"}]}


def _det(image_id, cat, bbox, score):
    return {"image_id": image_id, "category_id": cat, "bbox": bbox, "score": score}


@pytest.fixture()
def results():
    return [
        _det(1, 1, [0, 0, 10, 10], 0.9),  # cat TP
        _det(1, 1, [50, 50, 10, 10], 0.8),  # cat FP on U1
        _det(2, 1, [50, 50, 10, 10], 0.7),  # cat FP on U2
        _det(2, 1, [0, 0, 10, 10], 0.6),  # cat TP
        _det(2, 1, [80, 0, 10, 10], 0.5),  # cat FP on nothing
        _det(2, 2, [70, 70, 10, 10], 0.95),  # dog FP on U3
        _det(2, 2, [20, 20, 10, 10], 0.4),  # dog TP
        _det(1, UNK, [50, 50, 10, 10], 0.9),  # matches U1
        _det(1, UNK, [51, 50, 10, 10], 0.8),  # duplicate on U1
        _det(2, UNK, [70, 72, 10, 10], 0.5),  # IoU 80/120 with U3
        _det(2, UNK, [0, 0, 10, 10], 0.3),  # on a known object
    ]


def test_iou():
    assert box_iou_xywh([[70, 72, 10, 10]], [[70, 70, 10, 10]])[0, 0] == pytest.approx(80 / 120)
    assert box_iou_xywh([[0, 0, 10, 10]], [[20, 20, 5, 5]])[0, 0] == 0.0


def test_hand_computed_open_set_figures(gt, results):
    m = evaluate_openset(gt, results, vocabulary_category_ids=[1, 2], unknown_category_id=UNK,
                         novel_category_ids=[2])
    # A-OSE: the cat boxes on U1 and U2 and the dog box on U3
    assert m["A-OSE"] == 3
    # WI: cat recall [.5,.5,.5,1,1] -> closest to .8 at index 3: 4 detections, 2 on unknowns;
    #     dog recall [0, 1] -> index 1: 2 detections, 1 on an unknown. WI = mean(2,1)/mean(4,2) x100 = 50
    assert m["WI"] == pytest.approx(50.0)
    assert m["U-Recall"] == pytest.approx(2 / 3)
    # AP_U (COCO 101-point AP50): precision 1 up to recall 1/3 (34 points), 2/3 up to 2/3 (33 points), then 0
    assert m["AP_U"] == pytest.approx(56 / 101, abs=1e-4)
    # IV AP50: cat (51 x 1 + 50 x .5) / 101, dog 0.5
    iv = ((51 + 25) / 101 + 0.5) / 2
    assert m["IV_AP50"] == pytest.approx(iv, abs=1e-4)
    assert m["novel_AP50"] == pytest.approx(0.5, abs=1e-4)
    assert m["H-mean"] == pytest.approx(2 * iv * (2 / 3) / (iv + 2 / 3), abs=1e-4)
    assert m["num_unknown_gt"] == 3 and m["num_known_gt"] == 3 and m["num_unknown_detections"] == 4


def test_recall_level_changes_operating_point(gt, results):
    known_gt = [a for a in gt["annotations"] if a["category_id"] in (1, 2)]
    unknown_gt = [a for a in gt["annotations"] if a["category_id"] == 3]
    known = [r for r in results if r["category_id"] in (1, 2)]
    # recall level 0.5: cat index 0 (1 det, 0 hits), dog closest of [0, 1] to .5 -> first (index 0: 1 det, 1 hit)
    assert wilderness_impact(known_gt, unknown_gt, known, recall_level=0.5) == pytest.approx(100 * 0.5 / 1.0)
    assert unknown_recall([], []) == -1.0


def test_closed_set_detector_and_errors(gt, results):
    closed = [r for r in results if r["category_id"] != UNK]
    m = evaluate_openset(gt, closed, [1, 2], UNK)
    assert m["U-Recall"] == 0.0 and m["AP_U"] == 0.0 and m["H-mean"] == 0.0
    assert m["novel_AP50"] == -1.0
    with pytest.raises(DataError, match="unknown_category_id"):
        evaluate_openset(gt, results, [1, 2], 2)
    with pytest.raises(DataError, match="not in the split"):
        evaluate_openset(gt, results, [1, 7], UNK)
    with pytest.raises(DataError, match="empty"):
        evaluate_openset(gt, results, [], UNK)
    no_unknown = dict(gt, annotations=[a for a in gt["annotations"] if a["category_id"] != 3])
    m = evaluate_openset(no_unknown, results, [1, 2], UNK)
    assert m["U-Recall"] == -1.0 and m["AP_U"] == -1.0 and m["A-OSE"] == 0
    assert math.isfinite(m["IV_AP50"])


def test_the_one_entry_point_adds_open_set_figures(gt, results):
    """``evaluate(task="detection", unknown_category_id=...)`` = COCO AP + the same open-set figures."""
    from vision.evaluation.evaluate import evaluate

    gt = {**gt, "info": {"vocabulary": ["cat", "dog"]}}
    metrics = evaluate(gt, results, "detection", unknown_category_id=UNK)
    direct = evaluate_openset(gt, results, [1, 2], UNK)
    for key in ("U-Recall", "WI", "A-OSE", "AP_U", "IV_AP50"):
        assert metrics[key] == pytest.approx(direct[key], nan_ok=True)
    assert "AP50" in metrics
    with pytest.raises(DataError, match="info.vocabulary"):
        evaluate({k: v for k, v in gt.items() if k != "info"}, results, "detection", unknown_category_id=UNK)


def test_category_ids_vocabulary_restricts_ap_to_the_split_vocabulary(gt, results):
    """``category_ids="vocabulary"`` scores exactly as the explicit ids of ``info.vocabulary`` (what training's
    ``test`` reports); a split without a vocabulary is refused by name."""
    from vision.evaluation.evaluate import evaluate

    named = {**gt, "info": {"vocabulary": ["cat", "dog"]}}
    by_name = evaluate(named, results, "detection", category_ids="vocabulary", unknown_category_id=UNK)
    assert by_name == evaluate(named, results, "detection", category_ids=[1, 2], unknown_category_id=UNK)
    assert by_name["AP"] != evaluate(named, results, "detection", unknown_category_id=UNK)["AP"]
    with pytest.raises(DataError, match="category_ids='vocabulary' needs the split's info.vocabulary"):
        evaluate(gt, results, "detection", category_ids="vocabulary", unknown_category_id=UNK)


# OpenDet2's evaluator (csuhan/opendet2, opendet2/evaluation/pascal_voc_evaluation.py, from OWOD) as the
# reference for convention="opendet2": VOC07 11-point AP, WI over known classes with detections, +1 pixel IoU on
# VOC boxes.

def _opendet2_overlaps(gt_voc: np.ndarray, det_voc: np.ndarray) -> np.ndarray:
    """OpenDet2's compute_overlaps: inclusive-pixel boxes, widths and heights + 1."""
    iw = np.maximum(np.minimum(gt_voc[:, 2], det_voc[2]) - np.maximum(gt_voc[:, 0], det_voc[0]) + 1.0, 0.0)
    ih = np.maximum(np.minimum(gt_voc[:, 3], det_voc[3]) - np.maximum(gt_voc[:, 1], det_voc[1]) + 1.0, 0.0)
    inter = iw * ih
    area_det = (det_voc[2] - det_voc[0] + 1.0) * (det_voc[3] - det_voc[1] + 1.0)
    area_gt = (gt_voc[:, 2] - gt_voc[:, 0] + 1.0) * (gt_voc[:, 3] - gt_voc[:, 1] + 1.0)
    return inter / (area_det + area_gt - inter)


def test_continuous_iou_is_opendet2_iou_on_the_boxes_its_pipeline_sees():
    # OpenDet2 reads VOC ground truth (1-based inclusive corners; detectron2's loader subtracts 1 from xmin, ymin)
    # and writes predictions with xmin, ymin + 1 before its +1-pixel IoU. A COCO box [x, y, w, h] is the VOC box
    # (x + 1, y + 1, x + w, y + h); a predicted box [x, y, w, h] is written as (x + 1, y + 1, x + w, y + h).
    rng = np.random.default_rng(0)
    gts = np.concatenate([rng.integers(0, 60, (20, 2)), rng.integers(1, 30, (20, 2))], axis=1).astype(float)
    dets = np.concatenate([rng.uniform(0, 60, (30, 2)), rng.uniform(0.5, 30, (30, 2))], axis=1)
    dets[:10] = gts[:10] + rng.normal(0, 2, (10, 4))
    dets[:, 2:] = np.maximum(dets[:, 2:], 0.5)
    to_voc = np.array([[1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 1, 0], [0, 0, 0, 1]], float)  # XYWH -> x1, y1, x2, y2
    gt_voc = gts @ to_voc + [1, 1, 0, 0]
    det_voc = dets @ to_voc + [1, 1, 0, 0]
    reference = np.stack([_opendet2_overlaps(gt_voc, d) for d in det_voc])
    np.testing.assert_allclose(box_iou_xywh(dets, gts), reference, atol=1e-12)
    assert (reference > 0.5).sum() >= 5
    # the +1 matters only for boxes read as inclusive pixel corners: [0, 0, 10, 10] vs [2, 0, 10, 10]
    assert box_iou_xywh([[2, 0, 10, 10]], [[0, 0, 10, 10]])[0, 0] == pytest.approx(80 / 120)


def test_voc07_eleven_point_ap():
    # detectron2's voc_ap(use_07_metric=True): mean over t in np.arange(0, 1.1, 0.1) of the highest precision at
    # recall >= t. Those thresholds are floats: the fourth is 0.30000000000000004, above a recall of 3/10.
    assert voc07_ap(np.array([0.3]), np.array([1.0])) == pytest.approx(3 / 11)
    assert voc07_ap(np.array([0.5, 1.0]), np.array([1.0, 0.5])) == pytest.approx((6 * 1.0 + 5 * 0.5) / 11)
    assert voc07_ap(np.array([]), np.array([])) == 0.0


def test_opendet2_convention_hand_computed(gt, results):
    m = evaluate_openset(gt, results, [1, 2], UNK, convention="opendet2")
    # unknown detections by score: U1 (TP), duplicate on U1 (FP), U3 (TP), a known object (FP); 3 unknown objects
    # recall 1/3 1/3 2/3 2/3, precision 1 1/2 2/3 1/2 -> 11-point AP = (4 x 1 + 3 x 2/3) / 11
    assert m["AP_U"] == pytest.approx(6 / 11)
    assert m["openset_convention"] == "opendet2"
    coco = evaluate_openset(gt, results, [1, 2], UNK)
    assert coco["AP_U"] == pytest.approx(56 / 101, abs=1e-4) and coco["openset_convention"] == "coco"
    for key in ("U-Recall", "WI", "A-OSE", "IV_AP50"):  # every class with detections has ground truth here
        assert m[key] == pytest.approx(coco[key])


def test_opendet2_wi_keeps_known_classes_without_ground_truth(gt, results):
    # vocabulary cat, dog, zebra: the zebra objects become okapis (4, unknown), so zebra (3) is a known class without
    # ground truth, with two detections: the first on nothing, the second on an unknown object.
    gt = dict(gt, categories=gt["categories"] + [{"id": 4, "name": "okapi"}])
    gt["annotations"] = [dict(a, category_id=4) if a["category_id"] == 3 else a for a in gt["annotations"]]
    extra = [_det(1, 3, [30, 30, 10, 10], 0.95), _det(1, 3, [50, 50, 10, 10], 0.2)]
    known_gt = [a for a in gt["annotations"] if a["category_id"] in (1, 2)]
    unknown_gt = [a for a in gt["annotations"] if a["category_id"] == 4]
    known = [r for r in results if r["category_id"] in (1, 2)] + extra
    # coco: cat (4 detections, 2 on unknowns) and dog (2, 1): 100 x mean(2, 1) / mean(4, 2) = 50
    assert wilderness_impact(known_gt, unknown_gt, known) == pytest.approx(50.0)
    # opendet2: zebra's recall is 0/0 at every rank, so its operating point is its first detection (0 hits of 1):
    # 100 x mean(2, 1, 0) / mean(4, 2, 1)
    assert wilderness_impact(known_gt, unknown_gt, known, classes=[1, 2, 3]) == pytest.approx(100 * 1 / (7 / 3))
    m = evaluate_openset(gt, [r for r in results if r["category_id"] != 3] + extra, [1, 2, 3], UNK,
                         convention="opendet2")
    assert m["WI"] == pytest.approx(100 * 1 / (7 / 3))
    assert evaluate_openset(gt, [r for r in results if r["category_id"] != 3] + extra, [1, 2, 3],
                            UNK)["WI"] == pytest.approx(50.0)
    with pytest.raises(DataError, match="convention"):
        evaluate_openset(gt, results, [1, 2], UNK, convention="voc")


def test_the_one_entry_point_passes_the_convention(gt, results, tmp_path):
    import json

    from vision.evaluation.evaluate import evaluate

    gt = {**gt, "info": {"vocabulary": ["cat", "dog"]}}
    metrics = evaluate(gt, results, "detection", unknown_category_id=UNK, openset_convention="opendet2")
    assert metrics["AP_U"] == pytest.approx(6 / 11) and metrics["openset_convention"] == "opendet2"
    with pytest.raises(InputError, match="unknown_category_id"):
        evaluate(gt, results, "detection", openset_convention="opendet2")
    main = evaluate_cli.main

    (tmp_path / "split.json").write_text(json.dumps(gt))
    (tmp_path / "res.json").write_text(json.dumps(results))
    assert main(["--split", str(tmp_path / "split.json"), "--results", str(tmp_path / "res.json"), "--task",
                 "detection", "--unknown-category-id", str(UNK), "--openset-convention", "opendet2",
                 "--out", str(tmp_path / "m.json")]) == 0
    assert json.loads((tmp_path / "m.json").read_text())["AP_U"] == pytest.approx(6 / 11)
