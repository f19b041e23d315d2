"""Mask losses for G2TAM and the baseline (SAM2's recipe) plus the combined tracking + geometry loss.

Per (view, object) pair where the object is present: sigmoid focal loss (alpha 0.25, gamma 2, mean over pixels)
and dice loss for every hypothesis; with several hypotheses only the best one (lowest ``focal_weight * focal +
dice``) is trained. The IoU head regresses (L1) the true IoU of every hypothesis (thresholded at logit 0).
The presence head gets a BCE loss on every valid pair (target: the object has a non-empty mask on that view).
Totals are means over the present (mask terms) or valid (presence) pairs.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

__all__ = ["sigmoid_focal_loss", "dice_loss", "mask_iou", "tracking_losses"]


def sigmoid_focal_loss(logits: torch.Tensor, targets: torch.Tensor, alpha: float = 0.25,
                       gamma: float = 2.0) -> torch.Tensor:
    """Focal loss averaged over the last two dims: ``logits, targets [..., H, W]`` -> ``[...]``."""
    prob = logits.sigmoid()
    ce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    p_t = prob * targets + (1 - prob) * (1 - targets)
    loss = ce * (1 - p_t) ** gamma
    if alpha >= 0:
        loss = (alpha * targets + (1 - alpha) * (1 - targets)) * loss
    return loss.flatten(-2).mean(-1)


def dice_loss(logits: torch.Tensor, targets: torch.Tensor, eps: float = 1.0) -> torch.Tensor:
    """Dice loss ``1 - (2 |P G| + eps) / (|P| + |G| + eps)`` on sigmoid probabilities: ``[..., H, W]`` -> ``[...]``."""
    prob = logits.sigmoid().flatten(-2)
    t = targets.flatten(-2)
    return 1 - (2 * (prob * t).sum(-1) + eps) / (prob.sum(-1) + t.sum(-1) + eps)


def mask_iou(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """IoU of ``logits > 0`` with boolean/0-1 targets ``[..., H, W]`` -> ``[...]`` (1 when both are empty)."""
    pred = (logits > 0).flatten(-2)
    t = targets.flatten(-2) > 0.5
    inter = (pred & t).sum(-1).float()
    union = (pred | t).sum(-1).float()
    return torch.where(union > 0, inter / union.clamp(min=1), torch.ones_like(union))


def tracking_losses(out: dict[str, Any], gt_masks: torch.Tensor, gt_presence: torch.Tensor, valid: torch.Tensor,
                    focal_weight: float = 20.0, dice_weight: float = 1.0, iou_weight: float = 1.0,
                    presence_weight: float = 1.0) -> dict[str, torch.Tensor]:
    """Mask, IoU and presence losses.

    Args:
        out: ``masks [B, S, N, M, H, W]`` logits, ``iou [B, S, N, M]``, ``presence [B, S, N]`` logits.
        gt_masks: ``[B, S, N, H, W]`` bool; gt_presence: ``[B, S, N]`` bool; valid: ``[B, N]`` bool object slots.

    Returns:
        ``loss`` (weighted total), ``loss_focal``, ``loss_dice``, ``loss_iou``, ``loss_presence``.
    """
    masks, iou_pred, presence = out["masks"], out["iou"], out["presence"]
    target = gt_masks.float()[:, :, :, None].expand_as(masks)
    focal = sigmoid_focal_loss(masks, target)  # [B, S, N, M]
    dice = dice_loss(masks, target)
    combo = focal_weight * focal + dice_weight * dice
    best = combo.argmin(-1)
    focal_best = torch.gather(focal, -1, best[..., None])[..., 0]
    dice_best = torch.gather(dice, -1, best[..., None])[..., 0]
    with torch.no_grad():
        true_iou = mask_iou(masks, target)
    iou_l1 = (iou_pred - true_iou).abs().mean(-1)
    pairs = valid[:, None, :].expand_as(gt_presence)
    present = pairs & gt_presence
    n_present = present.sum().clamp(min=1)
    zero = masks.sum() * 0
    loss_focal = (focal_best * present).sum() / n_present if bool(present.any()) else zero
    loss_dice = (dice_best * present).sum() / n_present if bool(present.any()) else zero
    loss_iou = (iou_l1 * present).sum() / n_present if bool(present.any()) else zero
    bce = F.binary_cross_entropy_with_logits(presence, gt_presence.float(), reduction="none")
    loss_presence = (bce * pairs).sum() / pairs.sum().clamp(min=1)
    total = (focal_weight * loss_focal + dice_weight * loss_dice + iou_weight * loss_iou
             + presence_weight * loss_presence)
    return {"loss": total, "loss_focal": loss_focal, "loss_dice": loss_dice, "loss_iou": loss_iou,
            "loss_presence": loss_presence}
