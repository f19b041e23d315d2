"""Target assignment (FCOS-style) and the detection losses.

Assignment, per image: a location is a positive for ground-truth box g when its centre lies inside g, within
``center_radius * stride`` of g's centre, and ``max(l, t, r, b)`` of g seen from it falls in the level's size
range; among several candidates the smallest box wins. Labels: ``0..K-1`` vocabulary class, ``K`` background,
``K + 1`` OOV (set by mining, never by assignment).

Losses (dict keys ``loss_*``):
- ``loss_objectness``: sigmoid focal loss (alpha 0.25, gamma 2) over all locations, target 1 at positives and at
  OOV-labelled locations, summed and divided by their number; with ``quality=True`` the target at a positive is
  instead the IoU of its predicted box with its ground truth (detached) and the loss is GFL's quality focal loss
  (``|target - p|^2``-weighted binary cross entropy), so the objectness that ranks detections also ranks how well
  they are localised;
- ``loss_box``: GIoU loss at positives (mean);
- ``loss_cls``: cross entropy of the open-vocabulary logits: mean over foreground targets (vocabulary + OOV)
  plus, unless ``background=False``, mean over background locations (a body whose frozen objectness already
  tells objects from background needs no background column trained, and training it on the thousands of
  background locations pulls every embedding away from every name).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torchvision.ops import box_iou, generalized_box_iou_loss, sigmoid_focal_loss

__all__ = ["level_size_ranges", "assign_targets", "assign_by_prediction", "drop_vocabulary", "detection_losses", "quality_focal_loss"]


def level_size_ranges(strides: torch.Tensor, factor: float = 4.0) -> torch.Tensor:
    """Per-location size range ``[N, 2]`` (lo, hi) on ``max(l, t, r, b)``: level with stride s covers
    ``(prev_hi, factor * s]``; the first starts at 0, the last is unbounded."""
    unique = torch.unique(strides).tolist()
    ranges = torch.zeros(strides.shape[0], 2, device=strides.device)
    lo = 0.0
    for i, s in enumerate(sorted(unique)):
        hi = float("inf") if i == len(unique) - 1 else factor * s
        mask = strides == s
        ranges[mask, 0] = lo
        ranges[mask, 1] = hi
        lo = hi
    return ranges


def _unassigned(n: int, num_classes: int, device: torch.device
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every one of ``n`` locations a negative: ``labels`` K (background), zero box targets, ``matched`` -1."""
    return (torch.full((n,), num_classes, dtype=torch.int64, device=device), torch.zeros(n, 4, device=device),
            torch.full((n,), -1, dtype=torch.int64, device=device))


def assign_targets(points: torch.Tensor, strides: torch.Tensor, gt_boxes: torch.Tensor, gt_labels: torch.Tensor,
                   num_classes: int, center_radius: float = 1.5) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Assign one image's ground truth to locations.

    Args:
        points: ``[N, 2]`` (x, y) px; strides: ``[N]``; gt_boxes: ``[G, 4]`` XYXY px; gt_labels: ``[G]`` in 0..K-1.
        num_classes: ``K`` (background label = K).

    Returns:
        ``labels [N]`` int64 (K = background), ``box_targets [N, 4]`` XYXY px (zeros at negatives),
        ``matched [N]`` int64 index into gt (-1 at negatives).
    """
    n = points.shape[0]
    labels, box_targets, matched = _unassigned(n, num_classes, points.device)
    if gt_boxes.numel() == 0:
        return labels, box_targets, matched
    x, y = points[:, 0:1], points[:, 1:2]
    ltrb = torch.stack([x - gt_boxes[:, 0], y - gt_boxes[:, 1], gt_boxes[:, 2] - x, gt_boxes[:, 3] - y], dim=-1)
    inside = ltrb.min(dim=-1).values > 0  # [N, G]
    centres = (gt_boxes[:, :2] + gt_boxes[:, 2:]) / 2
    radius = center_radius * strides[:, None]
    near = ((x - centres[:, 0]).abs() < radius) & ((y - centres[:, 1]).abs() < radius)
    ranges = level_size_ranges(strides)
    extent = ltrb.max(dim=-1).values
    in_range = (extent > ranges[:, 0:1]) & (extent <= ranges[:, 1:2])
    candidate = inside & near & in_range
    # small objects that fit no level under these rules: fall back to the nearest location inside the box
    for g in torch.nonzero(candidate.sum(0) == 0).flatten().tolist():
        if inside[:, g].any():
            dist = ((points - centres[g]) ** 2).sum(-1) + (~inside[:, g]).float() * 1e12
            candidate[dist.argmin(), g] = True
    area = (gt_boxes[:, 2] - gt_boxes[:, 0]) * (gt_boxes[:, 3] - gt_boxes[:, 1])
    cost = torch.where(candidate, area[None].expand(n, -1), torch.full_like(candidate, float("inf"), dtype=area.dtype))
    best_cost, best = cost.min(dim=-1)
    pos = torch.isfinite(best_cost)
    labels[pos] = gt_labels[best[pos]]
    box_targets[pos] = gt_boxes[best[pos]]
    matched[pos] = best[pos]
    return labels, box_targets, matched


def assign_by_prediction(pred_boxes: torch.Tensor, gt_boxes: torch.Tensor, gt_labels: torch.Tensor,
                         num_classes: int, iou_threshold: float = 0.5
                         ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Assign one image's ground truth to the locations whose *predicted* box covers it: a location is a positive
    for the ground-truth box its predicted box overlaps most when that IoU is at least ``iou_threshold``.

    For a pretrained, frozen box body (the YOLOX-nano body of :mod:`vision.detection.yolox_body`) this labels
    exactly the locations that turn into detections of the object at inference, whatever level or anchor the
    body's own training assigned it to, so the embedding branch learns where the boxes come from.

    Args:
        pred_boxes: ``[N, 4]`` XYXY px (the body's boxes); gt_boxes: ``[G, 4]`` XYXY px; gt_labels: ``[G]`` in
            0..K-1. num_classes: ``K`` (background label = K). iou_threshold: the least IoU of a positive.

    Returns:
        ``labels [N]`` int64 (K = background), ``box_targets [N, 4]`` XYXY px (zeros at negatives),
        ``matched [N]`` int64 index into gt (-1 at negatives), as :func:`assign_targets`.
    """
    labels, box_targets, matched = _unassigned(pred_boxes.shape[0], num_classes, pred_boxes.device)
    if gt_boxes.numel() == 0:
        return labels, box_targets, matched
    best_iou, best = box_iou(pred_boxes.detach().float(), gt_boxes.float()).max(dim=-1)
    pos = best_iou >= iou_threshold
    labels[pos] = gt_labels[best[pos]]
    box_targets[pos] = gt_boxes[best[pos]]
    matched[pos] = best[pos]
    return labels, box_targets, matched


