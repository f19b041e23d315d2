"""Point, mask and text prompts of the real tracker, turned into the box its targets start from.

- **Points** (frame pixels, labels 1 positive / 0 negative): the smallest box that holds every positive point and
  no negative one among YOLOX-nano's detections (registry ``yolox-nano``, score at least ``min_score``) and
  YuNet's faces (registry ``yunet-120x160``: a click on a face means the face, not the whole person); where none
  does, the connected region of DeepLabV3's class (registry ``deeplabv3-voc``) under the first positive point, when
  that class is not the background. An empty answer is an error naming the points: a point on something neither
  model knows needs a box.
- **Mask** (bool ``[H, W]``): its tight box; an empty mask is an error.
- **Text**: a head phrase ending in "face" or "head" (:data:`FACE_WORDS`) means YuNet's largest face on the first
  of the first ``search_frames`` frames with one. Otherwise the COCO-80 name (YOLOX-nano's vocabulary) whose MiniLM
  embedding is nearest the text's head phrase (the words before the first ``(``, comma, or relation word such as
  "in", "with", "who", "held": "the fair-haired woman" of "the fair-haired woman in a black coat"), or else the
  whole text, when its cosine is at least ``min_similarity``; the head phrase's last word naming a class or one of
  its :data:`ALIASES` ("woman", "face" for ``person``) decides first. Otherwise the text names nothing the detector
  knows: an error naming it. The object is that class's detection on the first of the first ``search_frames``
  frames where it is found (none: an error): the highest-scoring one, or where the text names colours
  (:mod:`vision.tracking.real.colours`: "the player in a blue shirt") the one whose box shows most of them (ties:
  the higher score). Other words (places, relations) do not choose.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import cv2
import numpy as np

from vision.errors import InputError

__all__ = ["ALIASES", "FACE_WORDS", "box_from_points", "box_from_mask", "head_phrase", "head_noun_class", "text_class",
           "box_from_text"]

#: the words that end a description's head phrase ("the red mug | on the table")
RELATIONS = ("in", "on", "at", "with", "who", "which", "that", "held", "holding", "of", "by", "near", "behind",
             "under", "from", "to", "as", "while", "and")


#: the head nouns a face detector answers (the face of the person, not the whole person)
FACE_WORDS = ("face", "faces", "head", "heads")

#: other words for a COCO-80 class, the way people name what they point at (a face or a pair of legs is a person's)
ALIASES: dict[str, tuple[str, ...]] = {
    "person": ("man", "men", "woman", "women", "boy", "girl", "child", "kid", "baby", "player", "people", "persons",
               "pedestrian", "walker", "rider", "face", "head", "legs", "leg", "hand", "hands", "arm", "body", "lady",
               "guy", "athlete"),
    "bicycle": ("bike", "cycle"), "motorcycle": ("motorbike", "scooter"), "car": ("taxi", "sedan", "van"),
    "cup": ("mug",), "tv": ("television", "screen", "monitor"), "cell phone": ("phone", "smartphone", "mobile"),
    "couch": ("sofa",), "dining table": ("table",), "potted plant": ("plant",), "sports ball": ("ball",),
}


def _words(phrase: str) -> list[str]:
    """The words of ``phrase``, lower-cased, without a possessive ``'s`` or the punctuation around them."""
    return [w.lower().removesuffix("'s").strip(".!?\"'") for w in phrase.split()]


def head_noun_class(phrase: str) -> str | None:
    """The COCO-80 class the last word of ``phrase`` names, directly or through :data:`ALIASES`, else None."""
    from vision.weights.nets.onnx_models import COCO_CLASSES

    words = _words(phrase)
    if not words:
        return None
    for size in (2, 1):  # two-word names first ("cell phone", "teddy bear")
        noun = " ".join(words[-size:])
        if noun in COCO_CLASSES:
            return noun
        for name, aliases in ALIASES.items():
            if noun in aliases:
                return name
    return None


def head_phrase(text: str) -> str:
    """The words of ``text`` before its first ``(``, comma, semicolon or relation word (:data:`RELATIONS`); the
    whole text when that leaves nothing."""
    words = []
    for word in re.split(r"\s+", re.split(r"[(,;]", text, maxsplit=1)[0].strip()):
        if word.lower() in RELATIONS and words:
            break
        words.append(word)
    return " ".join(words).strip() or text


