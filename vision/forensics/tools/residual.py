"""Noise-residual tool: SRM high-pass kernels (first / second order, KV 3x3 and 5x5) on luma, with residual
strength, heavy-tailedness, cross-channel and frame-to-frame residual correlation and spatial uniformity.

Camera noise is strong, roughly independent between colour channels after demosaicking only locally, and
independent between frames; decoders and denoisers leave weaker, smoother, more correlated residuals.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from vision.forensics.tools.base import Clip, ForensicTool, max_block_region, sample_indices, to_gray

__all__ = ["ResidualTool", "SRM_KERNELS", "srm_residual"]

SRM_KERNELS: dict[str, np.ndarray] = {
    "first": np.array([[0, 0, 0], [0, -1, 1], [0, 0, 0]], np.float32),
    "second": np.array([[0, 0, 0], [1, -2, 1], [0, 0, 0]], np.float32) / 2.0,
    "kv3": np.array([[-1, 2, -1], [2, -4, 2], [-1, 2, -1]], np.float32) / 4.0,
    "kv5": np.array([[-1, 2, -2, 2, -1], [2, -6, 8, -6, 2], [-2, 8, -12, 8, -2], [2, -6, 8, -6, 2],
                     [-1, 2, -2, 2, -1]], np.float32) / 12.0,
}


def srm_residual(image: np.ndarray, kernel: str) -> np.ndarray:
    """High-pass residual of a float ``[H, W]`` image with the named SRM kernel (reflect borders), ``[H, W]``."""
    return cv2.filter2D(image.astype(np.float32), -1, SRM_KERNELS[kernel], borderType=cv2.BORDER_REFLECT)


def _kurtosis(x: np.ndarray) -> float:
    x = x.reshape(-1).astype(np.float64)
    centred = x - x.mean()
    squared = centred * centred  # (c * c) ** 2 instead of c ** 4: the same up to rounding, without pow()
    return float((squared * squared).mean() / (squared.mean() ** 2 + 1e-20))


def _corr(a: np.ndarray, b: np.ndarray) -> float:
    a = a.reshape(-1).astype(np.float64) - a.mean()
    b = b.reshape(-1).astype(np.float64) - b.mean()
    return float((a * b).sum() / (np.sqrt((a * a).sum() * (b * b).sum()) + 1e-20))


class ResidualTool(ForensicTool):
    """SRM residual statistics (see the module docstring); values are on the 0-255 intensity scale."""

    name = "residual"
    version = 2  # kurtosis without pow (values moved by < 2e-7 relative)
    feature_names = ("first_std", "second_std", "kv3_std", "kv5_std", "kv3_kurt", "kv5_kurt", "channel_corr",
                     "block_cv", "temporal_corr")
    descriptions = {
        "first_std": "std of the first-order SRM residual", "second_std": "std of the second-order SRM residual",
        "kv3_std": "std of the KV 3x3 SRM residual", "kv5_std": "std of the KV 5x5 SRM residual",
        "kv3_kurt": "kurtosis of the KV 3x3 residual", "kv5_kurt": "kurtosis of the KV 5x5 residual",
        "channel_corr": "correlation of R and B KV residuals", "block_cv": "coefficient of variation of the "
        "residual energy over 16x16 blocks", "temporal_corr": "correlation of KV residuals of consecutive frames",
    }

    def __init__(self, max_frames: int = 8) -> None:
        self.max_frames = max_frames

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]]:
        idx = sample_indices(clip.num_frames, self.max_frames)
        gray = to_gray(clip.frames[idx]) * 255.0
        rgb = clip.frames[idx].astype(np.float32)
        stats: dict[str, list[float]] = {k: [] for k in self.feature_names}
        energy_sum = np.zeros(gray.shape[1:], np.float64)
        for i, g in enumerate(gray):
            res = {k: srm_residual(g, k) for k in SRM_KERNELS}
            for k in ("first", "second", "kv3", "kv5"):
                stats[f"{k}_std"].append(float(res[k].std()))
            stats["kv3_kurt"].append(_kurtosis(res["kv3"]))
            stats["kv5_kurt"].append(_kurtosis(res["kv5"]))
            stats["channel_corr"].append(_corr(srm_residual(rgb[i, ..., 0], "kv3"),
                                               srm_residual(rgb[i, ..., 2], "kv3")))
            energy = res["kv3"] ** 2
            energy_sum += energy
            h, w = energy.shape
            bh, bw = h // 16, w // 16
            if bh >= 1 and bw >= 1:
                blocks = energy[: bh * 16, : bw * 16].reshape(bh, 16, bw, 16).mean(axis=(1, 3))
                stats["block_cv"].append(float(blocks.std() / (blocks.mean() + 1e-12)))
        # consecutive (not sampled) frames for the temporal correlation of noise
        pairs = sample_indices(max(clip.num_frames - 1, 0), min(4, self.max_frames))
        for t in pairs if clip.num_frames >= 2 else []:
            a = srm_residual(to_gray(clip.frames[t:t + 1])[0] * 255.0, "kv3")
            b = srm_residual(to_gray(clip.frames[t + 1:t + 2])[0] * 255.0, "kv3")
            stats["temporal_corr"].append(_corr(a, b))
        values = {k: (float(np.mean(v)) if v else float("nan")) for k, v in stats.items()}
        region = max_block_region(energy_sum, 16)
        frames = [int(i) for i in idx]
        locations = {k: (frames, region if k in ("block_cv",) else None) for k in self.feature_names}
        locations["temporal_corr"] = ([int(t) for t in pairs], None)
        return values, locations, {"residual_energy": energy_sum / max(len(gray), 1)}
