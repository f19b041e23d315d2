"""OpenCV's own ``cv2.TrackerNano`` on the registered NanoTrack v2 ONNX pair, behind the interface of
:class:`vision.tracking.nanotrack.NanoTracker`: the control that tests and benchmarks compare the torch tracker with.

Frames are the package's uint8 ``[H, W, 3]`` **RGB**; they are converted to the BGR that OpenCV's tracker expects
(it swaps them back to RGB for its network). Boxes are ``(x, y, w, h)`` in pixels; OpenCV takes and returns integer
rectangles.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from vision.errors import InputError
from vision.weights.store import weights_path

__all__ = ["OpenCVNanoTracker"]


class OpenCVNanoTracker:
    """``cv2.TrackerNano`` (OpenCV's DNN module, CPU) on RGB frames.

    Args:
        backbone: the backbone ONNX file (None: the registered ``nanotrack-v2-backbone``, checked by sha256).
        head: the neck / head ONNX file (None: the registered ``nanotrack-v2-head``).
    """

    def __init__(self, backbone: str | Path | None = None, head: str | Path | None = None) -> None:
        if not hasattr(cv2, "TrackerNano"):
            raise InputError(f"this OpenCV ({cv2.__version__}) has no TrackerNano (it needs 4.7 or later)")
        params = cv2.TrackerNano_Params()
        params.backbone = str(weights_path("nanotrack-v2-backbone") if backbone is None else backbone)
        params.neckhead = str(weights_path("nanotrack-v2-head") if head is None else head)
        self._tracker = cv2.TrackerNano.create(params)

    @staticmethod
    def _bgr(frame: np.ndarray) -> np.ndarray:
        frame = np.asarray(frame)
        if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
            raise InputError(f"frame must be uint8 [H, W, 3] RGB, got {frame.dtype} {list(frame.shape)}")
        return cv2.cvtColor(frame, cv2.COLOR_RGB2BGR)

    def init(self, frame: np.ndarray, box_xywh: tuple[float, float, float, float] | np.ndarray) -> None:
        """Start tracking ``box_xywh`` (rounded to an integer rectangle) in ``frame`` (uint8 ``[H, W, 3]`` RGB)."""
        self._tracker.init(self._bgr(frame), tuple(int(round(float(v))) for v in box_xywh))

    def update(self, frame: np.ndarray) -> tuple[np.ndarray, float]:
        """Follow the object into ``frame`` (RGB). Returns ``(box, score)``: the integer rectangle as float64 ``(x, y,
        w, h)`` and ``getTrackingScore()``."""
        _, box = self._tracker.update(self._bgr(frame))
        return np.asarray(box, np.float64), float(self._tracker.getTrackingScore())
