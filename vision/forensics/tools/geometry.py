"""Geometry tool: multi-view consistency of the clip, from classical two-view geometry and, when a geometry
backbone is given, from the shared backbone's cameras, depth and point maps.

Classical cues (no weights): corners tracked with pyramidal Lucas-Kanade (forward-backward checked) between
frames ``gap`` apart; a fundamental matrix (RANSAC) gives the median Sampson epipolar residual and the inlier
share; a homography's transfer error measures parallax; the median track displacement per frame is a 2-D
camera-path proxy whose jerk (third difference) is reported relative to its speed.
Backbone cues (``GeometryBackbone``, images ``[1, S, 3, H, W]`` in [0, 1]): camera-centre jerk, focal-length
stability, depth / point confidence statistics, and the disagreement between the point head and the depth
head unprojected with the predicted cameras (a reprojection residual).

Epipolar geometry is meaningless without parallax: a static camera or a pure rotation makes the classical cues
not applicable (the backbone cues remain when a backbone is given).
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np
import torch

from vision.data.resize import resize_image
from vision.forensics.tools.base import Clip, ForensicTool, sample_indices

__all__ = ["GeometryTool", "track_pair", "sampson_distance", "run_backbone"]


@torch.no_grad()
def run_backbone(model: torch.nn.Module, clip: Clip, max_views: int) -> dict[str, Any]:
    """The geometry backbone's outputs on at most ``max_views`` frames of ``clip`` spread evenly, each resized
    (:func:`vision.data.resize.resize_image`) to the backbone's square input (its ``img_size`` rounded down to the patch size; 112 without one), in [0, 1]:
    the backbone's output dict (``extrinsics [1, S, 3, 4]``, ``depth [1, S, H, W, 1]``, ...)."""
    size = int(model.aggregator.img_size) if hasattr(model.aggregator, "img_size") else 112
    patch = int(model.patch_size)
    size = max(patch, size // patch * patch)
    idx = sample_indices(clip.num_frames, max_views)
    frames = np.stack([resize_image(f, (size, size)) for f in clip.frames[idx]])
    images = torch.from_numpy(frames).permute(0, 3, 1, 2).float().div(255.0)[None]
    return model(images)

CLASSICAL = ("epi_median", "epi_inliers", "parallax", "track_survival", "path_jerk")
BACKBONE = ("cam_jerk", "focal_cv", "depth_conf_mean", "depth_conf_cv", "point_depth_residual")


def track_pair(a: np.ndarray, b: np.ndarray, max_corners: int = 300) -> tuple[np.ndarray, np.ndarray, float]:
    """Track corners of grey ``uint8`` frame ``a`` into ``b``: ``(points_a [N, 2], points_b [N, 2], survival)``
    (x, y) pixels, keeping tracks whose forward-backward error is under 1 px; survival = kept / detected."""
    corners = cv2.goodFeaturesToTrack(a, maxCorners=max_corners, qualityLevel=0.01, minDistance=4)
    if corners is None or len(corners) < 8:
        return np.zeros((0, 2), np.float32), np.zeros((0, 2), np.float32), 0.0
    params = dict(winSize=(15, 15), maxLevel=2, criteria=(cv2.TERM_CRITERIA_EPS | cv2.TERM_CRITERIA_COUNT, 20, 0.03))
    fwd, st1, _ = cv2.calcOpticalFlowPyrLK(a, b, corners, None, **params)
    back, st2, _ = cv2.calcOpticalFlowPyrLK(b, a, fwd, None, **params)
    err = np.linalg.norm((corners - back).reshape(-1, 2), axis=1)
    keep = (st1.reshape(-1) == 1) & (st2.reshape(-1) == 1) & (err < 1.0)
    return corners.reshape(-1, 2)[keep], fwd.reshape(-1, 2)[keep], float(keep.mean())


def sampson_distance(fmat: np.ndarray, pa: np.ndarray, pb: np.ndarray) -> np.ndarray:
    """First-order (Sampson) epipolar distance in pixels of correspondences ``pa -> pb`` ``[N, 2]`` under ``F``."""
    ha = np.concatenate([pa, np.ones((len(pa), 1))], axis=1)
    hb = np.concatenate([pb, np.ones((len(pb), 1))], axis=1)
    fa = ha @ fmat.T  # epipolar lines in b
    fb = hb @ fmat  # epipolar lines in a
    num = np.sum(hb * fa, axis=1) ** 2
    den = fa[:, 0] ** 2 + fa[:, 1] ** 2 + fb[:, 0] ** 2 + fb[:, 1] ** 2
    return np.sqrt(num / np.maximum(den, 1e-12))


class GeometryTool(ForensicTool):
    """Geometry cues (see the module docstring).

    Args:
        backbone: an optional ``vision.geometry.model.GeometryBackbone`` (eval mode is set here); without it only
            the classical cues are measured.
        max_views: frames given to the backbone.
        min_parallax: homography transfer error (px) under which the camera counts as static / rotating.
    """

    name = "geometry"
    descriptions = {
        "epi_median": "median Sampson epipolar residual of tracked corners (px)",
        "epi_inliers": "share of tracks consistent with one fundamental matrix",
        "parallax": "median homography transfer error (px): how much parallax the camera motion has",
        "track_survival": "share of corners that survive forward-backward tracking",
        "path_jerk": "|third difference| / |first difference| of the 2-D camera-path proxy",
        "cam_jerk": "backbone camera-centre jerk relative to speed", "focal_cv": "backbone field-of-view std / mean",
        "depth_conf_mean": "mean backbone depth confidence", "depth_conf_cv": "spatial CV of depth confidence",
        "point_depth_residual": "relative disagreement of point head and unprojected depth head",
    }
    min_frames = 2

    def __init__(self, backbone: torch.nn.Module | None = None, max_views: int = 8, gap: int = 4,
                 min_parallax: float = 0.35) -> None:
        self.backbone = backbone.eval() if backbone is not None else None
        self.feature_names = CLASSICAL + (BACKBONE if backbone is not None else ())
        self.max_views, self.gap, self.min_parallax = max_views, gap, min_parallax

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]] | str:
        gray = np.stack([clip.gray(i) for i in range(min(clip.num_frames, 64))])
        values: dict[str, float] = {}
        locations: dict[str, tuple[list[int], list[int] | None]] = {}
        classical = self._classical(gray)
        if isinstance(classical, str) and self.backbone is None:
            return classical
        if not isinstance(classical, str):
            values.update(classical[0])
            locations.update({k: classical[1] for k in CLASSICAL})
        if self.backbone is not None:
            values.update(self._backbone_cues(clip))
        return values, locations, {}

    def _classical(self, gray: np.ndarray) -> tuple[dict[str, float], tuple[list[int], None]] | str:
        t = len(gray)
        gap = max(1, min(self.gap, t - 1))
        starts = sample_indices(t - gap, 4)
        epi, inl, par, surv, used = [], [], [], [], []
        for s in starts:
            pa, pb, survival = track_pair(gray[s], gray[s + gap])
            surv.append(survival)
            if len(pa) < 12:
                continue
            hmat, _ = cv2.findHomography(pa, pb, cv2.RANSAC, 1.0)
            if hmat is None:
                continue
            proj = cv2.perspectiveTransform(pa.reshape(-1, 1, 2).astype(np.float64), hmat).reshape(-1, 2)
            h_err = float(np.median(np.linalg.norm(proj - pb, axis=1)))
            if h_err < self.min_parallax:
                continue  # explained by one homography: no parallax in this pair
            fmat, mask = cv2.findFundamentalMat(pa, pb, cv2.FM_RANSAC, 1.0, 0.99)
            if fmat is None or fmat.shape != (3, 3):
                continue
            epi.append(float(np.median(sampson_distance(fmat, pa.astype(np.float64), pb.astype(np.float64)))))
            inl.append(float(mask.mean()))
            par.append(h_err)
            used.extend([int(s), int(s + gap)])
        if not epi:
            return "no parallax: the frames are related by a homography (static camera, pure rotation or a plane)"
        path = []
        for s in range(min(t, 16) - 1):
            pa, pb, _ = track_pair(gray[s], gray[s + 1], max_corners=150)
            path.append(np.median(pb - pa, axis=0) if len(pa) else np.zeros(2))
        path = np.asarray(path)
        jerk = float("nan")
        if len(path) >= 4:
            speed = float(np.linalg.norm(path, axis=1).mean())
            jerk = float(np.linalg.norm(np.diff(path, n=2, axis=0), axis=1).mean() / (speed + 0.05))
        values = {"epi_median": float(np.mean(epi)), "epi_inliers": float(np.mean(inl)),
                  "parallax": float(np.mean(par)), "track_survival": float(np.mean(surv)), "path_jerk": jerk}
        return values, (sorted(set(used)), None)

    @torch.no_grad()
    def _backbone_cues(self, clip: Clip) -> dict[str, float]:
        from vision.geometry.camera import depth_to_world_points

        out = run_backbone(self.backbone, clip, self.max_views)
        extr, intr = out["extrinsics"][0], out["intrinsics"][0]
        centres = -(extr[:, :3, :3].transpose(1, 2) @ extr[:, :3, 3:]).squeeze(-1).numpy()
        values: dict[str, float] = {}
        if len(centres) >= 4:
            speed = float(np.linalg.norm(np.diff(centres, axis=0), axis=1).mean())
            values["cam_jerk"] = float(np.linalg.norm(np.diff(centres, n=3, axis=0), axis=1).mean() / (speed + 1e-6))
        fov = out["pose_enc"][0, :, 7:9].numpy()  # field of view (h, w): finite even where a focal is not
        values["focal_cv"] = float(fov.std(axis=0).mean() / (np.abs(fov).mean() + 1e-6))
        conf = out["depth_conf"][0].numpy()
        values["depth_conf_mean"] = float(conf.mean())
        values["depth_conf_cv"] = float(conf.std() / (abs(conf.mean()) + 1e-6))
        if bool(torch.isfinite(intr).all()):
            pts_depth = depth_to_world_points(out["depth"][0, ..., 0], extr, intr)
            pts_head = out["world_points"][0]
            scale = pts_head.norm(dim=-1).median().clamp_min(1e-6)
            values["point_depth_residual"] = float(((pts_depth - pts_head).norm(dim=-1).median() / scale).item())
        return values
