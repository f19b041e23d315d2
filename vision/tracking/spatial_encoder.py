"""The cross-modal spatial encoder: puts view tokens and prompts into the shared 3D space of the point maps.

- Every view's patch tokens get a 3D positional code: random Fourier features of the (scene-normalised) mean
  predicted world point under each patch, plus the 2D code of the patch centre.
- A point / box prompt on view i reads the predicted 3D point under each prompt point: its token is the label
  embedding + the 3D code of that point + the local appearance (view i's features sampled there); on view i
  itself the SAM-style 2D code is added too. Boxes and masks also give a region token (mean 3D point and mean
  appearance inside), and a mask becomes a set of ``mask_points`` 3D points (evenly spaced over its pixels).
- A text prompt (TextEncoder embedding) is projected and cross-attends over all views' geometric tokens.
- Carried 3D memory (a point cloud from an earlier window) becomes 3D-coded tokens plus one appearance token.
- 3D proximity maps: the prompt's 3D anchors (positive clicks, the box centre, ``proximity_points`` points of a
  mask, the carried memory points; negative clicks apart) are compared with every pixel's predicted world point in every view:
  ``exp(-d^2 / 2 sigma^2)`` of the distance to the nearest anchor (scene-normalised, several scales for the
  positive anchors, one for the negative) is embedded by a small conv stack into the dense prompt of every view but the
  prompted one (whose prompt map stands in there); the decoder also reads the maps at its upsampled resolution.
  This is where a prompt on one view reaches the others through the geometry alone.

Nothing is stored per frame: one prompt finds its object in any view through the shared 3D codes.
World points are detached here (the geometry is trained by its own losses). Scene normalisation: points are
divided by the mean norm of the clip's predicted world points (the same normalisation the geometry is trained in).
"""

from __future__ import annotations

from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from vision.errors import InputError
from vision.tracking.layers import Attention, FourierFeatures, LayerNorm2d, gaussian_falloff
from vision.tracking.prompts import BOX_BR, BOX_TL, NEGATIVE, PAD, POSITIVE, PromptEncoder, Prompts

__all__ = ["SpatialEncoder", "scene_scale", "sample_features", "gather_points", "spaced_mask_indices"]


def scene_scale(world_points: torch.Tensor) -> torch.Tensor:
    """Mean norm of finite world points ``[B, S, H, W, 3]`` -> ``[B]`` (at least 1e-3)."""
    norms = world_points.norm(dim=-1)
    finite = torch.isfinite(norms)
    total = torch.where(finite, norms, torch.zeros_like(norms)).flatten(1).sum(1)
    return (total / finite.flatten(1).sum(1).clamp(min=1)).clamp(min=1e-3)


def _take_view(x: torch.Tensor, view: torch.Tensor) -> torch.Tensor:
    """``x [B, S, ...]``, ``view [B, N]`` (clamped to >= 0) -> ``[B, N, ...]``."""
    b = torch.arange(x.shape[0], device=x.device)[:, None]
    return x[b, view.clamp(min=0)]


def sample_features(feats: torch.Tensor, view: torch.Tensor, xy: torch.Tensor,
                    image_hw: tuple[int, int]) -> torch.Tensor:
    """Bilinear samples of view features ``feats [B, S, C, gh, gw]`` at pixels ``xy [B, N, K, 2]`` of ``view``
    ``[B, N]`` -> ``[B, N, K, C]``."""
    b, n, k, _ = xy.shape
    maps = _take_view(feats, view).flatten(0, 1)  # [BN, C, gh, gw]
    h, w = image_hw
    grid = torch.stack([(xy[..., 0] + 0.5) / w * 2 - 1, (xy[..., 1] + 0.5) / h * 2 - 1], dim=-1)
    out = F.grid_sample(maps, grid.flatten(0, 1)[:, :, None].to(maps.dtype), align_corners=False)
    return out[..., 0].transpose(1, 2).reshape(b, n, k, -1)


