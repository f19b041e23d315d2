"""The learning-free 3D-proximity tracker on real video, a control of the real tracker: geometry alone carries the
object.

On the prompt frame the grid pixels inside the box (its central ``inner`` share per side) are lifted into the world
by the real-perception backbone's depth (at most ``max_points``, evenly spaced). On each later frame they are
projected into the frame's camera; a point counts as seen where it lands inside the frame and the depth measured
there agrees with its own within ``tolerance`` (relative): the box is the bounding box of the seen points'
projections (5th to 95th percentile), widened back by the prompt's ratio of box to inner box, and the object is
present while at least ``min_seen`` of the points are seen. No appearance is used: an object that moves by itself is
lost, one the camera moves around is kept.
"""

from __future__ import annotations

import numpy as np

from vision.geometry.real_backbone import RealPerception

__all__ = ["ProximityTracker"]


class ProximityTracker:
    """``init(frame, box)`` then ``update(frame) -> (box, score)``, frames uint8 ``[H, W, 3]`` RGB in order, boxes
    ``(x, y, w, h)``; ``score`` the share of points seen, ``present`` the latest decision (see the module
    docstring)."""

    def __init__(self, perception: RealPerception, inner: float = 0.5, max_points: int = 256,
                 tolerance: float = 0.2, min_seen: float = 0.2) -> None:
        self.perception, self.inner, self.max_points = perception, inner, max_points
        self.tolerance, self.min_seen = tolerance, min_seen
        self.points = np.zeros((0, 3))
        self.box = np.zeros(4)
        self.present = True

    def init(self, frame: np.ndarray, box: tuple[float, float, float, float]) -> None:
        self.perception.reset()
        geometry = self.perception.step(frame)
        x, y, w, h = (float(v) for v in box)
        cx, cy = x + w / 2, y + h / 2
        sx, sy = geometry.grid_scale
        hw, hh = w * self.inner / 2, h * self.inner / 2
        us = np.arange(np.floor((cx - hw) * sx), np.ceil((cx + hw) * sx) + 1) / sx
        vs = np.arange(np.floor((cy - hh) * sy), np.ceil((cy + hh) * sy) + 1) / sy
        uv = np.stack(np.meshgrid(us, vs), -1).reshape(-1, 2)
        inside = (uv[:, 0] >= 0) & (uv[:, 0] < frame.shape[1]) & (uv[:, 1] >= 0) & (uv[:, 1] < frame.shape[0])
        uv = uv[inside]
        if len(uv) > self.max_points:
            uv = uv[np.linspace(0, len(uv) - 1, self.max_points).round().astype(int)]
        self.points = geometry.lift(uv)
        self.box = np.array([x, y, w, h])
        self.present = True

    def update(self, frame: np.ndarray) -> tuple[np.ndarray, float]:
        geometry = self.perception.step(frame)
        uv, z = geometry.project(self.points)
        width, height = geometry.frame_size
        inside = (z > 0) & (uv[:, 0] >= 0) & (uv[:, 0] < width) & (uv[:, 1] >= 0) & (uv[:, 1] < height)
        seen = np.zeros(len(uv), bool)
        if inside.any():
            measured = geometry.depth_at(uv[inside], radius=0)
            seen[inside] = np.abs(measured - z[inside]) <= self.tolerance * z[inside]
        share = float(seen.mean()) if len(seen) else 0.0
        self.present = share >= self.min_seen
        if seen.sum() >= 2:
            low, high = np.percentile(uv[seen], 5, axis=0), np.percentile(uv[seen], 95, axis=0)
            centre, size = (low + high) / 2, np.maximum((high - low) / self.inner, 2.0)
            self.box = np.array([*(centre - size / 2), *size])
        return self.box.copy(), share
