"""Point, mask and text prompts of the real tracker, turned into the box its targets start from.

- **Points** (frame pixels, labels 1 positive / 0 negative): the smallest YOLOX-nano detection (registry
  ``yolox-nano``, score at least ``min_score``) that holds every positive point and no negative one; where none
  does, the connected region of DeepLabV3's class (registry ``deeplabv3-voc``) under the first positive point, when
  that class is not the background. An empty answer is an error naming the points: a point on something neither
  model knows needs a box.
- **Mask** (bool ``[H, W]``): its tight box; an empty mask is an error.
- **Text**: the COCO-80 name (YOLOX-nano's vocabulary) whose MiniLM embedding is nearest the text, when its cosine is
  at least ``min_similarity`` (otherwise the text names nothing the detector knows: an error naming it); the object
  is that class's highest-scoring detection on the first of the first ``search_frames`` frames where it is found
  (none: an error).
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from vision.errors import InputError

__all__ = ["box_from_points", "box_from_mask", "text_class", "box_from_text"]


def box_from_mask(mask: np.ndarray) -> np.ndarray:
    """The tight ``(x, y, w, h)`` box of a bool ``[H, W]`` mask."""
    mask = np.asarray(mask, bool)
    if mask.ndim != 2 or not mask.any():
        raise InputError(f"mask prompt must be a non-empty [H, W] mask, got shape {list(mask.shape)} with "
                         f"{int(mask.sum())} pixels set")
    ys, xs = np.nonzero(mask)
    return np.array([xs.min(), ys.min(), xs.max() - xs.min() + 1, ys.max() - ys.min() + 1], np.float64)


def box_from_points(frame: np.ndarray, points: Sequence[Sequence[float]], labels: Sequence[int],
                    detector=None, segmenter=None, min_score: float = 0.25) -> np.ndarray:
    """The box ``(x, y, w, h)`` of the object at the ``points`` of ``frame`` (uint8 ``[H, W, 3]`` RGB); see the
    module docstring."""
    points = np.asarray(points, np.float64).reshape(-1, 2)
    labels = np.asarray(labels, np.int64).reshape(-1)
    if len(points) != len(labels) or not len(points):
        raise InputError(f"points and labels differ in number or are empty: {len(points)} and {len(labels)}")
    height, width = frame.shape[:2]
    outside = [(x, y) for x, y in points if not (0 <= x < width and 0 <= y < height)]
    if outside:
        raise InputError(f"point {outside[0]} lies outside the {width}x{height} frame")
    positive, negative = points[labels == 1], points[labels != 1]
    if not len(positive):
        raise InputError("a point prompt needs at least one positive point (label 1)")
    if detector is None:
        from vision.weights.nets.onnx_models import YOLOXNano

        detector = YOLOXNano()
    found = detector.detect(frame, score_threshold=min_score)

    def holds(box: np.ndarray, pts: np.ndarray) -> np.ndarray:
        return (pts[:, 0] >= box[0]) & (pts[:, 0] <= box[2]) & (pts[:, 1] >= box[1]) & (pts[:, 1] <= box[3])

    candidates = [box for box in found["boxes"]
                  if holds(box, positive).all() and not (len(negative) and holds(box, negative).any())]
    if candidates:
        box = min(candidates, key=lambda b: (b[2] - b[0]) * (b[3] - b[1]))
        return np.array([box[0], box[1], box[2] - box[0], box[3] - box[1]], np.float64)
    if segmenter is None:
        from vision.weights.nets.onnx_models import DeepLabV3VOC

        segmenter = DeepLabV3VOC()
    classes = segmenter.segment(frame)
    x, y = (int(v) for v in positive[0])
    if classes[y, x] != 0:
        _, components = cv2.connectedComponents((classes == classes[y, x]).astype(np.uint8))
        return box_from_mask(components == components[y, x])
    raise InputError(f"no object found at the points {[tuple(p) for p in positive.tolist()]}: neither the detector "
                     "nor the segmenter knows what is there; give a box instead")


def text_class(text: str, min_similarity: float = 0.5, encoder=None) -> str:
    """The COCO-80 name ``text`` means (see the module docstring)."""
    from vision.detection.vocabulary import encode_vocabulary
    from vision.text.user_text import check_text
    from vision.weights.nets.onnx_models import COCO_CLASSES

    text = check_text(text, "text prompt")
    names = encode_vocabulary(list(COCO_CLASSES), encoder=encoder)
    query = encode_vocabulary([text], template="{}", encoder=encoder)
    similarity = (names @ query[0]).numpy()
    best = int(np.argmax(similarity))
    if similarity[best] < min_similarity:
        raise InputError(f"text prompt {text!r} names nothing the detector knows (nearest COCO name "
                         f"{COCO_CLASSES[best]!r} at cosine {similarity[best]:.2f}, under {min_similarity}); give a "
                         "box or points instead")
    return COCO_CLASSES[best]


def box_from_text(frames: Sequence[np.ndarray], text: str, detector=None, encoder=None, search_frames: int = 30,
                  min_score: float = 0.3, min_similarity: float = 0.5) -> tuple[int, np.ndarray]:
    """``(frame index, box (x, y, w, h))`` of the object ``text`` names (see the module docstring)."""
    from vision.weights.nets.onnx_models import COCO_CLASSES

    name = text_class(text, min_similarity, encoder)
    if detector is None:
        from vision.weights.nets.onnx_models import YOLOXNano

        detector = YOLOXNano()
    wanted = COCO_CLASSES.index(name)
    for index, frame in enumerate(frames):
        if index >= search_frames:
            break
        found = detector.detect(frame, score_threshold=min_score)
        hits = np.flatnonzero(found["classes"] == wanted)
        if len(hits):
            x0, y0, x1, y1 = found["boxes"][hits[0]]  # highest score first
            return index, np.array([x0, y0, x1 - x0, y1 - y0], np.float64)
    raise InputError(f"text prompt {text!r} ({name!r} to the detector): no {name} found in the first "
                     f"{search_frames} frames; give a box or points instead")
