"""Temporal tool: the D3 statistic and ReStraV-style trajectory geometry of frame descriptors.

Frame descriptors ``d_t`` are weight-free: the frame's luma and its gradient magnitude, area-downsampled to
16x16 and flattened (D3 uses pretrained encoders; we have none and keep the same second-order construction).
First differences ``v_t = d_{t+1} - d_t``, second differences ``a_t = v_{t+1} - v_t``;
``D3 = std_t ||a_t||`` (real videos have higher values: their motion is less regular). Trajectory: step lengths
``||v_t||`` and turning angles ``angle(v_t, v_{t+1})``.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from vision.data.resize import resize_image
from vision.forensics.tools.base import Clip, ForensicTool

__all__ = ["TemporalTool", "frame_descriptors", "d3_statistic"]

GRID = 16


def frame_descriptors(frames: np.ndarray, kind: str = "pixel") -> np.ndarray:
    """``uint8 [T, H, W, 3]`` -> descriptors ``float64 [T, 256]``: ``pixel`` (luma) or ``gradient`` (Sobel
    magnitude), area-resized to 16x16, in [0, 1] units."""
    out = []
    for frame in frames:
        g = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY).astype(np.float32) / 255.0
        if kind == "gradient":
            gx = cv2.Sobel(g, cv2.CV_32F, 1, 0, ksize=3)
            gy = cv2.Sobel(g, cv2.CV_32F, 0, 1, ksize=3)
            g = np.sqrt(gx * gx + gy * gy)
        out.append(resize_image(g, (GRID, GRID)).reshape(-1))
    return np.asarray(out, np.float64)


def d3_statistic(desc: np.ndarray) -> tuple[float, np.ndarray]:
    """``[T, D]`` descriptors (T >= 4) -> (D3 = std over t of ||second difference||, the norms ``[T - 2]``)."""
    acc = np.linalg.norm(np.diff(desc, n=2, axis=0), axis=1)
    return float(acc.std()), acc


class TemporalTool(ForensicTool):
    """D3 and trajectory statistics (see the module docstring)."""

    name = "temporal"
    feature_names = ("d3", "d3_rel", "d3_grad", "step_mean", "step_cv", "turn_mean", "turn_std")
    descriptions = {
        "d3": "D3: std over time of the second-order difference norm of luma descriptors",
        "d3_rel": "D3 divided by the mean step length", "d3_grad": "D3 on gradient-magnitude descriptors",
        "step_mean": "mean descriptor step length per frame", "step_cv": "coefficient of variation of step length",
        "turn_mean": "mean turning angle of the descriptor trajectory (radians)",
        "turn_std": "std of the turning angle",
    }
    min_frames = 4

    def __init__(self, max_frames: int = 64) -> None:
        self.max_frames = max_frames

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]] | str:
        frames = clip.frames[: self.max_frames]
        desc = frame_descriptors(frames, "pixel")
        steps = np.diff(desc, axis=0)
        lengths = np.linalg.norm(steps, axis=1)
        if float(lengths.max()) < 1e-6:
            return "frozen video: no frame differs from the previous one"
        d3, acc = d3_statistic(desc)
        d3_grad, _ = d3_statistic(frame_descriptors(frames, "gradient"))
        moving = lengths > 1e-6
        cos = []
        for t in range(len(steps) - 1):
            if moving[t] and moving[t + 1]:
                cos.append(float(steps[t] @ steps[t + 1] / (lengths[t] * lengths[t + 1])))
        angles = np.arccos(np.clip(np.array(cos), -1.0, 1.0)) if cos else np.array([np.nan])
        mean_step = float(lengths.mean())
        values = {"d3": d3, "d3_rel": d3 / mean_step, "d3_grad": d3_grad, "step_mean": mean_step,
                  "step_cv": float(lengths.std() / mean_step), "turn_mean": float(np.mean(angles)),
                  "turn_std": float(np.std(angles))}
        peaks = [int(t + 1) for t in np.argsort(-acc)[:3]]  # a_t is centred on frame t + 1
        locations = {k: (list(range(len(frames))), None) for k in self.feature_names}
        locations["d3"] = (peaks, None)
        return values, locations, {"second_order": acc.tolist(), "step_lengths": lengths.tolist()}
