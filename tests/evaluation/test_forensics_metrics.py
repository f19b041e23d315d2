"""Forensic metrics against scikit-learn and hand-computed values."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, roc_auc_score

from vision.errors import DataError
from vision.evaluation.forensics import equal_error_rate, evaluate_forensics, tpr_at_fpr


def _split(labels: list[str], gens: list[str | None]) -> dict:
    videos = []
    for i, (label, gen) in enumerate(zip(labels, gens), start=1):
        v = {"id": i, "name": f"v{i}", "label": label, "file_name": f"v{i}.mp4"}
        if gen:
            v["generator"] = gen
        videos.append(v)
    return {"images": [], "annotations": [], "categories": [], "videos": videos}


def test_hand_computed_example() -> None:
    # real scores 0.1 0.2 0.3 0.6 ; A scores 0.5 0.9 ; B scores 0.25 0.4
    labels = ["real"] * 4 + ["generated"] * 4
    gens = [None] * 4 + ["A", "A", "B", "B"]
    scores = [0.1, 0.2, 0.3, 0.6, 0.5, 0.9, 0.25, 0.4]
    gt = _split(labels, gens)
    results = [{"video_id": i + 1, "score": s, "verdict": "real"} for i, s in enumerate(scores)]
    m = evaluate_forensics(gt, results, threshold=0.45)
    y = np.array([0] * 4 + [1] * 4)
    assert m["AUC"] == pytest.approx(roc_auc_score(y, scores))
    assert m["AP"] == pytest.approx(average_precision_score(y, scores))
    # at 0.45: real 0.6 is wrong (3/4 real correct), A both right, B both wrong -> ACC 5/8
    assert m["ACC"] == pytest.approx(5 / 8) and m["real_acc"] == pytest.approx(0.75) and m["fake_acc"] == 0.5
    # A vs real: pairs (fake > real) = 0.5 beats 3 of 4, 0.9 beats 4 -> AUC 7/8
    assert m["A/AUC"] == pytest.approx(7 / 8) and m["A/fake_acc"] == 1.0
    # B vs real: 0.25 beats 2, 0.4 beats 3 -> 5/8
    assert m["B/AUC"] == pytest.approx(5 / 8)
    assert m["macro/AUC"] == pytest.approx((7 / 8 + 5 / 8) / 2)
    assert m["threshold_source"] == "given" and m["num_real"] == 4 and m["num_generated"] == 4


def test_eer_and_tpr_at_fpr_by_hand() -> None:
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    s = np.array([0.1, 0.2, 0.3, 0.6, 0.5, 0.7, 0.8, 0.9])
    # threshold 0.6 keeps fpr 1/4, fnr 1/4 (0.5 missed): |fnr - fpr| = 0 -> EER = 0.25
    assert equal_error_rate(y, s) == pytest.approx(0.25)
    # with FPR <= 5% (no false positive) the best TPR is 3/4 (0.7, 0.8, 0.9 above 0.6)
    assert tpr_at_fpr(y, s, 0.05) == pytest.approx(0.75)
    assert math.isnan(equal_error_rate(np.zeros(3), s[:3]))


def test_random_scores_match_sklearn_and_threshold_from_real() -> None:
    rng = np.random.default_rng(0)
    n = 200
    y = rng.integers(0, 2, n)
    s = rng.normal(y * 1.0, 1.0)
    gt = _split(["generated" if v else "real" for v in y], ["G" if v else None for v in y])
    m = evaluate_forensics(gt, [{"video_id": i + 1, "score": float(v)} for i, v in enumerate(s)])
    assert m["AUC"] == pytest.approx(roc_auc_score(y, s)) and m["AP"] == pytest.approx(average_precision_score(y, s))
    assert m["threshold_source"] == "eval-real" and m["real_acc"] >= 0.95
    assert m["G/AUC"] == pytest.approx(m["AUC"]) and m["macro/AUC"] == pytest.approx(m["AUC"])


def test_bad_results_name_the_field() -> None:
    gt = _split(["real", "generated"], [None, "A"])
    with pytest.raises(DataError, match=r"results\[1\]\.score"):
        evaluate_forensics(gt, [{"video_id": 1, "score": 0.1}, {"video_id": 2, "score": float("nan")}])
    with pytest.raises(DataError, match="no result"):
        evaluate_forensics(gt, [{"video_id": 1, "score": 0.1}])
    with pytest.raises(DataError, match=r"results\[1\]\.video_id"):
        evaluate_forensics(gt, [{"video_id": 1, "score": 0.1}, {"video_id": 9, "score": 0.2}])
    with pytest.raises(DataError, match="duplicate"):
        evaluate_forensics(gt, [{"video_id": 1, "score": 0.1}, {"video_id": 1, "score": 0.2}])


def test_the_one_entry_point_scores_forensics() -> None:
    from vision.evaluation.evaluate import evaluate

    gt = _split(["real", "real", "generated", "generated"], [None, None, "vae", "vae"])
    results = [{"video_id": v["id"], "score": s} for v, s in zip(gt["videos"], [0.1, 0.3, 0.7, 0.2])]
    metrics = evaluate(gt, results, "forensics", threshold=0.5)
    assert metrics["AUC"] == pytest.approx(0.75)
    assert metrics == evaluate_forensics(gt, results, threshold=0.5)
