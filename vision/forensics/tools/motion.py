"""Motion tool: OpenCV DIS optical flow between consecutive frames: flow magnitude statistics, flow smoothness,
warp residual (how well the flow explains the next frame) and forward-backward inconsistency.

Generated videos often have flow that is too smooth or that does not explain the pixels (high warp residual
relative to the frame difference), and forward and backward flows that disagree.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from vision.forensics.tools.base import Clip, ForensicTool, max_block_region, sample_indices

__all__ = ["MotionTool", "dis_flow", "warp"]


def dis_flow(a: np.ndarray, b: np.ndarray, preset: int = cv2.DISOPTICAL_FLOW_PRESET_FAST) -> np.ndarray:
    """DIS flow from grey ``uint8 [H, W]`` frame ``a`` to ``b``: ``float32 [H, W, 2]`` (dx, dy) pixels, so that
    ``a(p) ~ b(p + flow(p))``."""
    dis = cv2.DISOpticalFlow_create(preset)
    return dis.calc(a, b, None)


def warp(image: np.ndarray, flow: np.ndarray) -> np.ndarray:
    """Sample ``image`` at ``p + flow(p)`` (bilinear, replicated border): ``[H, W, ...]`` like ``image``."""
    h, w = flow.shape[:2]
    grid_x, grid_y = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    return cv2.remap(image, grid_x + flow[..., 0], grid_y + flow[..., 1], cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_REPLICATE)


class MotionTool(ForensicTool):
    """Optical-flow statistics (see the module docstring); pixel units at the clip's resolution."""

    name = "motion"
    feature_names = ("mag_mean", "mag_spatial_std", "mag_temporal_cv", "smoothness", "warp_residual",
                     "warp_gain", "fb_error", "fb_outliers")
    descriptions = {
        "mag_mean": "mean flow magnitude (px/frame)", "mag_spatial_std": "spatial std of flow magnitude",
        "mag_temporal_cv": "coefficient of variation over time of the mean flow magnitude",
        "smoothness": "mean |spatial gradient| of the flow", "warp_residual": "mean |I_t - warp(I_t+1)| (0-255)",
        "warp_gain": "warp residual / plain frame difference", "fb_error": "mean forward-backward flow error (px)",
        "fb_outliers": "share of pixels with forward-backward error > 1 px",
    }
    min_frames = 2

    def __init__(self, max_pairs: int = 8) -> None:
        self.max_pairs = max_pairs

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]] | str:
        grey = clip.gray  # luma of the frames used only, each converted once per clip
        starts = sample_indices(clip.num_frames - 1, self.max_pairs)
        def moves(t: int) -> bool:
            return bool(np.any(grey(t) != grey(t + 1)))

        # frozen = no consecutive luma pair differs; a sampled pair that differs settles it without the others
        if not any(moves(int(t)) for t in starts) and not any(moves(t) for t in range(clip.num_frames - 1)):
            return "frozen video: no frame differs from the previous one"
        rows, fb_maps = [], []
        for t in starts:
            a, b = grey(int(t)), grey(int(t) + 1)
            fw = dis_flow(a, b)
            bw = dis_flow(b, a)
            mag = np.linalg.norm(fw, axis=2)
            gy, gx = np.gradient(fw[..., 0]), np.gradient(fw[..., 1])
            smooth = float(np.mean(np.abs(gy[0]) + np.abs(gy[1]) + np.abs(gx[0]) + np.abs(gx[1])))
            warped = warp(b.astype(np.float32), fw)
            residual = float(np.abs(a.astype(np.float32) - warped).mean())
            plain = float(np.abs(a.astype(np.float32) - b.astype(np.float32)).mean())
            fb = np.linalg.norm(fw + warp(bw, fw), axis=2)
            fb_maps.append(fb)
            rows.append([float(mag.mean()), float(mag.std()), smooth, residual, residual / (plain + 1e-3),
                         float(fb.mean()), float((fb > 1.0).mean())])
        arr = np.array(rows)
        mags = arr[:, 0]
        values = {"mag_mean": float(mags.mean()), "mag_spatial_std": float(arr[:, 1].mean()),
                  "mag_temporal_cv": float(mags.std() / (mags.mean() + 1e-6)), "smoothness": float(arr[:, 2].mean()),
                  "warp_residual": float(arr[:, 3].mean()), "warp_gain": float(arr[:, 4].mean()),
                  "fb_error": float(arr[:, 5].mean()), "fb_outliers": float(arr[:, 6].mean())}
        worst = int(np.argmax(arr[:, 5]))
        worst_pair = [int(starts[worst]), int(starts[worst]) + 1]
        region = max_block_region(fb_maps[worst], 16)
        all_frames = sorted({int(t) for t in starts} | {int(t) + 1 for t in starts})
        locations = {k: (all_frames, None) for k in self.feature_names}
        locations["fb_error"] = (worst_pair, region)
        locations["fb_outliers"] = (worst_pair, region)
        return values, locations, {"flow_magnitude": mags.tolist(), "fb_error_map": fb_maps[worst]}
