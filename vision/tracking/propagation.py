"""How a propagation walks the views: windows, and the decoding of one window (with G2TAM's second pass).

Windows (:func:`windows`): each window holds the prompted views (anchors, at most ``max_anchors``; the first anchor
is the window's view 0 and so fixes one world frame for all windows) plus the next unprocessed views, at most
``window_size`` views in all.

Second pass (:meth:`WindowDecoder.two_pass`, models with ``uses_geometry_memory`` and ``refine``): within a window
that holds an object's visual prompt, its first-pass mask on the prompted view is lifted through the point map and
joins its carried 3D memory; the window is then decoded again, so a click or a box reaches the other views as the
object's whole 3D extent rather than as one point. An object prompted by text alone lifts its first-pass mask on
the view where it is most surely present (if its presence reaches the threshold there).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
import torch.nn.functional as F

from vision.errors import InputError
from vision.tracking.interface import TrackingModel
from vision.tracking.memory3d import ObjectMemory, lift
from vision.tracking.model import select_best_mask
from vision.tracking.prompts import Prompts
from vision.tracking.session import ObjectPrompt, TrackerState, as_int

__all__ = ["WindowDecoder", "propagation_views", "windows"]


def propagation_views(num_views: int, start_view: int | None, reverse: bool, max_views: int | None) -> list[int]:
    """The views one propagation yields, in its order: from ``start_view`` (default the first view, or the last
    with ``reverse``) forward (backward with ``reverse``), at most ``max_views`` of them (default all)."""
    order = list(range(num_views - 1, -1, -1)) if reverse else list(range(num_views))
    if start_view is not None:
        start_view = as_int(start_view, "start_view")
        if not 0 <= start_view < num_views:
            raise InputError(f"start_view {start_view} is out of range: the state has {num_views} views")
        order = order[order.index(start_view):]
    if max_views is not None:
        max_views = as_int(max_views, "max_views")
        if max_views < 1:
            raise InputError(f"max_views must be >= 1, got {max_views}")
        order = order[:max_views]
    return order


def windows(prompted_views: Sequence[int], views: list[int], window_size: int,
            max_anchors: int) -> list[tuple[list[int], list[int]]]:
    """``[(window views, views to yield)]`` over ``views`` (in their order). The anchors are the first
    ``max_anchors`` of the sorted ``prompted_views`` (the first of ``views`` when none is prompted); every window
    starts with them, then holds the next unprocessed views. Anchors outside ``views`` still sit in every window
    (they hold the prompts) but are not yielded; anchors inside are yielded by the first window."""
    anchors = sorted(prompted_views)[:max_anchors]
    if not anchors:
        anchors = [views[0]]
    rest = [v for v in views if v not in anchors]
    chunk = window_size - len(anchors)
    out = []
    for i in range(0, max(len(rest), 1), chunk):
        new = rest[i: i + chunk]
        emit = new + ([a for a in anchors if a in views] if i == 0 else [])
        out.append((anchors + new, emit))
    return out


def set_visual_prompt(prompts: Prompts, slot: int, prompt: ObjectPrompt, window: list[int]) -> None:
    """Object slot ``slot`` of the one-clip ``prompts`` takes ``prompt``'s points and mask on its view, when
    ``window`` holds that view (as an index into the window)."""
    if prompt.view is None or prompt.view not in window:
        return
    prompts.view[0, slot] = window.index(prompt.view)
    if prompt.points is not None:
        prompts.points[0, slot, : len(prompt.points)] = torch.from_numpy(prompt.points)
        prompts.labels[0, slot, : len(prompt.labels)] = torch.from_numpy(prompt.labels)
    if prompt.mask is not None:
        prompts.masks[0, slot] = torch.from_numpy(prompt.mask.astype(np.float32))
        prompts.has_mask[0, slot] = True


@dataclass
class WindowDecoder:
    """Decodes the masks of one window for the objects of a state.

    ``mask_threshold``: mask logit above which a pixel belongs to the object; ``presence_threshold``: presence
    probability under which an object's mask is emptied; ``memory_points``: 3D points per object prompt;
    ``refine``: the second pass (see the module docstring); ``object_bucket``: objects decoded per call of the
    model's ``decode`` (None: all at once; see :meth:`decode`)."""

    model: TrackingModel
    device: torch.device
    mask_threshold: float
    presence_threshold: float
    memory_points: int
    refine: bool
    object_bucket: int | None = None

    def prompts(self, state: TrackerState, obj_ids: list[int], window: list[int], memory: ObjectMemory) -> Prompts:
        """The prompts of ``obj_ids`` in ``window`` (on the model's device): each visual prompt on its view when
        the window holds it, the text embeddings, and the carried 3D ``memory``."""
        s = state.size
        k = max([len(state.prompts[o].points) if state.prompts[o].points is not None else 0 for o in obj_ids] + [1])
        p = Prompts.empty(1, len(obj_ids), (s, s), num_points=k, num_memory=self.memory_points,
                          text_dim=self.model.text_dim, memory_dim=self.model.dim)
        for j, o in enumerate(obj_ids):
            pr = state.prompts[o]
            p.valid[0, j] = True
            set_visual_prompt(p, j, pr, window)
            if pr.text_embedding is not None:
                p.text[0, j] = pr.text_embedding
                p.has_text[0, j] = True
            if o in memory:
                pts, feat = memory[o]
                p.memory_points[0, j, : len(pts)] = torch.from_numpy(pts)
                p.memory_valid[0, j, : len(pts)] = True
                p.memory_feat[0, j] = torch.from_numpy(feat)
        return p.to(self.device)

    def decode(self, encoded: dict[str, Any], prompts: Prompts,
               views: list[int] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Best-hypothesis masks ``[V, N, s, s]`` bool (emptied under the presence threshold) and presence
        probabilities ``[V, N]`` on the window's ``views`` (indices into the window; default all, V = S).

        The objects go to the model in buckets of at most ``object_bucket`` slots, one ``decode`` call each, all
        reading the same encoding (the backbone, view features and point maps are computed once per window); the
        model decodes every (view, object) pair on its own, so the buckets change the masks only by float
        rounding (tested against one object per call), and the decoder's working memory is that of one bucket."""
        n = prompts.num_objects
        step = n if self.object_bucket is None or n <= self.object_bucket else self.object_bucket
        masks, probs = [], []
        for start in range(0, max(n, 1), max(step, 1)):
            bucket = prompts if step == n else prompts.select(slice(start, start + step))
            out = self.model.decode(encoded, bucket, views, full_size=False)
            best, _ = select_best_mask(out["masks"][0], out["iou"][0])  # [V, n, s/2, s/2]: upsample the kept one
            best = F.interpolate(best, size=tuple(encoded["images"].shape[-2:]), mode="bilinear", align_corners=False)
            prob = out["presence"][0].sigmoid()
            masks.append((best > self.mask_threshold) & (prob[..., None, None] >= self.presence_threshold))
            probs.append(prob)
        if len(masks) == 1:
            return masks[0], probs[0]
        return torch.cat(masks, dim=1), torch.cat(probs, dim=1)

    def two_pass(self, state: TrackerState, obj_ids: list[int], window: list[int], encoded: dict[str, Any],
                 prompts: Prompts, wp: np.ndarray, feats: torch.Tensor,
                 memory: ObjectMemory) -> tuple[torch.Tensor, torch.Tensor]:
        """Masks ``[S, N, s, s]`` and presence ``[S, N]`` on a window of a model with 3D memory: with ``refine``, a
        first pass on the views the second pass lifts from (:meth:`first_pass_views`), then every view decoded
        with the lifted memory; each view's masks are those of decoding every view in both passes (a view's
        decode does not depend on which other views are decoded with it). ``wp [S, s, s, 3]`` world points,
        ``feats [S, d, gh, gw]`` view features."""
        rows = self.first_pass_views(state, obj_ids, window) if self.refine else []
        if not rows:
            return self.decode(encoded, prompts)
        every = len(rows) == len(window)
        masks, prob = self.decode(encoded, prompts, None if every else rows)
        lifted = self.second_pass_memory(state, obj_ids, window, rows, masks, prob, wp, feats, memory)
        if lifted is not None:
            return self.decode(encoded, self.prompts(state, obj_ids, window, lifted))
        return (masks, prob) if every else self.decode(encoded, prompts)

    @staticmethod
    def first_pass_views(state: TrackerState, obj_ids: list[int], window: list[int]) -> list[int]:
        """The window's views (indices into it) whose first-pass masks :meth:`second_pass_memory` reads: each
        visual prompt's view in this window; every view when an object has a text prompt only."""
        rows = set()
        for o in obj_ids:
            view = state.prompts[o].view
            if view is None:
                return list(range(len(window)))
            if view in window:
                rows.add(window.index(view))
        return sorted(rows)

    def second_pass_memory(self, state: TrackerState, obj_ids: list[int], window: list[int], rows: list[int],
                           masks: torch.Tensor, prob: torch.Tensor, wp: np.ndarray, feats: torch.Tensor,
                           memory: ObjectMemory) -> ObjectMemory | None:
        """Carried memory plus each object's first-pass mask lifted to 3D: on its prompted view for a visual
        prompt in this window, on the view where it is most surely present (presence at least
        ``presence_threshold``) for a text-only prompt. Objects with a visual prompt outside this window keep
        their carried memory only. ``masks [R, N, s, s]`` and ``prob [R, N]`` are the first pass on the window's
        views ``rows`` (every view when an object has a text prompt only). None when no object has anything
        to add."""
        masks_np = masks.cpu().numpy()  # [R, N, s, s]
        prob_np = prob.float().cpu().numpy()  # [R, N]
        lifted, added = dict(memory), False
        for j, o in enumerate(obj_ids):
            view = state.prompts[o].view
            if view is None:
                r = int(prob_np[:, j].argmax())
                if prob_np[r, j] < self.presence_threshold:
                    continue
            elif view in window:
                r = rows.index(window.index(view))
            else:
                continue
            i = rows[r]
            entry = lift(masks_np[[r], j], wp[[i]], feats[[i]], memory.get(o), self.memory_points)
            if entry is not None:
                lifted[o] = entry
                added = True
        return lifted if added else None
