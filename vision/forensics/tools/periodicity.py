"""Periodicity tool: period-2 (and period-k) patterns in per-frame statistics, the signature of frame
interpolation (every other frame synthesised from its neighbours) and of generators that work in fixed temporal
chunks.

Per-frame statistics on the luma in 0-255 units, over ``max_frames`` *consecutive* frames from the start (the
pattern needs consecutive frames; nothing is subsampled):

* ``sharp``: ``log`` variance of the 3x3 Laplacian (an interpolated frame is a blend of two warps: blurrier);
* ``noise``: ``log`` Immerkaer noise level, ``sqrt(pi / 2) / 6`` x the mean ``|frame * N|`` with the 3x3 kernel
  ``N = [[1, -2, 1], [-2, 4, -2], [1, -2, 1]]``, trimmed to the pixels under the 90th percentile (edges dropped);
  a blend of two frames averages their noise down by up to sqrt 2;
* ``resid``: ``log`` trimmed mean (pixels under the 90th percentile) of ``|f[t-1] - 2 f[t] + f[t+1]|``, the residual
  of predicting a frame as the mean of its neighbours (tiny at interpolated frames, whose noise *is* the mean of
  their neighbours' noise; large at the original frames between them). Defined for ``t = 1 .. T-2``.

Each series is detrended (minus a Gaussian smooth with sigma = 4 frames, which passes periods of 8 frames and
less with gain > 0.99 and removes slow content changes) and scored by epoch folding: for period ``p`` the series
(cut to a multiple of ``p``) is grouped by phase ``t mod p``; the score is the F ratio
``(between-phase variance / dof) / (within-phase variance / dof)``. For a series whose length is a multiple of
``p`` this equals the mean periodogram power at the harmonics ``j / p`` over the mean power at the other
frequencies, i.e. a normalised peak-to-background ratio: about 1 without a pattern, large with one.
``*_p2`` is the period-2 score; ``*_pk`` is the largest score over periods ``k = 3 .. min(8, n // 3)`` (at least
three cycles) after removing the period-2 phase means, so that a period-2 pattern does not reappear at k = 4, 6, 8;
the winning ``k`` goes to the extras (``*_pk`` is nan when the series is shorter than 9 values, e.g. an 8-frame
clip; ``resid`` has two values fewer than the clip has frames). ``noise_alt`` is the absolute difference of the
mean detrended log noise level of even and odd frames (about the relative noise drop of interpolated frames).
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np
from scipy.ndimage import gaussian_filter1d

from vision.forensics.tools.base import Clip, ForensicTool

__all__ = ["PeriodicityTool", "frame_statistics", "fold_score", "detrend"]

STATS = ("sharp", "noise", "resid")
TREND_SIGMA = 4.0
MAX_PERIOD = 8


IMMERKAER = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], np.float32)


def _trimmed_mean(values: np.ndarray, keep: float = 0.9) -> float:
    """Mean of the ``keep`` share of smallest ``values [N]`` (drops edges / moving contours).

    ``values`` must hold non-negative integers (any dtype; every statistic of this module is one: integer filters
    of 8-bit luma): they are counted (``bincount``) instead of partially sorted, and summed exactly in integers.
    A float32 ``np.partition(...).mean()`` gives the same value up to its float32 rounding (about 1e-7 relative).
    """
    k = int(keep * (values.size - 1))
    counts = np.bincount(values.astype(np.int64, copy=False))
    cum = np.cumsum(counts)
    cut = int(np.searchsorted(cum, k + 1))  # the (k+1)-th smallest value
    below = int(cum[cut - 1]) if cut > 0 else 0
    total = int(np.dot(np.arange(cut, dtype=np.int64), counts[:cut])) + (k + 1 - below) * cut
    return total / (k + 1)


def frame_statistics(frames: np.ndarray) -> dict[str, np.ndarray]:
    """``uint8 [T, H, W, 3]`` RGB (T >= 3) -> ``{"sharp": [T], "noise": [T], "resid": [T - 2]}`` float64 series
    (natural logs of the statistics in the module docstring; 0-255 luma units)."""
    gray = [cv2.cvtColor(f, cv2.COLOR_RGB2GRAY).astype(np.float32) for f in frames]
    sharp, noise = [], []
    for g in gray:
        sharp.append(float(cv2.Laplacian(g, cv2.CV_32F, ksize=1).var()))
        d = np.abs(cv2.filter2D(g, cv2.CV_32F, IMMERKAER, borderType=cv2.BORDER_REFLECT)).reshape(-1)
        noise.append(float(np.sqrt(np.pi / 2) / 6.0 * _trimmed_mean(d)))
    resid = []
    for t in range(1, len(gray) - 1):
        resid.append(_trimmed_mean(np.abs(gray[t - 1] + gray[t + 1] - 2.0 * gray[t]).reshape(-1)))
    eps = 1e-3
    return {"sharp": np.log(np.asarray(sharp) + eps), "noise": np.log(np.asarray(noise) + eps),
            "resid": np.log(np.asarray(resid) + eps)}


def detrend(series: np.ndarray, sigma: float = TREND_SIGMA) -> np.ndarray:
    """``series [n]`` minus its Gaussian smooth (``sigma`` frames, reflected ends): periods <= 2 sigma survive."""
    series = np.asarray(series, np.float64)
    return series - gaussian_filter1d(series, sigma, mode="reflect")


def fold_score(series: np.ndarray, period: int, remove: int | None = None) -> float:
    """Epoch-folding F ratio of ``series [n]`` at ``period`` (see the module docstring); ``remove``: a period whose
    phase means are subtracted first (2 for the period-k scores). ``nan`` when ``n < 2 * period`` or the series
    is constant."""
    x = np.asarray(series, np.float64)
    n = len(x) // period * period
    if n < 2 * period:
        return float("nan")
    x = x[:n]
    if remove is not None:
        x = x.copy()
        for phase in range(remove):
            x[phase::remove] -= x[phase::remove].mean()
    x = x - x.mean()
    phases = x.reshape(-1, period)  # rows: cycles, columns: phase
    means = phases.mean(axis=0)
    between = float(phases.shape[0] * np.sum(means ** 2))
    within = float(np.sum((phases - means) ** 2))
    dof_between = period - 1 - (1 if remove is not None and period % remove == 0 else 0)
    dof_within = n - period
    total = between + within
    if total <= 1e-12 * max(1.0, float(np.sum(np.asarray(series, np.float64) ** 2))) or dof_between < 1:
        return float("nan")
    return float((between / dof_between) / (within / dof_within + 1e-6 * total / n))


class PeriodicityTool(ForensicTool):
    """Period-2 / period-k patterns of per-frame statistics (see the module docstring).

    Args:
        max_frames: consecutive frames analysed from the start of the clip (cost is linear in it).
    """

    name = "periodicity"
    version = 2  # exact trimmed means / kurtosis without pow (values moved by < 2e-3 relative)
    feature_names = tuple(f"{s}_{p}" for s in STATS for p in ("p2", "pk")) + ("noise_alt",)
    descriptions = {
        "sharp_p2": "period-2 peak-to-background ratio (epoch-folding F) of the log Laplacian sharpness",
        "sharp_pk": "largest period-k (k = 3..8) peak-to-background ratio of the log Laplacian sharpness",
        "noise_p2": "period-2 peak-to-background ratio of the log noise level (trimmed Immerkaer estimate)",
        "noise_pk": "largest period-k (k = 3..8) peak-to-background ratio of the log noise level",
        "resid_p2": "period-2 peak-to-background ratio of the log temporal prediction residual "
                    "|f[t-1] - 2 f[t] + f[t+1]|",
        "resid_pk": "largest period-k (k = 3..8) peak-to-background ratio of the log temporal prediction residual",
        "noise_alt": "|mean detrended log noise level of even frames - odd frames| (relative noise alternation)",
    }
    min_frames = 8

    def __init__(self, max_frames: int = 64) -> None:
        self.max_frames = max(int(max_frames), self.min_frames)

    def check(self, clip: Clip) -> str | None:
        if clip.num_frames < self.min_frames:
            return (f"needs at least {self.min_frames} consecutive frames (four cycles of a period-2 pattern), "
                    f"the clip has {clip.num_frames}")
        return None

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]] | str:
        frames = clip.frames[: self.max_frames]
        if not clip.frame_changes()[: len(frames) - 1].any():
            return "frozen video: no frame differs from the previous one"
        stats = frame_statistics(frames)
        values: dict[str, float] = {}
        best_k: dict[str, int] = {}
        curves: dict[str, list[float]] = {}
        for stat, series in stats.items():
            x = detrend(series)
            curves[stat] = x.tolist()
            values[f"{stat}_p2"] = fold_score(x, 2)
            scores = {k: fold_score(x, k, remove=2) for k in range(3, min(MAX_PERIOD, len(x) // 3) + 1)}
            scores = {k: v for k, v in scores.items() if np.isfinite(v)}
            if scores:
                k = max(scores, key=scores.get)
                values[f"{stat}_pk"], best_k[stat] = scores[k], k
            else:
                values[f"{stat}_pk"] = float("nan")
        x = np.asarray(curves["noise"])
        values["noise_alt"] = float(abs(x[0::2].mean() - x[1::2].mean()))
        all_frames = list(range(len(frames)))
        locations = {k: (all_frames, None) for k in self.feature_names}
        # the period-2 evidence points at the phase with the lower noise (the candidate interpolated frames)
        phase = 0 if x[0::2].mean() < x[1::2].mean() else 1
        locations["noise_alt"] = (all_frames[phase::2], None)
        return values, locations, {"series": curves, "best_period": best_k}
