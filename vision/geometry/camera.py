"""Camera conventions and conversions.

- Extrinsics: OpenCV camera-from-world ``[.., 3, 4] = [R | t]``, ``x_cam = R @ x_world + t`` (x right, y down,
  z forward). Intrinsics ``[.., 3, 3]`` with the principal point at the image centre (W/2, H/2).
- Quaternions are **xyzw** (scalar last), as in VGGT's ``vggt/utils/rotation.py``; conversions return the
  representative with a non-negative real part.
- Pose encoding ``[.., 9] = [t(3), quat xyzw(4), fov_h, fov_w]`` (radians), fov = 2 atan((size/2) / focal).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

__all__ = ["quat_to_matrix", "matrix_to_quat", "standardize_quat", "closest_rotation",
           "pose_encoding_to_cameras", "cameras_to_pose_encoding", "invert_extrinsics",
           "compose_extrinsics", "depth_to_camera_points", "camera_to_world_points", "depth_to_world_points",
           "world_to_camera_points", "project_points"]


def quat_to_matrix(quat: torch.Tensor) -> torch.Tensor:
    """xyzw quaternions ``[..., 4]`` (any norm > 0; normalised here) -> rotation matrices ``[..., 3, 3]``."""
    x, y, z, w = torch.unbind(quat, -1)
    two_s = 2.0 / (quat * quat).sum(-1)
    m = torch.stack([
        1 - two_s * (y * y + z * z), two_s * (x * y - z * w), two_s * (x * z + y * w),
        two_s * (x * y + z * w), 1 - two_s * (x * x + z * z), two_s * (y * z - x * w),
        two_s * (x * z - y * w), two_s * (y * z + x * w), 1 - two_s * (x * x + y * y),
    ], dim=-1)
    return m.reshape(quat.shape[:-1] + (3, 3))


def standardize_quat(quat: torch.Tensor) -> torch.Tensor:
    """Flip xyzw quaternions so the real part (last) is non-negative."""
    return torch.where(quat[..., 3:4] < 0, -quat, quat)


def matrix_to_quat(matrix: torch.Tensor) -> torch.Tensor:
    """Rotation matrices ``[..., 3, 3]`` -> unit xyzw quaternions ``[..., 4]`` with w >= 0.

    Uses the best-conditioned of the four candidate formulas (largest of 1±m00±m11±m22), so it is stable near
    180° rotations."""
    m = matrix
    m00, m11, m22 = m[..., 0, 0], m[..., 1, 1], m[..., 2, 2]
    diag = torch.stack([1 + m00 + m11 + m22, 1 + m00 - m11 - m22, 1 - m00 + m11 - m22, 1 - m00 - m11 + m22], -1)
    q_abs = torch.sqrt(torch.clamp(diag, min=1e-12))  # 2|w|, 2|x|, 2|y|, 2|z| (up to the clamp)
    # rows: candidate (w, x, y, z) scaled by 2 * q_abs[k]
    c_w = torch.stack([q_abs[..., 0] ** 2, m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                       m[..., 1, 0] - m[..., 0, 1]], -1)
    c_x = torch.stack([m[..., 2, 1] - m[..., 1, 2], q_abs[..., 1] ** 2, m[..., 1, 0] + m[..., 0, 1],
                       m[..., 0, 2] + m[..., 2, 0]], -1)
    c_y = torch.stack([m[..., 0, 2] - m[..., 2, 0], m[..., 1, 0] + m[..., 0, 1], q_abs[..., 2] ** 2,
                       m[..., 2, 1] + m[..., 1, 2]], -1)
    c_z = torch.stack([m[..., 1, 0] - m[..., 0, 1], m[..., 2, 0] + m[..., 0, 2], m[..., 2, 1] + m[..., 1, 2],
                       q_abs[..., 3] ** 2], -1)
    cands = torch.stack([c_w, c_x, c_y, c_z], -2) / (2.0 * q_abs.clamp(min=0.1))[..., None]
    best = q_abs.argmax(-1)
    wxyz = torch.gather(cands, -2, best[..., None, None].expand(best.shape + (1, 4))).squeeze(-2)
    xyzw = torch.cat([wxyz[..., 1:], wxyz[..., :1]], dim=-1)
    return standardize_quat(F.normalize(xyzw, dim=-1))


def closest_rotation(matrix: torch.Tensor) -> torch.Tensor:
    """Nearest rotation (Frobenius norm) to each ``[..., 3, 3]`` matrix, via SVD with a determinant fix."""
    u, _, vh = torch.linalg.svd(matrix.to(torch.float64) if matrix.dtype == torch.float32 else matrix)
    det = torch.det(u @ vh)
    fix = torch.ones(det.shape + (3,), dtype=u.dtype, device=u.device)
    fix[..., 2] = torch.sign(det) + (det == 0).to(u.dtype)
    return ((u * fix[..., None, :]) @ vh).to(matrix.dtype)


def pose_encoding_to_cameras(pose_enc: torch.Tensor, image_hw: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
    """``[..., 9]`` pose encoding -> (extrinsics ``[..., 3, 4]``, intrinsics ``[..., 3, 3]``) for images ``(H, W)``,
    in float32 at least: a rotation built in bf16 is off orthonormal by about 1e-2."""
    h, w = image_hw
    pose_enc = pose_enc.to(torch.promote_types(pose_enc.dtype, torch.float32))
    t, quat, fov_h, fov_w = pose_enc[..., :3], pose_enc[..., 3:7], pose_enc[..., 7], pose_enc[..., 8]
    extrinsics = torch.cat([quat_to_matrix(quat), t[..., None]], dim=-1)
    fy = (h / 2.0) / torch.tan(fov_h / 2.0)
    fx = (w / 2.0) / torch.tan(fov_w / 2.0)
    zeros, ones = torch.zeros_like(fx), torch.ones_like(fx)
    intrinsics = torch.stack([fx, zeros, zeros + w / 2.0, zeros, fy, zeros + h / 2.0, zeros, zeros, ones], -1)
    return extrinsics, intrinsics.reshape(fx.shape + (3, 3))


def cameras_to_pose_encoding(extrinsics: torch.Tensor, intrinsics: torch.Tensor,
                             image_hw: tuple[int, int]) -> torch.Tensor:
    """(extrinsics ``[..., 3, 4]``, intrinsics ``[..., 3, 3]``) -> pose encoding ``[..., 9]`` for images ``(H, W)``.
    The principal point is not encoded (assumed at the centre)."""
    h, w = image_hw
    quat = matrix_to_quat(extrinsics[..., :3, :3])
    fov_h = 2 * torch.atan((h / 2.0) / intrinsics[..., 1, 1])
    fov_w = 2 * torch.atan((w / 2.0) / intrinsics[..., 0, 0])
    return torch.cat([extrinsics[..., :3, 3], quat, fov_h[..., None], fov_w[..., None]], dim=-1)


def invert_extrinsics(extrinsics: torch.Tensor) -> torch.Tensor:
    """Closed-form inverse of a rigid ``[R | t]`` ``[..., 3, 4]``: ``[R^T | -R^T t]`` (camera-from-world <->
    world-from-camera)."""
    r_t = extrinsics[..., :3, :3].transpose(-1, -2)
    return torch.cat([r_t, -(r_t @ extrinsics[..., :3, 3:4])], dim=-1)


def compose_extrinsics(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a ∘ b`` for ``[..., 3, 4]`` transforms (apply b first): ``[Ra Rb | Ra tb + ta]``."""
    r = a[..., :3, :3] @ b[..., :3, :3]
    t = a[..., :3, :3] @ b[..., :3, 3:4] + a[..., :3, 3:4]
    return torch.cat([r, t], dim=-1)


