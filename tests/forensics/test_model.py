"""The detector: calibration, the real-calibrated threshold, missing features, and learning."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from vision.errors import InputError
from vision.forensics.model import ForensicDetector, feature_matrix, fit_detector, fit_platt, real_threshold


def test_fit_platt_recovers_a_known_scale_and_offset() -> None:
    rng = np.random.default_rng(0)
    true_logit = rng.normal(0, 2, 4000)
    labels = (rng.uniform(size=true_logit.size) < 1 / (1 + np.exp(-true_logit))).astype(int)
    # scores s = 3 * logit - 1.5  ->  logit = s / 3 + 0.5
    a, b = fit_platt(3.0 * true_logit - 1.5, labels)
    assert a == pytest.approx(1 / 3, rel=0.1) and b == pytest.approx(0.5, abs=0.12)
    assert fit_platt(np.zeros(3), np.zeros(3)) == (1.0, 0.0)  # one class: no calibration


def test_real_threshold_passes_the_requested_share() -> None:
    scores = np.linspace(0, 1, 101)
    thr = real_threshold(scores, 0.95)
    assert (scores < thr).mean() == pytest.approx(0.96, abs=0.011)
    assert (scores < thr).mean() >= 0.95
    with pytest.raises(InputError):
        real_threshold(np.array([]))
    with pytest.raises(InputError):
        real_threshold(scores, 1.5)


def test_feature_matrix_and_missing_values() -> None:
    x = feature_matrix([{"a": 1.0}, {"a": 2.0, "b": 3.0}], ["a", "b"])
    assert x.shape == (2, 2) and np.isnan(x[0, 1]) and x[1, 1] == 3.0
    det = ForensicDetector(["a", "b"], hidden=8)
    det.set_normalisation(np.array([[0.0, 1.0], [2.0, 3.0]], np.float32))
    prepared = det.prepare(torch.as_tensor(x))
    assert prepared.shape == (2, 4)
    assert prepared[0, 1] == 0.0 and prepared[0, 3] == 1.0 and prepared[1, 3] == 0.0
    assert torch.isfinite(det(torch.as_tensor(x))).all()
    with pytest.raises(InputError, match="features must be"):
        det(torch.zeros(2, 3))


def test_fit_detector_separates_and_calibrates() -> None:
    rng = np.random.default_rng(1)
    n = 120
    y = np.repeat([0, 1], n // 2)
    x = rng.normal(0, 1, (n, 3)).astype(np.float32)
    x[:, 0] += 2.0 * y
    x[rng.uniform(size=n) < 0.1, 2] = np.nan
    vx = rng.normal(0, 1, (n, 3)).astype(np.float32)
    vx[:, 0] += 2.0 * y
    det = fit_detector(x, y, vx, y, ["f0", "f1", "f2"], epochs=150)
    assert float(det.anom_std) > 0 and float(det.platt_a) > 0
    with torch.no_grad():
        p = det.probability(torch.as_tensor(vx)).numpy()
    assert roc_auc_score(y, p) > 0.85
    assert (p[y == 0] < float(det.threshold)).mean() >= 0.95
    ref = det.reference()
    assert ref["f0"]["sign"] == 1.0 and ref["f0"]["std"] > 0
