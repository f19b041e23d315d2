"""SAM-style prompt encoder and the batched prompt container.

Point labels (SAM convention): ``-1`` padding, ``0`` negative point, ``1`` positive point, ``2`` box top-left
corner, ``3`` box bottom-right corner. A box ``[x0, y0, x1, y1]`` (XYXY pixels) is two points labelled 2 and 3.
Points are ``(x, y)`` pixels; the encoder normalises pixel centres to [-1, 1] with ``(x + 0.5) / W``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import torch
import torch.nn.functional as F
from torch import nn

from vision.text import TEXT_DIM
from vision.tracking.layers import FourierFeatures, LayerNorm2d, Mlp, gaussian_falloff

__all__ = ["PAD", "NEGATIVE", "POSITIVE", "BOX_TL", "BOX_BR", "Prompts", "PromptEncoder", "box_to_points"]

PAD, NEGATIVE, POSITIVE, BOX_TL, BOX_BR = -1, 0, 1, 2, 3


@dataclass
class Prompts:
    """Prompts for ``N`` object slots of each of ``B`` clips (one object per slot; an object may carry several
    prompt kinds at once).

    Fields (shapes):
        valid          bool  [B, N]          the slot holds an object
        view           long  [B, N]          view of the visual prompt (points / box / mask); -1 = none
        points         float [B, N, K, 2]    (x, y) pixels on ``view``; labels long [B, N, K] (see module doc)
        masks          float [B, N, H, W]    mask prompt on ``view`` in {0, 1}; has_mask bool [B, N]
        text           float [B, N, Dt]      text embedding (L2-normalised, TextEncoder); has_text bool [B, N]
        memory_points  float [B, N, M, 3]    3D prompt points in the clip's world frame (carried memory);
                                             memory_valid bool [B, N, M]
        memory_feat    float [B, N, Dm]      mean appearance feature carried with the 3D points (zeros = none)
    """

    valid: torch.Tensor
    view: torch.Tensor
    points: torch.Tensor
    labels: torch.Tensor
    masks: torch.Tensor
    has_mask: torch.Tensor
    text: torch.Tensor
    has_text: torch.Tensor
    memory_points: torch.Tensor
    memory_valid: torch.Tensor
    memory_feat: torch.Tensor

    @staticmethod
    def empty(batch: int, num_objects: int, image_hw: tuple[int, int], num_points: int = 1,
              num_memory: int = 1, text_dim: int = TEXT_DIM, memory_dim: int = 1,
              device: torch.device | str | None = None) -> "Prompts":
        """All-padding prompts (no slot valid) of the given sizes, to be filled in."""
        b, n = batch, num_objects
        h, w = image_hw
        kw = dict(device=device)
        return Prompts(
            valid=torch.zeros(b, n, dtype=torch.bool, **kw), view=torch.full((b, n), -1, dtype=torch.long, **kw),
            points=torch.zeros(b, n, num_points, 2, **kw),
            labels=torch.full((b, n, num_points), PAD, dtype=torch.long, **kw),
            masks=torch.zeros(b, n, h, w, **kw), has_mask=torch.zeros(b, n, dtype=torch.bool, **kw),
            text=torch.zeros(b, n, text_dim, **kw), has_text=torch.zeros(b, n, dtype=torch.bool, **kw),
            memory_points=torch.zeros(b, n, num_memory, 3, **kw),
            memory_valid=torch.zeros(b, n, num_memory, dtype=torch.bool, **kw),
            memory_feat=torch.zeros(b, n, memory_dim, **kw))

    def to(self, device: torch.device | str) -> "Prompts":
        return replace(self, **{f.name: getattr(self, f.name).to(device) for f in fields(self)})

    @property
    def num_objects(self) -> int:
        return int(self.valid.shape[1])

    def select(self, objects: slice) -> "Prompts":
        """The object slots ``objects`` (a slice of the N slots) of every clip: each field's dimension 1 sliced."""
        return replace(self, **{f.name: getattr(self, f.name)[:, objects] for f in fields(self)})


