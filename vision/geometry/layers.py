"""Transformer building blocks shared by the aggregator and the camera head.

Parameter names (``norm1``, ``attn.qkv``, ``attn.q_norm``, ``attn.k_norm``, ``attn.proj``, ``ls1.gamma``, ``norm2``,
``mlp.fc1``, ``mlp.fc2``, ``ls2.gamma``) are those of DINOv2/VGGT blocks so checkpoints map by identity.
Token tensors are ``[N, T, C]``; positions (for RoPE) are integer ``[N, T, 2]`` (y, x).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from vision.geometry.rope import RotaryEmbedding2D

__all__ = ["Mlp", "LayerScale", "Attention", "Block"]


class Mlp(nn.Module):
    """Two-layer perceptron ``fc1 -> GELU (exact) -> fc2``."""

    def __init__(self, in_features: int, hidden_features: int, out_features: int | None = None,
                 bias: bool = True) -> None:
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features, bias=bias)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, out_features or in_features, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))


class LayerScale(nn.Module):
    """Per-channel learned scale ``gamma`` (initialised to ``init_values``)."""

    def __init__(self, dim: int, init_values: float) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.full((dim,), float(init_values)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gamma


class Attention(nn.Module):
    """Multi-head self-attention via ``F.scaled_dot_product_attention`` with optional qk-norm (LayerNorm over the
    head dimension) and optional 2D RoPE applied to queries and keys after the norm."""

    def __init__(self, dim: int, num_heads: int, qkv_bias: bool = True, proj_bias: bool = True,
                 qk_norm: bool = False, rope: RotaryEmbedding2D | None = None) -> None:
        super().__init__()
        if dim % num_heads != 0:
            raise ValueError(f"dim {dim} is not divisible by num_heads {num_heads}")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.q_norm: nn.Module = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()
        self.k_norm: nn.Module = nn.LayerNorm(self.head_dim) if qk_norm else nn.Identity()
        self.proj = nn.Linear(dim, dim, bias=proj_bias)
        self.rope = rope

    def forward(self, x: torch.Tensor, pos: torch.Tensor | None = None) -> torch.Tensor:
        n, t, c = x.shape
        qkv = self.qkv(x).reshape(n, t, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)  # each [N, heads, T, head_dim]
        q, k = self.q_norm(q), self.k_norm(k)
        if self.rope is not None and pos is not None:
            tables = self.rope.tables(pos, self.head_dim, q.dtype)
            q, k = self.rope.rotate(q, tables), self.rope.rotate(k, tables)
        out = F.scaled_dot_product_attention(q, k, v)
        return self.proj(out.transpose(1, 2).reshape(n, t, c))


class Block(nn.Module):
    """Pre-norm transformer block: ``x + ls1(attn(norm1(x))) ; x + ls2(mlp(norm2(x)))``.

    Args:
        dim: token width; num_heads: attention heads; mlp_ratio: MLP hidden width / dim;
        init_values: LayerScale init (VGGT 0.01); qk_norm: LayerNorm on q and k; rope: shared 2D RoPE or None.
    """

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 4.0, qkv_bias: bool = True,
                 proj_bias: bool = True, ffn_bias: bool = True, init_values: float = 0.01, qk_norm: bool = False,
                 rope: RotaryEmbedding2D | None = None, norm_eps: float = 1e-5) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=norm_eps)
        self.attn = Attention(dim, num_heads, qkv_bias=qkv_bias, proj_bias=proj_bias, qk_norm=qk_norm, rope=rope)
        self.ls1 = LayerScale(dim, init_values)
        self.norm2 = nn.LayerNorm(dim, eps=norm_eps)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), bias=ffn_bias)
        self.ls2 = LayerScale(dim, init_values)

    def forward(self, x: torch.Tensor, pos: torch.Tensor | None = None) -> torch.Tensor:
        x = x + self.ls1(self.attn(self.norm1(x), pos))
        return x + self.ls2(self.mlp(self.norm2(x)))
