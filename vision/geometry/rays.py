"""Ray maps: cameras as per-pixel rays (Depth Anything 3's camera target) and cameras back from a ray map.

Conventions (those of :mod:`vision.geometry.camera`): OpenCV cameras, extrinsics ``[R | t]`` camera-from-world
(``x_cam = R x_world + t``), intrinsics ``K``; pixel ``(u, v)`` is the integer index of a pixel, its centre (the
centre of the top-left pixel is ``(0, 0)``, as :func:`~vision.geometry.camera.depth_to_camera_points`).

The ray of pixel ``p = [u, v, 1]`` of a camera is

- origin ``c = -R^T t``: the camera centre in world coordinates (the same for every pixel of a view);
- direction ``d = R^T K^{-1} p``: the *unnormalised* pixel ray rotated into the world frame, so that a pixel with
  z-depth ``z`` sees the world point ``c + z d`` (the camera-frame ray has z-component 1).

:func:`cameras_to_rays` builds the map; :func:`rays_to_cameras` recovers the cameras from a (predicted) map by a
confidence-weighted least-squares fit: ``c`` = the weighted mean of the origins; ``M = R^T K^{-1}`` from the linear
least squares ``d_i ≈ M p_i`` over the pixels; ``K R = M^{-1}`` split by an RQ decomposition.
"""

from __future__ import annotations

import torch

from vision.errors import InputError

__all__ = ["pixel_grid", "cameras_to_rays", "rays_to_cameras", "rq_decomposition"]


def pixel_grid(height: int, width: int, dtype: torch.dtype = torch.float32,
               device: torch.device | str | None = None) -> torch.Tensor:
    """Homogeneous pixel coordinates ``[H, W, 3]`` = ``(u, v, 1)`` with u the column and v the row index."""
    v, u = torch.meshgrid(torch.arange(height, dtype=dtype, device=device),
                          torch.arange(width, dtype=dtype, device=device), indexing="ij")
    return torch.stack([u, v, torch.ones_like(u)], dim=-1)


