import pytest
import torch

from vision.errors import InputError
from vision.geometry.camera import cameras_to_pose_encoding, depth_to_world_points, quat_to_matrix
from vision.geometry.losses import camera_loss, confidence_regression_loss, depth_loss, normalize_scene, point_loss


def make_scene(b=1, s=3, h=8, w=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, s, 4, generator=g, dtype=torch.float64)
    r = quat_to_matrix(q / q.norm(dim=-1, keepdim=True))
    extr = torch.cat([r, torch.randn(b, s, 3, 1, generator=g, dtype=torch.float64)], -1)
    intr = torch.tensor([[9.0, 0, w / 2], [0, 9.0, h / 2], [0, 0, 1]], dtype=torch.float64).expand(b, s, 3, 3)
    depth = torch.rand(b, s, h, w, generator=g, dtype=torch.float64) * 3 + 1
    valid = torch.rand(b, s, h, w, generator=g) > 0.2
    return extr, intr, depth, valid


def test_camera_loss_zero_for_perfect_and_iteration_weights():
    extr, intr, _, _ = make_scene(b=2)
    gt = cameras_to_pose_encoding(extr, intr, (8, 10)).float()
    perfect = [gt.clone() for _ in range(4)]
    assert camera_loss(perfect, extr.float(), intr.float(), (8, 10))["loss"].item() < 1e-5
    # an error of 1 on every translation entry in iteration i only: loss_t = 0.6 ** (n - i - 1)
    for i in range(4):
        preds = [gt.clone() for _ in range(4)]
        preds[i] = preds[i] + torch.tensor([1.0, 1, 1, 0, 0, 0, 0, 0, 0])
        out = camera_loss(preds, extr.float(), intr.float(), (8, 10))
        assert out["loss_t"].item() == pytest.approx(0.6 ** (3 - i), abs=1e-5)
    fov_err = [gt + torch.tensor([0.0] * 7 + [1.0, 1.0])]
    assert camera_loss(fov_err, extr.float(), intr.float(), (8, 10))["loss"].item() == pytest.approx(0.5, abs=1e-5)


def test_camera_loss_gradients_flow_and_nan_caught():
    extr, intr, _, _ = make_scene()
    pred = torch.randn(1, 3, 9, requires_grad=True)
    camera_loss([pred * 1.0, pred * 2.0], extr.float(), intr.float(), (8, 10))["loss"].backward()
    assert pred.grad is not None and pred.grad.abs().sum() > 0
    bad = torch.randn(1, 3, 9)
    bad[0, 1, 2] = float("nan")
    with pytest.raises(InputError, match="pose_enc_list"):
        camera_loss([bad], extr.float(), intr.float(), (8, 10))


def test_regression_loss_minimal_for_perfect_prediction_and_gradients():
    extr, intr, depth, valid = make_scene()
    gt = depth_to_world_points(depth, extr, intr).float()
    conf = torch.full(gt.shape[:-1], 2.0)
    perfect = point_loss(gt.clone(), conf, gt, valid)
    assert perfect["loss_reg"].item() == 0 and perfect["loss_grad"].item() == 0
    assert perfect["loss_conf"].item() == pytest.approx(-0.2 * torch.log(torch.tensor(2.0)).item(), abs=1e-6)
    pred = (gt + 0.1 * torch.randn(gt.shape, generator=torch.Generator().manual_seed(2))).requires_grad_(True)
    conf_raw = torch.zeros(gt.shape[:-1], requires_grad=True)
    noisy = point_loss(pred, 1 + conf_raw.exp(), gt, valid)
    assert noisy["loss"].item() > perfect["loss"].item()
    noisy["loss"].backward()
    assert pred.grad.abs().sum() > 0 and conf_raw.grad.abs().sum() > 0
    assert pred.grad[~valid].abs().sum() == 0  # invalid pixels receive no gradient


def test_quantile_filter_drops_outliers_and_depth_wrapper():
    gt = torch.ones(1, 1, 10, 10)
    pred = gt[..., None].clone()
    pred[0, 0, 3, 3, 0] = 1000.0  # one wild pixel out of 100 (top 2% are dropped)
    out = depth_loss(pred, torch.ones(1, 1, 10, 10), gt, torch.ones(1, 1, 10, 10, dtype=torch.bool),
                     grad_weight=0.0)
    assert out["loss_reg"].item() == 0.0
    kept_all = depth_loss(pred, torch.ones(1, 1, 10, 10), gt, torch.ones(1, 1, 10, 10, dtype=torch.bool),
                          grad_weight=0.0, keep_quantile=1.0)
    assert kept_all["loss_reg"].item() > 1.0


