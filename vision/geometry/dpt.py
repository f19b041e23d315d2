"""DPT dense head (depth / point map + confidence) over four intermediate aggregator layers.

Runs per frame, in chunks of ``frames_chunk_size`` frames so head memory stays bounded for long sequences.
Module names (``norm``, ``projects``, ``resize_layers``, ``scratch.*``) follow VGGT's DPT head so checkpoints map
by identity. Output activations: ``"exp"`` (depth), ``"inv_log"`` = sign(y) * expm1(|y|) (points), ``"linear"``;
confidence ``"expp1"`` = 1 + exp(y).
"""

from __future__ import annotations

import math
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["DPTHead", "apply_activation", "invert_activation", "uv_grid", "sincos_embed_2d"]


def apply_activation(x: torch.Tensor, kind: str) -> torch.Tensor:
    """Elementwise output activation by name: ``exp``, ``inv_log``, ``expp1``, ``relu``, ``linear``."""
    if kind == "exp":
        return torch.exp(x)
    if kind == "inv_log":
        return torch.sign(x) * torch.expm1(x.abs())
    if kind == "expp1":
        return 1.0 + torch.exp(x)
    if kind == "relu":
        return F.relu(x)
    if kind == "linear":
        return x
    raise ValueError(f"unknown activation {kind!r}")


def invert_activation(y: torch.Tensor, kind: str) -> torch.Tensor:
    """The value before :func:`apply_activation` of kind ``exp``, ``inv_log`` or ``linear`` gave ``y``."""
    if kind == "exp":
        return torch.log(y)
    if kind == "inv_log":
        return torch.sign(y) * torch.log1p(y.abs())
    if kind == "linear":
        return y
    raise ValueError(f"activation {kind!r} has no inverse here")


def uv_grid(width: int, height: int, aspect_ratio: float, dtype: torch.dtype,
            device: torch.device) -> torch.Tensor:
    """Normalised pixel-centre coordinates ``[height, width, 2]`` (u, v), spanning the image diagonal's unit length:
    u in ±a/sqrt(1+a²)·(w-1)/w, v in ±1/sqrt(1+a²)·(h-1)/h with a = aspect_ratio (W/H)."""
    diag = math.sqrt(1.0 + aspect_ratio ** 2)
    span_u = aspect_ratio / diag * (width - 1) / width
    span_v = 1.0 / diag * (height - 1) / height
    u = torch.linspace(-span_u, span_u, width, dtype=dtype, device=device)
    v = torch.linspace(-span_v, span_v, height, dtype=dtype, device=device)
    vv, uu = torch.meshgrid(v, u, indexing="ij")
    return torch.stack([uu, vv], dim=-1)


