"""Exemplar prompts on real frames: a box drawn on one frame finds the same kind of object on other frames and videos,
for things no vocabulary name reaches (SAM 3's exemplars), with negative boxes ("not this") too.

Why visual: the pretrained body's region embeddings are mixtures of its 80 COCO names (:mod:`vision.detection.
yolox_body`), so an object outside COCO-80 (a sandal, a net, a desk) has no embedding of its own there. Two registered
pretrained parts answer instead:

1. **class-agnostic proposals**: the body's objectness alone (YOLOX's object head before any class), the best
   ``proposals`` locations after class-agnostic NMS (:func:`class_agnostic_proposals`);
2. **a visual descriptor**: ImageNet MobileNetV2's pooled 1280-d features of each box's crop, resized to
   ``crop_size`` squared (:class:`CropEmbedder`; ImageNet's 1000 classes include many everyday things COCO lacks).

A proposal's score for an exemplar concept (:func:`exemplar_scores`) is the probability that it is an object of the
exemplar's kind, ``sigmoid(a * c_pos + b * log(objectness) + c)``: ``c_pos`` its best cosine to the positive
exemplars' descriptors; a proposal at least as close to a negative exemplar ("not this") as to every positive one
scores 0. ``(a, b, c)`` (:attr:`ExemplarSettings.calibration`) is a logistic regression fitted on the
teacher-labelled real training frames (``datasets/real/real_coco_train.json``; exemplars of COCO classes taken from
other videos; ``benchmarks/fit_exemplar_calibration.py`` refits it), so that a match's score is a probability on the
scale of a name's and the two can be merged; the cosine is absolute (no statistic of the frame), so a frame full of
the exemplar's kind scores them all. The exemplar's own box, on its own frame, is found as any other.

Conventions: boxes XYXY in pixels of the frame they are drawn on; frames uint8 ``[H, W, 3]`` RGB; descriptors unit
rows float32 ``[N, 1280]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from vision.errors import InputError
from vision.weights.nets.mobilenet import EMBEDDING_DIM, IMAGENET_MEAN, IMAGENET_STD
from vision.weights.nets.onnx_models import nms_xyxy

__all__ = ["ExemplarSettings", "CropEmbedder", "ExemplarMatcher", "class_agnostic_proposals", "exemplar_scores", "check_box"]


@dataclass(frozen=True)
class ExemplarSettings:
    """How exemplar boxes are matched (see the module docstring).

    Args:
        proposals: class-agnostic proposals kept per frame (after NMS).
        nms_iou: the class-agnostic NMS IoU of the proposals.
        crop_size: the side each crop is resized to before MobileNetV2.
        calibration: ``(a, b, c)`` of the score's logistic model (cosine, log objectness, bias).
        min_score: exemplar matches at or under this score are dropped.
    """

    proposals: int = 200
    nms_iou: float = 0.6
    crop_size: int = 96
    calibration: tuple[float, float, float] = (11.18, 0.67, -7.49)
    min_score: float = 0.01

    def __post_init__(self) -> None:
        if int(self.proposals) < 1:
            raise InputError(f"proposals must be >= 1, got {self.proposals}")
        if not 0.0 < float(self.nms_iou) <= 1.0:
            raise InputError(f"nms_iou must be in (0, 1], got {self.nms_iou}")
        if int(self.crop_size) < 32:
            raise InputError(f"crop_size must be >= 32, got {self.crop_size}")
        if len(self.calibration) != 3 or not all(np.isfinite(float(v)) for v in self.calibration):
            raise InputError(f"calibration must be three finite numbers, got {self.calibration}")
        if not 0.0 <= float(self.min_score) < 1.0:
            raise InputError(f"min_score must be in [0, 1), got {self.min_score}")


def check_box(box, width: int, height: int, what: str = "exemplar") -> np.ndarray:
    """``box`` as float64 ``[4]`` XYXY: four finite numbers with ``x0 < x1``, ``y0 < y1``, overlapping the
    ``width x height`` frame; :class:`InputError` naming ``what`` otherwise."""
    values = np.asarray(box, np.float64).reshape(-1)
    if values.size != 4 or not np.isfinite(values).all():
        raise InputError(f"{what} box must be four finite numbers x0,y0,x1,y1, got {box!r}")
    x0, y0, x1, y1 = values
    if not (x0 < x1 and y0 < y1):
        raise InputError(f"{what} box {values.tolist()} must have x0 < x1 and y0 < y1")
    if x1 <= 0 or y1 <= 0 or x0 >= width or y0 >= height:
        raise InputError(f"{what} box {values.tolist()} lies outside the {width}x{height} frame")
    return values


class CropEmbedder(nn.Module):
    """Unit MobileNetV2 descriptors of box crops.

    ``forward(frame uint8 [H, W, 3] RGB, boxes [N, 4] XYXY px) -> float32 [N, 1280]``: each box clipped to the frame
    (at least one pixel), cropped, resized to ``crop_size`` squared (bilinear, aspect ratio not kept, as the
    registered embedder's own preprocessing), ImageNet-normalised, through ``net`` (features then global average
    pool) and L2-normalised.

    Args:
        net: :class:`vision.weights.nets.mobilenet.MobileNetV2Embedding` (frozen; :func:`~vision.weights.nets.
            mobilenet.load_mobilenetv2` reads the registered ``mobilenetv2-imagenet`` file).
        crop_size: the crops' side.
        batch: crops per forward pass.
    """

    def __init__(self, net: nn.Module, crop_size: int = 96, batch: int = 64) -> None:
        super().__init__()
        self.net = net.eval().requires_grad_(False)
        self.crop_size = int(crop_size)
        self.batch = int(batch)
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1), persistent=False)

    @classmethod
    def from_registry(cls, crop_size: int = 96, device: str | torch.device = "cpu") -> "CropEmbedder":
        """The embedder on the registered ``mobilenetv2-imagenet`` weights (fetched by ``make weights``)."""
        from vision.weights.nets.mobilenet import load_mobilenetv2

        return cls(load_mobilenetv2(device), crop_size).to(device)

    def crops(self, frame: np.ndarray, boxes: np.ndarray) -> np.ndarray:
        """uint8 ``[N, crop_size, crop_size, 3]``: the boxes' crops (clipped to the frame, at least one pixel)."""
        import cv2

        height, width = frame.shape[:2]
        side = self.crop_size
        out = np.empty((len(boxes), side, side, 3), np.uint8)
        for n, (x0, y0, x1, y1) in enumerate(np.asarray(boxes, np.float64).reshape(-1, 4)):
            c0 = int(np.clip(np.floor(x0), 0, width - 1))
            r0 = int(np.clip(np.floor(y0), 0, height - 1))
            c1 = int(np.clip(np.ceil(x1), c0 + 1, width))
            r1 = int(np.clip(np.ceil(y1), r0 + 1, height))
            out[n] = cv2.resize(np.ascontiguousarray(frame[r0:r1, c0:c1]), (side, side),
                                interpolation=cv2.INTER_LINEAR)
        return out

    @torch.no_grad()
    def forward(self, frame: np.ndarray, boxes: np.ndarray) -> torch.Tensor:
        crops = self.crops(frame, boxes)
        device = self.mean.device
        rows = []
        for start in range(0, len(crops), self.batch):
            x = torch.from_numpy(crops[start:start + self.batch]).to(device).permute(0, 3, 1, 2).float() / 255.0
            rows.append(self.net((x - self.mean) / self.std).float())
        if not rows:
            return torch.zeros(0, EMBEDDING_DIM, device=device)
        return nn.functional.normalize(torch.cat(rows), dim=-1)


