"""The NumPy alignment maths: Umeyama fits recover a similarity, and the scene normalisation agrees with its torch
twin of the training losses to float32 rounding."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.spatial.transform import Rotation

from vision.alignment import normalize_scene_points, umeyama, umeyama_batch
from vision.geometry.losses import normalize_scene


def _scene(seed: int, views: int = 3, height: int = 12, width: int = 16) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    rotations = Rotation.random(views, random_state=seed).as_matrix()
    extrinsics = np.concatenate([rotations, rng.normal(size=(views, 3, 1))], axis=-1).astype(np.float32)
    intrinsics = np.tile(np.array([[20.0, 0.0, 7.5], [0.0, 18.0, 5.5], [0.0, 0.0, 1.0]], np.float32), (views, 1, 1))
    depth = rng.uniform(0.5, 5.0, size=(views, height, width)).astype(np.float32)
    valid = rng.random((views, height, width)) < 0.8
    return extrinsics, intrinsics, depth, valid


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_normalize_scene_points_agrees_with_the_torch_normalize_scene(seed):
    extrinsics, intrinsics, depth, valid = _scene(seed)
    points, scale = normalize_scene_points(extrinsics, intrinsics, depth, valid)
    want = normalize_scene(torch.from_numpy(extrinsics)[None], torch.from_numpy(intrinsics)[None],
                           torch.from_numpy(depth)[None], None, torch.from_numpy(valid)[None])
    assert points.dtype == np.float32 and points.shape == depth.shape + (3,)
    assert scale == pytest.approx(float(want.scale[0]), rel=1e-6)
    np.testing.assert_allclose(points, want.world_points[0].numpy(), rtol=0, atol=1e-6)


def test_normalized_points_are_in_camera_0s_frame_with_unit_mean_norm():
    extrinsics, intrinsics, depth, valid = _scene(3)
    points, scale = normalize_scene_points(extrinsics, intrinsics, depth, valid)
    assert np.linalg.norm(points[valid], axis=-1).mean() == pytest.approx(1.0, rel=1e-5)
    # view 0's points lie on its own rays: x / z = (u - cx) / fx
    u = np.arange(depth.shape[2], dtype=np.float32)[None, :]
    ratio = points[0, ..., 0] / points[0, ..., 2]
    np.testing.assert_allclose(ratio, np.broadcast_to((u - 7.5) / 20.0, ratio.shape), atol=1e-5)
    assert points[0, ..., 2] * scale == pytest.approx(depth[0], rel=1e-5)


def test_a_clip_without_valid_pixels_keeps_scale_1():
    extrinsics, intrinsics, depth, valid = _scene(4)
    points, scale = normalize_scene_points(extrinsics, intrinsics, depth, np.zeros_like(valid))
    assert scale == 1.0 and np.isfinite(points).all()


def test_umeyama_batch_recovers_each_similarity_and_flags_degenerate_sets():
    rng = np.random.default_rng(0)
    source = rng.normal(size=(4, 20, 3))
    rotations = Rotation.random(4, random_state=0).as_matrix()
    scales = np.array([0.5, 1.0, 2.0, 3.0])
    shifts = rng.normal(size=(4, 3))
    target = scales[:, None, None] * np.einsum("kij,knj->kni", rotations, source) + shifts[:, None]
    scale, rot, trans = umeyama_batch(source, target)
    np.testing.assert_allclose(scale, scales, rtol=1e-10)
    np.testing.assert_allclose(rot, rotations, atol=1e-10)
    np.testing.assert_allclose(trans, shifts, atol=1e-10)
    flat = np.zeros((1, 5, 3))
    assert umeyama_batch(flat, rng.normal(size=(1, 5, 3)))[0][0] == 0.0
    s, r, t = umeyama(source[1], target[1], with_scale=False)
    assert s == 1.0 and np.allclose(r, rotations[1], atol=1e-10)
