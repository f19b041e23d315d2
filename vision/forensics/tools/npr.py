"""NPR tool (neighbouring pixel relationships): the residual ``x - up2(down2(x))`` with nearest resampling, and
how similar pixels *inside* 2x2 cells are compared with pixels *across* cell borders.

An image up-sampled by a factor of 2 (nearest, or a transposed convolution, as in generator decoders) has
strongly correlated pixels inside each 2x2 cell, so the within-cell / across-cell difference ratio drops
below the ~1 of camera images.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vision.forensics.tools.base import Clip, ForensicTool, max_block_region, sample_indices, to_gray

__all__ = ["NPRTool", "npr_residual"]


def npr_residual(image: np.ndarray) -> np.ndarray:
    """``x - up2(down2(x))`` with nearest resampling for ``[H, W]`` (H, W cropped to even), ``[H', W']``."""
    h, w = image.shape[0] // 2 * 2, image.shape[1] // 2 * 2
    x = image[:h, :w]
    down = x[::2, ::2]
    up = np.repeat(np.repeat(down, 2, axis=0), 2, axis=1)
    return x - up


class NPRTool(ForensicTool):
    """NPR statistics (see the module docstring); values on the 0-255 scale."""

    name = "npr"
    version = 2  # kurtosis without pow (values moved by < 2e-7 relative)
    feature_names = ("abs_mean", "std", "kurt", "h_ratio", "v_ratio", "d_ratio")
    descriptions = {
        "abs_mean": "mean |x - up2(down2(x))| (nearest)", "std": "std of the NPR residual",
        "kurt": "kurtosis of the NPR residual",
        "h_ratio": "mean |horizontal difference| inside 2x2 cells / across cell borders",
        "v_ratio": "mean |vertical difference| inside 2x2 cells / across cell borders",
        "d_ratio": "mean |diagonal NPR residual| / mean |horizontal NPR residual|",
    }

    def __init__(self, max_frames: int = 8) -> None:
        self.max_frames = max_frames

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]]:
        idx = sample_indices(clip.num_frames, self.max_frames)
        gray = to_gray(clip.frames[idx]) * 255.0
        rows: list[list[float]] = []
        energy_sum = None
        for g in gray:
            r = npr_residual(g)
            x = g[: r.shape[0], : r.shape[1]]
            dh = np.abs(np.diff(x, axis=1))  # dh[:, j] = |x[:, j+1] - x[:, j]|
            dv = np.abs(np.diff(x, axis=0))
            h_in, h_across = dh[:, 0::2].mean(), dh[:, 1::2].mean() + 1e-6
            v_in, v_across = dv[0::2, :].mean(), dv[1::2, :].mean() + 1e-6
            centred = r - r.mean()
            squared = centred * centred  # (c * c) ** 2 instead of c ** 4: the same up to rounding, without pow()
            kurt = float((squared * squared).mean() / (centred.var() ** 2 + 1e-20))
            d_ratio = float(np.abs(r[1::2, 1::2]).mean() / (np.abs(r[0::2, 1::2]).mean() + 1e-6))
            rows.append([float(np.abs(r).mean()), float(r.std()), kurt, float(h_in / h_across),
                         float(v_in / v_across), d_ratio])
            energy_sum = np.abs(r) if energy_sum is None else energy_sum + np.abs(r)
        values = dict(zip(self.feature_names, np.mean(np.array(rows), axis=0).tolist()))
        region = max_block_region(energy_sum, 16)
        frames = [int(i) for i in idx]
        locations = {k: (frames, region) for k in self.feature_names}
        return values, locations, {"npr_energy": energy_sum / len(gray)}
