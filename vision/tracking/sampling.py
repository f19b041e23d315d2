"""Random prompts for training and evaluation, drawn from a clip batch's instance masks.

Batches are those of :func:`vision.data.datasets.collate_clips` (``instance_ids [B, S, H, W]`` with k + 1 meaning
``track_ids[b, k]``, ``track_valid [B, T]``, ``captions``). For each clip up to ``max_objects`` tracks visible in
at least one view are drawn; each gets one prompt type (``point``, ``box``, ``mask`` or ``text``) and, for visual
types, one view where it is visible:

- point: one positive point on the mask (uniform), plus with probability 0.5 one negative point off the mask;
- box: the mask's bounding box (XYXY pixels, ``x1 = max x``) with each side jittered by up to ``box_jitter`` of
  its size; mask: the ground-truth mask; text: the track's caption embedded by ``embed_text``.

With probability ``negative_text`` an extra slot gets a text prompt naming a category absent from the clip (no
caption contains its name): its targets are empty masks and absence in every view.

:func:`simulate_memory` (G2TAM training, after the backbone has run) gives visually prompted slots the carried 3D
memory the predictor passes between windows and from its first decoding pass to its second: the object's ground-truth mask
on one view where it is visible, lifted through that view's predicted world points to ``num_points`` 3D points,
with the mean view feature under the mask.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

import torch
import torch.nn.functional as F

from vision.errors import InputError
from vision.text import TEXT_DIM
from vision.tracking.prompts import BOX_BR, BOX_TL, NEGATIVE, POSITIVE, Prompts
from vision.tracking.spatial_encoder import spaced_mask_indices

__all__ = ["PROMPT_TYPES", "SampledPrompts", "sample_prompts", "mask_box", "simulate_memory"]

PROMPT_TYPES: tuple[str, ...] = ("point", "box", "mask", "text")


@dataclass
class SampledPrompts:
    """``prompts`` (N slots), targets ``gt_masks [B, S, N, H, W]`` bool and ``gt_presence [B, S, N]`` bool,
    ``types`` (B lists of N str, "" for empty slots, "negative_text" for absent-category text) and
    ``track_index [B, N]`` (index into the batch's tracks, -1 for none)."""

    prompts: Prompts
    gt_masks: torch.Tensor
    gt_presence: torch.Tensor
    types: list[list[str]]
    track_index: torch.Tensor


def mask_box(mask: torch.Tensor) -> torch.Tensor:
    """Bounding box XYXY pixels ``[4]`` (float, inclusive max) of a non-empty boolean mask ``[H, W]``."""
    ys, xs = torch.nonzero(mask, as_tuple=True)
    return torch.stack([xs.min(), ys.min(), xs.max(), ys.max()]).float()


def sample_prompts(batch: dict, max_objects: int = 4, types: Sequence[str] = PROMPT_TYPES,
                   type_weights: Sequence[float] | None = None,
                   embed_text: Callable[[list[str]], torch.Tensor] | None = None, negative_text: float = 0.0,
                   negative_names: Sequence[str] = (), box_jitter: float = 0.1, text_dim: int = TEXT_DIM,
                   memory_dim: int = 1, generator: torch.Generator | None = None,
                   prompt_view: int | None = None) -> SampledPrompts:
    """Draw prompts for a clip batch (see the module docstring).

    Args:
        batch: a :func:`collate_clips` batch. max_objects: object slots per clip (N = max_objects + 1 when
            ``negative_text`` > 0). types / type_weights: prompt types and their probabilities.
        embed_text: TextEncoder-like callable (needed for ``text`` and negative text prompts).
        negative_names: category names for negative text prompts (``"the <name>"``).
        prompt_view: use this view for every visual prompt when the object is visible there (else random).
        generator: torch RNG for reproducible draws (CPU).
    """
    unknown = [t for t in types if t not in PROMPT_TYPES]
    if unknown or not types:
        raise InputError(f"prompt types must be a non-empty subset of {PROMPT_TYPES}, got {list(types)}")
    if ("text" in types or negative_text > 0) and embed_text is None:
        raise InputError("text prompts need embed_text (a TextEncoder)")
    inst = batch["instance_ids"]
    b, s, h, w = inst.shape
    track_valid = batch["track_valid"]
    weights = torch.tensor(type_weights if type_weights is not None else [1.0] * len(types), dtype=torch.float)
    n = max_objects + (1 if negative_text > 0 else 0)
    prompts = Prompts.empty(b, n, (h, w), num_points=2, num_memory=1, text_dim=text_dim, memory_dim=memory_dim)
    gt_masks = torch.zeros(b, s, n, h, w, dtype=torch.bool)
    track_index = torch.full((b, n), -1, dtype=torch.long)
    slot_types = [[""] * n for _ in range(b)]
    texts: list[tuple[int, int, str]] = []
    g = generator

    def rand() -> float:
        return float(torch.rand((), generator=g))

    for bi in range(b):
        t_count = int(track_valid[bi].sum())
        masks_all = torch.stack([inst[bi] == k + 1 for k in range(t_count)], dim=1) if t_count else \
            torch.zeros(s, 0, h, w, dtype=torch.bool)  # [S, T, H, W]
        visible = masks_all.flatten(2).any(-1)  # [S, T]
        candidates = [k for k in range(t_count) if bool(visible[:, k].any())]
        order = torch.randperm(len(candidates), generator=g).tolist()
        chosen = [candidates[i] for i in order[:max_objects]]
        for slot, k in enumerate(chosen):
            kind = types[int(torch.multinomial(weights, 1, generator=g))]
            prompts.valid[bi, slot] = True
            track_index[bi, slot] = k
            gt_masks[bi, :, slot] = masks_all[:, k]
            slot_types[bi][slot] = kind
            if kind == "text":
                texts.append((bi, slot, batch["captions"][bi][k]))
                continue
            views = torch.nonzero(visible[:, k]).flatten().tolist()
            if prompt_view is not None and prompt_view in views:
                v = prompt_view
            else:
                v = views[int(torch.randint(len(views), (1,), generator=g))]
            prompts.view[bi, slot] = v
            m = masks_all[v, k]
            if kind == "point":
                ys, xs = torch.nonzero(m, as_tuple=True)
                i = int(torch.randint(len(xs), (1,), generator=g))
                prompts.points[bi, slot, 0] = torch.stack([xs[i], ys[i]]).float()
                prompts.labels[bi, slot, 0] = POSITIVE
                if rand() < 0.5 and bool((~m).any()):
                    ys, xs = torch.nonzero(~m, as_tuple=True)
                    i = int(torch.randint(len(xs), (1,), generator=g))
                    prompts.points[bi, slot, 1] = torch.stack([xs[i], ys[i]]).float()
                    prompts.labels[bi, slot, 1] = NEGATIVE
            elif kind == "box":
                box = mask_box(m)
                size = torch.stack([box[2] - box[0] + 1, box[3] - box[1] + 1, box[2] - box[0] + 1, box[3] - box[1] + 1])
                noise = (torch.rand(4, generator=g) * 2 - 1) * box_jitter * size
                box = box + noise
                box[0::2] = box[0::2].clamp(0, w - 1)
                box[1::2] = box[1::2].clamp(0, h - 1)
                prompts.points[bi, slot, 0] = torch.minimum(box[:2], box[2:])
                prompts.points[bi, slot, 1] = torch.maximum(box[:2], box[2:])
                prompts.labels[bi, slot, 0] = BOX_TL
                prompts.labels[bi, slot, 1] = BOX_BR
            else:  # mask
                prompts.masks[bi, slot] = m.float()
                prompts.has_mask[bi, slot] = True
        if negative_text > 0 and rand() < negative_text:
            captions = " ".join(batch["captions"][bi]).lower()
            absent = [nm for nm in negative_names if nm.lower() not in captions]
            if absent:
                slot = n - 1
                name = absent[int(torch.randint(len(absent), (1,), generator=g))]
                prompts.valid[bi, slot] = True
                slot_types[bi][slot] = "negative_text"
                texts.append((bi, slot, f"the {name}"))
    if texts:
        emb = embed_text([t for _, _, t in texts]).float().cpu()
        for (bi, slot, _), e in zip(texts, emb):
            prompts.text[bi, slot] = e
            prompts.has_text[bi, slot] = True
    gt_presence = gt_masks.flatten(3).any(-1)
    return SampledPrompts(prompts, gt_masks, gt_presence, slot_types, track_index)


def simulate_memory(sampled: SampledPrompts, world_points: torch.Tensor, feats: torch.Tensor, prob: float,
                    num_points: int = 64, generator: torch.Generator | None = None) -> Prompts:
    """Prompts whose object slots carry, each with probability ``prob``, a 3D memory from one visible view.

    Args:
        sampled: :func:`sample_prompts` output (its prompts are not modified). world_points: predicted
            ``[B, S, H, W, 3]``; feats: view features ``[B, S, D, gh, gw]`` (both are detached here).
        prob: chance per object slot with a visual prompt (text slots never get memory: in a 400-step run where
            they did, text grounding on its own collapsed, video text J&F 0.26 -> 0.04).
        num_points: M, evenly spaced mask pixels lifted per slot (fewer when the mask is smaller).
        generator: CPU RNG for reproducible draws.

    Returns:
        a copy of ``sampled.prompts`` with ``memory_points [B, N, M, 3]``, ``memory_valid [B, N, M]`` and
        ``memory_feat [B, N, D]`` filled in.
    """
    prompts = sampled.prompts
    b, s, n = sampled.gt_masks.shape[:3]
    dev = world_points.device
    wp = world_points.detach()
    fmap = feats.detach()
    points = torch.zeros(b, n, num_points, 3, device=dev)
    valid = torch.zeros(b, n, num_points, dtype=torch.bool, device=dev)
    memory_feat = torch.zeros(b, n, fmap.shape[2], device=dev)
    for bi in range(b):
        for slot in range(n):
            if not bool(prompts.valid[bi, slot]) or sampled.types[bi][slot] not in ("point", "box", "mask"):
                continue
            if float(torch.rand((), generator=generator)) >= prob:
                continue
            views = torch.nonzero(sampled.gt_presence[bi, :, slot]).flatten().tolist()
            if not views:
                continue
            v = views[int(torch.randint(len(views), (1,), generator=generator))]
            mask = sampled.gt_masks[bi, v, slot].to(dev)
            idx, ok = spaced_mask_indices(mask.float(), num_points)
            picked = wp[bi, v].flatten(0, 1)[idx]  # [M, 3]
            ok = ok & torch.isfinite(picked).all(-1)
            points[bi, slot] = torch.nan_to_num(picked)
            valid[bi, slot] = ok
            grid = F.adaptive_avg_pool2d(mask.float()[None, None], fmap.shape[-2:])[0, 0]
            memory_feat[bi, slot] = (fmap[bi, v] * grid).sum((-2, -1)) / grid.sum().clamp(min=1e-6)
    return replace(prompts.to(dev), memory_points=points, memory_valid=valid, memory_feat=memory_feat)
