"""Dirichlet-based gradient attribution: pick pseudo-OOV images and their confident unmatched regions.

For image b and vocabulary class k, the class score is the best region's logit ``s_bk = max_n e_bn . t_k / tau``.
Its attribution is gradient x input on that region's embedding-branch feature ``f`` (the input of the
projection into the text space): ``a_bk = (d s_bk / d f) . f``. As in FOOD, evidence is ``e_bk = exp(a_bk)``
(clamped), ``alpha = e + 1``, ``S = sum_k alpha_bk`` and the image's uncertainty is ``u_b = K / S`` (1 = no
evidence for any class, -> 0 with strong evidence).

Mining: the ``fraction`` most uncertain images of a batch are pseudo-OOV images; in them, regions with high
objectness whose predicted boxes overlap no ground-truth box (IoU < ``unmatched_iou``) are kept after NMS (at most
``topk`` per image); every non-positive location whose predicted box overlaps a kept box at IoU >= ``spread_iou``
is labelled OOV.
"""

from __future__ import annotations

from typing import Callable

import torch
from torchvision.ops import box_iou, nms

__all__ = ["attribution_evidence", "dirichlet_uncertainty", "mine_pseudo_oov"]


def attribution_evidence(features: torch.Tensor, project: Callable[[torch.Tensor], torch.Tensor],
                         text: torch.Tensor, temperature: float, clamp: float = 10.0) -> torch.Tensor:
    """Evidence ``[B, K]`` from gradient x input attribution.

    Args:
        features: ``[B, N, C]`` embedding-branch features (detached here; no gradient reaches the model).
        project: features ``[.., C]`` -> unit embeddings ``[.., D]``.
        text: ``[K, D]`` unit text rows; temperature: the classifier's ``tau``.
        clamp: upper bound on the attribution before ``exp``.
    """
    feats = features.detach()
    with torch.no_grad():
        logits = project(feats) @ text.t() / temperature  # [B, N, K]
        best = logits.argmax(dim=1)  # [B, K]
    b_index = torch.arange(feats.shape[0], device=feats.device)[:, None].expand_as(best)
    chosen = feats[b_index, best].clone().requires_grad_(True)  # [B, K, C]: one region per (image, class)
    with torch.enable_grad():
        emb = project(chosen)  # [B, K, D]
        scores = (emb * text[None]).sum(-1) / temperature  # s_bk depends only on chosen[b, k]
        (grad,) = torch.autograd.grad(scores.sum(), chosen)
    attribution = (grad * chosen.detach()).sum(-1)
    return attribution.clamp(max=clamp).exp()


def dirichlet_uncertainty(evidence: torch.Tensor) -> torch.Tensor:
    """``evidence [B, K]`` (>= 0) -> uncertainty ``u = K / sum_k (e_k + 1)`` ``[B]`` in (0, 1]."""
    alpha = evidence + 1.0
    return evidence.shape[-1] / alpha.sum(dim=-1)


def mine_pseudo_oov(uncertainty: torch.Tensor, objectness: torch.Tensor, boxes: torch.Tensor,
                    labels: torch.Tensor, gt_boxes: list[torch.Tensor], num_classes: int, fraction: float = 0.5,
                    min_objectness: float = 0.1, unmatched_iou: float = 0.3, topk: int = 3,
                    spread_iou: float = 0.6, nms_iou: float = 0.5) -> tuple[torch.Tensor, torch.Tensor]:
    """Relabel locations of pseudo-OOV images as OOV (``K + 1``).

    Args:
        uncertainty: ``[B]``; objectness: ``[B, N]`` logits; boxes: ``[B, N, 4]`` predicted XYXY px;
        labels: ``[B, N]`` assigned labels (K = background); gt_boxes: B tensors ``[G_b, 4]``.

    Returns:
        ``(new_labels [B, N], mined_images [B] bool)``; ``new_labels`` is a copy.
    """
    new_labels = labels.clone()
    b = uncertainty.shape[0]
    count = max(1, int(round(fraction * b))) if fraction > 0 else 0
    mined = torch.zeros(b, dtype=torch.bool, device=labels.device)
    if count == 0:
        return new_labels, mined
    chosen = uncertainty.topk(min(count, b)).indices.tolist()
    probs = objectness.detach().sigmoid()
    for i in chosen:
        box = boxes[i].detach()
        valid = (box[:, 2] > box[:, 0] + 1) & (box[:, 3] > box[:, 1] + 1)
        candidate = (probs[i] >= min_objectness) & (labels[i] == num_classes) & valid
        if gt_boxes[i].numel() > 0:
            candidate &= box_iou(box, gt_boxes[i]).amax(dim=1) < unmatched_iou
        idx = torch.nonzero(candidate).flatten()
        if idx.numel() == 0:
            continue
        keep = idx[nms(box[idx].float(), probs[i, idx].float(), nms_iou)[:topk]]
        overlap = box_iou(box, box[keep]).amax(dim=1) >= spread_iou
        target = overlap & (labels[i] == num_classes)
        if gt_boxes[i].numel() > 0:
            target &= box_iou(box, gt_boxes[i]).amax(dim=1) < unmatched_iou
        new_labels[i, target] = num_classes + 1
        mined[i] = bool(target.any())
    return new_labels, mined
