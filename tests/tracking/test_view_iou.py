"""prompted_view_ious: the selected hypothesis, presence gating, visible pairs of valid slots only, split by the
prompted view."""

from __future__ import annotations

import torch

from vision.tracking.prompts import Prompts
from vision.tracking.sampling import SampledPrompts
from vision.tracking.view_iou import prompted_view_ious


def _logits(mask: torch.Tensor) -> torch.Tensor:
    return torch.where(mask, 5.0, -5.0)


def test_prompted_view_ious_selects_gates_and_splits():
    s, n, m, h, w = 4, 2, 2, 4, 4
    gt = torch.zeros(1, s, n, h, w, dtype=torch.bool)
    gt[0, 0, 0, :2, :2] = True  # slot 0: views 0, 1 and 3; absent on view 2
    gt[0, 1, 0, 0, :] = True
    gt[0, 3, 0, 2:, 2:] = True
    gt[0, :, 1] = True  # slot 1 is not a valid slot: never scored
    presence = gt.flatten(-2).any(-1)
    prompts = Prompts.empty(1, n, (h, w))
    prompts.valid[0, 0] = True
    prompts.view[0, 0] = 1

    masks = torch.full((1, s, n, m, h, w), -5.0)
    iou = torch.zeros(1, s, n, m)
    masks[0, 0, 0, 0] = _logits(gt[0, 0, 0])  # view 0: the exact mask, predicted best -> IoU 1
    iou[0, 0, 0] = torch.tensor([0.9, 0.1])
    masks[0, 1, 0, 0] = _logits(gt[0, 1, 0])  # view 1 (prompted): the second hypothesis (two rows) is picked
    masks[0, 1, 0, 1, :2] = 5.0
    iou[0, 1, 0] = torch.tensor([0.1, 0.9])
    masks[0, 3, 0, 0] = _logits(gt[0, 3, 0])  # view 3: the exact mask, but the tracker says absent -> IoU 0
    iou[0, 3, 0] = torch.tensor([0.9, 0.1])
    presence_logits = torch.full((1, s, n), 3.0)
    presence_logits[0, 3, 0] = -3.0
    out = {"masks": masks, "iou": iou, "presence": presence_logits}

    sampled = SampledPrompts(prompts=prompts, gt_masks=gt, gt_presence=presence, types=[["point", ""]],
                             track_index=torch.tensor([[0, -1]]))
    ious = prompted_view_ious(out, sampled)
    assert set(ious) == {"prompted", "other"}
    torch.testing.assert_close(ious["prompted"], torch.tensor([0.5]))
    torch.testing.assert_close(ious["other"], torch.tensor([1.0, 0.0]))
