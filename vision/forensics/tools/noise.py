"""Noise tool: consistency of the noise field across frames.

Camera sensor noise is fresh in every frame: the noise residual of frame ``t + 1`` does not correlate with that of
frame ``t``, neither in place nor after following the motion. A still animated into a video (or content copied
between frames by a generator) carries one noise field that moves *with the content*: after compensating the
motion, consecutive residuals correlate.

Residual (luma, 0-255 units): ``r = g - GaussianBlur(g, 3x3)`` (a high-pass that keeps grain and fine texture).
On ``max_pairs`` consecutive pairs ``(t, t + 1)`` spread over the clip, with DIS flow ``t -> t + 1``
(:func:`vision.forensics.tools.motion.dis_flow`, ``r_t(p) ~ r_{t+1}(p + flow(p))``), Pearson correlations over
pixels away from the border (8 px):

* ``corr_plain``: ``corr(r_t, r_{t+1})`` without compensation; ``corr_warped``: ``corr(r_t, warp(r_{t+1}, flow))``;
  ``corr_gain = corr_warped - corr_plain`` (what following the motion adds);
* ``flat_corr_warped``: ``corr_warped`` on the flattest half of the pixels (Gaussian-smoothed gradient magnitude under
  its median), where the residual is mostly noise rather than texture.

Over ``max_frames`` frames spread over the clip: ``level_cv`` = coefficient of variation over time of the residual
level (1.4826 MAD of ``r``), and ``spectrum_std`` = mean over 6 radial frequency bands of the std over time of the
log band energy share of ``r`` (real noise changes with exposure and content; a pasted field does not).
A frozen clip (no frame differs) is not applicable.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from vision.forensics.tools.base import Clip, ForensicTool, sample_indices
from vision.forensics.tools.motion import dis_flow, warp

__all__ = ["NoiseTool", "noise_residual", "band_shares"]

BORDER = 8
BANDS = 6


def noise_residual(gray: np.ndarray) -> np.ndarray:
    """Grey ``[H, W]`` (any dtype, 0-255 units) -> ``float32 [H, W]`` high-pass residual ``g - blur3x3(g)``."""
    g = gray.astype(np.float32)
    return g - cv2.GaussianBlur(g, (3, 3), 0)


def band_shares(residual: np.ndarray, bands: int = BANDS) -> np.ndarray:
    """Share of the power of ``residual [H, W]`` in ``bands`` equal-width radial frequency bands (0 .. Nyquist):
    ``float64 [bands]`` summing to 1 (uniform when the residual is zero)."""
    h, w = residual.shape
    power = np.abs(np.fft.rfft2(residual - residual.mean())) ** 2
    fy = np.fft.fftfreq(h)[:, None]
    fx = np.fft.rfftfreq(w)[None, :]
    radius = np.sqrt(fx ** 2 + fy ** 2) / 0.5
    idx = np.clip((radius * bands).astype(np.int64), 0, bands - 1)
    energy = np.bincount(idx.ravel(), weights=power.ravel(), minlength=bands)
    total = float(energy.sum())
    return energy / total if total > 0 else np.full(bands, 1.0 / bands)


def _corr(x: np.ndarray, y: np.ndarray) -> float:
    x = x - x.mean()
    y = y - y.mean()
    den = float(np.sqrt(np.sum(x * x) * np.sum(y * y)))
    return float(np.sum(x * y) / den) if den > 1e-9 else float("nan")


class NoiseTool(ForensicTool):
    """Noise-field consistency (see the module docstring).

    Args:
        max_pairs: consecutive frame pairs for the correlations. max_frames: frames for the level / spectrum.
    """

    name = "noise"
    feature_names = ("corr_plain", "corr_warped", "corr_gain", "flat_corr_warped", "level_cv", "spectrum_std")
    descriptions = {
        "corr_plain": "correlation of consecutive noise residuals without motion compensation",
        "corr_warped": "correlation of consecutive noise residuals after warping by the optical flow "
                       "(high: a noise field that moves with the content)",
        "corr_gain": "corr_warped - corr_plain: what following the motion adds to the residual correlation",
        "flat_corr_warped": "motion-compensated residual correlation on the flattest half of the pixels",
        "level_cv": "coefficient of variation over time of the noise level (MAD of the residual)",
        "spectrum_std": "mean over radial bands of the std over time of the residual's log band-energy share",
    }
    min_frames = 2

    def __init__(self, max_pairs: int = 6, max_frames: int = 16) -> None:
        self.max_pairs, self.max_frames = max_pairs, max_frames

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]] | str:
        moving = clip.frame_changes()
        if not moving.any():
            return "frozen video: no frame differs from the previous one"
        h, w = clip.height, clip.width
        inner = np.zeros((h, w), bool)
        b = BORDER if h > 4 * BORDER and w > 4 * BORDER else 0
        inner[b:h - b, b:w - b] = True
        grey = clip.gray
        moving_starts = np.flatnonzero(moving)
        starts = moving_starts[sample_indices(len(moving_starts), self.max_pairs)]
        rows = []
        for s in starts:
            a, bb = grey(int(s)), grey(int(s) + 1)
            ra, rb = noise_residual(a), noise_residual(bb)
            flow = dis_flow(a, bb, cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)
            rw = warp(rb, flow)
            gx = cv2.Sobel(a, cv2.CV_32F, 1, 0, ksize=3)
            gy = cv2.Sobel(a, cv2.CV_32F, 0, 1, ksize=3)
            grad = cv2.GaussianBlur(np.sqrt(gx * gx + gy * gy), (5, 5), 0)
            flat = inner & (grad <= np.median(grad[inner]))
            plain = _corr(ra[inner], rb[inner])
            warped = _corr(ra[inner], rw[inner])
            rows.append([plain, warped, warped - plain, _corr(ra[flat], rw[flat]) if flat.sum() > 16 else np.nan])
        arr = np.asarray(rows, np.float64)
        with np.errstate(invalid="ignore"):
            means = [float(np.nanmean(arr[:, i])) if np.isfinite(arr[:, i]).any() else float("nan")
                     for i in range(arr.shape[1])]
        idx = sample_indices(clip.num_frames, self.max_frames)
        levels, shares = [], []
        for i in idx:
            r = noise_residual(grey(int(i)))[inner].reshape(h - 2 * b, w - 2 * b)
            levels.append(1.4826 * float(np.median(np.abs(r - np.median(r)))))
            shares.append(band_shares(r))
        levels_arr = np.asarray(levels)
        level_cv = float(levels_arr.std() / (levels_arr.mean() + 1e-6)) if len(levels_arr) > 1 else float("nan")
        log_shares = np.log(np.asarray(shares) + 1e-8)
        spectrum_std = float(log_shares.std(axis=0).mean()) if len(log_shares) > 1 else float("nan")
        values = dict(zip(self.feature_names[:4], means))
        values.update({"level_cv": level_cv, "spectrum_std": spectrum_std})
        pair_frames = sorted({int(s) for s in starts} | {int(s) + 1 for s in starts})
        locations = {k: (pair_frames, None) for k in self.feature_names[:4]}
        locations.update({k: ([int(i) for i in idx], None) for k in ("level_cv", "spectrum_std")})
        return values, locations, {"noise_level": levels, "pair_correlations": arr.tolist()}