def gather_points(world_points: torch.Tensor, view: torch.Tensor, xy: torch.Tensor) -> torch.Tensor:
    """Predicted 3D points under pixels ``xy [B, N, K, 2]`` (nearest pixel) of ``view [B, N]`` from
    ``world_points [B, S, H, W, 3]`` -> ``[B, N, K, 3]``."""
    h, w = world_points.shape[2:4]
    wp = _take_view(world_points, view)  # [B, N, H, W, 3]
    xi = xy[..., 0].round().long().clamp(0, w - 1)
    yi = xy[..., 1].round().long().clamp(0, h - 1)
    flat = wp.flatten(2, 3)  # [B, N, HW, 3]
    idx = (yi * w + xi)[..., None].expand(-1, -1, -1, 3)
    return torch.gather(flat, 2, idx)


def spaced_mask_indices(masks: torch.Tensor, count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` evenly spaced pixel indices (row-major) of each mask ``[..., H, W]`` -> (indices ``[..., count]``,
    valid ``[..., count]``); deterministic. Empty masks give valid = False."""
    flat = (masks.flatten(-2) > 0.5)
    csum = flat.long().cumsum(-1)
    total = csum[..., -1:]
    steps = (torch.arange(count, device=masks.device, dtype=torch.float32) + 0.5) / count
    targets = (steps * total.float()).floor().long() + 1  # 1-based rank of the wanted pixel
    idx = torch.searchsorted(csum, targets.clamp(max=flat.shape[-1]).contiguous())
    idx = idx.clamp(max=flat.shape[-1] - 1)
    valid = (total > 0).expand_as(idx)
    # drop repeated picks of tiny masks
    repeated = torch.zeros_like(valid)
    repeated[..., 1:] = idx[..., 1:] == idx[..., :-1]
    return idx, valid & ~repeated


class SpatialEncoder(nn.Module):
    """Lifts prompts and view tokens into the shared 3D space (see the module docstring).

    Args:
        dim: token width. num_heads: heads of the text cross-attention. mask_points: 3D points per mask prompt.
        pos3d_scale: std of the Gaussian frequencies of the 3D Fourier code (on scene-normalised points).
        proximity_points: 3D anchors a mask prompt gives the proximity maps (evenly spaced mask pixels; the
            ``mask_points`` tokens are too sparse to outline the object).
        proximity_sigmas: scene-normalised lengths of the positive proximity maps (one channel each); the negative
            map uses the first. The smallest matters most on videos: with ground-truth points, keeping the pixels
            within 0.0125 of a mask's lifted points scores IoU 0.92 on the next views, within 0.05 only 0.56
            (``benchmarks/bench_geometry_memory.py``).
        proximity_channels: width of the proximity maps' conv stack. proximity: use the 3D proximity maps (False:
            the prompt reaches other views only through the 3D-coded tokens; the ablation in
            ``benchmarks/bench_tracking_prompts.py``).
        dense_embed: embed the maps into a dense prompt per (view, object) (False: the maps only, for a decoder that
            reads them itself, :class:`~vision.tracking.multiplex.MultiplexDecoder`; no ``proximity_embed``).
        view_tokens: prompt tokens per (view, object), the prompt points carrying their 2D code on their own view
            (False: one set of tokens per object, ``sparse [B, 1, N, T, dim]``, without that code; the multiplexed
            decoder reads them once per object and finds the prompted view's clicks in the prompt maps).

    Token layout per (view, object): ``K`` prompt-point tokens, 1 region token, ``mask_points`` mask-point
    tokens, 2 text tokens, ``M`` memory-point tokens, 1 memory-appearance token.
    """

    ANCHOR_CHUNK = 64  # anchors compared at once in proximity_maps (bounds its memory)
    PRODUCT_ELEMENTS = 1 << 20  # largest (point, anchor) product proximity_maps computes in one call
    NO_ANCHOR = 1e6  # squared scene-normalised distance where an object has no anchor of a kind (the map is 0)
    FAR = 1e4  # scene-normalised coordinates are clamped to +-FAR (a point that far is as good as absent)
    DEFAULT_PROXIMITY_SIGMAS = (0.015, 0.05, 0.15)

    def __init__(self, dim: int, num_heads: int = 4, mask_points: int = 8, pos3d_scale: float = 2.0,
                 proximity_channels: int = 16, proximity: bool = True, proximity_points: int = 64,
                 proximity_sigmas: Sequence[float] = DEFAULT_PROXIMITY_SIGMAS, dense_embed: bool = True,
                 view_tokens: bool = True) -> None:
        super().__init__()
        if not proximity_sigmas or any(not float(sig) > 0 for sig in proximity_sigmas):
            raise InputError(f"proximity_sigmas must be positive lengths, got {list(proximity_sigmas)}")
        self.proximity_sigmas = tuple(float(sig) for sig in proximity_sigmas)
        self.proximity = proximity
        self.dim = dim
        self.mask_points = mask_points
        self.proximity_points = proximity_points
        self.pos3d = FourierFeatures(3, dim // 2, scale=pos3d_scale)
        self.pos3d_proj = nn.Linear(dim, dim)
        self.appearance = nn.Linear(dim, dim)
        self.region_embed = nn.Parameter(torch.randn(dim) * 0.02)
        self.mask_point_embed = nn.Parameter(torch.randn(dim) * 0.02)
        self.memory_embed = nn.Parameter(torch.randn(dim) * 0.02)
        self.memory_feat_embed = nn.Parameter(torch.randn(dim) * 0.02)
        self.text_embed = nn.Parameter(torch.randn(dim) * 0.02)
        self.text_attn = Attention(dim, num_heads)
        self.text_norm = nn.LayerNorm(dim)
        c = proximity_channels
        self.dense_embed = dense_embed
        self.view_tokens = view_tokens
        self.proximity_embed = nn.Sequential(
            nn.Conv2d(self.num_proximity_maps, c // 4, 2, stride=2), LayerNorm2d(c // 4), nn.GELU(),
            nn.Conv2d(c // 4, c, 2, stride=2), LayerNorm2d(c), nn.GELU(), nn.Conv2d(c, dim, 1)) if dense_embed else None

    @property
    def num_proximity_maps(self) -> int:
        """Channels of :meth:`proximity_maps`: one per sigma, plus the negative map."""
        return len(self.proximity_sigmas) + 1

    def proximity_maps(self, world_points: torch.Tensor, anchors: torch.Tensor, positive: torch.Tensor,
                       negative: torch.Tensor, scale: torch.Tensor, size_hw: tuple[int, int]) -> torch.Tensor:
        """Proximity of every view's predicted world points to each object's 3D anchors.

        Args:
            world_points ``[B, S, H, W, 3]``; anchors ``[B, N, A, 3]`` (world frame); positive / negative
            ``[B, N, A]`` bool, the anchors of each kind; scale ``[B]`` scene scale; size_hw: output map size
            (world points are average-pooled to it).
        Returns:
            ``[B, S, N, num_proximity_maps, h, w]``: ``exp(-d^2 / 2 sigma^2)`` with d the scene-normalised
            distance to the nearest positive anchor (one channel per sigma of ``proximity_sigmas``) and to the
            nearest negative anchor (first sigma); 0 where an object has no anchor of that kind (and, by
            :func:`gaussian_falloff`, where the exponent passes 80).
        """
        b, s = world_points.shape[:2]
        h, w = size_hw
        pts = torch.nan_to_num(world_points).permute(0, 1, 4, 2, 3).flatten(0, 1)
        pts = F.adaptive_avg_pool2d(pts, size_hw).view(b, s, 3, h * w).transpose(2, 3)  # [B, S, hw, 3]
        pts = (pts / scale.view(b, 1, 1, 1)).clamp(-self.FAR, self.FAR)
        anc = (torch.nan_to_num(anchors) / scale.view(b, 1, 1, 1)).clamp(-self.FAR, self.FAR)
        d2_pos = self._nearest_squared(pts, anc, positive).view(b, s, -1, h * w)
        d2_neg = self._nearest_squared(pts, anc, negative).view(b, s, -1, h * w)
        maps = [gaussian_falloff(d2_pos, sig) for sig in self.proximity_sigmas]
        maps.append(gaussian_falloff(d2_neg, self.proximity_sigmas[0]))
        return torch.stack(maps, dim=3).view(b, s, anchors.shape[1], len(maps), h, w)

    def _nearest_squared(self, pts: torch.Tensor, anchors: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        """Squared distance from each point ``pts [B, S, P, 3]`` to the nearest kept anchor of each object
        (``anchors [B, N, A, 3]``, ``keep [B, N, A]`` bool) -> ``[B, S, N, P]``, at most ``NO_ANCHOR`` (the value
        where an object has no kept anchor; the dtype's largest value if smaller, as in float16).

        The kept anchors are moved to the front and the rest cut off (a point prompt has one anchor among a hundred
        slots); ``|p - a|^2 = |p|^2 + (|a|^2 - 2 p.a)`` with the bracket from one batched matmul of ``[p, 1]`` by
        ``[-2a, |a|^2]`` per chunk of ``ANCHOR_CHUNK`` anchors and group of objects (a running minimum: at most
        ``PRODUCT_ELEMENTS`` products at a time)."""
        b, s, p = pts.shape[:3]
        n = anchors.shape[1]
        far = min(self.NO_ANCHOR, torch.finfo(pts.dtype).max)  # float16 holds at most 65504: still "no anchor"
        best = pts.new_full((b * s, p, n), far)
        count = int(keep.sum(-1).max()) if keep.numel() else 0
        if count:
            order = torch.sort(keep.to(torch.uint8), dim=-1, descending=True, stable=True).indices[..., :count]
            anchors = torch.gather(anchors, 2, order[..., None].expand(-1, -1, -1, 3))  # [B, N, k, 3]
            bias = torch.where(torch.gather(keep, 2, order), anchors.square().sum(-1),
                               torch.full_like(anchors[..., 0], float("inf")))  # [B, N, k]
            flat = pts.reshape(b * s, p, 3)
            norm2 = flat.square().sum(-1, keepdim=True)
            # (x, y, z, 1) of every view's points, [B, S*P, 4]: the anchors are the same for all views of a clip
            lifted = torch.cat([pts, torch.ones_like(pts[..., :1])], dim=-1).reshape(b, s * p, 4)
            # [-2a, |a|^2] per anchor: one product gives |a|^2 - 2 p.a without a broadcast bias to copy in
            weights = torch.cat([-2 * anchors, bias[..., None]], dim=-1)  # [B, N, k, 4]
            for start in range(0, count, self.ANCHOR_CHUNK):
                c = min(self.ANCHOR_CHUNK, count - start)
                # objects per product, so that its [B*S, P, objects * c] result stays small (a large one costs more
                # in fresh memory than in arithmetic); every value is computed as with one product for all
                group = max(1, self.PRODUCT_ELEMENTS // (b * s * p * c))
                for first in range(0, n, group):
                    g = min(group, n - first)
                    chunk = weights[:, first:first + g, start:start + c]
                    weight = chunk.reshape(b, g * c, 4).transpose(1, 2).contiguous()  # [B, 4, g*c]
                    partial = torch.bmm(lifted, weight).view(b * s, p, g * c)
                    part = best[:, :, first:first + g]
                    best[:, :, first:first + g] = torch.minimum(part, partial.view(b * s, p, g, c).amin(-1) + norm2)
        return best.clamp(0, far).view(b, s, p, n).permute(0, 1, 3, 2)

    def code3d(self, points: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        """3D positional code of world points ``[B, ..., 3]`` with per-clip ``scale [B]`` -> ``[B, ..., dim]``."""
        shape = (-1,) + (1,) * (points.ndim - 1)
        normed = points / scale.view(shape)
        normed = torch.nan_to_num(normed, nan=0.0, posinf=0.0, neginf=0.0).clamp(-4, 4)
        return self.pos3d_proj(self.pos3d(normed))

    def view_positions(self, world_points: torch.Tensor, grid_hw: tuple[int, int], scale: torch.Tensor,
                       pe2d: torch.Tensor) -> torch.Tensor:
        """3D (+2D) positional code of every patch of every view: ``[B, S, dim, gh, gw]``."""
        b, s, h, w, _ = world_points.shape
        pts = world_points.permute(0, 1, 4, 2, 3).flatten(0, 1)  # [BS, 3, H, W]
        pts = torch.nan_to_num(pts)
        pooled = F.adaptive_avg_pool2d(pts, grid_hw).view(b, s, 3, *grid_hw).permute(0, 1, 3, 4, 2)
        code = self.code3d(pooled, scale)  # [B, S, gh, gw, dim]
        return code.permute(0, 1, 4, 2, 3) + pe2d[None, None]

    def forward(self, feats: torch.Tensor, world_points: torch.Tensor, prompts: Prompts,
                prompt_encoder: PromptEncoder, image_hw: tuple[int, int],
                views: Sequence[int] | None = None) -> dict[str, torch.Tensor]:
        """Encode prompts for every (view, object), or for the listed ``views`` only.

        Args:
            feats: view features ``[B, S, dim, gh, gw]``. world_points: ``[B, S, H, W, 3]`` (detached inside).
            prompts: :class:`Prompts` with N slots. prompt_encoder: the 2D / text encoder. image_hw: (H, W).
            views: indices of the V views to encode the prompts for (default all S). Prompt points are read on
                their own view, the scene scale and the text attention use every view, whichever are listed.

        Returns:
            ``view_pos [B, V, dim, gh, gw]``, ``sparse [B, V, N, T, dim]``, ``sparse_pad [B, V, N, T]`` (True =
            padding; V is 1 without ``view_tokens``), ``dense [B, V, N, dim, gh, gw]`` (the prompt-map embedding on the prompted view; elsewhere
            ``no_mask`` + the 3D proximity embedding; None without ``dense_embed``), ``maps [B, V, N, C, 4gh, 4gw]``:
            the prompt maps on the
            prompted view (zeros elsewhere) and, with ``proximity``, the
            ``num_proximity_maps`` proximity maps on every view (C = 4, or 4 + num_proximity_maps).
        """
        world_points = world_points.detach()
        gh, gw = feats.shape[3], feats.shape[4]
        scale = scene_scale(world_points)
        all_pos = self.view_positions(world_points, (gh, gw), scale, prompt_encoder.dense_pe((gh, gw), image_hw))
        chosen = torch.arange(feats.shape[1], device=feats.device) if views is None else \
            torch.as_tensor(list(views), dtype=torch.long, device=feats.device)
        view_pos = all_pos if views is None else all_pos[:, chosen]
        view_points = world_points if views is None else world_points[:, chosen]
        s = len(chosen)
        has_view = (prompts.view >= 0) & prompts.valid
        on_view = chosen[None, :, None] == prompts.view[:, None, :]  # [B, V, N]
        labels = torch.where(has_view[..., None], prompts.labels, torch.full_like(prompts.labels, PAD))
        has_mask = prompts.has_mask & has_view
        wp_view = torch.nan_to_num(_take_view(world_points, prompts.view))  # [B, N, H, W, 3]

        # prompt tokens per decoded view, or (without view_tokens) one set per object, shared by its views
        tv = s if self.view_tokens else 1
        token_on_view = on_view if self.view_tokens else torch.zeros_like(on_view[:, :1])
        point_tokens, point_pad, p3 = self._point_tokens(feats, world_points, prompts, prompt_encoder, labels,
                                                         token_on_view, scale, image_hw)
        region, has_box, box_centre = self._box_region(prompts, labels, image_hw)
        region = torch.where(has_mask[..., None, None], prompts.masks.float(), region)
        region_tokens, region_pad = self._region_tokens(feats, wp_view, region, prompts.view, has_view, scale, tv)
        mask_tokens, mask_pad = self._mask_tokens(prompts, wp_view, has_mask, scale, tv)
        text_tokens, text_pad = self._text_tokens(feats, all_pos, prompts, prompt_encoder, tv)
        mem_tokens, mem_pad, mf_tok, mf_pad = self._memory_tokens(prompts, scale, tv, feats.shape[2])
        sparse = torch.cat([point_tokens, region_tokens, mask_tokens, text_tokens, mem_tokens, mf_tok], dim=3)
        sparse_pad = torch.cat([point_pad, region_pad, mask_pad, text_pad, mem_pad, mf_pad], dim=3)

        dense, maps = self._dense(feats, world_points, view_points, wp_view, prompts, prompt_encoder, labels,
                                  on_view, has_view, has_mask, has_box, box_centre, p3, scale, embed=self.dense_embed)
        return {"view_pos": view_pos, "sparse": sparse, "sparse_pad": sparse_pad, "dense": dense, "scale": scale,
                "maps": maps}

    def _point_tokens(self, feats: torch.Tensor, world_points: torch.Tensor, prompts: Prompts,
                      prompt_encoder: PromptEncoder, labels: torch.Tensor, on_view: torch.Tensor,
                      scale: torch.Tensor, image_hw: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor,
                                                                               torch.Tensor]:
        """Prompt points (clicks and box corners) lifted to 3D: tokens ``[B, V, N, K, dim]`` (V: the views of
        ``on_view [B, V, N]``), padding ``[B, V, N, K]`` and the 3D points under them ``[B, N, K, 3]``."""
        s = on_view.shape[1]
        pt_pad = labels == PAD
        p3 = gather_points(world_points, prompts.view, prompts.points)  # [B, N, K, 3]
        app = sample_features(feats, prompts.view, prompts.points, image_hw)  # [B, N, K, dim]
        lifted = prompt_encoder.point_embed(labels.clamp(min=0)) + self.code3d(p3, scale) + self.appearance(app)
        lifted = torch.where(pt_pad[..., None], prompt_encoder.not_a_point.expand_as(lifted), lifted)
        pe_pts = prompt_encoder.encode_coords(prompts.points, image_hw) * (~pt_pad[..., None])
        point_tokens = lifted[:, None] + on_view[..., None, None] * pe_pts[:, None]  # [B, S, N, K, dim]
        return point_tokens, pt_pad[:, None].expand(-1, s, -1, -1), p3

    @staticmethod
    def _box_region(prompts: Prompts, labels: torch.Tensor,
                    image_hw: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The filled box of each box prompt ``[B, N, H, W]`` (zeros without a box), which slots have a box
        ``[B, N]`` and the box centres ``[B, N, 2]`` (x, y pixels; zeros when no slot has a box)."""
        b, n = labels.shape[:2]
        h, w = image_hw
        dev = labels.device
        box_pts = (labels == BOX_TL) | (labels == BOX_BR)
        has_box = box_pts.any(-1)
        region = torch.zeros(b, n, h, w, device=dev)
        if not bool(has_box.any()):
            return region, has_box, torch.zeros(b, n, 2, device=dev)
        xs = torch.where(box_pts, prompts.points[..., 0], torch.full_like(prompts.points[..., 0], float("nan")))
        ys = torch.where(box_pts, prompts.points[..., 1], torch.full_like(prompts.points[..., 1], float("nan")))
        x0, x1 = torch.nan_to_num(xs, nan=1e9).amin(-1), torch.nan_to_num(xs, nan=-1e9).amax(-1)
        y0, y1 = torch.nan_to_num(ys, nan=1e9).amin(-1), torch.nan_to_num(ys, nan=-1e9).amax(-1)
        gx = torch.arange(w, device=dev, dtype=torch.float32)[None, None, None, :]
        gy = torch.arange(h, device=dev, dtype=torch.float32)[None, None, :, None]
        inside = ((gx >= x0[..., None, None]) & (gx <= x1[..., None, None])
                  & (gy >= y0[..., None, None]) & (gy <= y1[..., None, None]))
        region = torch.where(has_box[..., None, None], inside.float(), region)
        return region, has_box, torch.stack([(x0 + x1) / 2, (y0 + y1) / 2], -1)

    def _region_tokens(self, feats: torch.Tensor, wp_view: torch.Tensor, region: torch.Tensor, view: torch.Tensor,
                       has_view: torch.Tensor, scale: torch.Tensor, s: int) -> tuple[torch.Tensor, torch.Tensor]:
        """One token per box or mask region on the prompted view (its mean 3D point and mean appearance), for
        each of ``s`` views: ``[B, s, N, 1, dim]`` and padding ``[B, s, N, 1]``."""
        b, _, _, gh, gw = feats.shape
        n = region.shape[1]
        area = region.flatten(2).sum(-1)  # [B, N]
        has_region = (area > 0) & has_view
        r3 = (wp_view * region[..., None]).flatten(2, 3).sum(2) / area.clamp(min=1)[..., None]
        grid_region = F.adaptive_avg_pool2d(region.flatten(0, 1)[:, None], (gh, gw)).view(b, n, gh, gw)
        f_view = _take_view(feats, view)  # [B, N, dim, gh, gw]
        r_app = ((f_view * grid_region[:, :, None]).flatten(3).sum(-1)
                 / grid_region.flatten(2).sum(-1).clamp(min=1e-6)[..., None])
        region_tok = self.region_embed + self.code3d(r3, scale) + self.appearance(r_app)  # [B, N, dim]
        return (region_tok[:, None, :, None].expand(-1, s, -1, -1, -1),
                (~has_region)[:, None, :, None].expand(-1, s, -1, -1))

    def _mask_tokens(self, prompts: Prompts, wp_view: torch.Tensor, has_mask: torch.Tensor, scale: torch.Tensor,
                     s: int) -> tuple[torch.Tensor, torch.Tensor]:
        """A mask prompt as ``mask_points`` 3D points: tokens ``[B, S, N, mask_points, dim]`` and padding."""
        idx, mvalid = spaced_mask_indices(prompts.masks, self.mask_points)  # [B, N, Mk]
        mvalid = mvalid & has_mask[..., None]
        m3 = torch.gather(wp_view.flatten(2, 3), 2, idx[..., None].expand(-1, -1, -1, 3))
        mask_tok = self.mask_point_embed + self.code3d(m3, scale)
        return mask_tok[:, None].expand(-1, s, -1, -1, -1), (~mvalid)[:, None].expand(-1, s, -1, -1)

    def _text_tokens(self, feats: torch.Tensor, view_pos: torch.Tensor, prompts: Prompts,
                     prompt_encoder: PromptEncoder, s: int) -> tuple[torch.Tensor, torch.Tensor]:
        """A text prompt: its projected token and the same after cross-attention over every view's geometric
        tokens (``feats``, ``view_pos [B, S, dim, gh, gw]``), for each of ``s`` views: ``[B, s, N, 2, dim]``,
        and padding ``[B, s, N, 2]``."""
        b, views, d, gh, gw = feats.shape
        has_text = prompts.has_text & prompts.valid
        t = prompt_encoder.embed_text(prompts.text) + self.text_embed  # [B, N, dim]
        keys = (feats + view_pos).flatten(3).permute(0, 1, 3, 2).reshape(b, views * gh * gw, d)
        values = feats.flatten(3).permute(0, 1, 3, 2).reshape(b, views * gh * gw, d)
        t2 = self.text_norm(t + self.text_attn(t, keys, values))
        return (torch.stack([t, t2], dim=2)[:, None].expand(-1, s, -1, -1, -1),
                (~has_text)[:, None, :, None].expand(-1, s, -1, 2))

    def _memory_tokens(self, prompts: Prompts, scale: torch.Tensor, s: int,
                       d: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Carried 3D memory: point tokens ``[B, S, N, M, dim]`` with padding, and one appearance token
        ``[B, S, N, 1, dim]`` with padding."""
        b, n = prompts.valid.shape
        mem_valid = prompts.memory_valid & prompts.valid[..., None]
        mem_tok = self.memory_embed + self.code3d(prompts.memory_points, scale)
        has_mem_feat = mem_valid.any(-1) & (prompts.memory_feat.abs().sum(-1) > 0)
        mf = prompts.memory_feat if prompts.memory_feat.shape[-1] == d else \
            torch.zeros(b, n, d, device=prompts.memory_feat.device)
        mf_tok = (self.memory_feat_embed + self.appearance(mf))[:, None, :, None].expand(-1, s, -1, -1, -1)
        return (mem_tok[:, None].expand(-1, s, -1, -1, -1), (~mem_valid)[:, None].expand(-1, s, -1, -1), mf_tok,
                (~has_mem_feat)[:, None, :, None].expand(-1, s, -1, -1))

    def _dense(self, feats: torch.Tensor, world_points: torch.Tensor, view_points: torch.Tensor,
               wp_view: torch.Tensor, prompts: Prompts, prompt_encoder: PromptEncoder, labels: torch.Tensor,
               on_view: torch.Tensor, has_view: torch.Tensor, has_mask: torch.Tensor, has_box: torch.Tensor,
               box_centre: torch.Tensor, p3: torch.Tensor, scale: torch.Tensor,
               embed: bool = True) -> tuple[torch.Tensor | None, torch.Tensor]:
        """The dense prompt of every decoded (view, object) ``[B, V, N, dim, gh, gw]`` (None unless ``embed``) and
        the maps ``[B, V, N, C, 4gh, 4gw]``: the prompt map (mask, clicks, box) on the prompted view, the 3D
        proximity maps on every view (``view_points [B, V, H, W, 3]``: the decoded views' world points;
        ``world_points``: every view's)."""
        b, _, d, gh, gw = feats.shape
        s = view_points.shape[1]
        n = prompts.num_objects
        dense = prompt_encoder.no_mask.view(1, 1, 1, d, 1, 1).expand(b, s, n, d, gh, gw)
        mh, mw = 4 * gh, 4 * gw
        maps = [feats.new_zeros(b, s, n, prompt_encoder.PROMPT_MAP_CHANNELS, mh, mw)]
        if self.proximity:
            c3 = gather_points(world_points, prompts.view, box_centre[:, :, None])  # [B, N, 1, 3]
            pidx, pvalid = spaced_mask_indices(prompts.masks, self.proximity_points)  # [B, N, Mp]
            pvalid = pvalid & has_mask[..., None]
            mp3 = torch.gather(wp_view.flatten(2, 3), 2, pidx[..., None].expand(-1, -1, -1, 3))
            mem_valid = prompts.memory_valid & prompts.valid[..., None]
            anchors = torch.cat([p3, c3, mp3, prompts.memory_points], dim=2)
            clicks = has_view[..., None]
            positive = torch.cat([(labels == POSITIVE) & clicks, (has_box & has_view)[..., None], pvalid, mem_valid],
                                 dim=2)
            negative = torch.cat([(labels == NEGATIVE) & clicks, torch.zeros_like(positive[..., p3.shape[2]:])], dim=2)
            prox = self.proximity_maps(view_points, anchors, positive, negative, scale, (mh, mw))
            if embed:
                dense = dense + self.proximity_embed(prox.flatten(0, 2)).view(b, s, n, d, gh, gw)
            maps.append(prox)
        has_visual = prompt_encoder.has_dense(labels, has_mask)
        if bool(has_visual.any()):
            flat = (prompts.points.flatten(0, 1), labels.flatten(0, 1), prompts.masks.flatten(0, 1), has_mask.flatten())
            if embed:
                emb, pmap = prompt_encoder.embed_dense(*flat, (gh, gw))
            else:
                pmap = prompt_encoder.dense_maps(*flat, (gh, gw))
            use = (on_view & has_visual[:, None])[..., None, None, None]
            if embed:
                dense = torch.where(use, emb.view(b, n, d, gh, gw)[:, None], dense)
            maps[0] = torch.where(use, pmap.view(b, n, *pmap.shape[1:])[:, None], maps[0])
        return (dense if embed else None), torch.cat(maps, dim=3)
