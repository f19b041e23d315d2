"""Dense cross-view patch correspondence: ground truth from depth and cameras, and a contrastive loss on it.

VGGT trains a tracking head beside its camera, depth and point heads and reports that this supervision helps the
other tasks. At the tiny size we keep the idea and drop the head: the aggregator's patch tokens are projected to a
small matching space (:class:`MatchProjection`), and for every ordered pair of views (i, j) each patch of view i must
pick, among all patches of view j, the one its scene point lands in (InfoNCE over view j's patches).

The learned matches also give cameras directly (:func:`pose_from_matches`): mutual nearest-neighbour patch matches
between view i and view 0, lifted to 3D with each view's predicted depth, registered by a RANSAC over 3-point
similarity (Umeyama) fits.

Conventions: patches are numbered row-major on the ``[H / p, W / p]`` grid; a patch's point is the depth at its
centre pixel; cameras are OpenCV camera-from-world extrinsics ``[3, 4]``.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from vision.alignment import umeyama_batch
from vision.errors import InputError
from vision.geometry.camera import depth_to_camera_points, depth_to_world_points, project_points

__all__ = ["MatchProjection", "patch_correspondences", "correspondence_loss", "mutual_matches", "pose_from_matches"]


class MatchProjection(nn.Module):
    """LayerNorm + linear map of aggregator patch tokens ``[..., 2C]`` to unit-norm matching features
    ``[..., dim]``."""

    def __init__(self, in_dim: int, dim: int = 64) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(in_dim)
        self.proj = nn.Linear(in_dim, dim)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.proj(self.norm(tokens)), dim=-1)


@torch.no_grad()
def patch_correspondences(depth: torch.Tensor, valid: torch.Tensor, extrinsics: torch.Tensor,
                          intrinsics: torch.Tensor, patch: int, occlusion_tol: float = 0.05) -> torch.Tensor:
    """Which patch of view j each patch of view i sees.

    Args:
        depth: ground-truth z-depth ``[B, S, H, W]``; valid: ``[B, S, H, W]`` bool.
        extrinsics ``[B, S, 3, 4]``, intrinsics ``[B, S, 3, 3]``: ground-truth cameras (any common world frame).
        patch: patch size p (H and W are multiples of it).
        occlusion_tol: a point counts as seen by view j when its depth there is within this relative tolerance
            of view j's own depth at the pixel it projects to.

    Returns:
        ``[B, S, S, P]`` long: entry (b, i, j, k) is the index of view j's patch that patch k of view i projects
        into, or -1 (no valid depth, outside view j, occluded there, or i == j).
    """
    b, s, h, w = depth.shape
    gh, gw = h // patch, w // patch
    c = patch // 2
    centre_depth = depth[:, :, c::patch, c::patch][:, :, :gh, :gw]  # [B, S, gh, gw]
    centre_valid = valid[:, :, c::patch, c::patch][:, :, :gh, :gw] & (centre_depth > 0)
    # world points of the patch centres: unproject the centre pixels with the full-image intrinsics
    full = depth_to_world_points(depth, extrinsics, intrinsics)  # [B, S, H, W, 3]
    points = full[:, :, c::patch, c::patch][:, :, :gh, :gw].reshape(b, s, gh * gw, 3)
    target = torch.full((b, s, s, gh * gw), -1, dtype=torch.long, device=depth.device)
    for j in range(s):
        pix, z = project_points(points, extrinsics[:, j:j + 1], intrinsics[:, j:j + 1])  # [B, S, P, 2], [B, S, P]
        u, v = pix[..., 0].round().long(), pix[..., 1].round().long()
        inside = (z > 0) & (u >= 0) & (u < w) & (v >= 0) & (v < h)
        uc, vc = u.clamp(0, w - 1), v.clamp(0, h - 1)
        flat = (vc * w + uc).reshape(b, -1)
        dj = depth[:, j].reshape(b, -1).gather(1, flat).reshape(z.shape)
        vj = valid[:, j].reshape(b, -1).gather(1, flat).reshape(z.shape)
        seen = inside & vj & (dj > 0) & ((z - dj).abs() <= occlusion_tol * dj)
        ok = seen & centre_valid.reshape(b, s, -1)
        ok[:, j] = False
        index = (vc // patch) * gw + (uc // patch)
        target[:, :, j] = torch.where(ok, index, torch.full_like(index, -1))
    return target


def correspondence_loss(features: torch.Tensor, target: torch.Tensor,
                        temperature: float = 0.1) -> dict[str, torch.Tensor]:
    """InfoNCE over view j's patches for each patch of view i that has a correspondence.

    Args:
        features: unit-norm matching features ``[B, S, P, D]``.
        target: :func:`patch_correspondences` ``[B, S, S, P]``.
        temperature: softmax temperature of the cosine similarities.

    Returns:
        ``{"loss": mean cross-entropy, "accuracy": fraction of queries whose best match is the right patch}``
        (both zero when no pair of views overlaps).
    """
    b, s, p, _ = features.shape
    logits = torch.einsum("bipd,bjqd->bijpq", features, features) / temperature  # [B, S, S, P, P]
    keep = target >= 0
    if not keep.any():
        zero = features.sum() * 0.0
        return {"loss": zero, "accuracy": zero.detach()}
    chosen = logits[keep]  # [N, P]
    labels = target[keep]
    loss = F.cross_entropy(chosen, labels)
    accuracy = (chosen.argmax(-1) == labels).float().mean()
    return {"loss": loss, "accuracy": accuracy.detach()}


def mutual_matches(query: torch.Tensor, reference: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Mutual nearest neighbours by cosine similarity: features ``[P, D]`` and ``[Q, D]`` -> index pairs
    ``(query_idx [K], reference_idx [K])``."""
    sim = query @ reference.T
    best_ref = sim.argmax(1)
    best_query = sim.argmax(0)
    keep = best_query[best_ref] == torch.arange(len(query), device=query.device)
    return keep.nonzero()[:, 0], best_ref[keep]


