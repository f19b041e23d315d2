"""Measurements of what limits a detector, on plain tensors and arrays: object size bins, the head's assignment
(positives per object, the recall its targets and its initial boxes allow), matching detections to objects, a
confusion matrix, cosine tables of text rows and a nearest-class-mean probe. ``benchmarks/diagnose_oovdet.py``
runs them over a checkpoint and a split.

Boxes are XYXY pixels (COCO results' XYWH through :func:`xywh_to_xyxy`); sizes are ``sqrt(w * h)`` in model-input
pixels.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torchvision.ops import box_convert, box_iou

from vision.detection.losses import assign_targets
from vision.errors import InputError

__all__ = ["SIZE_BINS", "size_bins", "prior_boxes", "assignment_statistics", "summarise_assignment", "xywh_to_xyxy",
           "best_matches", "confusion_matrix", "row_normalise", "cosine_table", "nearest_mean_accuracy"]

#: (name, lower bound inclusive, upper bound exclusive) on ``sqrt(w * h)`` in model-input pixels.
SIZE_BINS: tuple[tuple[str, float, float], ...] = (("small", 0.0, 8.0), ("medium", 8.0, 16.0),
                                                    ("large", 16.0, math.inf))


def size_bins(boxes: torch.Tensor) -> list[str]:
    """Size bin name (:data:`SIZE_BINS`) of each XYXY box ``[G, 4]`` by ``sqrt(w * h)``."""
    side = ((boxes[:, 2] - boxes[:, 0]).clamp_min(0) * (boxes[:, 3] - boxes[:, 1]).clamp_min(0)).sqrt().tolist()
    return [next(name for name, lo, hi in SIZE_BINS if lo <= s < hi) for s in side]


def prior_boxes(points: torch.Tensor, strides: torch.Tensor) -> torch.Tensor:
    """The head's box at initialisation per location, XYXY ``[N, 4]``: ``softplus(0) * stride`` on every side
    (box conv weights ~0, bias 0, level scale 1; :class:`vision.detection.head.DenseDetectionHead`)."""
    half = F.softplus(torch.zeros(())) * strides
    return torch.stack([points[:, 0] - half, points[:, 1] - half, points[:, 0] + half, points[:, 1] + half], dim=-1)


def assignment_statistics(points: torch.Tensor, strides: torch.Tensor, boxes: torch.Tensor, labels: torch.Tensor,
                          num_classes: int) -> dict[str, np.ndarray]:
    """Per ground-truth object of one image, under :func:`assign_targets` (the head's own assignment).

    Args:
        points ``[N, 2]`` (x, y) px, strides ``[N]``: the detector's locations; boxes ``[G, 4]`` XYXY px; labels
        ``[G]`` in ``0..num_classes-1``.

    Returns arrays of length ``G``: ``positives`` (locations assigned to the object), ``min_stride`` (smallest stride
    among them, 0 when none), ``ideal_iou`` (best IoU of a positive's regression target rebuilt as a box around its
    location, 0 when none), ``prior_iou`` (best IoU of a positive's :func:`prior_boxes` box, 0 when none),
    ``any_prior_iou`` (best prior-box IoU over every location, assigned or not).
    """
    g = boxes.shape[0]
    if g == 0:
        empty = np.zeros(0)
        return {"positives": empty.astype(np.int64), "min_stride": empty, "ideal_iou": empty, "prior_iou": empty,
                "any_prior_iou": empty}
    _, box_targets, matched = assign_targets(points, strides, boxes, labels, num_classes)
    pos = matched >= 0
    positives = torch.bincount(matched[pos], minlength=g)
    ideal = box_targets  # each positive's regression target: the box its (l, t, r, b) around the location gives
    prior_iou_all = box_iou(prior_boxes(points, strides), boxes)  # [N, G]
    ideal_iou, prior_iou, min_stride = np.zeros(g), np.zeros(g), np.zeros(g)
    for j in range(g):
        mine = matched == j
        if mine.any():
            ideal_iou[j] = float(box_iou(ideal[mine], boxes[j:j + 1]).max())
            prior_iou[j] = float(prior_iou_all[mine, j].max())
            min_stride[j] = float(strides[mine].min())
    return {"positives": positives.numpy().astype(np.int64), "min_stride": min_stride, "ideal_iou": ideal_iou,
            "prior_iou": prior_iou, "any_prior_iou": prior_iou_all.max(dim=0).values.numpy()}


def summarise_assignment(stats: dict[str, np.ndarray], bins: Sequence[str]) -> list[dict[str, Any]]:
    """Rows (one per size bin present, then ``all``): ``n``, positives ``mean`` / ``min`` / ``median``,
    ``zero_share``, ``ideal_recall50`` (share with ideal-target IoU >= 0.5), ``prior_recall50`` (positives' prior
    boxes), ``any_prior_recall50`` (any location's prior box)."""
    bins = np.asarray(list(bins))
    rows = []
    for name in [b[0] for b in SIZE_BINS if (bins == b[0]).any()] + ["all"]:
        sel = np.ones(len(bins), bool) if name == "all" else bins == name
        pos = stats["positives"][sel]
        rows.append({"bin": name, "n": int(sel.sum()), "mean": float(pos.mean()), "min": int(pos.min()),
                     "median": float(np.median(pos)), "zero_share": float((pos == 0).mean()),
                     "ideal_recall50": float((stats["ideal_iou"][sel] >= 0.5).mean()),
                     "prior_recall50": float((stats["prior_iou"][sel] >= 0.5).mean()),
                     "any_prior_recall50": float((stats["any_prior_iou"][sel] >= 0.5).mean())})
    return rows


def xywh_to_xyxy(boxes: Any) -> torch.Tensor:
    """COCO XYWH ``[n, 4]`` -> XYXY float tensor ``[n, 4]``."""
    return box_convert(torch.as_tensor(np.asarray(boxes, np.float32).reshape(-1, 4)), "xywh", "xyxy")


def best_matches(gt_boxes: torch.Tensor, det_boxes: torch.Tensor, det_scores: torch.Tensor,
                 iou_threshold: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """Per ground-truth box (XYXY ``[G, 4]``): the index of the highest-scoring detection (``[D, 4]``, scores
    ``[D]``) with IoU >= ``iou_threshold`` (-1 when none), and the best IoU of any detection (0 when none)."""
    g = gt_boxes.shape[0]
    if g == 0 or det_boxes.shape[0] == 0:
        return np.full(g, -1, np.int64), np.zeros(g)
    iou = box_iou(gt_boxes.float(), det_boxes.float())  # [G, D]
    ok = iou >= iou_threshold
    masked = torch.where(ok, det_scores.float()[None].expand_as(iou), torch.full_like(iou, -math.inf))
    best = masked.argmax(dim=1)
    match = torch.where(ok.any(dim=1), best, torch.full_like(best, -1))
    return match.numpy().astype(np.int64), iou.max(dim=1).values.numpy()


def confusion_matrix(true: Sequence[int], predicted: Sequence[int], num_rows: int, num_cols: int) -> np.ndarray:
    """Counts ``[num_rows, num_cols]``: ``out[t, p]`` = number of pairs with true row ``t`` and predicted column
    ``p``."""
    out = np.zeros((num_rows, num_cols), np.int64)
    if len(true):
        np.add.at(out, (np.asarray(true, np.int64), np.asarray(predicted, np.int64)), 1)
    return out


def row_normalise(counts: np.ndarray) -> np.ndarray:
    """Rows divided by their sums (rows summing to 0 stay 0)."""
    sums = counts.sum(axis=1, keepdims=True)
    return np.divide(counts, sums, out=np.zeros(counts.shape, float), where=sums > 0)


def cosine_table(rows: torch.Tensor) -> tuple[np.ndarray, float, list[int]]:
    """For rows ``[K, D]`` (normalised here): the cosine matrix ``[K, K]``, its mean off-diagonal and, per row, the
    index of the most similar other row (``K >= 2``)."""
    unit = F.normalize(rows.float(), dim=-1)
    sim = (unit @ unit.t()).numpy()
    k = sim.shape[0]
    if k < 2:
        raise InputError(f"cosine_table needs at least 2 rows, got {k}")
    off = ~np.eye(k, dtype=bool)
    nearest = np.where(off, sim, -np.inf).argmax(axis=1)
    return sim, float(sim[off].mean()), [int(i) for i in nearest]


def nearest_mean_accuracy(train_x: np.ndarray, train_y: np.ndarray, test_x: np.ndarray, test_y: np.ndarray
                          ) -> float:
    """Top-1 accuracy of a nearest-class-mean classifier: rows ``[n, D]`` are L2-normalised, class means of the
    training rows are normalised again, each test row takes the class of the most cosine-similar mean (only classes
    present in ``train_y`` can be predicted). NaN when there is no test row."""
    if len(test_y) == 0:
        return float("nan")

    def unit(x: np.ndarray) -> np.ndarray:
        return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
    classes = np.unique(train_y)
    means = unit(np.stack([unit(train_x[train_y == c]).mean(axis=0) for c in classes]))
    predicted = classes[(unit(test_x) @ means.T).argmax(axis=1)]
    return float((predicted == test_y).mean())
