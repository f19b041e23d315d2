"""The detector: calibration, the real-calibrated threshold, missing features, and learning."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score

from vision.errors import InputError
from vision.forensics.model import ForensicDetector, calibrate, feature_matrix, fit_platt, training_loss


def test_fit_platt_recovers_a_known_scale_and_offset() -> None:
    rng = np.random.default_rng(0)
    true_logit = rng.normal(0, 2, 4000)
    labels = (rng.uniform(size=true_logit.size) < 1 / (1 + np.exp(-true_logit))).astype(int)
    # scores s = 3 * logit - 1.5  ->  logit = s / 3 + 0.5
    a, b = fit_platt(3.0 * true_logit - 1.5, labels)
    assert a == pytest.approx(1 / 3, rel=0.1) and b == pytest.approx(0.5, abs=0.12)
    assert fit_platt(np.zeros(3), np.zeros(3)) == (1.0, 0.0)  # one class: no calibration


def test_feature_matrix_and_missing_values() -> None:
    x = feature_matrix([{"a": 1.0}, {"a": 2.0, "b": 3.0}], ["a", "b"])
    assert x.shape == (2, 2) and np.isnan(x[0, 1]) and x[1, 1] == 3.0
    det = ForensicDetector(["a", "b"], hidden=8, dropout=0.1)
    det.set_normalisation(np.array([[0.0, 1.0], [2.0, 3.0]], np.float32))
    prepared = det.prepare(torch.as_tensor(x))
    assert prepared.shape == (2, 4)
    assert prepared[0, 1] == 0.0 and prepared[0, 3] == 1.0 and prepared[1, 3] == 0.0
    assert torch.isfinite(det(torch.as_tensor(x))).all()
    with pytest.raises(InputError, match="features must be"):
        det(torch.zeros(2, 3))


def test_training_and_calibration_separate_and_pass_the_real_share() -> None:
    torch.manual_seed(0)
    rng = np.random.default_rng(1)
    n = 120
    y = np.repeat([0, 1], n // 2)
    x = rng.normal(0, 1, (n, 3)).astype(np.float32)
    x[:, 0] += 2.0 * y
    x[rng.uniform(size=n) < 0.1, 2] = np.nan
    vx = rng.normal(0, 1, (n, 3)).astype(np.float32)
    vx[:, 0] += 2.0 * y
    det = ForensicDetector(["a.f0", "a.f1", "b.f2"], hidden=16, dropout=0.1)
    assert det.tools == ["a", "b"] and det.reliability.tolist() == [0.5, 0.5]
    det.set_normalisation(x)
    det.set_reference(x, y)
    opt = torch.optim.AdamW(det.parameters(), lr=3e-3)
    for _ in range(150):
        loss = training_loss(det, torch.as_tensor(x), torch.as_tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
    det.train()
    calibrate(det, vx, y)
    assert det.training  # calibrate leaves the mode as it found it
    assert float(det.anom_std) > 0 and float(det.platt_a) > 0
    with torch.no_grad():
        p = det.eval().probability(torch.as_tensor(vx)).numpy()
    assert roc_auc_score(y, p) > 0.85
    assert (p[y == 0] < float(det.threshold)).mean() >= 0.95
    reliability = det.tool_reliability()
    assert reliability["a"] == pytest.approx(max(roc_auc_score(y, vx[:, 0]), 1 - roc_auc_score(y, vx[:, 0])))
    assert 0.5 <= reliability["b"] < reliability["a"]
    ref = det.reference()
    assert ref["a.f0"]["sign"] == 1.0 and ref["a.f0"]["std"] > 0


def test_a_threshold_read_back_from_its_float32_buffer_passes_ties_with_the_quantile() -> None:
    """Real probabilities equal to the 95% quantile stay below the stored threshold (the buffer is float32)."""
    det = ForensicDetector(["a.f0"], hidden=4, dropout=0.0)
    with torch.no_grad():  # a constant model: every video gets the same probability
        for p in det.net.parameters():
            p.zero_()
    vx = np.zeros((40, 1), np.float32)
    y = np.repeat([0, 1], 20)
    calibrate(det, vx, y)
    p = det.probability(torch.as_tensor(vx)).detach()
    assert det.threshold.dtype == torch.float32 and bool((p < det.threshold).all())
    assert float(det.threshold) == float(np.nextafter(np.float32(p[0]), np.float32(1)))


def test_an_older_state_dict_without_the_generated_reference_loads_with_it_unknown():
    from vision.forensics.model import ForensicDetector

    detector = ForensicDetector(["a.x", "b.y"], hidden=4, dropout=0.0)
    features = np.array([[0.0, 1.0], [1.0, 2.0], [5.0, 2.0], [6.0, 4.0]])
    detector.set_reference(features, np.array([0, 0, 1, 1]))
    assert detector.reference()["a.x"]["gen_mean"] == pytest.approx(5.5)
    old = {k: v for k, v in detector.state_dict().items() if k not in ("gen_mean", "gen_std", "pass_rate")}
    fresh = ForensicDetector(["a.x", "b.y"], hidden=4, dropout=0.0)
    fresh.load_state_dict(old)
    assert "gen_mean" not in fresh.reference()["a.x"] and float(fresh.pass_rate) == pytest.approx(0.95)
    assert fresh.reference()["a.x"]["mean"] == pytest.approx(0.5)


def test_balanced_platt_does_not_follow_the_class_ratio() -> None:
    rng = np.random.default_rng(1)
    true_logit = rng.normal(0, 2, 4000)
    labels = (rng.uniform(size=true_logit.size) < 1 / (1 + np.exp(-true_logit))).astype(int)
    many = np.concatenate([true_logit] + [true_logit[labels == 1]] * 7)  # every generated clip 8 times
    many_labels = np.concatenate([labels] + [labels[labels == 1]] * 7)
    _, b_plain = fit_platt(many, many_labels)
    _, b_balanced = fit_platt(many, many_labels, balanced=True)
    _, b_reference = fit_platt(true_logit, labels, balanced=True)
    assert b_plain - b_balanced == pytest.approx(np.log(8), abs=0.3)  # the plain fit takes the ratio as a prior
    assert b_balanced == pytest.approx(b_reference, abs=0.1)