def class_agnostic_proposals(boxes: torch.Tensor, objectness: torch.Tensor, settings: ExemplarSettings,
                             clip: tuple[int, int], scale: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    """The best ``settings.proposals`` boxes of one frame by the body's class-agnostic objectness, after
    class-agnostic NMS (``settings.nms_iou``).

    Args:
        boxes: ``[N, 4]`` XYXY model-input pixels (the body's ``boxes`` of one view).
        objectness: ``[N]`` logits that a location holds any object (the body's ``agnostic_objectness``).
        clip: ``(H, W)`` the frame occupies in the model input; boxes are clipped to it.
        scale: ``(x, y)`` from model-input to frame px (:meth:`vision.detection.predictor.DetectorPredictor.
            input_geometry`).

    Returns:
        ``(boxes float64 [P, 4] frame px, objectness float64 [P] probabilities)``, best first.
    """
    prob = objectness.float().sigmoid().cpu().numpy().astype(np.float64)
    xyxy = boxes.float().cpu().numpy().astype(np.float64)
    xyxy[:, [0, 2]] = xyxy[:, [0, 2]].clip(0, clip[1])
    xyxy[:, [1, 3]] = xyxy[:, [1, 3]].clip(0, clip[0])
    valid = np.flatnonzero((xyxy[:, 2] - xyxy[:, 0] >= 1) & (xyxy[:, 3] - xyxy[:, 1] >= 1))
    order = valid[np.argsort(-prob[valid], kind="stable")][:10 * settings.proposals]  # NMS on the best only
    keep = order[nms_xyxy(xyxy[order], prob[order], settings.nms_iou)][:settings.proposals]
    return xyxy[keep] * np.array([scale[0], scale[1], scale[0], scale[1]]), prob[keep]


def exemplar_scores(descriptors: torch.Tensor, objectness: np.ndarray, positives: torch.Tensor,
                    negatives: torch.Tensor | None, settings: ExemplarSettings) -> np.ndarray:
    """Each proposal's score for one exemplar concept (the module docstring's rule).

    Args:
        descriptors: ``[P, D]`` unit descriptors of the frame's proposals.
        objectness: ``[P]`` their class-agnostic objectness probabilities.
        positives: ``[E, D]`` unit descriptors of the positive exemplars (E >= 1).
        negatives: ``[Q, D]`` of the negative ones, or None / empty.

    Returns:
        float64 ``[P]`` in [0, 1].
    """
    if positives.numel() == 0:
        raise InputError("an exemplar concept needs at least one positive exemplar box")
    if descriptors.shape[0] == 0:
        return np.zeros(0)
    positive = (descriptors @ positives.t()).amax(dim=1).double().cpu().numpy()
    a, b, c = settings.calibration
    logit = a * positive + b * np.log(np.clip(objectness, 1e-6, 1.0)) + c
    scores = 1.0 / (1.0 + np.exp(-logit))
    if negatives is not None and negatives.numel():
        negative = (descriptors @ negatives.t()).amax(dim=1).double().cpu().numpy()
        scores[negative >= positive] = 0.0
    return scores


class ExemplarMatcher:
    """The exemplar concepts of a detector's vocabulary and where they are on a frame.

    Usage::

        matcher = ExemplarMatcher(CropEmbedder.from_registry())
        matcher.add("sandal", frame_a, [x0, y0, x1, y1])              # a positive exemplar on any frame or video
        matcher.add("sandal", frame_a, [x0, y0, x1, y1], positive=False)
        found = matcher.find(frame_b, boxes, agnostic_objectness, clip, scale)   # {"sandal": (boxes [n, 4], scores [n])}

    Args:
        embedder: the crops' descriptor (:class:`CropEmbedder`).
        settings: :class:`ExemplarSettings`.
    """

    def __init__(self, embedder: CropEmbedder, settings: ExemplarSettings | None = None) -> None:
        self.embedder = embedder
        self.settings = settings or ExemplarSettings()
        self.positives: dict[str, list[torch.Tensor]] = {}
        self.negatives: dict[str, list[torch.Tensor]] = {}

    @property
    def names(self) -> list[str]:
        """The names with at least one positive exemplar, in the order they were first given one."""
        return [name for name, rows in self.positives.items() if rows]

    def add(self, name: str, frame: np.ndarray, box, positive: bool = True) -> None:
        """Remember the descriptor of ``box`` (XYXY pixels of ``frame``, uint8 ``[H, W, 3]`` RGB) as a positive or
        negative exemplar of ``name``."""
        frame = np.asarray(frame)
        if frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
            raise InputError(f"an exemplar's frame must be uint8 [H, W, 3], got {frame.dtype} {frame.shape}")
        values = check_box(box, frame.shape[1], frame.shape[0], f"exemplar of {name!r}")
        row = self.embedder(frame, values[None])[0]
        (self.positives if positive else self.negatives).setdefault(name, []).append(row)
        self.positives.setdefault(name, [])

    def clear(self) -> None:
        """Forget every exemplar."""
        self.positives.clear()
        self.negatives.clear()

    def find(self, frame: np.ndarray, boxes: torch.Tensor, objectness: torch.Tensor, clip: tuple[int, int],
             scale: tuple[float, float]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Each exemplar concept's matches on ``frame``: ``{name: (boxes float32 [n, 4] XYXY frame px, scores
        float32 [n])}``, scores over ``settings.min_score``, best first.

        Args:
            frame: uint8 ``[H, W, 3]`` RGB, as given to the detector.
            boxes, objectness: the body's ``boxes`` ``[N, 4]`` (model-input px) and ``agnostic_objectness`` ``[N]``
                of this frame.
            clip: ``(H, W)`` the frame occupies in the model input. scale: ``(x, y)`` from model-input to frame px.
        """
        names = self.names
        if not names:
            return {}
        proposals, prob = class_agnostic_proposals(boxes, objectness, self.settings, clip, scale)
        descriptors = self.embedder(frame, proposals)
        found = {}
        for name in names:
            negatives = self.negatives.get(name)
            scores = exemplar_scores(descriptors, prob, torch.stack(self.positives[name]),
                                     torch.stack(negatives) if negatives else None, self.settings)
            keep = np.flatnonzero(scores > self.settings.min_score)
            keep = keep[np.argsort(-scores[keep], kind="stable")]
            found[name] = (proposals[keep].astype(np.float32), scores[keep].astype(np.float32))
        return found


def merge_matches(result: dict, found: dict[str, tuple[np.ndarray, np.ndarray]], vocabulary: list[str],
                  category_ids: list[int], unknown_category_id: int, nms_iou: float = 0.5) -> dict:
    """One frame's detector result (:func:`vision.detection.results.label_detections`, frame px) with the exemplar
    matches of ``found`` (:meth:`ExemplarMatcher.find`) added under their names: per name the name's detections and
    its matches go through one NMS at ``nms_iou`` (a box found both ways keeps its higher score), and an ``unknown``
    detection that a kept match covers at ``nms_iou`` with at least its score is dropped (the exemplar names it).
    Returns a new result of the same fields, sorted by score."""
    from vision.detection.results import UNKNOWN_NAME
    from vision.evaluation.concept_boxes import box_iou_xyxy

    boxes = [np.asarray(result["boxes"], np.float32).reshape(-1, 4)]
    scores = [np.asarray(result["scores"], np.float32).reshape(-1)]
    label_ids = [np.asarray(result["label_ids"], np.int64).reshape(-1)]
    for name, (match_boxes, match_scores) in found.items():
        if len(match_scores):
            boxes.append(np.asarray(match_boxes, np.float32).reshape(-1, 4))
            scores.append(np.asarray(match_scores, np.float32))
            label_ids.append(np.full(len(match_scores), vocabulary.index(name), np.int64))
    all_boxes, all_scores, all_labels = np.concatenate(boxes), np.concatenate(scores), np.concatenate(label_ids)
    keep = np.ones(len(all_scores), bool)
    unknown = all_labels < 0
    for index in range(len(vocabulary)):
        rows = np.flatnonzero(all_labels == index)
        if vocabulary[index] not in found or not len(rows):
            continue
        kept = rows[nms_xyxy(all_boxes[rows].astype(np.float64), all_scores[rows].astype(np.float64), nms_iou)]
        keep[np.setdiff1d(rows, kept)] = False
        for u in np.flatnonzero(unknown & keep):
            overlap = box_iou_xyxy(all_boxes[u][None], all_boxes[kept])[0]
            if np.any((overlap >= nms_iou) & (all_scores[kept] >= all_scores[u])):
                keep[u] = False
    order = np.flatnonzero(keep)
    order = order[np.argsort(-all_scores[order], kind="stable")]
    labels = all_labels[order]
    return {"boxes": all_boxes[order], "scores": all_scores[order], "label_ids": labels,
            "labels": [UNKNOWN_NAME if i < 0 else vocabulary[i] for i in labels],
            "category_ids": np.asarray([unknown_category_id if i < 0 else category_ids[i] for i in labels],
                                       np.int64)}

