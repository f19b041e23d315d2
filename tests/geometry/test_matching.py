import pytest
import torch

from vision.errors import InputError
from vision.geometry.matching import MatchProjection, correspondence_loss, patch_correspondences, pose_from_matches


def _plane_pair(shift_px: float, h: int = 16, w: int = 32, patch: int = 8, z: float = 2.0):
    """Two pinhole views of a fronto-parallel plane at depth z; view 1 is moved sideways so that the plane's image
    moves by ``shift_px`` pixels to the left."""
    f = 20.0
    intr = torch.tensor([[f, 0.0, (w - 1) / 2], [0.0, f, (h - 1) / 2], [0.0, 0.0, 1.0]]).expand(1, 2, 3, 3)
    extr = torch.zeros(1, 2, 3, 4)
    extr[:, :, :3, :3] = torch.eye(3)
    extr[0, 1, 0, 3] = -shift_px * z / f  # camera moves right by shift*z/f: the scene moves left in its image
    depth = torch.full((1, 2, h, w), z)
    valid = torch.ones(1, 2, h, w, dtype=torch.bool)
    return depth, valid, extr, intr, patch


def test_identical_views_match_patch_to_itself_and_never_to_their_own_view():
    depth, valid, extr, intr, patch = _plane_pair(0.0)
    target = patch_correspondences(depth, valid, extr, intr, patch)
    assert target.shape == (1, 2, 2, 8)
    assert torch.equal(target[0, 0, 1], torch.arange(8)) and torch.equal(target[0, 1, 0], torch.arange(8))
    assert (target[0, 0, 0] == -1).all() and (target[0, 1, 1] == -1).all()


def test_a_one_patch_shift_moves_the_target_one_patch_and_drops_what_leaves_the_image():
    depth, valid, extr, intr, patch = _plane_pair(8.0)
    target = patch_correspondences(depth, valid, extr, intr, patch)
    # grid 2 x 4: patch (r, c) of view 0 lands in (r, c - 1) of view 1; column 0 leaves the image
    expected = torch.tensor([-1, 0, 1, 2, -1, 4, 5, 6])
    assert torch.equal(target[0, 0, 1], expected)
    back = torch.tensor([1, 2, 3, -1, 5, 6, 7, -1])
    assert torch.equal(target[0, 1, 0], back)


def test_occluded_and_invalid_points_have_no_target():
    depth, valid, extr, intr, patch = _plane_pair(0.0)
    depth[0, 1, :8, :8] = 1.0  # something in front of the plane in view 1's top-left patch
    valid[0, 0, 8:, 24:] = False  # no ground truth depth in view 0's bottom-right patch
    target = patch_correspondences(depth, valid, extr, intr, patch)
    assert target[0, 0, 1, 0] == -1 and target[0, 0, 1, 7] == -1
    assert torch.equal(target[0, 0, 1, 1:7], torch.arange(1, 7))


def test_loss_prefers_right_matches_and_is_zero_without_overlap():
    depth, valid, extr, intr, patch = _plane_pair(8.0)
    target = patch_correspondences(depth, valid, extr, intr, patch)
    ident = torch.eye(8)
    right = torch.stack([ident, torch.roll(ident, shifts=-1, dims=0)], 0)[None]  # view 1's patch k = view 0's k+1
    wrong = torch.nn.functional.normalize(torch.randn(1, 2, 8, 8, generator=torch.Generator().manual_seed(0)), dim=-1)
    good, bad = correspondence_loss(right, target), correspondence_loss(wrong, target)
    assert good["accuracy"].item() == 1.0 and good["loss"].item() < bad["loss"].item()
    none = correspondence_loss(wrong, torch.full_like(target, -1))
    assert none["loss"].item() == 0.0


def test_projection_gives_unit_features_and_gradients():
    proj = MatchProjection(12, 5)
    tokens = torch.randn(2, 3, 4, 12, requires_grad=True)
    feats = proj(tokens)
    assert feats.shape == (2, 3, 4, 5)
    assert torch.allclose(feats.norm(dim=-1), torch.ones(2, 3, 4), atol=1e-5)
    target = torch.randint(0, 4, (2, 3, 3, 4))
    correspondence_loss(feats, target)["loss"].backward()
    assert tokens.grad is not None and tokens.grad.abs().sum() > 0


def test_pose_from_matches_recovers_a_sideways_move_despite_wrong_matches():
    depth, valid, extr, intr, patch = _plane_pair(8.0, h=32, w=64)
    target = patch_correspondences(depth, valid, extr, intr, patch)[0, 1, 0]  # view 1's patch -> view 0's patch
    p = target.numel()
    feats = torch.zeros(2, p, p)
    feats[0] = torch.eye(p)
    for k in range(p):
        feats[1, k, target[k] if target[k] >= 0 else k] = 1.0
    # five wrong matches among the 28 right ones
    wrong = torch.tensor([1, 10, 17, 22, 30])
    feats[1, wrong] = torch.roll(feats[1, wrong], shifts=1, dims=0)
    extrinsics, inliers = pose_from_matches(feats, depth[0], intr[0], patch)
    assert inliers[0] == 0 and inliers[1] >= 20
    assert torch.allclose(extrinsics[0], torch.eye(3, 4, dtype=extrinsics.dtype))
    assert torch.allclose(extrinsics[1], extr[0, 1], atol=1e-4)


def test_pose_from_matches_leaves_unregistered_views_at_identity_and_checks_shapes():
    depth, valid, extr, intr, patch = _plane_pair(0.0)
    feats = torch.zeros(2, 8, 8)
    feats[0] = torch.eye(8)
    feats[1, :, 0] = 1.0  # every patch of view 1 looks the same: one mutual match at most
    extrinsics, inliers = pose_from_matches(feats, depth[0], intr[0], patch)
    assert inliers.tolist() == [0, 0] and torch.allclose(extrinsics[1], torch.eye(3, 4, dtype=extrinsics.dtype))
    with pytest.raises(InputError, match="patches"):
        pose_from_matches(feats[:, :5], depth[0], intr[0], patch)
