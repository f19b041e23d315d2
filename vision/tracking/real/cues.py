"""The cues the presence head reads for one answer of the tracker (a box on one frame).

Every cue is a float; :data:`CUES` names them in the order of the vector:

- ``peak``: NanoTrack's object probability at the winning cell; ``score``: the winning windowed score;
- ``mean_probability``: the mean probability over the score map; ``hot_share``: the share of cells above 0.5 (a
  target spreads over a few cells, background clutter over many or none);
- ``template_cosine``: the cosine between the first frame's template features and the features of the template
  crop at the answered box (the appearance memory: does the box look like what was prompted);
- ``recent_cosine``: the same against the template of the last confident frame (slow appearance change);
- ``template_drop``: how far ``template_cosine`` falls under its running level over the answers taken so far (a
  look that drifts slowly keeps it near 0; a switch to something else or an occluder makes it jump);
- ``inside_share``: the share of the answered box inside the frame (an object leaving the view is pushed against
  the border);
- ``size_change``: ``log`` of the answered box's area over the prompted one's, halved;
- ``memory_offset``: the distance from the answered centre to the 3D memory's projection, in box diagonals (capped
  at 4; 0 without a memory);
- ``memory_in_view``: 1 when the 3D memory projects inside the frame in front of the camera, 0 when it projects
  outside or behind (the camera turned away, or the object walked out), 0.5 without a memory;
- ``depth_ratio``: ``log`` of the depth measured in the answered box over the 3D memory's depth in this camera
  (an occluder in front is nearer: negative; 0 without a memory).

:data:`GEOMETRY_CUES` are the three that come from the 3D memory; the 2D-memory control reads them as 0.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CUES", "GEOMETRY_CUES", "MemoryView", "cue_vector", "feature_cosine"]

CUES = ("peak", "score", "mean_probability", "hot_share", "template_cosine", "recent_cosine", "template_drop",
        "inside_share", "size_change", "memory_offset", "memory_in_view", "depth_ratio")
GEOMETRY_CUES = ("memory_offset", "memory_in_view", "depth_ratio")
MAX_OFFSET = 4.0


class MemoryView:
    """The 3D memory seen from the current frame: where it projects (frame pixels), whether inside the view and in
    front of the camera, and its depth in this camera."""

    def __init__(self, uv: np.ndarray, z: float, in_view: bool) -> None:
        self.uv, self.z, self.in_view = np.asarray(uv, np.float64), float(z), bool(in_view)


def feature_cosine(a: np.ndarray, b: np.ndarray) -> float:
    """Cosine of two feature maps flattened, each centred by its own mean (0 when either is constant)."""
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    a, b = a - a.mean(), b - b.mean()
    norm = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / norm) if norm > 0 else 0.0


def cue_vector(probability: np.ndarray, peak: float, score: float, box: np.ndarray, frame_size: tuple[int, int],
               prompt_size: np.ndarray, template_cosine: float, recent_cosine: float, template_level: float | None,
               memory: MemoryView | None, box_depth: float) -> np.ndarray:
    """The cues (:data:`CUES` order, float32 ``[len(CUES)]``) of one answer: NanoTrack's ``probability`` map and
    winning ``peak`` / ``score``, the answered ``box (x, y, w, h)`` in a frame of ``frame_size (W, H)``, the
    prompt's ``(w, h)``, the two appearance cosines and the template cosine's running level (None before any answer
    was taken: no drop), the 3D memory's view (None: none yet) and the median depth
    measured in the box (nan: unknown)."""
    x, y, w, h = (float(v) for v in box)
    width, height = frame_size
    inside_w = max(0.0, min(x + w, width) - max(x, 0.0))
    inside_h = max(0.0, min(y + h, height) - max(y, 0.0))
    inside = inside_w * inside_h / max(w * h, 1e-9)
    size_change = 0.5 * np.log(max(w * h, 1e-9) / max(float(prompt_size[0] * prompt_size[1]), 1e-9))
    offset, in_view, depth_ratio = 0.0, 0.5, 0.0
    if memory is not None:
        centre = np.array([x + w / 2, y + h / 2])
        offset = min(float(np.linalg.norm(centre - memory.uv)) / max(np.hypot(w, h), 1e-9), MAX_OFFSET)
        in_view = 1.0 if memory.in_view else 0.0
        if memory.z > 0 and np.isfinite(box_depth) and box_depth > 0:
            depth_ratio = float(np.clip(np.log(box_depth / memory.z), -3.0, 3.0))
    values = [peak, score, float(probability.mean()), float((probability > 0.5).mean()), template_cosine,
              recent_cosine, 0.0 if template_level is None else template_level - template_cosine, inside,
              float(np.clip(size_change, -3.0, 3.0)), offset, in_view, depth_ratio]
    return np.asarray(values, np.float32)
