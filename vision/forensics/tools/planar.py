"""Planar tool: how much of the motion one homography per frame pair explains, the signature of image-to-video
animation of a still (a zoom / pan / tilt of one picture: no parallax, no occlusion, no independent motion).

Classical part (no weights), on ``max_pairs`` frame pairs ``(t, t + gap)`` spread over the clip:

* corners of frame ``t`` tracked into ``t + gap`` (``goodFeaturesToTrack`` + pyramidal Lucas-Kanade, forward-backward
  checked, :func:`vision.forensics.tools.geometry.track_pair`); a RANSAC homography (1 px threshold) on them;
  ``inlier_share`` = share of tracks within 1 px of it;
* dense DIS flow ``t -> t + gap`` compared with the flow the homography predicts, on textured pixels (Sobel
  magnitude above its median, 8-px border dropped): ``residual_px`` = median ``|flow - flow_H|`` (px),
  ``explained`` = ``1 - mean |flow - flow_H| / mean |flow|`` (clipped to [0, 1]; the share of the motion one
  homography explains), ``outlier_share`` = share of textured pixels whose flow departs more than 1 px from it
  (independent motion, parallax, occlusion).

Only pairs whose mean flow magnitude on textured pixels exceeds ``min_motion`` px count; a clip with no such pair is
not applicable (a still or a static camera says nothing about planarity).

Backbone part (only when a ``GeometryBackbone`` is given, like :class:`~vision.forensics.tools.geometry.GeometryTool`;
the same call: images ``[1, S, 3, H, W]`` in [0, 1], ``out["depth"] [1, S, H, W, 1]``): ``depth_cv`` = median
over frames of the coefficient of variation of predicted depth (how deep the scene is), and ``planar_depth`` =
``explained * depth_cv``: a deep scene whose motion is one homography is suspicious. Without a backbone these two
features are not in ``feature_names`` (the same convention as the geometry tool's backbone cues).
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np
import torch

from vision.forensics.tools.base import Clip, ForensicTool, max_block_region, sample_indices
from vision.forensics.tools.geometry import run_backbone, track_pair
from vision.forensics.tools.motion import dis_flow

__all__ = ["PlanarTool", "homography_flow"]

CLASSICAL = ("inlier_share", "residual_px", "explained", "outlier_share")
BACKBONE = ("depth_cv", "planar_depth")
BORDER = 8


def homography_flow(hmat: np.ndarray, height: int, width: int) -> np.ndarray:
    """The flow ``float32 [H, W, 2]`` (dx, dy) that homography ``hmat`` (3x3, pixels of frame a -> frame b)
    induces at every pixel of frame a."""
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float64)
    pts = np.stack([xs.ravel(), ys.ravel()], axis=1).reshape(-1, 1, 2)
    moved = cv2.perspectiveTransform(pts, hmat.astype(np.float64)).reshape(height, width, 2)
    return (moved - np.stack([xs, ys], axis=-1)).astype(np.float32)


class PlanarTool(ForensicTool):
    """Homography-explained motion (see the module docstring).

    Args:
        backbone: an optional ``vision.geometry.model.GeometryBackbone`` (eval mode is set here) for the depth cues.
        max_pairs: frame pairs measured. gap: frames between the two frames of a pair (more gap, more parallax).
        min_motion: mean flow magnitude (px per pair, textured pixels) under which a pair counts as not moving.
        max_views: frames given to the backbone.
    """

    name = "planar"
    descriptions = {
        "inlier_share": "share of tracked corners within 1 px of one RANSAC homography per frame pair",
        "residual_px": "median |dense flow - homography flow| on textured pixels (px)",
        "explained": "share of the motion one homography explains: 1 - mean |flow - flow_H| / mean |flow|",
        "outlier_share": "share of textured pixels whose flow departs > 1 px from the homography",
        "depth_cv": "median over frames of the backbone depth's coefficient of variation (scene depth range)",
        "planar_depth": "explained x depth_cv: a deep scene moving as one plane",
    }
    min_frames = 2

    def __init__(self, backbone: torch.nn.Module | None = None, max_pairs: int = 6, gap: int = 2,
                 min_motion: float = 0.25, max_views: int = 4) -> None:
        self.backbone = backbone.eval() if backbone is not None else None
        self.feature_names = CLASSICAL + (BACKBONE if backbone is not None else ())
        self.max_pairs, self.gap, self.min_motion, self.max_views = max_pairs, gap, min_motion, max_views

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]] | str:
        t = clip.num_frames
        gap = max(1, min(self.gap, t - 1))
        starts = sample_indices(t - gap, self.max_pairs)
        h, w = clip.height, clip.width
        rows, used, worst = [], [], (-1.0, None, None)
        for s in starts:
            a, b = clip.gray(s), clip.gray(s + gap)
            flow = dis_flow(a, b, cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)
            gx = cv2.Sobel(a, cv2.CV_32F, 1, 0, ksize=3)
            gy = cv2.Sobel(a, cv2.CV_32F, 0, 1, ksize=3)
            grad = np.sqrt(gx * gx + gy * gy)
            mask = grad > np.median(grad)
            if h > 4 * BORDER and w > 4 * BORDER:
                inner = np.zeros_like(mask)
                inner[BORDER:-BORDER, BORDER:-BORDER] = True
                mask &= inner
            if not mask.any():
                continue
            mag = np.linalg.norm(flow, axis=2)
            if float(mag[mask].mean()) < self.min_motion:
                continue
            pa, pb, _ = track_pair(a, b)
            if len(pa) < 8:
                continue
            hmat, inliers = cv2.findHomography(pa, pb, cv2.RANSAC, 1.0)
            if hmat is None:
                continue
            err = np.linalg.norm(flow - homography_flow(hmat, h, w), axis=2)
            explained = 1.0 - float(err[mask].mean()) / (float(mag[mask].mean()) + 1e-6)
            rows.append([float(inliers.mean()), float(np.median(err[mask])), float(np.clip(explained, 0.0, 1.0)),
                         float((err[mask] > 1.0).mean())])
            used.extend([int(s), int(s + gap)])
            score = float(np.where(mask, err, 0.0).mean())
            if score > worst[0]:
                worst = (score, [int(s), int(s + gap)], np.where(mask, err, 0.0))
        if not rows:
            return (f"no motion: no sampled frame pair (gap {gap}) has a mean flow over {self.min_motion} px on "
                    f"textured pixels with at least 8 tracked corners")
        arr = np.asarray(rows)
        values = {name: float(arr[:, i].mean()) for i, name in enumerate(CLASSICAL)}
        frames_used = sorted(set(used))
        locations: dict[str, tuple[list[int], list[int] | None]] = {k: (frames_used, None) for k in self.feature_names}
        region = max_block_region(worst[2], 16)
        locations["outlier_share"] = (worst[1], region)
        locations["residual_px"] = (worst[1], region)
        extras: dict[str, Any] = {"residual_map": worst[2], "pairs": [[int(s), int(s + gap)] for s in starts]}
        if self.backbone is not None:
            depth_cv = self._depth_cv(clip)
            values["depth_cv"] = depth_cv
            values["planar_depth"] = values["explained"] * depth_cv
        return values, locations, extras

    @torch.no_grad()
    def _depth_cv(self, clip: Clip) -> float:
        depth = run_backbone(self.backbone, clip, self.max_views)["depth"][0, ..., 0].float().cpu().numpy()  # [S, H, W]
        per_frame = depth.reshape(len(depth), -1)
        cv = per_frame.std(axis=1) / (np.abs(per_frame.mean(axis=1)) + 1e-6)
        cv = cv[np.isfinite(cv)]
        return float(np.median(cv)) if cv.size else float("nan")