def box_to_points(box: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``[..., 4]`` XYXY box -> corner points ``[..., 2, 2]`` and labels ``[..., 2]`` (BOX_TL, BOX_BR)."""
    pts = torch.stack([box[..., :2], box[..., 2:]], dim=-2)
    labels = torch.tensor([BOX_TL, BOX_BR], device=box.device).expand(*box.shape[:-1], 2)
    return pts, labels


class PromptEncoder(nn.Module):
    """SAM-style encoder of visual prompts in 2D and of text prompts.

    - sparse: random Fourier features of normalised (x, y) + a learned embedding per label (negative, positive,
      box corner 1, box corner 2); padding points get only the learned ``not_a_point`` embedding.
    - dense: a prompt map of 4 channels on the prompted view (the mask; Gaussian blobs of the positive and of the
      negative clicks; the filled box) is resized to 4x the patch grid and reduced by a small conv stack to
      ``[dim, gh, gw]`` (:meth:`embed_dense`); views without a visual prompt get a learned ``no_mask`` embedding.
      The click and box channels give the decoder the prompt's location directly in image space, which it
      otherwise has to learn to read from Fourier codes (interactive segmentation's click maps).
    - text: a text-encoder embedding ``[..., text_dim]`` projected to ``[..., dim]`` by an MLP.

    Args:
        dim: token width. text_dim: the TextEncoder's width (``vision.text.TEXT_DIM`` for MiniLM).
        mask_channels: conv stack width.
        click_sigma: standard deviation of a click's Gaussian blob, as a fraction of max(H, W).
        click_maps: render clicks and boxes into the dense prompt map (False: only a mask prompt is dense, as SAM;
            the ablation in ``benchmarks/bench_tracking_prompts.py``).
        dense_embed: build the conv stack that embeds the prompt maps (False: :meth:`dense_maps` only, for a
            decoder that reads the maps itself, :class:`~vision.tracking.multiplex.MultiplexDecoder`).
    """

    PROMPT_MAP_CHANNELS = 4  # mask, positive clicks, negative clicks, box

    def __init__(self, dim: int, text_dim: int = TEXT_DIM, mask_channels: int = 16, click_sigma: float = 0.04,
                 click_maps: bool = True, dense_embed: bool = True) -> None:
        super().__init__()
        self.dim = dim
        self.click_sigma = click_sigma
        self.click_maps = click_maps
        self.pe = FourierFeatures(2, dim // 2)
        self.point_embed = nn.Embedding(4, dim)
        self.not_a_point = nn.Parameter(torch.zeros(dim))
        self.mask_downscale = nn.Sequential(
            nn.Conv2d(self.PROMPT_MAP_CHANNELS, mask_channels // 4, 2, stride=2), LayerNorm2d(mask_channels // 4), nn.GELU(),
            nn.Conv2d(mask_channels // 4, mask_channels, 2, stride=2), LayerNorm2d(mask_channels), nn.GELU(),
            nn.Conv2d(mask_channels, dim, 1)) if dense_embed else None
        self.no_mask = nn.Parameter(torch.zeros(dim))
        self.text_proj = Mlp(text_dim, dim, dim, 2)

    def encode_coords(self, xy: torch.Tensor, image_hw: tuple[int, int]) -> torch.Tensor:
        """Fourier features of pixel coordinates ``[..., 2]`` (x, y) -> ``[..., dim]``."""
        h, w = image_hw
        norm = torch.stack([(xy[..., 0] + 0.5) / w, (xy[..., 1] + 0.5) / h], dim=-1)
        return self.pe(2 * norm - 1)

    def embed_points(self, points: torch.Tensor, labels: torch.Tensor, image_hw: tuple[int, int]) -> torch.Tensor:
        """``points [..., K, 2]`` pixels, ``labels [..., K]`` -> sparse tokens ``[..., K, dim]``."""
        pe = self.encode_coords(points, image_hw)
        pad = labels == PAD
        emb = self.point_embed(labels.clamp(min=0))
        out = pe + emb
        return torch.where(pad[..., None], self.not_a_point.expand_as(out), out)

    def dense_pe(self, grid_hw: tuple[int, int], image_hw: tuple[int, int]) -> torch.Tensor:
        """2D positional code of the patch-grid centres ``[dim, gh, gw]``."""
        gh, gw = grid_hw
        h, w = image_hw
        ys = (torch.arange(gh, device=self.no_mask.device, dtype=torch.float32) + 0.5) * (h / gh) - 0.5
        xs = (torch.arange(gw, device=self.no_mask.device, dtype=torch.float32) + 0.5) * (w / gw) - 0.5
        yy, xx = torch.meshgrid(ys, xs, indexing="ij")
        return self.encode_coords(torch.stack([xx, yy], dim=-1), image_hw).permute(2, 0, 1)

    def prompt_map(self, points: torch.Tensor, labels: torch.Tensor, masks: torch.Tensor,
                   has_mask: torch.Tensor) -> torch.Tensor:
        """Render visual prompts as image-space maps ``[N, 4, H, W]`` in [0, 1].

        Args:
            points ``[N, K, 2]`` pixels and labels ``[N, K]`` (see the module doc); masks ``[N, H, W]`` with
            has_mask ``[N]`` bool. Channels: the mask (where ``has_mask``); the max over positive clicks of
            ``exp(-d^2 / 2 sigma^2)``; the same over negative clicks; 1 inside the box spanned by the corners.
            Without ``click_maps`` the last three channels are 0.
        """
        n, h, w = masks.shape
        dev = masks.device
        mask = torch.where(has_mask[:, None, None], masks.float(), torch.zeros_like(masks, dtype=torch.float32))
        if not self.click_maps:
            return torch.cat([mask[:, None], mask.new_zeros(n, self.PROMPT_MAP_CHANNELS - 1, h, w)], dim=1)
        sigma = self.click_sigma * max(h, w)
        ys = torch.arange(h, device=dev, dtype=torch.float32)[:, None]
        xs = torch.arange(w, device=dev, dtype=torch.float32)[None, :]
        d2 = ((xs[None, None] - points[..., 0, None, None]) ** 2
              + (ys[None, None] - points[..., 1, None, None]) ** 2)  # [N, K, H, W]
        blobs = gaussian_falloff(d2, sigma)
        zero = torch.zeros_like(blobs)
        positive = torch.where((labels == POSITIVE)[..., None, None], blobs, zero).amax(1)
        negative = torch.where((labels == NEGATIVE)[..., None, None], blobs, zero).amax(1)
        corner = (labels == BOX_TL) | (labels == BOX_BR)
        big = torch.full_like(points[..., 0], 1e9)
        x0 = torch.where(corner, points[..., 0], big).amin(1)
        x1 = torch.where(corner, points[..., 0], -big).amax(1)
        y0 = torch.where(corner, points[..., 1], big).amin(1)
        y1 = torch.where(corner, points[..., 1], -big).amax(1)
        box = ((xs[None] >= x0[:, None, None]) & (xs[None] <= x1[:, None, None])
               & (ys[None] >= y0[:, None, None]) & (ys[None] <= y1[:, None, None])).float()
        return torch.stack([mask, positive, negative, box], dim=1)

    def has_dense(self, labels: torch.Tensor, has_mask: torch.Tensor) -> torch.Tensor:
        """Which prompts get a dense embedding: ``labels [..., K]``, ``has_mask [...]`` -> ``[...]`` bool (a mask,
        or with ``click_maps`` any click or box corner)."""
        if not self.click_maps:
            return has_mask
        return has_mask | (labels != PAD).any(-1)

    def embed_prompt_maps(self, maps: torch.Tensor, grid_hw: tuple[int, int]) -> torch.Tensor:
        """Prompt maps ``[N, 4, H, W]`` (:meth:`prompt_map`) -> dense embeddings ``[N, dim, gh, gw]``."""
        gh, gw = grid_hw
        x = F.interpolate(maps.float(), size=(4 * gh, 4 * gw), mode="bilinear", align_corners=False)
        return self.mask_downscale(x)

    def embed_dense(self, points: torch.Tensor, labels: torch.Tensor, masks: torch.Tensor, has_mask: torch.Tensor,
                    grid_hw: tuple[int, int]) -> tuple[torch.Tensor, torch.Tensor]:
        """Visual prompts (see :meth:`prompt_map`) -> (dense embeddings ``[N, dim, gh, gw]``, the prompt maps
        resized to ``[N, 4, 4gh, 4gw]``, which the mask decoder also reads at that resolution)."""
        maps = self.dense_maps(points, labels, masks, has_mask, grid_hw)
        return self.mask_downscale(maps), maps

    def dense_maps(self, points: torch.Tensor, labels: torch.Tensor, masks: torch.Tensor, has_mask: torch.Tensor,
                   grid_hw: tuple[int, int]) -> torch.Tensor:
        """The prompt maps of :meth:`embed_dense` alone, ``[N, 4, 4gh, 4gw]``."""
        gh, gw = grid_hw
        return F.interpolate(self.prompt_map(points, labels, masks, has_mask), size=(4 * gh, 4 * gw),
                             mode="bilinear", align_corners=False)

    def embed_masks(self, masks: torch.Tensor, grid_hw: tuple[int, int]) -> torch.Tensor:
        """A mask prompt alone: ``masks [N, H, W]`` in [0, 1] -> dense embeddings ``[N, dim, gh, gw]``."""
        n, h, w = masks.shape
        maps = torch.zeros(n, self.PROMPT_MAP_CHANNELS, h, w, device=masks.device)
        maps[:, 0] = masks.float()
        return self.embed_prompt_maps(maps, grid_hw)

    def embed_text(self, text: torch.Tensor) -> torch.Tensor:
        """``[..., text_dim]`` -> ``[..., dim]``."""
        return self.text_proj(text)
