"""Hand-checked geometry metrics: depth, relative pose, Umeyama alignment and Chamfer distances."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from vision.errors import InputError
from vision.evaluation.geometry import (chamfer_metrics, depth_metrics, pose_auc, pose_metrics,
                                        relative_pose_errors, umeyama)


def test_scaled_depth_is_perfect_after_median_scaling():
    rng = np.random.default_rng(0)
    gt = rng.uniform(0.5, 10.0, size=(3, 12, 16))
    gt[0, 0, 0] = 0.0        # invalid: not > 0
    gt[1, 2, 3] = 200.0      # invalid: beyond max_depth
    pred = gt * 3.7
    for align in ("image", "sequence"):
        m = depth_metrics(pred, gt, align=align)
        assert m["abs_rel"] == pytest.approx(0.0, abs=1e-12) and m["delta_1.25"] == 1.0
        assert m["num_pixels"] == 3 * 12 * 16 - 2
    # per-image scales differ: only per-image alignment is perfect
    pred_varied = gt * np.array([1.0, 2.0, 4.0])[:, None, None]
    assert depth_metrics(pred_varied, gt, align="image")["abs_rel"] == pytest.approx(0.0, abs=1e-12)
    assert depth_metrics(pred_varied, gt, align="sequence")["abs_rel"] > 0.1


def test_abs_rel_and_delta_hand_computed():
    gt = np.array([[1.0, 2.0], [4.0, 8.0]])
    pred = np.array([[1.0, 3.0], [4.0, 6.0]])
    # no alignment: |0|/1, |1|/2, 0/4, |2|/8 -> mean (0 + 0.5 + 0 + 0.25) / 4 = 0.1875
    # ratios max(p/g, g/p): 1, 1.5, 1, 1.333 -> delta = 2/4
    m = depth_metrics(pred, gt, align="none")
    assert m["abs_rel"] == pytest.approx(0.1875) and m["delta_1.25"] == pytest.approx(0.5)
    # median scaling: median(gt) = 3, median(pred) = 3.5 -> s = 6/7
    s = 3.0 / 3.5
    expected = np.mean(np.abs(pred * s - gt) / gt)
    assert depth_metrics(pred, gt, align="image")["abs_rel"] == pytest.approx(expected)
    with pytest.raises(InputError):
        depth_metrics(pred, np.zeros_like(gt))


def _cameras(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rot = Rotation.random(n, random_state=seed).as_matrix()
    t = rng.normal(size=(n, 3)) * 2
    return np.concatenate([rot, t[:, :, None]], axis=2)


def test_identical_cameras_give_auc_one():
    cams = _cameras(5, 0)
    m = pose_metrics(cams, cams)
    assert m["AUC@30"] == pytest.approx(1.0)
    assert m["RRA@5"] == 1.0 and m["RTA@5"] == 1.0 and m["rotation_error_mean"] < 1e-5


def test_known_ten_degree_rotation_error():
    gt = _cameras(2, 1)
    pred = gt.copy()
    # rotate camera 1 by a further 10 degrees about its own optical axis, keeping its centre fixed
    extra = Rotation.from_euler("z", 10, degrees=True).as_matrix()
    centre = -gt[1, :, :3].T @ gt[1, :, 3]
    pred[1, :, :3] = extra @ gt[1, :, :3]
    pred[1, :, 3] = -pred[1, :, :3] @ centre
    rot, trans = relative_pose_errors(pred, gt)
    assert rot[0] == pytest.approx(10.0, abs=1e-6)
    m = pose_metrics(pred, gt)
    assert m["RRA@5"] == 0.0 and m["RRA@15"] == 1.0


def test_translation_direction_error_is_folded_and_auc_histogram():
    gt = np.stack([np.hstack([np.eye(3), np.zeros((3, 1))]), np.hstack([np.eye(3), [[1.0], [0.0], [0.0]]])])
    pred = gt.copy()
    pred[1, :, 3] = [-1.0, 0.0, 0.0]  # opposite direction: 180 -> folded to 0
    assert relative_pose_errors(pred, gt)[1][0] == pytest.approx(0.0)
    pred[1, :, 3] = [1.0, 1.0, 0.0]   # 45 degrees
    assert relative_pose_errors(pred, gt)[1][0] == pytest.approx(45.0)
    # errors max(r, t) = [0.5, 2.5, 40]: cumulative histogram over bins [0,1),...,[29,30]: 1/3 from bin 0,
    # 2/3 from bin 2 -> mean = (1/3 * 2 + 2/3 * 28) / 30
    auc = pose_auc(np.array([0.5, 2.5, 1.0]), np.array([0.1, 0.0, 40.0]))
    assert auc == pytest.approx((2 / 3 + 56 / 3) / 30)


def test_umeyama_recovers_similarity():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(50, 3))
    r = Rotation.from_euler("xyz", [20, -35, 60], degrees=True).as_matrix()
    y = 2.5 * x @ r.T + np.array([1.0, -2.0, 0.5])
    s, r_hat, t_hat = umeyama(x, y)
    assert s == pytest.approx(2.5)
    np.testing.assert_allclose(r_hat, r, atol=1e-9)
    np.testing.assert_allclose(t_hat, [1.0, -2.0, 0.5], atol=1e-9)
    # a similarity-transformed copy has zero Chamfer distance after alignment
    assert chamfer_metrics(y, x)["chamfer"] == pytest.approx(0.0, abs=1e-9)


def test_chamfer_of_shifted_copy_hand_computed():
    gt = np.array([[0.0, 0.0, 0.0], [10.0, 0.0, 0.0], [0.0, 10.0, 0.0]])
    pred = gt + np.array([0.0, 0.0, 0.3])
    m = chamfer_metrics(pred, gt, align=False)
    assert m["accuracy"] == pytest.approx(0.3) and m["completeness"] == pytest.approx(0.3)
    assert m["chamfer"] == pytest.approx(0.3)
    # an extra far prediction: accuracy mean over 4 preds = (0.3 * 3 + 5) / 4, completeness unchanged
    pred2 = np.vstack([pred, [[0.0, 0.0, 5.0]]])
    m = chamfer_metrics(pred2, gt, align=False, correspondences=False)
    assert m["accuracy"] == pytest.approx((0.9 + 5.0) / 4) and m["completeness"] == pytest.approx(0.3)
    assert m["chamfer"] == pytest.approx(((0.9 + 5.0) / 4 + 0.3) / 2)