def _ransac_similarity(src: np.ndarray, dst: np.ndarray, threshold: float, iterations: int,
                       rng: np.random.Generator) -> tuple[float, np.ndarray, np.ndarray, np.ndarray] | None:
    """RANSAC over 3-point samples of matched points ``[n, 3]``; the largest consensus set (distance of
    ``s R src + t`` to ``dst`` below ``threshold``) is refitted. None when it has fewer than 3 points."""
    n = len(src)
    if n < 3:
        return None
    samples = np.stack([rng.choice(n, 3, replace=False) for _ in range(iterations)])  # [K, 3]
    scale, rot, trans = umeyama_batch(src[samples], dst[samples])
    moved = scale[:, None, None] * np.einsum("kij,nj->kni", rot, src) + trans[:, None]
    inliers = (np.linalg.norm(moved - dst[None], axis=-1) < threshold) & (scale[:, None] > 0)
    best = inliers[int(inliers.sum(1).argmax())]
    if best.sum() < 3:
        return None
    scale, rot, trans = umeyama_batch(src[best][None], dst[best][None])
    return scale[0], rot[0], trans[0], best


def pose_from_matches(features: torch.Tensor, depth: torch.Tensor, intrinsics: torch.Tensor, patch: int,
                      threshold: float = 0.1, iterations: int = 300, seed: int = 0) -> tuple[torch.Tensor,
                                                                                              torch.Tensor]:
    """Cameras of one clip from learned patch matches to view 0 and predicted depth.

    For each view i > 0, the mutual nearest-neighbour matches of its patches with view 0's are lifted to camera
    space (depth at the patch centres, unprojected with that view's intrinsics), and a RANSAC over 3-point samples
    fits the similarity ``x_0 = s R x_i + t`` (Umeyama), inliers within ``threshold`` times the median distance of
    view 0's points. View 0 is the world frame; lengths are in view 0's units.

    Args:
        features: unit-norm matching features ``[S, P, D]``; depth: ``[S, H, W]`` (predicted, any scale);
        intrinsics: ``[S, 3, 3]``; patch: patch size p (P = H/p * W/p).
        threshold: inlier distance as a fraction of view 0's median point distance; iterations: RANSAC samples.

    Returns:
        ``(extrinsics [S, 3, 4] camera-from-world, inliers [S] long)``; a view with fewer than 3 inliers gets
        identity and 0 inliers (the caller decides what to fall back on).
    """
    s, p, _ = features.shape
    h, w = depth.shape[-2:]
    if p != (h // patch) * (w // patch):
        raise InputError(f"pose_from_matches: {p} patches per view do not fit a {h}x{w} image with patch {patch}")
    c = patch // 2
    cam = depth_to_camera_points(depth.float(), intrinsics.float())[:, c::patch, c::patch][:, :h // patch, :w // patch]
    cam = cam.reshape(s, p, 3).detach().cpu().double().numpy()
    limit = threshold * float(np.median(np.linalg.norm(cam[0], axis=-1)))
    rng = np.random.default_rng(seed)
    extrinsics = torch.zeros(s, 3, 4, dtype=torch.float64)
    extrinsics[:, :3, :3] = torch.eye(3, dtype=torch.float64)
    inliers = torch.zeros(s, dtype=torch.long)
    for i in range(1, s):
        qi, ri = mutual_matches(features[i].detach().float(), features[0].detach().float())
        fit = _ransac_similarity(cam[i][qi.cpu().numpy()], cam[0][ri.cpu().numpy()], limit, iterations, rng)
        if fit is None:
            continue
        _, rot, t, best = fit
        # camera i's centre sits at t in view 0's frame, axes R: camera i from camera 0 is x_i = R^T (x_0 - t)
        # (s only reconciles the two views' depth scales)
        extrinsics[i, :, :3] = torch.from_numpy(rot.T)
        extrinsics[i, :, 3] = torch.from_numpy(-rot.T @ t)
        inliers[i] = int(best.sum())
    return extrinsics.to(features.dtype), inliers
