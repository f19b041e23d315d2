"""Open-set metrics against hand-computed values (no reference implementation of WI / A-OSE is installable)."""

import math

import pytest

from vision.errors import DataError
from vision.evaluation.openset import box_iou_xywh, evaluate_openset, unknown_recall, wilderness_impact

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