def cameras_to_rays(extrinsics: torch.Tensor, intrinsics: torch.Tensor, height: int,
                    width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Ray map of cameras.

    Args:
        extrinsics: ``[..., 3, 4]`` camera-from-world; intrinsics: ``[..., 3, 3]`` (same leading dims, e.g. B, S).
        height, width: the image size in pixels.
    Returns:
        ``(origins [..., H, W, 3], directions [..., H, W, 3])``: the camera centre ``-R^T t`` at every pixel and
        ``R^T K^{-1} [u, v, 1]^T``.
    """
    if extrinsics.shape[-2:] != (3, 4) or intrinsics.shape[-2:] != (3, 3) \
            or extrinsics.shape[:-2] != intrinsics.shape[:-2]:
        raise InputError(f"cameras_to_rays needs extrinsics [..., 3, 4] and intrinsics [..., 3, 3] with the same "
                         f"leading dims; got {tuple(extrinsics.shape)} and {tuple(intrinsics.shape)}")
    rot_t = extrinsics[..., :3, :3].transpose(-1, -2)
    centre = -(rot_t @ extrinsics[..., :3, 3:4]).squeeze(-1)  # [..., 3]
    m = rot_t @ torch.linalg.inv(intrinsics)  # [..., 3, 3]
    grid = pixel_grid(height, width, extrinsics.dtype, extrinsics.device)  # [H, W, 3]
    directions = torch.einsum("...ij,hwj->...hwi", m, grid)
    origins = centre[..., None, None, :].expand(directions.shape)
    return origins, directions


def rq_decomposition(matrix: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """RQ decomposition of ``[..., 3, 3]`` matrices with ``det > 0``: ``matrix = K @ R``, K upper triangular with a
    positive diagonal and R a rotation (via the QR decomposition of the row-reversed, transposed matrix)."""
    flip = torch.flip(torch.eye(3, dtype=matrix.dtype, device=matrix.device), dims=[0])  # the reversal permutation
    q, u = torch.linalg.qr((flip @ matrix).transpose(-1, -2))
    k = flip @ u.transpose(-1, -2) @ flip  # upper triangular
    r = flip @ q.transpose(-1, -2)
    signs = torch.sign(torch.diagonal(k, dim1=-2, dim2=-1))
    signs = torch.where(signs == 0, torch.ones_like(signs), signs)
    # K D and D R with D = diag(signs), D @ D = I: the diagonal of K becomes positive
    return k * signs[..., None, :], r * signs[..., :, None]


def rays_to_cameras(origins: torch.Tensor, directions: torch.Tensor,
                    conf: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Cameras from a ray map by a confidence-weighted least-squares fit (batched, on the inputs' device).

    Args:
        origins, directions: ``[B, S, H, W, 3]`` (any leading dims) as :func:`cameras_to_rays` makes them.
        conf: ``[B, S, H, W]`` non-negative weights (e.g. the head's ``rays_conf``); None: all 1.
    Returns:
        ``(extrinsics [B, S, 3, 4], intrinsics [B, S, 3, 3])`` in the input's dtype: the camera centre
        ``c = Σ w o / Σ w``; ``M`` minimising ``Σ w ||d - M p||²`` (pixel coordinates centred and scaled before
        solving, for conditioning); ``K R = M^{-1}`` by :func:`rq_decomposition` with ``K[2, 2] = 1``;
        ``t = -R c``. A map whose ``M`` has a negative determinant (rays pointing behind the camera) is fitted
        as ``-M``: the nearest valid camera then looks the other way. Computed in float64 (float32 on devices
        without float64).
    """
    if origins.shape != directions.shape or origins.ndim < 3 or origins.shape[-1] != 3:
        raise InputError(f"rays_to_cameras needs origins and directions of one shape [..., H, W, 3]; got "
                         f"{tuple(origins.shape)} and {tuple(directions.shape)}")
    if conf is None:
        conf = torch.ones(origins.shape[:-1], dtype=origins.dtype, device=origins.device)
    if conf.shape != origins.shape[:-1]:
        raise InputError(f"rays_to_cameras: conf must have shape {tuple(origins.shape[:-1])}, got {tuple(conf.shape)}")
    dtype = torch.float32 if origins.device.type == "mps" else torch.float64
    lead, (h, w) = origins.shape[:-3], origins.shape[-3:-1]
    o = origins.reshape(*lead, h * w, 3).to(dtype)
    d = directions.reshape(*lead, h * w, 3).to(dtype)
    wt = conf.reshape(*lead, h * w).to(dtype).clamp(min=0)
    total = wt.sum(-1, keepdim=True)
    if bool((total <= 0).any()):
        raise InputError("rays_to_cameras: a view has no pixel with positive confidence")
    centre = (wt[..., None] * o).sum(-2) / total  # [..., 3]

    # normalised pixels q = T p (centred, scaled by the longer side): d ≈ M p = (M T^{-1}) q
    scale = float(max(h, w))
    norm = torch.tensor([[1 / scale, 0, -(w - 1) / (2 * scale)], [0, 1 / scale, -(h - 1) / (2 * scale)], [0, 0, 1]],
                        dtype=dtype, device=origins.device)
    q = pixel_grid(h, w, dtype, origins.device).reshape(h * w, 3) @ norm.T  # [N, 3]
    wq = wt[..., None] * q  # [..., N, 3]
    gram = wq.transpose(-1, -2) @ q  # [..., 3, 3] = Σ w q q^T
    cross = wq.transpose(-1, -2) @ d  # [..., 3, 3] = Σ w q d^T
    m = torch.linalg.solve(gram, cross).transpose(-1, -2) @ norm  # M = (M T^{-1}) T

    det = torch.linalg.det(m)
    m = torch.where((det < 0)[..., None, None], -m, m)
    k, r = rq_decomposition(torch.linalg.inv(m))
    k = k / k[..., 2:3, 2:3]
    t = -(r @ centre[..., None])
    extrinsics = torch.cat([r, t], dim=-1)
    return extrinsics.to(origins.dtype), k.to(origins.dtype)
