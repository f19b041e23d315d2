"""How well a tracker follows its prompts on a clip batch: the IoU of each visible (view, object) pair, on the view
carrying the object's prompt and on the other views.

The mask of a pair is the hypothesis with the highest predicted IoU (:func:`vision.tracking.model.select_best_mask`),
emptied where the presence logit is not positive (the tracker says the object is absent there), thresholded at
logit 0 and compared with the ground-truth mask (:func:`vision.tracking.losses.mask_iou`: 1 when both are empty).
Only pairs of a valid object slot whose object is visible on the view are scored.
"""

from __future__ import annotations

from typing import Any

import torch

from vision.tracking.losses import mask_iou
from vision.tracking.model import select_best_mask
from vision.tracking.sampling import SampledPrompts

__all__ = ["prompted_view_ious"]


def prompted_view_ious(out: dict[str, Any], sampled: SampledPrompts) -> dict[str, torch.Tensor]:
    """The IoU of every scored (view, object) pair, split by where the object's prompt is (module docstring).

    Args:
        out: the tracker's outputs for ``sampled.prompts``: ``masks [B, S, N, M, H, W]`` logits, ``iou [B, S, N, M]``,
            ``presence [B, S, N]`` logits.
        sampled: the prompts (``prompts.view [B, N]``: each slot's prompted view, ``prompts.valid [B, N]``) and the
            targets (``gt_masks [B, S, N, H, W]``, ``gt_presence [B, S, N]``).

    Returns:
        ``{"prompted": [P], "other": [Q]}``: the IoUs (float, in [0, 1]) of the pairs on the slot's prompted view and
        of those on the other views, in (batch, view, slot) order.
    """
    masks, _ = select_best_mask(out["masks"], out["iou"])
    masks = torch.where(out["presence"][..., None, None] > 0, masks, torch.full_like(masks, -1.0))
    iou = mask_iou(masks, sampled.gt_masks.to(masks.device).float())  # [B, S, N]
    views = torch.arange(iou.shape[1], device=iou.device)[None, :, None]
    on_view = views == sampled.prompts.view.to(iou.device)[:, None, :]
    visible = sampled.gt_presence.to(iou.device) & sampled.prompts.valid.to(iou.device)[:, None]
    return {"prompted": iou[visible & on_view], "other": iou[visible & ~on_view]}
