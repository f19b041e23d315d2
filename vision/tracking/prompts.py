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

from vision.tracking.layers import MLP, FourierFeatures, LayerNorm2d

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
              num_memory: int = 1, text_dim: int = 384, memory_dim: int = 1,
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


def box_to_points(box: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``[..., 4]`` XYXY box -> corner points ``[..., 2, 2]`` and labels ``[..., 2]`` (BOX_TL, BOX_BR)."""
    pts = torch.stack([box[..., :2], box[..., 2:]], dim=-2)
    labels = torch.tensor([BOX_TL, BOX_BR], device=box.device).expand(*box.shape[:-1], 2)
    return pts, labels


class PromptEncoder(nn.Module):
    """SAM-style encoder of visual prompts in 2D and of text prompts.

    - sparse: random Fourier features of normalised (x, y) + a learned embedding per label (negative, positive,
      box corner 1, box corner 2); padding points get only the learned ``not_a_point`` embedding.
    - dense: a mask is resized to 4x the patch grid and reduced by a small conv stack to ``[dim, gh, gw]``;
      without a mask a learned ``no_mask`` embedding is broadcast.
    - text: a text-encoder embedding ``[..., text_dim]`` projected to ``[..., dim]`` by an MLP.

    Args:
        dim: token width. text_dim: the TextEncoder's width (MiniLM: 384). mask_channels: conv stack width.
    """

    def __init__(self, dim: int, text_dim: int = 384, mask_channels: int = 16) -> None:
        super().__init__()
        self.dim = dim
        self.pe = FourierFeatures(2, dim // 2)
        self.point_embed = nn.Embedding(4, dim)
        self.not_a_point = nn.Parameter(torch.zeros(dim))
        self.mask_downscale = nn.Sequential(
            nn.Conv2d(1, mask_channels // 4, 2, stride=2), LayerNorm2d(mask_channels // 4), nn.GELU(),
            nn.Conv2d(mask_channels // 4, mask_channels, 2, stride=2), LayerNorm2d(mask_channels), nn.GELU(),
            nn.Conv2d(mask_channels, dim, 1))
        self.no_mask = nn.Parameter(torch.zeros(dim))
        self.text_proj = MLP(text_dim, dim, dim, 2)

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

    def embed_masks(self, masks: torch.Tensor, grid_hw: tuple[int, int]) -> torch.Tensor:
        """``masks [N, H, W]`` in [0, 1] -> dense embeddings ``[N, dim, gh, gw]``."""
        gh, gw = grid_hw
        x = F.interpolate(masks[:, None].float(), size=(4 * gh, 4 * gw), mode="bilinear", align_corners=False)
        return self.mask_downscale(x)

    def embed_text(self, text: torch.Tensor) -> torch.Tensor:
        """``[..., text_dim]`` -> ``[..., dim]``."""
        return self.text_proj(text)
