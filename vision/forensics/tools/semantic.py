"""Semantic tool: the trajectory of a clip through a pretrained ImageNet embedding (MobileNetV2, 1280-d).

The :mod:`vision.forensics.tools.temporal` statistics (D3 / ReStraV-style trajectory geometry) on weight-free
descriptors, made on a real semantic embedding and set against the pixel change that drives it. Generated video
shows objects that morph (what the picture *is* changes more, or less, than its pixels explain), per-frame flicker of
content, scenes that drift, and local edits: one region's content changing while the rest of the frame stays.

Sampling: frames ``0, s, 2s, ...`` with one integer stride ``s = max(min_stride, ceil((T - 1) / (max_frames - 1)))``
(uniform spacing, so that second differences measure curvature and not uneven steps), at most ``max_frames``; every
sampled frame area-resized to ``size x size`` (aspect not kept) and embedded with
:func:`vision.weights.nets.mobilenet.embed_images` (L2-normalised rows ``e_t``). Region embeddings: the four cells of
a 2x2 grid of the frame, each area-resized to ``region_size`` and embedded, on at most ``region_frames`` of the
sampled frames (again one integer stride).

Distances are chords on the unit sphere, ``||e_a - e_b||`` in ``[0, 2]`` (a metric, so path ratios are bounded).
Pixel change: the RMS difference of the 32x32 area-downsampled luma in [0, 1] units between the same frames.

Features (sampled steps ``v_t = e_{t+1} - e_t``, second differences ``a_t = v_{t+1} - v_t``):

* ``step_mean``: mean ``||v_t||``; ``step_rel``: ``step_mean / (mean pixel step + 0.01)`` (semantics per pixel);
* ``accel_rel``: mean ``||a_t||`` / ``step_mean`` (0 on a straight, even path, 2 on a back-and-forth flicker);
  ``smooth_rel``: ``accel_rel`` divided by the same ratio of the pixel descriptor trajectory (semantic jerk the
  pixels do not have); ``turn_mean``: mean turning angle between consecutive steps (radians);
* ``drift``: ``||e_last - e_first|| / sum_t ||v_t||`` in [0, 1] (1: the content moves steadily away from where it
  started; near 0: it wanders and returns);
* ``region_step_ratio``: the largest mean region step over the four regions divided by their mean (1: all regions
  change alike; up to 4: one changes while the others stay); ``region_drift_ratio``: the same ratio of the regions'
  first-to-last chord (one region ends up showing something else).

The network is loaded on first use (:func:`vision.weights.nets.mobilenet.load_mobilenetv2`); missing weights raise
:class:`vision.weights.WeightsError` naming the fetch command. A clip whose sampled frames do not change is not
applicable.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from vision.data.resize import resize_image
from vision.forensics.tools.base import Clip, ForensicTool

__all__ = ["SemanticTool", "grid_boxes", "strided_indices"]

# side of the luma thumbnail the pixel change is measured on
PIXEL_GRID = 32
# added to the mean pixel step so that a near-static clip does not divide by ~0 (1% RMS luma change)
PIXEL_EPS = 0.01
# added to the mean region drift / step before dividing (chord units): keeps four static regions near ratio 1
REGION_EPS = 0.02


def strided_indices(num_frames: int, max_frames: int, min_stride: int = 1) -> np.ndarray:
    """Frame indices ``0, s, 2s, ...`` (``int64 [<= max_frames]``) with one integer stride ``s >= min_stride``, the
    smallest that spans the clip with at most ``max_frames`` indices."""
    if num_frames < 1 or max_frames < 1:
        return np.zeros(0, np.int64)
    stride = max(int(min_stride), 1, math.ceil((num_frames - 1) / max(max_frames - 1, 1)))
    return np.arange(0, num_frames, stride, dtype=np.int64)[:max_frames]


def grid_boxes(height: int, width: int) -> list[list[int]]:
    """The four cells of a 2x2 grid of an ``height x width`` frame as XYXY pixel boxes, row-major
    (top-left, top-right, bottom-left, bottom-right)."""
    ys, xs = (0, height // 2, height), (0, width // 2, width)
    return [[xs[j], ys[i], xs[j + 1], ys[i + 1]] for i in range(2) for j in range(2)]


def _chords(emb: np.ndarray) -> np.ndarray:
    """``[N, D]`` -> ``[N - 1]`` norms of consecutive differences."""
    return np.linalg.norm(np.diff(emb, axis=0), axis=1)


def _accel_ratio(traj: np.ndarray) -> float:
    """Mean second-difference norm over mean step norm of a ``[N, D]`` trajectory (nan when N < 3 or no step)."""
    if len(traj) < 3:
        return float("nan")
    step = float(_chords(traj).mean())
    if step <= 1e-12:
        return float("nan")
    return float(np.linalg.norm(np.diff(traj, n=2, axis=0), axis=1).mean() / step)


class SemanticTool(ForensicTool):
    """Trajectory statistics of a pretrained ImageNet embedding (see the module docstring).

    Args:
        size: side the sampled frames are resized to before embedding.
        max_frames: most frames sampled (one integer stride spanning the clip).
        region_size: side each 2x2 grid cell is resized to. region_frames: most sampled frames embedded per region.
        min_stride: smallest frame stride.
        device: torch device of the network.
    """

    name = "semantic"
    feature_names = ("step_mean", "step_rel", "accel_rel", "smooth_rel", "turn_mean", "drift",
                     "region_step_ratio", "region_drift_ratio")
    descriptions = {
        "step_mean": "mean step of the frames' ImageNet embedding between sampled frames (chord on the unit sphere)",
        "step_rel": "embedding step per unit of pixel change (content that changes more, or less, than its pixels)",
        "accel_rel": "mean second difference of the embedding trajectory over its mean step (D3-like; 0 = smooth)",
        "smooth_rel": "the embedding's second-difference ratio over the pixel descriptor's (semantic jerk the "
                      "pixels do not have)",
        "turn_mean": "mean turning angle of the embedding trajectory (radians)",
        "drift": "first-to-last embedding distance over the path length (1: the scene drifts steadily away)",
        "region_step_ratio": "largest region's embedding step over the mean of the four 2x2 regions (one region's "
                             "content changing while the others stay)",
        "region_drift_ratio": "largest region's first-to-last embedding distance over the mean of the four regions",
    }
    min_frames = 4
    version = 1

    def __init__(self, size: int = 128, max_frames: int = 16, region_size: int = 96, region_frames: int = 8,
                 min_stride: int = 1, device: str = "cpu") -> None:
        self.size, self.max_frames, self.min_stride = int(size), int(max_frames), int(min_stride)
        self.region_size, self.region_frames = int(region_size), int(region_frames)
        self.device = device
        self._net = None

    def _embed(self, images: list[np.ndarray], size: int) -> np.ndarray:
        """RGB ``uint8`` images of any sizes -> ``float64 [N, 1280]`` unit rows, each area-resized to ``size``
        first (``embed_images``' own bilinear resize of a large frame would alias)."""
        from vision.weights.nets.mobilenet import embed_images, load_mobilenetv2

        if self._net is None:
            self._net = load_mobilenetv2(self.device)
        small = np.stack([resize_image(np.ascontiguousarray(im), (size, size)) for im in images])
        return embed_images(self._net, small, size=size, batch=16).astype(np.float64)

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]] | str:
        idx = strided_indices(clip.num_frames, self.max_frames, self.min_stride)
        if len(idx) < 3:
            return f"needs 3 sampled frames for second differences; {len(idx)} sampled"
        thumbs = np.stack([resize_image(clip.gray(int(i)), (PIXEL_GRID, PIXEL_GRID)).reshape(-1) for i in idx])
        thumbs = thumbs.astype(np.float64) / 255.0
        pix_steps = np.linalg.norm(np.diff(thumbs, axis=0), axis=1) / PIXEL_GRID  # RMS over the 32x32 pixels
        if float(pix_steps.max()) <= 0.0:
            return "frozen video: the sampled frames do not change"
        emb = self._embed([clip.frames[int(i)] for i in idx], self.size)
        steps = np.diff(emb, axis=0)
        lengths = np.linalg.norm(steps, axis=1)
        step_mean = float(lengths.mean())
        accel = np.linalg.norm(np.diff(emb, n=2, axis=0), axis=1)
        accel_rel = float(accel.mean() / step_mean) if step_mean > 1e-12 else float("nan")
        pix_accel_rel = _accel_ratio(thumbs)
        smooth_rel = accel_rel / pix_accel_rel if math.isfinite(pix_accel_rel) and pix_accel_rel > 1e-12 \
            else float("nan")
        cos = [float(steps[t] @ steps[t + 1] / (lengths[t] * lengths[t + 1]))
               for t in range(len(steps) - 1) if lengths[t] > 1e-9 and lengths[t + 1] > 1e-9]
        turn_mean = float(np.mean(np.arccos(np.clip(cos, -1.0, 1.0)))) if cos else float("nan")
        path = float(lengths.sum())
        drift = float(np.linalg.norm(emb[-1] - emb[0]) / path) if path > 1e-12 else float("nan")

        # regions: every k-th sampled frame, all four cells in one batch
        k = max(1, math.ceil(len(idx) / max(self.region_frames, 2)))
        ridx = idx[::k]
        boxes = grid_boxes(clip.height, clip.width)
        crops = [clip.frames[int(i), y0:y1, x0:x1] for i in ridx for (x0, y0, x1, y1) in boxes]
        remb = self._embed(crops, self.region_size).reshape(len(ridx), 4, -1)
        region_steps = np.array([_chords(remb[:, r]).mean() for r in range(4)])
        region_drifts = np.linalg.norm(remb[-1] - remb[0], axis=1)
        region_step_ratio = float(region_steps.max() / (region_steps.mean() + REGION_EPS))
        region_drift_ratio = float(region_drifts.max() / (region_drifts.mean() + REGION_EPS))

        values = {"step_mean": step_mean, "step_rel": step_mean / (float(pix_steps.mean()) + PIXEL_EPS),
                  "accel_rel": accel_rel, "smooth_rel": smooth_rel, "turn_mean": turn_mean, "drift": drift,
                  "region_step_ratio": region_step_ratio, "region_drift_ratio": region_drift_ratio}
        sampled = [int(i) for i in idx]
        locations: dict[str, tuple[list[int], list[int] | None]] = {k_: (sampled, None) for k_ in self.feature_names}
        top = int(np.argmax(lengths))
        locations["step_mean"] = ([sampled[top], sampled[top + 1]], None)
        peak = int(np.argmax(accel))  # a_t is centred on sampled frame t + 1
        locations["accel_rel"] = (sampled[peak:peak + 3], None)
        locations["drift"] = ([sampled[0], sampled[-1]], None)
        locations["region_step_ratio"] = ([int(i) for i in ridx], boxes[int(np.argmax(region_steps))])
        locations["region_drift_ratio"] = ([int(ridx[0]), int(ridx[-1])], boxes[int(np.argmax(region_drifts))])
        extras = {"sampled_frames": sampled, "semantic_steps": lengths.tolist(), "pixel_steps": pix_steps.tolist(),
                  "region_steps": region_steps.tolist(), "region_drifts": region_drifts.tolist()}
        return values, locations, extras