def test_nan_prediction_raises_and_nan_ground_truth_is_excluded():
    gt = torch.rand(1, 2, 4, 4, 3)
    valid = torch.ones(1, 2, 4, 4, dtype=torch.bool)
    pred = gt.clone()
    pred[0, 1, 2, 2, 0] = float("inf")
    with pytest.raises(InputError, match="pred"):
        confidence_regression_loss(pred, gt, torch.ones(1, 2, 4, 4), valid)
    gt_bad = gt.clone()
    gt_bad[0, 0, 1, 1] = float("nan")
    out = confidence_regression_loss(gt.clone(), gt_bad, torch.ones(1, 2, 4, 4), valid)
    assert torch.isfinite(out["loss"]) and out["loss_reg"].item() == 0
    empty = confidence_regression_loss(gt.clone(), gt, torch.ones(1, 2, 4, 4), torch.zeros_like(valid))
    assert empty["loss"].item() == 0


def test_normalize_scene_camera0_frame_unit_scale_and_similarity_invariance():
    extr, intr, depth, valid = make_scene(b=1, s=3)
    pts = depth_to_world_points(depth, extr, intr)
    norm = normalize_scene(extr, intr, depth, pts, valid)
    torch.testing.assert_close(norm.extrinsics[:, 0], torch.cat([torch.eye(3, dtype=torch.float64)[None],
                                                                 torch.zeros(1, 3, 1, dtype=torch.float64)], -1))
    assert norm.world_points[valid].norm(dim=-1).mean().item() == pytest.approx(1.0)
    # normalised points agree with unprojecting the normalised depth through the normalised cameras
    torch.testing.assert_close(depth_to_world_points(norm.depth, norm.extrinsics, norm.intrinsics),
                               norm.world_points)
    # a similarity transform of the world (p' = s Q p + c) scales camera-space lengths by s
    s_scale, q = 3.7, quat_to_matrix(torch.tensor([0.3, -0.2, 0.5, 0.8], dtype=torch.float64))
    c = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    pts2 = s_scale * pts @ q.T + c
    r2 = extr[..., :3] @ q.T
    t2 = s_scale * extr[..., 3] - (r2 @ c)
    extr2 = torch.cat([r2, t2[..., None]], -1)
    norm2 = normalize_scene(extr2, intr, depth * s_scale, pts2, valid)
    torch.testing.assert_close(norm2.world_points, norm.world_points)
    torch.testing.assert_close(norm2.extrinsics, norm.extrinsics)
    torch.testing.assert_close(norm2.depth, norm.depth)
    assert norm2.scale.item() == pytest.approx(s_scale * norm.scale.item())
    # world points may be omitted: unprojected from depth
    norm3 = normalize_scene(extr, intr, depth, None, valid)
    torch.testing.assert_close(norm3.world_points, norm.world_points)


def test_direction_loss_scores_the_direction_at_any_baseline():
    from vision.geometry.losses import direction_loss

    gt = torch.tensor([[[0.0, 0, 0], [1.0, 0, 0], [0.0, 2.0, 0]]])
    assert direction_loss(gt * 3.0, gt).item() == pytest.approx(0.0, abs=1e-6)  # any length, right direction
    # a 100x shorter baseline with the same direction error costs the same; view 0 (t = 0) is left out
    wrong = torch.tensor([[[5.0, 5, 5], [0.0, 1, 0], [0.0, -2.0, 0]]])
    assert direction_loss(wrong, gt).item() == pytest.approx(1.5, abs=1e-6)
    assert direction_loss(wrong * 0.01, gt * 0.01).item() == pytest.approx(1.5, abs=1e-5)
    assert direction_loss(wrong, gt, torch.tensor([[True, True, False]])).item() == pytest.approx(1.0, abs=1e-6)
    none = direction_loss(wrong.requires_grad_(), torch.zeros_like(gt))
    none.backward()
    assert none.item() == 0.0 and wrong.grad is not None


def test_camera_loss_direction_term():
    extr, intr, _, _ = make_scene(b=2)
    gt = cameras_to_pose_encoding(extr, intr, (8, 10)).float()
    off = gt.clone()
    off[..., :3] = -off[..., :3]  # every translation reversed
    base = camera_loss([off], extr.float(), intr.float(), (8, 10))
    with_dir = camera_loss([off], extr.float(), intr.float(), (8, 10), weight_dir=0.5)
    assert base["loss_dir"].item() == 0.0
    assert with_dir["loss_dir"].item() == pytest.approx(2.0, abs=1e-5)
    assert with_dir["loss"].item() == pytest.approx(base["loss"].item() + 1.0, abs=1e-5)
