"""Dense, anchor-free detection head on the geometry backbone's frame features.

The backbone gives patch-grid tokens at stride ``p`` (the patch size). :class:`FeaturePyramid` concatenates the
patch maps of a few aggregator layers, projects them to ``channels`` and builds three levels at strides
``p / 2``, ``p`` and ``2 p`` (a transposed conv up, identity, a strided conv down), each refined by a 3x3 conv.

A ViT's finest map is its patch grid: at 64 px and patch 8 an object of 12 px covers about two tokens, and the
``p / 2`` level is only an upsampling of them. :class:`PixelStem` (optional; ViT-Adapter's spatial prior module
without its cross-attention) is a small strided conv stem on the pixels whose maps at the pyramid's strides are
added to the levels, so the head sees shape detail below the patch size.

:class:`DenseDetectionHead` runs one shared conv tower over every level and predicts, at every location
(FCOS / YOLO style, one prediction per location, no anchors):

- ``objectness``: one class-agnostic logit;
- ``boxes``: distances (left, top, right, bottom) in pixels, ``softplus(x) * stride * scale_level``, turned into
  XYXY pixel boxes around the location centre;
- ``features``: the embedding branch's ``[C]`` feature (the input of the projection; gradient attribution reads it);
- ``embeddings``: the L2-normalised ``[D]`` region embedding in the text space (``D`` = :data:`vision.text.TEXT_DIM`).

All outputs are flattened over levels in the order (level, y, x): ``N = sum_l H_l W_l`` locations.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from vision.geometry.aggregator import IMAGENET_MEAN, IMAGENET_STD

__all__ = ["FeaturePyramid", "PixelStem", "DenseDetectionHead", "level_points"]


def _conv_block(in_ch: int, out_ch: int, groups: int = 8) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(in_ch, out_ch, 3, padding=1), nn.GroupNorm(min(groups, out_ch), out_ch),
                         nn.GELU())


class FeaturePyramid(nn.Module):
    """Light pyramid from ViT patch maps.

    Args:
        in_channels: channels of one backbone patch map (``2C`` of the aggregator).
        num_inputs: how many backbone layers are concatenated.
        channels: pyramid width.

    Forward: ``maps`` list of ``num_inputs`` tensors ``[B, in_channels, h, w]`` (stride p) -> list of three
    ``[B, channels, *]`` maps at strides ``p/2, p, 2p``.
    """

    def __init__(self, in_channels: int, num_inputs: int, channels: int) -> None:
        super().__init__()
        self.reduce = nn.Sequential(nn.Conv2d(in_channels * num_inputs, channels, 1),
                                    nn.GroupNorm(min(8, channels), channels), nn.GELU())
        self.up = nn.ConvTranspose2d(channels, channels, 2, stride=2)
        self.down = nn.Conv2d(channels, channels, 3, stride=2, padding=1)
        self.refine = nn.ModuleList([_conv_block(channels, channels) for _ in range(3)])

    def forward(self, maps: list[torch.Tensor], pixel_levels: list[torch.Tensor] | None = None
                ) -> list[torch.Tensor]:
        """``pixel_levels``: optional :class:`PixelStem` maps (same shapes as the levels), added before refining."""
        x = self.reduce(torch.cat(maps, dim=1))
        levels = [self.up(x), x, self.down(x)]
        if pixel_levels is not None:
            levels = [level + extra for level, extra in zip(levels, pixel_levels)]
        return [block(level) for block, level in zip(self.refine, levels)]


class PixelStem(nn.Module):
    """Strided conv stem on the image, giving maps at the pyramid's three strides ``p/2, p, 2p``.

    Args:
        channels: output width (the pyramid's). patch_size: the backbone's ``p`` (a power of two, >= 4).

    Forward: ``images [B, 3, H, W]`` in [0, 1] -> list of three ``[B, channels, H / s, W / s]`` for
    ``s = p/2, p, 2p``. The projections that leave the stem start at zero, so a detector with the stem starts as
    the one without it.
    """

    def __init__(self, channels: int, patch_size: int) -> None:
        super().__init__()
        if patch_size < 4 or patch_size & (patch_size - 1):
            raise ValueError(f"PixelStem needs a power-of-two patch size >= 4, got {patch_size}")
        width = max(8, channels // 2)
        layers: list[nn.Module] = []
        in_ch, stride = 3, 1
        while stride < patch_size // 2:  # down to the first level's stride p / 2
            layers += [nn.Conv2d(in_ch, width, 3, stride=2, padding=1), nn.GroupNorm(min(8, width), width), nn.GELU()]
            in_ch, stride = width, stride * 2
        self.stem = nn.Sequential(*layers, _conv_block(width, width))
        self.down = nn.ModuleList([nn.Sequential(nn.Conv2d(width, width, 3, stride=2, padding=1),
                                                 nn.GroupNorm(min(8, width), width), nn.GELU()) for _ in range(2)])
        self.out = nn.ModuleList([nn.Conv2d(width, channels, 1) for _ in range(3)])
        for proj in self.out:
            nn.init.zeros_(proj.weight)
            nn.init.zeros_(proj.bias)
        self.register_buffer("mean", torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1), persistent=False)
        self.register_buffer("std", torch.tensor(IMAGENET_STD).view(1, 3, 1, 1), persistent=False)

    def forward(self, images: torch.Tensor) -> list[torch.Tensor]:
        x = self.stem((images - self.mean) / self.std)
        maps = [x]
        for down in self.down:
            maps.append(down(maps[-1]))
        return [proj(m) for proj, m in zip(self.out, maps)]


def level_points(height: int, width: int, stride: float, device: torch.device) -> torch.Tensor:
    """Pixel centres ``(x, y)`` of a ``height x width`` grid at ``stride``: ``[height * width, 2]`` in (y, x)
    row-major order; centre of cell (i, j) = ((j + 0.5) * stride, (i + 0.5) * stride)."""
    ys = (torch.arange(height, device=device, dtype=torch.float32) + 0.5) * stride
    xs = (torch.arange(width, device=device, dtype=torch.float32) + 0.5) * stride
    gy, gx = torch.meshgrid(ys, xs, indexing="ij")
    return torch.stack([gx.reshape(-1), gy.reshape(-1)], dim=-1)


class DenseDetectionHead(nn.Module):
    """Shared tower + objectness / box / embedding branches over the pyramid levels.

    Args:
        channels: pyramid width (input channels of every level).
        embed_dim: the text space's dimension ``D``.
        tower_depth: conv blocks in each of the box and embedding towers.
        num_levels: number of pyramid levels (one learnable box scale each).
    """

    def __init__(self, channels: int, embed_dim: int, tower_depth: int, num_levels: int) -> None:
        super().__init__()
        self.box_tower = nn.Sequential(*[_conv_block(channels, channels) for _ in range(tower_depth)])
        self.embed_tower = nn.Sequential(*[_conv_block(channels, channels) for _ in range(tower_depth)])
        self.objectness = nn.Conv2d(channels, 1, 3, padding=1)
        self.box = nn.Conv2d(channels, 4, 3, padding=1)
        self.embed_proj = nn.Linear(channels, embed_dim)
        self.scales = nn.Parameter(torch.ones(num_levels))
        self.feature_dim = channels
        nn.init.constant_(self.objectness.bias, -4.0)  # prior p ~ 0.02 (focal-loss initialisation)
        nn.init.normal_(self.box.weight, std=0.01)
        nn.init.constant_(self.box.bias, 0.0)

    def project(self, features: torch.Tensor) -> torch.Tensor:
        """Region features ``[..., C]`` -> L2-normalised embeddings ``[..., D]``."""
        return F.normalize(self.embed_proj(features), dim=-1)

    def forward(self, levels: list[torch.Tensor], strides: list[float]) -> dict[str, torch.Tensor]:
        """``levels``: list of ``[B, C, H_l, W_l]``; ``strides``: pixel stride of each level.

        Returns (flattened over levels, ``N`` locations): ``points [N, 2]`` (x, y) px, ``strides [N]``,
        ``objectness [B, N]`` logits, ``boxes [B, N, 4]`` XYXY px, ``features [B, N, C]``,
        ``embeddings [B, N, D]`` (unit norm).
        """
        points, stride_list, objectness, boxes, features = [], [], [], [], []
        for index, (level, stride) in enumerate(zip(levels, strides)):
            b, _, h, w = level.shape
            pts = level_points(h, w, stride, level.device)
            box_feat = self.box_tower(level)
            emb_feat = self.embed_tower(level)
            obj = self.objectness(box_feat).flatten(1)  # [B, HW]
            ltrb = F.softplus(self.box(box_feat)).flatten(2).transpose(1, 2) * stride * self.scales[index]
            xyxy = torch.cat([pts[None] - ltrb[..., :2], pts[None] + ltrb[..., 2:]], dim=-1)
            points.append(pts)
            stride_list.append(torch.full((h * w,), float(stride), device=level.device))
            objectness.append(obj)
            boxes.append(xyxy)
            features.append(emb_feat.flatten(2).transpose(1, 2))
        feats = torch.cat(features, dim=1)
        return {"points": torch.cat(points, dim=0), "strides": torch.cat(stride_list, dim=0),
                "objectness": torch.cat(objectness, dim=1), "boxes": torch.cat(boxes, dim=1),
                "features": feats, "embeddings": self.project(feats)}
