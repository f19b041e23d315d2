"""Small building blocks shared by the tracking modules: Mlp, LayerNorm2d, random Fourier features, attention."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["Mlp", "LayerNorm2d", "FourierFeatures", "Attention"]


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

    ``q [N, Lq, D]``, ``k, v [N, Lk, D]`` -> ``[N, Lq, D]``; ``key_padding_mask [N, Lk]`` bool, True = ignore.
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
                key_padding_mask: torch.Tensor | None = None) -> torch.Tensor:
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
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.out_proj(out.transpose(1, 2).reshape(n, lq, -1))