def _sincos_1d(dim: int, values: torch.Tensor, omega_0: float) -> torch.Tensor:
    freqs = 1.0 / omega_0 ** (torch.arange(dim // 2, dtype=torch.float64, device=values.device) / (dim / 2.0))
    angles = values.reshape(-1).to(torch.float64)[:, None] * freqs[None]
    return torch.cat([angles.sin(), angles.cos()], dim=1).float()


def sincos_embed_2d(grid: torch.Tensor, dim: int, omega_0: float = 100.0) -> torch.Tensor:
    """Sin/cos embedding ``[H, W, dim]`` of a ``[H, W, 2]`` coordinate grid: first half from u, second from v."""
    h, w, _ = grid.shape
    flat = grid.reshape(-1, 2)
    emb = torch.cat([_sincos_1d(dim // 2, flat[:, 0], omega_0), _sincos_1d(dim // 2, flat[:, 1], omega_0)], dim=-1)
    return emb.view(h, w, dim)


class _ResidualConvUnit(nn.Module):
    def __init__(self, features: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(features, features, 3, padding=1)
        self.conv2 = nn.Conv2d(features, features, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # VGGT applies an in-place ReLU to the input, so its residual path carries relu(x); we match that.
        x = F.relu(x)
        return x + self.conv2(F.relu(self.conv1(x)))


class _FusionBlock(nn.Module):
    """``out_conv(upsample(rcu2(x + rcu1(skip))))`` with bilinear (align_corners) resizing."""

    def __init__(self, features: int, has_residual: bool = True) -> None:
        super().__init__()
        self.out_conv = nn.Conv2d(features, features, 1)
        if has_residual:
            self.resConfUnit1 = _ResidualConvUnit(features)
        self.has_residual = has_residual
        self.resConfUnit2 = _ResidualConvUnit(features)

    def forward(self, x: torch.Tensor, skip: torch.Tensor | None = None,
                size: Sequence[int] | None = None) -> torch.Tensor:
        if skip is not None and self.has_residual:
            x = x + self.resConfUnit1(skip)
        x = self.resConfUnit2(x)
        target = tuple(size) if size is not None else (x.shape[-2] * 2, x.shape[-1] * 2)
        x = F.interpolate(x, size=target, mode="bilinear", align_corners=True)
        return self.out_conv(x)


class DPTHead(nn.Module):
    """Dense prediction head.

    Args:
        dim_in: token width (2C of the aggregator).
        patch_size: aggregator patch size.
        output_dim: channels before activation, the last being confidence (depth 2, points 4).
        activation, conf_activation: see :func:`apply_activation`.
        features: fusion width (VGGT 256); out_channels: per-layer projection widths (VGGT [256, 512, 1024, 1024]).
        intermediate_layer_idx: which aggregator outputs feed the four DPT levels (VGGT [4, 11, 17, 23]).
        pos_embed: add a small sin/cos uv embedding to features (as VGGT).
        frames_chunk_size: frames processed together (``None`` or <= 0: all at once).

    ``forward(tokens_list, images, patch_start_idx) -> (pred [B, S, H, W, output_dim-1], conf [B, S, H, W])``.
    """

    def __init__(self, dim_in: int, patch_size: int = 14, output_dim: int = 2, activation: str = "exp",
                 conf_activation: str = "expp1", features: int = 256,
                 out_channels: Sequence[int] = (256, 512, 1024, 1024),
                 intermediate_layer_idx: Sequence[int] = (4, 11, 17, 23), pos_embed: bool = True,
                 frames_chunk_size: int | None = 8) -> None:
        super().__init__()
        if len(out_channels) != 4 or len(intermediate_layer_idx) != 4:
            raise ValueError("DPTHead needs exactly 4 out_channels and 4 intermediate_layer_idx")
        self.patch_size = patch_size
        self.activation = activation
        self.conf_activation = conf_activation
        self.pos_embed = pos_embed
        self.intermediate_layer_idx = [int(i) for i in intermediate_layer_idx]
        self.frames_chunk_size = frames_chunk_size
        self.output_dim = output_dim
        self.features = features
        oc = list(out_channels)
        self.norm = nn.LayerNorm(dim_in)
        self.projects = nn.ModuleList([nn.Conv2d(dim_in, c, 1) for c in oc])
        self.resize_layers = nn.ModuleList([
            nn.ConvTranspose2d(oc[0], oc[0], kernel_size=4, stride=4),
            nn.ConvTranspose2d(oc[1], oc[1], kernel_size=2, stride=2),
            nn.Identity(),
            nn.Conv2d(oc[3], oc[3], kernel_size=3, stride=2, padding=1),
        ])
        self.scratch = nn.Module()
        for i, c in enumerate(oc):
            setattr(self.scratch, f"layer{i + 1}_rn", nn.Conv2d(c, features, 3, padding=1, bias=False))
        self.scratch.refinenet1 = _FusionBlock(features)
        self.scratch.refinenet2 = _FusionBlock(features)
        self.scratch.refinenet3 = _FusionBlock(features)
        self.scratch.refinenet4 = _FusionBlock(features, has_residual=False)
        self.scratch.output_conv1 = nn.Conv2d(features, features // 2, 3, padding=1)
        self.scratch.output_conv2 = nn.Sequential(
            nn.Conv2d(features // 2, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, output_dim, 1))

    def _add_pos(self, x: torch.Tensor, width: int, height: int, ratio: float = 0.1) -> torch.Tensor:
        grid = uv_grid(x.shape[-1], x.shape[-2], width / height, x.dtype, x.device)
        emb = sincos_embed_2d(grid, x.shape[1]).to(x.dtype) * ratio
        return x + emb.permute(2, 0, 1)[None]

    def coarse(self, tokens_list: Sequence[torch.Tensor | None], height: int, width: int, patch_start_idx: int,
               start: int = 0, end: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The head's stages below its finest fusion for frames ``start:end``: ``(fused, level1)``, both
        ``[B*S', features, 4H/p, 4W/p]`` (``fused``: the three coarser levels fused and upsampled to level 1's
        size; ``level1``: the first level's features, which the finest fusion adds to it)."""
        gh, gw = height // self.patch_size, width // self.patch_size
        levels = []
        for level, layer_idx in enumerate(self.intermediate_layer_idx):
            layer = tokens_list[layer_idx]
            if layer is None:
                raise ValueError(f"aggregator layer {layer_idx} needed by the DPT head was not kept")
            x = layer[:, start:end, patch_start_idx:]
            b, s = x.shape[:2]
            x = self.norm(x.reshape(b * s, gh * gw, x.shape[-1]))
            x = x.transpose(1, 2).reshape(b * s, -1, gh, gw)
            x = self.projects[level](x)
            if self.pos_embed:
                x = self._add_pos(x, width, height)
            levels.append(self.resize_layers[level](x))
        l1, l2, l3, l4 = [getattr(self.scratch, f"layer{i + 1}_rn")(f) for i, f in enumerate(levels)]
        out = self.scratch.refinenet4(l4, size=l3.shape[2:])
        out = self.scratch.refinenet3(out, l3, size=l2.shape[2:])
        return self.scratch.refinenet2(out, l2, size=l1.shape[2:]), l1

    def finish(self, fused: torch.Tensor, level1: torch.Tensor, height: int,
               width: int) -> tuple[torch.Tensor, torch.Tensor]:
        """The finest fusion and the outputs from :meth:`coarse`'s two maps of N frames: ``(pred [N, H, W,
        output_dim-1], conf [N, H, W])``."""
        gh, gw = height // self.patch_size, width // self.patch_size
        out = self.scratch.refinenet1(fused, level1)
        out = self.scratch.output_conv1(out)
        out = F.interpolate(out, size=(gh * self.patch_size, gw * self.patch_size), mode="bilinear",
                            align_corners=True)
        if self.pos_embed:
            out = self._add_pos(out, width, height)
        out = self.scratch.output_conv2(out).permute(0, 2, 3, 1)  # [N, H, W, output_dim]
        return apply_activation(out[..., :-1], self.activation), apply_activation(out[..., -1], self.conf_activation)

    def _forward_frames(self, tokens_list: Sequence[torch.Tensor | None], height: int, width: int,
                        patch_start_idx: int, start: int, end: int) -> tuple[torch.Tensor, torch.Tensor]:
        b = tokens_list[self.intermediate_layer_idx[0]].shape[0]
        s = end - start
        pred, conf = self.finish(*self.coarse(tokens_list, height, width, patch_start_idx, start, end), height, width)
        return pred.reshape(b, s, *pred.shape[1:]), conf.reshape(b, s, *conf.shape[1:])

    def forward(self, tokens_list: Sequence[torch.Tensor | None], images: torch.Tensor, patch_start_idx: int,
                frames_chunk_size: int | None = -1) -> tuple[torch.Tensor, torch.Tensor]:
        """``tokens_list``: aggregator outputs ``[B, S, P, 2C]``; ``images [B, S, 3, H, W]`` (only the shape is used).
        ``frames_chunk_size=-1`` uses the head's default. Returns ``(pred [B, S, H, W, output_dim-1],
        conf [B, S, H, W])``."""
        s, h, w = images.shape[1], images.shape[-2], images.shape[-1]
        chunk = self.frames_chunk_size if frames_chunk_size == -1 else frames_chunk_size
        if chunk is None or chunk <= 0 or chunk >= s:
            return self._forward_frames(tokens_list, h, w, patch_start_idx, 0, s)
        preds, confs = [], []
        for start in range(0, s, chunk):
            pred, conf = self._forward_frames(tokens_list, h, w, patch_start_idx, start, min(start + chunk, s))
            preds.append(pred)
            confs.append(conf)
        return torch.cat(preds, dim=1), torch.cat(confs, dim=1)
