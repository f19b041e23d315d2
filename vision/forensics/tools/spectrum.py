"""Spectrum tool: Hann-windowed log power spectrum, azimuthal (radial-band) profile, high-frequency ratio and
up-sampling peaks at multiples of N/8 (the periodic fingerprints that transposed-convolution / nearest
up-sampling decoders leave).

All statistics are computed on luma in [0, 1] of up to ``max_frames`` evenly spaced frames and averaged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vision.forensics.tools.base import Clip, ForensicTool, sample_indices, to_gray

__all__ = ["SpectrumTool", "log_power_spectrum", "radial_frequency"]

NUM_BANDS = 8


def radial_frequency(height: int, width: int) -> np.ndarray:
    """Normalised radial frequency ``[H, W]`` of an fftshifted spectrum: 0 at DC, 1 at the Nyquist edge on each
    axis (values up to sqrt(2) in the corners)."""
    fy = (np.arange(height) - height // 2) / (height / 2.0)
    fx = (np.arange(width) - width // 2) / (width / 2.0)
    return np.sqrt(fy[:, None] ** 2 + fx[None, :] ** 2)


def log_power_spectrum(gray: np.ndarray) -> np.ndarray:
    """``[H, W]`` luma -> fftshifted ``log(1e-8 + |FFT(hann * (x - mean))|^2)`` ``[H, W]``."""
    h, w = gray.shape
    window = np.outer(np.hanning(h), np.hanning(w)).astype(np.float32)
    centred = (gray - gray.mean()) * window
    power = np.abs(np.fft.fftshift(np.fft.fft2(centred))) ** 2
    return np.log(power + 1e-8)


def _peak_score(log_spec: np.ndarray) -> float:
    """Mean excess of the log power at the N/8-multiple grid points (DC excluded) over the median of their
    5x5 neighbourhood (the centre excluded): > 0 where periodic up-sampling artefacts sit."""
    h, w = log_spec.shape
    cy, cx = h // 2, w // 2
    scores = []
    for ky in range(-4, 5):
        for kx in range(-4, 5):
            if ky == 0 and kx == 0:
                continue
            y, x = cy + int(round(ky * h / 8.0)), cx + int(round(kx * w / 8.0))
            if not (2 <= y < h - 2 and 2 <= x < w - 2):
                continue
            patch = log_spec[y - 2:y + 3, x - 2:x + 3].copy().reshape(-1)
            centre = patch[12]
            neighbours = np.delete(patch, 12)
            scores.append(centre - float(np.median(neighbours)))
    return float(np.mean(scores)) if scores else float("nan")


class SpectrumTool(ForensicTool):
    """Frequency-domain statistics (see the module docstring)."""

    name = "spectrum"
    feature_names = ("hf_ratio", "slope", "peak_score") + tuple(f"band{k}" for k in range(NUM_BANDS))
    descriptions = {
        "hf_ratio": "share of spectral power above half the Nyquist frequency",
        "slope": "slope of log power against log radial frequency (natural images: about -2)",
        "peak_score": "log-power excess at N/8-multiple frequencies (up-sampling fingerprint)",
        **{f"band{k}": f"mean log power of radial band {k}/{NUM_BANDS}, relative to the band mean"
           for k in range(NUM_BANDS)},
    }
    min_frames = 1

    def __init__(self, max_frames: int = 8) -> None:
        self.max_frames = max_frames

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]]:
        idx = sample_indices(clip.num_frames, self.max_frames)
        gray = to_gray(clip.frames[idx])
        radius = radial_frequency(clip.height, clip.width)
        bands = np.minimum((np.clip(radius, 0, 1 - 1e-9) * NUM_BANDS).astype(np.int64), NUM_BANDS - 1)
        valid = (radius > 0.05) & (radius <= 1.0)
        log_specs = np.stack([log_power_spectrum(g) for g in gray])
        mean_log = log_specs.mean(axis=0)
        power = np.exp(log_specs).mean(axis=0)
        hf = float(power[(radius > 0.5) & valid].sum() / max(power[valid].sum(), 1e-12))
        slope = float(np.polyfit(np.log(radius[valid]), mean_log[valid], 1)[0])
        per_frame_peaks = np.array([_peak_score(s) for s in log_specs])
        profile = np.array([float(mean_log[m].mean()) if m.any() else float("nan")
                            for m in ((bands == k) & (radius > 0.05) for k in range(NUM_BANDS))])
        rel = profile - np.nanmean(profile)
        values = {"hf_ratio": hf, "slope": slope, "peak_score": float(np.nanmean(per_frame_peaks))}
        values.update({f"band{k}": float(rel[k]) for k in range(NUM_BANDS)})
        frames = [int(i) for i in idx]
        top = [int(idx[i]) for i in np.argsort(-per_frame_peaks)[:3]]
        locations = {name: (frames, None) for name in self.feature_names}
        locations["peak_score"] = (top, None)
        extras = {"radial_profile": profile.tolist(), "log_spectrum": mean_log}
        return values, locations, extras