def box_from_mask(mask: np.ndarray) -> np.ndarray:
    """The tight ``(x, y, w, h)`` box of a bool ``[H, W]`` mask."""
    mask = np.asarray(mask, bool)
    if mask.ndim != 2 or not mask.any():
        raise InputError(f"mask prompt must be a non-empty [H, W] mask, got shape {list(mask.shape)} with "
                         f"{int(mask.sum())} pixels set")
    ys, xs = np.nonzero(mask)
    return np.array([xs.min(), ys.min(), xs.max() - xs.min() + 1, ys.max() - ys.min() + 1], np.float64)


def box_from_points(frame: np.ndarray, points: Sequence[Sequence[float]], labels: Sequence[int],
                    detector=None, segmenter=None, faces=None, min_score: float = 0.25) -> np.ndarray:
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
    if faces is None:
        from vision.weights.nets.onnx_models import YuNet

        faces = YuNet()
    face_boxes = [np.array([f[0], f[1], f[0] + f[2], f[1] + f[3]]) for f in faces.detect(frame)]

    def holds(box: np.ndarray, pts: np.ndarray) -> np.ndarray:
        return (pts[:, 0] >= box[0]) & (pts[:, 0] <= box[2]) & (pts[:, 1] >= box[1]) & (pts[:, 1] <= box[3])

    candidates = [box for box in [*found["boxes"], *face_boxes]
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
    named = head_noun_class(head_phrase(text))
    if named is not None:
        return named
    names = encode_vocabulary(list(COCO_CLASSES), encoder=encoder)
    for phrase in dict.fromkeys([head_phrase(text), text]):
        similarity = (names @ encode_vocabulary([phrase], template="{}", encoder=encoder)[0]).numpy()
        best = int(np.argmax(similarity))
        if similarity[best] >= min_similarity:
            return COCO_CLASSES[best]
    raise InputError(f"text prompt {text!r} names nothing the detector knows (nearest COCO name "
                     f"{COCO_CLASSES[best]!r} at cosine {similarity[best]:.2f}, under {min_similarity}); give a "
                     "box or points instead")


def _face_from_text(frames: Sequence[np.ndarray], text: str, faces, search_frames: int) -> tuple[int, np.ndarray]:
    """The largest YuNet face on the first of the first ``search_frames`` frames with one."""
    if faces is None:
        from vision.weights.nets.onnx_models import YuNet

        faces = YuNet()
    for index, frame in enumerate(frames):
        if index >= search_frames:
            break
        found = [np.asarray(f[:4], np.float64) for f in faces.detect(frame)]
        if found:
            return index, max(found, key=lambda box: box[2] * box[3])
    raise InputError(f"text prompt {text!r} (a face to the face detector): no face found in the first "
                     f"{search_frames} frames; give a box or points instead")


def box_from_text(frames: Sequence[np.ndarray], text: str, detector=None, encoder=None, search_frames: int = 30,
                  min_score: float = 0.3, min_similarity: float = 0.5, use_colours: bool = True, faces=None
                  ) -> tuple[int, np.ndarray]:
    """``(frame index, box (x, y, w, h))`` of the object ``text`` names (see the module docstring);
    ``use_colours=False`` takes the highest-scoring detection whatever colours the text names (the ablation)."""
    from vision.tracking.real.colours import colour_share, colour_words
    from vision.weights.nets.onnx_models import COCO_CLASSES

    words = _words(head_phrase(text))
    if words and words[-1] in FACE_WORDS:  # a face or a head is YuNet's, not YOLOX's whole person
        return _face_from_text(frames, text, faces, search_frames)
    name = text_class(text, min_similarity, encoder)
    if detector is None:
        from vision.weights.nets.onnx_models import YOLOXNano

        detector = YOLOXNano()
    wanted = COCO_CLASSES.index(name)
    for index, frame in enumerate(frames):
        if index >= search_frames:
            break
        found = detector.detect(frame, score_threshold=min_score)
        hits = np.flatnonzero(found["classes"] == wanted)  # highest score first
        if len(hits):
            boxes = [np.array([x0, y0, x1 - x0, y1 - y0], np.float64) for x0, y0, x1, y1 in found["boxes"][hits]]
            colours = colour_words(text) if use_colours else []
            if not colours:
                return index, boxes[0]
            shares = [colour_share(frame, box, colours) for box in boxes]
            return index, boxes[int(np.argmax(shares))]  # argmax keeps the first (higher score) of equal shares
    raise InputError(f"text prompt {text!r} ({name!r} to the detector): no {name} found in the first "
                     f"{search_frames} frames; give a box or points instead")
