import math

import torch

from vision.geometry.camera import (cameras_to_pose_encoding, closest_rotation, compose_extrinsics,
                                    depth_to_world_points, invert_extrinsics, matrix_to_quat,
                                    pose_encoding_to_cameras, project_points, quat_to_matrix, standardize_quat)


def random_quats(n: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(n, 4, generator=g, dtype=torch.float64)
    return standardize_quat(q / q.norm(dim=-1, keepdim=True))


def test_quaternion_matrix_round_trip_and_orthonormal():
    q = random_quats(500)
    r = quat_to_matrix(q)
    eye = torch.eye(3, dtype=r.dtype).expand_as(r)
    torch.testing.assert_close(r @ r.transpose(-1, -2), eye, atol=1e-10, rtol=0)
    torch.testing.assert_close(torch.det(r), torch.ones(500, dtype=r.dtype))
    torch.testing.assert_close(matrix_to_quat(r), q, atol=1e-9, rtol=0)


def test_quaternion_is_xyzw_scalar_last():
    # 90 degrees about z: xyzw = (0, 0, sin45, cos45); maps x-axis to y-axis
    q = torch.tensor([0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4)], dtype=torch.float64)
    r = quat_to_matrix(q)
    torch.testing.assert_close(r @ torch.tensor([1.0, 0, 0], dtype=torch.float64),
                               torch.tensor([0.0, 1, 0], dtype=torch.float64))
    identity = matrix_to_quat(torch.eye(3, dtype=torch.float64))
    torch.testing.assert_close(identity, torch.tensor([0.0, 0, 0, 1], dtype=torch.float64))


def test_matrix_to_quat_near_180_degrees():
    angle = math.pi - 1e-7
    axis = torch.tensor([1.0, 2.0, -0.5], dtype=torch.float64)
    axis = axis / axis.norm()
    q = torch.cat([axis * math.sin(angle / 2), torch.tensor([math.cos(angle / 2)], dtype=torch.float64)])
    r = quat_to_matrix(q)
    torch.testing.assert_close(quat_to_matrix(matrix_to_quat(r)), r, atol=1e-9, rtol=0)


def test_closest_rotation_recovers_rotation_from_noise():
    r = quat_to_matrix(random_quats(20, seed=3))
    noisy = r + 1e-3 * torch.randn(r.shape, generator=torch.Generator().manual_seed(1), dtype=r.dtype)
    fixed = closest_rotation(noisy)
    torch.testing.assert_close(torch.det(fixed), torch.ones(20, dtype=r.dtype))
    assert (fixed - r).abs().max() < 5e-3
    torch.testing.assert_close(closest_rotation(r), r, atol=1e-10, rtol=0)


def test_pose_encoding_round_trip():
    b, s, h, w = 2, 3, 48, 64
    q = random_quats(b * s, seed=5).reshape(b, s, 4)
    t = torch.randn(b, s, 3, dtype=torch.float64)
    fov = torch.rand(b, s, 2, dtype=torch.float64) + 0.5
    enc = torch.cat([t, q, fov], dim=-1)
    extr, intr = pose_encoding_to_cameras(enc, (h, w))
    assert extr.shape == (b, s, 3, 4) and intr.shape == (b, s, 3, 3)
    torch.testing.assert_close(intr[..., 0, 2], torch.full((b, s), w / 2, dtype=torch.float64))
    torch.testing.assert_close(intr[..., 1, 2], torch.full((b, s), h / 2, dtype=torch.float64))
    torch.testing.assert_close(cameras_to_pose_encoding(extr, intr, (h, w)), enc, atol=1e-9, rtol=0)


def test_invert_and_compose():
    r = quat_to_matrix(random_quats(4, seed=7))
    e = torch.cat([r, torch.randn(4, 3, 1, dtype=r.dtype)], dim=-1)
    ident = compose_extrinsics(e, invert_extrinsics(e))
    torch.testing.assert_close(ident, torch.cat([torch.eye(3, dtype=r.dtype).expand(4, 3, 3),
                                                 torch.zeros(4, 3, 1, dtype=r.dtype)], -1), atol=1e-12, rtol=0)


def test_unproject_then_project_round_trip():
    b, s, h, w = 1, 2, 6, 8
    r = quat_to_matrix(random_quats(b * s, seed=9)).reshape(b, s, 3, 3)
    extr = torch.cat([r, torch.randn(b, s, 3, 1, dtype=r.dtype)], dim=-1)
    intr = torch.tensor([[10.0, 0, w / 2], [0, 12.0, h / 2], [0, 0, 1]], dtype=r.dtype).expand(b, s, 3, 3)
    depth = torch.rand(b, s, h, w, dtype=r.dtype) + 1.0
    pts = depth_to_world_points(depth, extr, intr)
    assert pts.shape == (b, s, h, w, 3)
    pix, z = project_points(pts.reshape(b, s, -1, 3), extr, intr)
    torch.testing.assert_close(z, depth.reshape(b, s, -1))
    vv, uu = torch.meshgrid(torch.arange(h, dtype=r.dtype), torch.arange(w, dtype=r.dtype), indexing="ij")
    grid = torch.stack([uu, vv], -1).reshape(1, 1, -1, 2).expand(b, s, -1, 2)
    torch.testing.assert_close(pix, grid)
