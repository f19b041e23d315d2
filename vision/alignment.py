"""Putting two reconstructions of a scene in one frame, in NumPy only: Umeyama similarity fits and the normalised
scene frame of the geometry task.

- :func:`umeyama_batch` / :func:`umeyama`: the least-squares similarity ``target ≈ s R source + t`` between
  corresponding 3D point sets (Umeyama 1991), for a batch of sets or one set.
- :func:`normalize_scene_points`: the ground-truth point map of a clip in the frame the geometry backbone predicts
  in: camera 0's frame, all lengths divided by the mean norm of the valid points.

Conventions: cameras are OpenCV camera-from-world extrinsics ``[S, 3, 4]`` (x_cam = R x_world + t) and intrinsics
``[S, 3, 3]`` in the pixel-centre convention (pixel (u, v) is the integer index of its centre); depth is z-depth
``[S, H, W]``; point sets are ``[N, 3]``.

This module sits below :mod:`vision.evaluation` and :mod:`vision.geometry` and imports NumPy alone, so that scoring
results never loads torch or a model. Training keeps the torch twin of the scene normalisation
(:func:`vision.geometry.losses.normalize_scene`, which gradients flow through); the two agree to float32 rounding
(``tests/test_alignment.py``).
"""

from __future__ import annotations

import numpy as np

from vision.errors import InputError

__all__ = ["umeyama_batch", "umeyama", "normalize_scene_points"]


def umeyama_batch(src: np.ndarray, dst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Batched Umeyama (1991): least-squares ``dst ≈ s R src + t`` for ``[K, n, 3]`` point sets -> s ``[K]``,
    R ``[K, 3, 3]`` (proper rotations), t ``[K, 3]`` (degenerate sets get s = 0)."""
    mu_s, mu_d = src.mean(1, keepdims=True), dst.mean(1, keepdims=True)
    xs, xd = src - mu_s, dst - mu_d
    var = (xs ** 2).sum(-1).mean(1)
    cov = np.einsum("kni,knj->kij", xd, xs) / src.shape[1]
    u, d, vt = np.linalg.svd(cov)
    sign = np.where(np.linalg.det(u) * np.linalg.det(vt) < 0, -1.0, 1.0)
    d = d.copy()
    d[:, 2] *= sign
    u = u.copy()
    u[:, :, 2] *= sign[:, None]
    rot = u @ vt
    scale = np.where(var > 1e-12, d.sum(1) / np.maximum(var, 1e-12), 0.0)
    trans = mu_d[:, 0] - scale[:, None] * np.einsum("kij,kj->ki", rot, mu_s[:, 0])
    return scale, rot, trans


def umeyama(source: np.ndarray, target: np.ndarray, with_scale: bool = True) -> tuple[float, np.ndarray, np.ndarray]:
    """Least-squares similarity (s, R, t) with target ≈ s R source + t (Umeyama 1991).

    Args:
        source, target: corresponding points ``[N, 3]``, N >= 3 and not all collinear.
        with_scale: fit the scale; False: s = 1 and a rigid fit of the rotation, with the translation that
            matches the centroids.

    Returns:
        s (float), R ``[3, 3]`` (a proper rotation), t ``[3]``.
    """
    x = np.asarray(source, dtype=np.float64)
    y = np.asarray(target, dtype=np.float64)
    if x.shape != y.shape or x.ndim != 2 or x.shape[1] != 3 or len(x) < 3:
        raise InputError(f"umeyama needs two [N, 3] arrays with N >= 3; got {x.shape} and {y.shape}")
    if not np.any(x != x[0]):
        raise InputError("umeyama: source points are all identical")
    scale, rot, trans = umeyama_batch(x[None], y[None])
    if not with_scale:
        return 1.0, rot[0], y.mean(axis=0) - rot[0] @ x.mean(axis=0)
    return float(scale[0]), rot[0], trans[0]


def normalize_scene_points(extrinsics: np.ndarray, intrinsics: np.ndarray, depth: np.ndarray, valid: np.ndarray,
                           eps: float = 1e-6) -> tuple[np.ndarray, float]:
    """The point map of one clip in camera 0's frame, scaled so that the mean norm of its valid points is 1.

    Each pixel (u, v) of view i is unprojected with its depth and intrinsics, moved to the world by the inverse of
    view i's camera and into camera 0's frame by camera 0's; a pixel counts as valid where ``valid`` holds and its
    depth and point are finite. The arithmetic is float32 in the order of the torch twin
    :func:`vision.geometry.losses.normalize_scene` (its ``world_points`` and ``scale``).

    Args:
        extrinsics: ``[S, 3, 4]`` camera-from-world; intrinsics: ``[S, 3, 3]``; depth: ``[S, H, W]`` z-depth;
            valid: ``[S, H, W]`` bool.
        eps: the smallest scale (a scene of points at the origin is not blown up).

    Returns:
        ``(points [S, H, W, 3] float32, scale)``: the points divided by ``scale``; a clip with no valid point keeps
        scale 1. Invalid pixels are transformed like the others (the caller masks them).
    """
    extrinsics = np.asarray(extrinsics, dtype=np.float32)
    intrinsics = np.asarray(intrinsics, dtype=np.float32)
    depth = np.asarray(depth, dtype=np.float32)
    valid = np.asarray(valid, dtype=bool)
    views, height, width = depth.shape
    if extrinsics.shape != (views, 3, 4) or intrinsics.shape != (views, 3, 3) or valid.shape != depth.shape:
        raise InputError(f"normalize_scene_points needs extrinsics [S, 3, 4], intrinsics [S, 3, 3] and valid "
                         f"[S, H, W] for depth [S, H, W]; got {extrinsics.shape}, {intrinsics.shape}, "
                         f"{valid.shape} and {depth.shape}")
    v, u = np.meshgrid(np.arange(height, dtype=np.float32), np.arange(width, dtype=np.float32), indexing="ij")
    k = intrinsics[:, None, None]  # [S, 1, 1, 3, 3]
    fx, fy, cx, cy = k[..., 0, 0], k[..., 1, 1], k[..., 0, 2], k[..., 1, 2]
    camera = np.stack([(u - cx) / fx * depth, (v - cy) / fy * depth, depth], axis=-1)  # [S, H, W, 3]
    # world from camera i: [R^T | -R^T t]
    r_t = np.swapaxes(extrinsics[:, :3, :3], -1, -2)
    t_inv = -(r_t @ extrinsics[:, :3, 3:4])[..., 0]
    world = (r_t[:, None, None] @ camera[..., None])[..., 0] + t_inv[:, None, None]
    r0, t0 = extrinsics[0, :3, :3], extrinsics[0, :3, 3]
    points = (r0 @ world[..., None])[..., 0] + t0
    valid = valid & np.isfinite(world).all(-1) & np.isfinite(depth)
    norms = np.where(valid, np.linalg.norm(points, axis=-1), np.float32(0.0))
    count = int(valid.sum())
    if count == 0:
        return points, 1.0
    scale = max(np.float32(norms.sum(dtype=np.float32) / np.float32(count)), np.float32(eps))
    return points / scale, float(scale)
