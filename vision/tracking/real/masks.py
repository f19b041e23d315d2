"""Masks of the real tracker's boxes.

- ``box``: the box itself, filled.
- ``deeplab``: DeepLabV3-MobileNetV2 (registry ``deeplabv3-voc``, PASCAL VOC's 20 classes) on the box's crop widened
  by ``context`` per side (for several boxes of a frame, once on the region holding all their crops): the pixels of the crop's most frequent non-background class inside the box, when that
  class covers at least ``min_cover`` of the box; otherwise (an object outside VOC's classes, a face, a bag) the
  filled box.
- ``grabcut``: OpenCV's GrabCut (colour models of the object and its surroundings, cut by graph cut) on the same
  crop scaled so its longer side is at most ``grabcut_side`` pixels: outside the box is background; inside, where
  DeepLabV3 finds a class as above, its pixels are the probable object (their eroded core surely the object) and
  the rest probable background; where it finds none, the whole box is the probable object. The result is kept
  inside the box.
"""

from __future__ import annotations

import cv2
import numpy as np

from vision.errors import InputError

__all__ = ["MASK_MODES", "BoxMasks"]

MASK_MODES = ("box", "deeplab", "grabcut")


class BoxMasks:
    """``masks(frame, boxes) -> bool [N, H, W]`` for frame uint8 ``[H, W, 3]`` RGB and boxes ``[N, 4]`` ``(x, y,
    w, h)`` (see the module docstring).

    Args:
        mode: one of :data:`MASK_MODES`.
        context: the crop's widening per side, a share of the box's side.
        min_cover: the least share of the box the class must cover to be the mask.
        grabcut_side: the longer side of the crop GrabCut works on (pixels; smaller is faster and coarser).
        grabcut_iterations: GrabCut's rounds of fitting its colour models and cutting.
        segmenter: a :class:`~vision.weights.nets.onnx_models.DeepLabV3VOC` (None: the registered one, loaded on
            first use).
    """

    def __init__(self, mode: str = "deeplab", context: float = 0.15, min_cover: float = 0.15,
                 grabcut_side: int = 96, grabcut_iterations: int = 4, segmenter=None) -> None:
        if mode not in MASK_MODES:
            raise InputError(f"mask mode must be one of {MASK_MODES}, got {mode!r}")
        self.mode, self.context, self.min_cover, self.segmenter = mode, context, min_cover, segmenter
        self.grabcut_side, self.grabcut_iterations = grabcut_side, grabcut_iterations

    def _pixels(self, box: np.ndarray, frame_size: tuple[int, int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """``((x0, y0, x1, y1) of the box, (x0, y0, x1, y1) of its crop widened by context)``, in the frame."""
        width, height = frame_size
        x, y, w, h = (float(v) for v in box)
        x0, y0 = int(np.clip(np.floor(x), 0, width)), int(np.clip(np.floor(y), 0, height))
        x1, y1 = int(np.clip(np.ceil(x + w), 0, width)), int(np.clip(np.ceil(y + h), 0, height))
        cx0, cy0 = int(max(x0 - self.context * w, 0)), int(max(y0 - self.context * h, 0))
        cx1, cy1 = int(min(x1 + self.context * w, width)), int(min(y1 + self.context * h, height))
        return (x0, y0, x1, y1), (cx0, cy0, cx1, cy1)

    def mask(self, frame: np.ndarray, box: np.ndarray, classes: np.ndarray | None = None,
             origin: tuple[int, int] = (0, 0)) -> np.ndarray:
        """bool ``[H, W]``: one box's mask. ``classes``: DeepLabV3's classes of a region of the frame whose top-left
        corner is ``origin`` and which holds the box's crop (None: the crop is segmented here)."""
        height, width = frame.shape[:2]
        (x0, y0, x1, y1), (cx0, cy0, cx1, cy1) = self._pixels(box, (width, height))
        out = np.zeros((height, width), bool)
        if x1 <= x0 or y1 <= y0:
            return out
        out[y0:y1, x0:x1] = True
        if self.mode == "box":
            return out
        crop = np.ascontiguousarray(frame[cy0:cy1, cx0:cx1])
        if classes is None:
            classes, origin = self.segment(crop), (cx0, cy0)
        classes = classes[cy0 - origin[1]:cy1 - origin[1], cx0 - origin[0]:cx1 - origin[0]]
        inside = (slice(y0 - cy0, y1 - cy0), slice(x0 - cx0, x1 - cx0))
        known = self._class_mask(classes, inside)
        if self.mode == "deeplab":
            if known is not None:
                out[y0:y1, x0:x1] = known[inside]
            return out
        out[y0:y1, x0:x1] = self._grabcut(crop, inside, known)[inside]
        return out

    def segment(self, image: np.ndarray) -> np.ndarray:
        """DeepLabV3's class per pixel of ``image`` (uint8 ``[h, w, 3]`` RGB) -> int ``[h, w]``."""
        if self.segmenter is None:
            from vision.weights.nets.onnx_models import DeepLabV3VOC

            self.segmenter = DeepLabV3VOC()
        return self.segmenter.segment(np.ascontiguousarray(image))

    def _class_mask(self, classes: np.ndarray, inside: tuple[slice, slice]) -> np.ndarray | None:
        """bool ``[h, w]`` over the crop: DeepLabV3's most frequent class inside the box, or None when no class
        covers ``min_cover`` of it."""
        counts = np.bincount(classes[inside].ravel(), minlength=2)
        counts[0] = 0
        best = int(np.argmax(counts))
        if counts[best] < self.min_cover * classes[inside].size:
            return None
        return classes == best

    def _grabcut(self, crop: np.ndarray, inside: tuple[slice, slice], known: np.ndarray | None) -> np.ndarray:
        """bool ``[h, w]`` over the crop: GrabCut's object (see the module docstring)."""
        height, width = crop.shape[:2]
        scale = min(1.0, self.grabcut_side / max(height, width))
        size = (max(round(width * scale), 1), max(round(height * scale), 1))
        small = cv2.resize(crop, size, interpolation=cv2.INTER_AREA)
        labels = np.full((height, width), cv2.GC_BGD, np.uint8)
        if known is None:
            labels[inside] = cv2.GC_PR_FGD
        else:
            core = cv2.erode(known.astype(np.uint8), np.ones((5, 5), np.uint8)) > 0
            labels[inside] = np.where(core[inside], cv2.GC_FGD, np.where(known[inside], cv2.GC_PR_FGD,
                                                                          cv2.GC_PR_BGD))
        labels = cv2.resize(labels, size, interpolation=cv2.INTER_NEAREST)
        chosen = (labels % 2).astype(np.uint8)  # GC_FGD and GC_PR_FGD are the odd labels
        if chosen.all() or not chosen.any():  # nothing to tell apart: the labels are the answer
            return cv2.resize(chosen, (width, height), interpolation=cv2.INTER_NEAREST) > 0
        background, foreground = np.zeros((1, 65)), np.zeros((1, 65))
        cv2.setRNGSeed(0)  # GrabCut's k-means starts from OpenCV's generator: the same crop gives the same mask
        cv2.grabCut(cv2.cvtColor(small, cv2.COLOR_RGB2BGR), labels, None, background, foreground,
                    self.grabcut_iterations, cv2.GC_INIT_WITH_MASK)
        return cv2.resize((labels % 2).astype(np.uint8), (width, height), interpolation=cv2.INTER_LINEAR) > 0

    def masks(self, frame: np.ndarray, boxes: np.ndarray) -> np.ndarray:
        """Every box's mask; with several boxes, DeepLabV3 runs once, on the region that holds all their crops
        (one object: on its own crop, as :meth:`mask`)."""
        boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
        if not len(boxes):
            return np.zeros((0, *frame.shape[:2]), bool)
        if len(boxes) == 1 or self.mode == "box":
            return np.stack([self.mask(frame, box) for box in boxes])
        crops = np.array([self._pixels(box, frame.shape[1::-1])[1] for box in boxes])
        x0, y0 = crops[:, :2].min(axis=0)
        x1, y1 = crops[:, 2:].max(axis=0)
        if x1 <= x0 or y1 <= y0:
            return np.stack([self.mask(frame, box) for box in boxes])
        classes = self.segment(frame[y0:y1, x0:x1])
        return np.stack([self.mask(frame, box, classes, (int(x0), int(y0))) for box in boxes])
