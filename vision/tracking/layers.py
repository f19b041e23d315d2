"""Small building blocks shared by the tracking modules: Mlp, LayerNorm2d, random Fourier features, attention."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["BackboneTracker", "Mlp", "LayerNorm2d", "FourierFeatures", "Attention", "gaussian_falloff", "hires_stem", "encode_hires"]

#: exponent beyond which :func:`gaussian_falloff` is 0: exp(-80) = 1.8e-35 is still a normal float32, while larger
#: exponents underflow into subnormals or zero, which the CPU's exp computes about 30x slower
MAX_FALLOFF_EXPONENT = 80.0


def gaussian_falloff(d2: torch.Tensor, sigma: float) -> torch.Tensor:
    """``exp(-d2 / (2 sigma^2))`` of squared distances ``d2`` (any shape), exactly 0 where the exponent exceeds
    :data:`MAX_FALLOFF_EXPONENT` (a value under 1.8e-35 there; the exponent is bounded for speed)."""
    far = d2 > MAX_FALLOFF_EXPONENT * (2 * sigma ** 2)
    return torch.div(d2, 2 * sigma ** 2).neg_().clamp_(min=-MAX_FALLOFF_EXPONENT).exp_().masked_fill_(far, 0.0)


class Mlp(nn.Module):
    """SAM's multi-layer perceptron: ``num_layers`` linear layers with ReLU between them, ``[..., in_dim] ->
    [..., out_dim]`` (not the two-layer GELU ``Mlp`` of :mod:`vision.geometry.layers`, which the transformer blocks
    use)."""

    def __init__(self, in_dim: int, hidden_dim: int, out_dim: int, num_layers: int) -> None:
        super().__init__()
        dims = [in_dim] + [hidden_dim] * (num_layers - 1) + [out_dim]
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = F.relu(x)
        return x


class LayerNorm2d(nn.Module):
    """LayerNorm over the channel dimension of ``[N, C, H, W]`` maps."""

    def __init__(self, channels: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mean = x.mean(1, keepdim=True)
        var = (x - mean).pow(2).mean(1, keepdim=True)
        x = (x - mean) / torch.sqrt(var + self.eps)
        return x * self.weight[:, None, None] + self.bias[:, None, None]


class FourierFeatures(nn.Module):
    """Random Fourier features of coordinates in [-1, 1]: ``[..., in_dim] -> [..., 2 * num_feats]``
    (``sin`` and ``cos`` of ``2 pi x G`` with a fixed Gaussian matrix ``G [in_dim, num_feats]``, scale ``scale``)."""

    def __init__(self, in_dim: int, num_feats: int, scale: float = 1.0) -> None:
        super().__init__()
        self.register_buffer("gaussian", scale * torch.randn(in_dim, num_feats))

    def forward(self, coords: torch.Tensor) -> torch.Tensor:
        proj = 2 * math.pi * (coords.to(self.gaussian.dtype) @ self.gaussian)
        return torch.cat([torch.sin(proj), torch.cos(proj)], dim=-1)


class Attention(nn.Module):
    """Multi-head attention with an optional internal down-projection (SAM's ``downsample_rate``).

    ``q [N, Lq, D]``, ``k, v [N, Lk, D]`` -> ``[N, Lq, D]``; ``key_padding_mask [N, Lk]`` bool, True = ignore;
    ``attn_bias [N, heads, Lq, Lk]`` (or broadcastable to it) is added to the attention logits.
    """

    def __init__(self, dim: int, num_heads: int, downsample_rate: int = 1) -> None:
        super().__init__()
        inner = dim // downsample_rate
        if inner % num_heads:
            raise ValueError(f"inner dim {inner} is not divisible by num_heads {num_heads}")
        self.num_heads = num_heads
        self.q_proj, self.k_proj, self.v_proj = nn.Linear(dim, inner), nn.Linear(dim, inner), nn.Linear(dim, inner)
        self.out_proj = nn.Linear(inner, dim)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                key_padding_mask: torch.Tensor | None = None, attn_bias: torch.Tensor | None = None) -> torch.Tensor:
        n, lq, _ = q.shape
        lk = k.shape[1]
        h = self.num_heads
        q = self.q_proj(q).view(n, lq, h, -1).transpose(1, 2)
        k = self.k_proj(k).view(n, lk, h, -1).transpose(1, 2)
        v = self.v_proj(v).view(n, lk, h, -1).transpose(1, 2)
        mask = None
        if key_padding_mask is not None:
            # keep at least one key per row so rows with every key masked do not produce NaN
            pad = key_padding_mask.clone()
            pad[pad.all(dim=1), 0] = False
            mask = ~pad[:, None, None, :]
        if attn_bias is not None:
            bias = attn_bias.to(q.dtype)
            mask = bias if mask is None else bias.masked_fill(~mask, float("-inf"))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out_proj(out.transpose(1, 2).reshape(n, lq, -1))


def hires_stem(mid: int, out: int) -> nn.Sequential:
    """The mask decoders' stride-2 RGB features: ``[V, 3, H, W] -> [V, out, H / 2, W / 2]`` (SAM 2.1's high-res
    branch shape: 3x3 stride-2 conv to ``mid``, LayerNorm2d, GELU, 3x3 conv to ``out``)."""
    return nn.Sequential(nn.Conv2d(3, mid, 3, stride=2, padding=1), LayerNorm2d(mid), nn.GELU(),
                         nn.Conv2d(mid, out, 3, padding=1))


def encode_hires(stem: nn.Module, rgb: torch.Tensor, grid_hw: tuple[int, int]) -> torch.Tensor:
    """:func:`hires_stem` features of images ``[V, 3, H, W]`` in [0, 1] at ``4 * grid`` (the images are resized to
    ``8 * grid`` first when H is not 8x the grid)."""
    gh, gw = grid_hw
    if rgb.shape[-2:] != (8 * gh, 8 * gw):
        rgb = F.interpolate(rgb, size=(8 * gh, 8 * gw), mode="bilinear", align_corners=False)
    return stem(rgb)


class BackboneTracker(nn.Module):
    """Base of the trackers built on a geometry backbone (``self.backbone``, a
    :class:`~vision.geometry.model.GeometryBackbone`): the input sizes they read from it."""

    backbone: nn.Module

    @property
    def patch_size(self) -> int:
        """The backbone's patch side in pixels."""
        return self.backbone.patch_size

    @property
    def image_size(self) -> int:
        """The square input size the backbone is built for."""
        return int(self.backbone.aggregator.img_size)
