"""The 3D memory the tracker carries between windows (models with ``uses_geometry_memory``).

After each window, every object's predicted 3D points (the window's point map under its masks) are subsampled to
``memory_points`` evenly spaced points and carried into the next window as 3D prompts, with the mean view feature
under the masks (:func:`lift`); the points of the views the window yields also grow the object's point cloud,
capped at ``max_cloud_points`` by even subsampling (:func:`update_memory`).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from vision.tracking.session import TrackerState

__all__ = ["ObjectMemory", "lift", "mean_features", "update_memory"]

#: obj_id -> (points ``[P, 3]`` float32 in the world frame, mean feature ``[d]`` float32)
ObjectMemory = dict[int, tuple[np.ndarray, np.ndarray]]


def mean_features(masks: np.ndarray, feats: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """Mean view feature under each object's masks: ``masks [V, N, s, s]`` bool, ``feats [V, d, gh, gw]`` ->
    (``[N, d]`` float32, ``[N]`` bool: whether the masks cover anything). The features are average-pooled to each
    mask's coverage of each cell; all objects in one product."""
    grid = F.adaptive_avg_pool2d(torch.from_numpy(masks).to(feats.device, feats.dtype), feats.shape[-2:])
    denom = grid.sum(dim=(0, 2, 3))  # [N]
    total = torch.einsum("vngw,vdgw->nd", grid, feats)
    feat = (total / denom.clamp(min=torch.finfo(denom.dtype).tiny)[:, None]).float().cpu().numpy()
    return feat, (denom > 0).cpu().numpy()


def lift(masks: np.ndarray, wp: np.ndarray, feats: torch.Tensor, carried: tuple[np.ndarray, np.ndarray] | None,
         memory_points: int, feature: tuple[np.ndarray, bool] | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """An object's 3D memory from its masks ``[V, s, s]`` on views with world points ``[V, s, s, 3]`` and features
    ``[V, d, gh, gw]``, merged with the ``carried`` (points, feature): ``memory_points`` evenly spaced points (the
    carried ones first, then the finite points under the masks) and the mean feature under the masks
    (:func:`mean_features`, or ``feature``, its row for this object when already computed; the carried feature when
    the masks are empty). None when there is no point at all."""
    pts = wp[masks]
    pts = pts[np.isfinite(pts).all(1)]
    if carried is not None:
        pts = np.concatenate([carried[0], pts])
    if len(pts) == 0:
        return None
    take = np.linspace(0, len(pts) - 1, min(memory_points, len(pts))).round().astype(int)
    if feature is None:
        rows, covered = mean_features(masks[:, None], feats)
        feature = (rows[0], bool(covered[0]))
    if feature[1]:
        feat = feature[0]
    elif carried is not None:
        feat = carried[1]
    else:
        feat = np.zeros(feats.shape[1], np.float32)
    return pts[take].astype(np.float32), np.asarray(feat, np.float32)


def update_memory(state: TrackerState, obj_ids: list[int], window: list[int], emit: list[int], masks: torch.Tensor,
                  wp: np.ndarray, feats: torch.Tensor, memory: ObjectMemory, memory_points: int,
                  max_cloud_points: int) -> None:
    """After a window: grow each object's cloud in ``state`` with the finite points under its masks on the views
    ``emit`` (coloured by the frames; capped at ``max_cloud_points``), and replace its entry of ``memory`` by its
    masks on every view of the window lifted to 3D (:func:`lift`; an object found nowhere keeps its entry).

    ``masks [S, N, s, s]`` bool for ``obj_ids``; ``wp [S, s, s, 3]`` world points; ``feats [S, d, gh, gw]``."""
    masks_np = masks.cpu().numpy()  # [S, N, s, s]
    emit_idx = [window.index(v) for v in emit]
    feat, covered = mean_features(masks_np, feats)
    wp_emit, frames_emit, masks_emit = wp[emit_idx], state.frames[emit], masks_np[emit_idx]  # once for all objects
    for j, o in enumerate(obj_ids):
        sel = masks_np[:, j]
        new_pts = wp_emit[masks_emit[:, j]]
        new_col = frames_emit[masks_emit[:, j]].astype(np.float32) / 255.0
        finite = np.isfinite(new_pts).all(1)
        cloud = np.concatenate([state.clouds[o], new_pts[finite]])
        colors = np.concatenate([state.cloud_colors[o], new_col[finite]])
        if len(cloud) > max_cloud_points:
            keep = np.linspace(0, len(cloud) - 1, max_cloud_points).round().astype(int)
            cloud, colors = cloud[keep], colors[keep]
        state.clouds[o], state.cloud_colors[o] = cloud.astype(np.float32), colors.astype(np.float32)
        entry = lift(sel, wp, feats, None, memory_points, (feat[j], bool(covered[j])))
        if entry is not None:
            memory[o] = entry