def depth_to_camera_points(depth: torch.Tensor, intrinsics: torch.Tensor) -> torch.Tensor:
    """Unproject z-depth ``[..., H, W]`` with intrinsics ``[..., 3, 3]`` to camera points ``[..., H, W, 3]``.
    Pixel (u, v) is the pixel's integer index (OpenCV: centre of the top-left pixel at (0, 0))."""
    h, w = depth.shape[-2:]
    v, u = torch.meshgrid(torch.arange(h, dtype=depth.dtype, device=depth.device),
                          torch.arange(w, dtype=depth.dtype, device=depth.device), indexing="ij")
    k = intrinsics[..., None, None, :, :]
    fx, fy, cx, cy = k[..., 0, 0], k[..., 1, 1], k[..., 0, 2], k[..., 1, 2]
    x = (u - cx) / fx * depth
    y = (v - cy) / fy * depth
    return torch.stack([x, y, depth], dim=-1)


def camera_to_world_points(points: torch.Tensor, extrinsics: torch.Tensor) -> torch.Tensor:
    """Camera points ``[..., H, W, 3]`` -> world points with camera-from-world extrinsics ``[..., 3, 4]``."""
    inv = invert_extrinsics(extrinsics)[..., None, None, :, :]
    return (inv[..., :3, :3] @ points[..., None]).squeeze(-1) + inv[..., :3, 3]


def depth_to_world_points(depth: torch.Tensor, extrinsics: torch.Tensor, intrinsics: torch.Tensor) -> torch.Tensor:
    """``depth [B, S, H, W]`` (or any leading dims), extrinsics ``[B, S, 3, 4]``, intrinsics ``[B, S, 3, 3]``
    -> world points ``[B, S, H, W, 3]``."""
    return camera_to_world_points(depth_to_camera_points(depth, intrinsics), extrinsics)


def world_to_camera_points(points: torch.Tensor, extrinsics: torch.Tensor) -> torch.Tensor:
    """World points ``[..., N, 3]`` -> camera points ``[..., N, 3]`` with extrinsics ``[..., 3, 4]``."""
    return points @ extrinsics[..., :3, :3].transpose(-1, -2) + extrinsics[..., None, :3, 3]


def project_points(points: torch.Tensor, extrinsics: torch.Tensor, intrinsics: torch.Tensor,
                   eps: float = 1e-8) -> tuple[torch.Tensor, torch.Tensor]:
    """Project world points ``[..., N, 3]`` -> (pixels ``[..., N, 2]`` as (x, y), depth ``[..., N]``).
    Points at or behind the camera get depth <= 0; their pixels are computed with depth clamped to ``eps``."""
    cam = world_to_camera_points(points, extrinsics)
    z = cam[..., 2]
    proj = cam @ intrinsics.transpose(-1, -2)
    pix = proj[..., :2] / z.clamp(min=eps)[..., None]
    return pix, z
