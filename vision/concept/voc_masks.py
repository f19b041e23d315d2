"""Masks for concept boxes on real frames from the registered DeepLabV3 (PASCAL VOC, ``deeplabv3-voc``): where a
phrase names one of VOC's 20 classes, an instance's mask is the pixels of that class inside its box; anything else
keeps its box as the mask, and the answer says which (:func:`mask_sources`).

A phrase names VOC class ``c`` when the MiniLM cosine of their prompts is at least the detector's
``competitor_similarity`` (the package's one rule for "this name explains that one",
:func:`vision.detection.vocabulary.competitor_rows`), the best such class if several: ``man`` -> person,
``sofa`` -> sofa, ``sandal`` -> none.

Conventions: label maps uint8 ``[h, w]`` of VOC indices (0: background) at the frame's resolution; masks bool at the
size asked, boxes XYXY pixels of that size.
"""

from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

__all__ = ["VOC_NAMES", "voc_classes", "box_or_class_mask", "resize_labels", "mask_sources", "VOCSegmenter"]

#: VOC's 20 classes (:data:`vision.weights.nets.onnx_models.VOC_CLASSES` without the background) in words
VOC_NAMES = ("aeroplane", "bicycle", "bird", "boat", "bottle", "bus", "car", "cat", "chair", "cow", "dining table",
             "dog", "horse", "motorbike", "person", "potted plant", "sheep", "sofa", "train", "tv monitor")


def voc_classes(phrases: Sequence[str | None], similarity: float, template: str, encoder=None) -> list[int | None]:
    """Each phrase's VOC index (1..20) by the module docstring's rule, None for a phrase naming none of them (and
    for an exemplar-only concept, ``None`` phrase)."""
    from vision.detection.vocabulary import encode_vocabulary

    named = [p for p in phrases if p is not None]
    if not named:
        return [None] * len(phrases)
    cosine = (encode_vocabulary(named, template, encoder) @ encode_vocabulary(list(VOC_NAMES), template, encoder).T)
    cosine = cosine.float().cpu().numpy()
    found, row = [], 0
    for phrase in phrases:
        if phrase is None:
            found.append(None)
            continue
        best = int(cosine[row].argmax())
        found.append(best + 1 if cosine[row, best] >= similarity else None)
        row += 1
    return found


def box_or_class_mask(box: np.ndarray, voc_class: int | None, labels: np.ndarray | None, height: int,
                      width: int) -> np.ndarray:
    """One instance's mask ``bool [height, width]``: the pixels of ``voc_class`` in ``labels`` (``[height, width]``,
    :func:`resize_labels`) inside ``box`` (XYXY pixels of that size); the filled box where there is no class, no
    label map, or no such pixel in the box."""
    x0, y0, x1, y1 = np.asarray(box, np.float64).tolist()
    c0, r0 = min(max(int(np.floor(x0)), 0), width - 1), min(max(int(np.floor(y0)), 0), height - 1)
    c1, r1 = min(max(int(np.ceil(x1)), c0 + 1), width), min(max(int(np.ceil(y1)), r0 + 1), height)
    mask = np.zeros((height, width), bool)
    if voc_class is not None and labels is not None:
        inside = labels[r0:r1, c0:c1] == voc_class
        if inside.any():
            mask[r0:r1, c0:c1] = inside
            return mask
    mask[r0:r1, c0:c1] = True
    return mask


def resize_labels(labels: np.ndarray | None, height: int, width: int) -> np.ndarray | None:
    """A label map at ``height x width`` (nearest; None stays None)."""
    if labels is None or labels.shape == (height, width):
        return labels
    return cv2.resize(labels, (width, height), interpolation=cv2.INTER_NEAREST)


def mask_sources(phrases: Sequence[str | None], classes: Sequence[int | None], available: bool) -> str:
    """One line for users: which concepts' masks are DeepLabV3's and which are boxes, and why."""
    if not available:
        return "boxes from the detector (the DeepLabV3 weights deeplabv3-voc are not fetched: make weights)"
    names = [p if p is not None else f"exemplars {k + 1}" for k, p in enumerate(phrases)]
    segmented = [f"{n} (as VOC {VOC_NAMES[c - 1]})" for n, c in zip(names, classes) if c is not None]
    boxed = [n for n, c in zip(names, classes) if c is None]
    parts = []
    if segmented:
        parts.append("DeepLabV3 (PASCAL VOC) inside each box for " + ", ".join(segmented))
    if boxed:
        parts.append("the detector's boxes for " + ", ".join(boxed) + " (not a VOC class)")
    return "; ".join(parts)


class VOCSegmenter:
    """The registered DeepLabV3 on frames: :meth:`labels` ``(frame uint8 [h, w, 3] RGB) -> uint8 [h, w]``."""

    def __init__(self, threads: int = 1) -> None:
        from vision.weights.nets.onnx_models import DeepLabV3VOC

        self.net = DeepLabV3VOC(threads=threads)

    @staticmethod
    def available() -> bool:
        """Whether the registered weights are fetched (and intact)."""
        from vision.errors import VisionError
        from vision.weights.store import weights_path

        try:
            weights_path("deeplabv3-voc")
        except VisionError:
            return False
        return True

    def labels(self, frame: np.ndarray) -> np.ndarray:
        return self.net.segment(frame).astype(np.uint8)
