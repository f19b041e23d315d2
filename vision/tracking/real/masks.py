"""Masks of the real tracker's boxes.

``box``: the box itself, filled. ``deeplab``: DeepLabV3-MobileNetV2 (registry ``deeplabv3-voc``, PASCAL VOC's 20
classes) on the box's crop widened by ``context`` per side: the pixels of the crop's most frequent non-background
class inside the box, when that class covers at least ``min_cover`` of the box; otherwise (an object outside VOC's
classes, a face, a bag) the filled box.
"""

from __future__ import annotations

import numpy as np

from vision.errors import InputError

__all__ = ["MASK_MODES", "BoxMasks"]

MASK_MODES = ("box", "deeplab")


class BoxMasks:
    """``masks(frame, boxes) -> bool [N, H, W]`` for frame uint8 ``[H, W, 3]`` RGB and boxes ``[N, 4]`` ``(x, y,
    w, h)`` (see the module docstring).

    Args:
        mode: one of :data:`MASK_MODES`.
        context: the crop's widening per side, a share of the box's side.
        min_cover: the least share of the box the class must cover to be the mask.
        segmenter: a :class:`~vision.weights.nets.onnx_models.DeepLabV3VOC` (None: the registered one, loaded on
            first use).
    """

    def __init__(self, mode: str = "deeplab", context: float = 0.15, min_cover: float = 0.15, segmenter=None) -> None:
        if mode not in MASK_MODES:
            raise InputError(f"mask mode must be one of {MASK_MODES}, got {mode!r}")
        self.mode, self.context, self.min_cover, self.segmenter = mode, context, min_cover, segmenter

    def mask(self, frame: np.ndarray, box: np.ndarray) -> np.ndarray:
        """bool ``[H, W]``: one box's mask."""
        height, width = frame.shape[:2]
        x, y, w, h = (float(v) for v in box)
        x0, y0 = int(np.clip(np.floor(x), 0, width)), int(np.clip(np.floor(y), 0, height))
        x1, y1 = int(np.clip(np.ceil(x + w), 0, width)), int(np.clip(np.ceil(y + h), 0, height))
        out = np.zeros((height, width), bool)
        if x1 <= x0 or y1 <= y0:
            return out
        out[y0:y1, x0:x1] = True
        if self.mode == "box":
            return out
        if self.segmenter is None:
            from vision.weights.nets.onnx_models import DeepLabV3VOC

            self.segmenter = DeepLabV3VOC()
        cx0, cy0 = int(max(x0 - self.context * w, 0)), int(max(y0 - self.context * h, 0))
        cx1, cy1 = int(min(x1 + self.context * w, width)), int(min(y1 + self.context * h, height))
        classes = self.segmenter.segment(np.ascontiguousarray(frame[cy0:cy1, cx0:cx1]))
        inside = classes[y0 - cy0:y1 - cy0, x0 - cx0:x1 - cx0]
        counts = np.bincount(inside.ravel(), minlength=2)
        counts[0] = 0
        best = int(np.argmax(counts))
        if counts[best] < self.min_cover * inside.size:
            return out
        out[y0:y1, x0:x1] = inside == best
        return out

    def masks(self, frame: np.ndarray, boxes: np.ndarray) -> np.ndarray:
        boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
        if not len(boxes):
            return np.zeros((0, *frame.shape[:2]), bool)
        return np.stack([self.mask(frame, box) for box in boxes])
