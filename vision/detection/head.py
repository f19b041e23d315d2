"""Dense, anchor-free detection head on the geometry backbone's frame features.

The backbone gives patch-grid tokens at stride ``p`` (the patch size). :class:`FeaturePyramid` concatenates the
patch maps of a few aggregator layers, projects them to ``channels`` and builds three levels at strides
``p / 2``, ``p`` and ``2 p`` (a transposed conv up, identity, a strided conv down), each refined by a 3x3 conv.

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

__all__ = ["FeaturePyramid", "DenseDetectionHead", "level_points"]


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

    def forward(self, maps: list[torch.Tensor]) -> list[torch.Tensor]:
        x = self.reduce(torch.cat(maps, dim=1))
        levels = [self.up(x), x, self.down(x)]
        return [block(level) for block, level in zip(self.refine, levels)]


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