def drop_vocabulary(labels: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Labels of a step whose vocabulary is the kept rows of the training vocabulary (vocabulary dropout): the
    objects of a left-out class become out-of-vocabulary, which is what a user's vocabulary that does not name them
    makes them at inference.

    Args:
        labels: ``[...]`` int64 over the full vocabulary (0..K-1 class, K background, K + 1 OOV).
        keep: ``[K]`` bool, the rows kept (at least one).

    Returns:
        ``[...]`` int64 over the kept vocabulary of ``K' = keep.sum()`` rows: a kept class its rank among the kept
        rows, a left-out class ``K' + 1`` (OOV), background ``K'``, OOV ``K' + 1``.
    """
    k = keep.numel()
    kept = int(keep.sum())
    new_index = torch.full((k + 2,), kept + 1, dtype=torch.int64, device=labels.device)
    new_index[:k][keep] = torch.arange(kept, device=labels.device)
    new_index[k] = kept
    return new_index[labels]


def quality_focal_loss(logits: torch.Tensor, target: torch.Tensor, beta: float = 2.0) -> torch.Tensor:
    """Quality focal loss (GFL, Li et al. 2020), summed: ``|target - sigmoid(x)|^beta * BCE(x, target)`` with soft
    targets in [0, 1] (0 at negatives, the IoU at positives). Same shapes in; a scalar out."""
    weight = (target - logits.sigmoid()).abs().pow(beta)
    return (F.binary_cross_entropy_with_logits(logits, target, reduction="none") * weight).sum()


def detection_losses(objectness: torch.Tensor, boxes: torch.Tensor, logits: torch.Tensor, labels: torch.Tensor,
                     box_targets: torch.Tensor, num_classes: int, quality: bool = False,
                     background: bool = True) -> dict[str, torch.Tensor]:
    """Losses over a batch.

    Args:
        objectness: ``[B, N]`` logits; boxes: ``[B, N, 4]`` XYXY px; logits: ``[B, N, K + 1 (+1)]``.
        labels: ``[B, N]`` (0..K-1 class, K background, K + 1 OOV); box_targets: ``[B, N, 4]``.
        num_classes: ``K``. quality: IoU-valued objectness targets with the quality focal loss (module docstring).
        background: train the background column at background locations (module docstring).
    """
    positive = labels < num_classes
    oov = labels == num_classes + 1
    foreground = positive | oov
    num_fg = foreground.sum().clamp_min(1).float()
    if quality:
        target = foreground.float()
        if positive.any():
            iou = box_iou(boxes[positive].detach(), box_targets[positive]).diagonal().clamp(0, 1)
            target = target.index_put((positive,), iou)
        loss_obj = quality_focal_loss(objectness, target) / num_fg
    else:
        loss_obj = sigmoid_focal_loss(objectness, foreground.float(), alpha=0.25, gamma=2.0, reduction="sum") / num_fg
    if positive.any():
        loss_box = generalized_box_iou_loss(boxes[positive], box_targets[positive], reduction="mean")
    else:
        loss_box = boxes.sum() * 0.0
    ce = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none").view(labels.shape)
    loss_fg = ce[foreground].mean() if foreground.any() else ce.sum() * 0.0
    at_background = labels == num_classes
    loss_bg = ce[at_background].mean() if background and at_background.any() else ce.sum() * 0.0
    return {"loss_objectness": loss_obj, "loss_box": loss_box, "loss_cls": loss_fg + loss_bg}
