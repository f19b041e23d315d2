"""Multiplexed mask decoder: every object of a view reads one shared decoding of that view's tokens.

:class:`~vision.tracking.decoder.MaskDecoder` decodes each (view, object) pair on its own copy of the view's tokens
(the object's dense prompt is added to them, the two-way attention updates them, each pair upsamples its own), so
its cost is linear in objects with a large constant. Here the view's side is computed once per view and shared:

- per view: the view's tokens with their positional code (never updated by an object) and the upsampled features
  ``up = upscale(tokens) + hires`` at ``4 * grid``;
- per object: the presence token, the IoU token and ``num_masks`` mask tokens read the object's prompt tokens (its
  3D prompt and memory; cross-attention, :attr:`reader`), once per object when its prompt tokens are the same on
  every view of the clip; on each view they are joined by one *map token* per channel of the object's maps (the
  view's tokens pooled under that map: under the prompt mask or clicks on the prompted view, near the object's 3D
  anchors on every view), and these tokens run ``depth`` blocks of self-attention among the object's own tokens,
  cross-attention to the view's shared tokens and an MLP;
- masks: a dynamic 1x1 mask head per object (CondInst's, Tian et al. 2020): its first mask token generates the
  weights ``W [K, C]`` and bias ``b [K]`` that mix the object's maps into the shared features, ``hidden = GELU(up +
  W maps + b)`` (K channels at ``4 * grid``), and each mask token's hypernetwork gives the weights that reduce
  ``hidden`` to that hypothesis's logits. Per object and pixel this is ``K * (C + num_masks)`` multiply-adds.

The per-object work is on ``2 + num_masks + map_channels`` tokens, the prompt tokens are read once, and no
convolution runs per object. Since no object writes into the view's tokens, an object's
outputs do not depend on which other objects are decoded with it: buckets of any size give the same masks (up to
float rounding), and a correction re-decodes one object as the joint decode would.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from vision.tracking.layers import Attention, LayerNorm2d, Mlp, encode_hires, hires_stem

__all__ = ["MultiplexBlock", "MultiplexDecoder"]


class MultiplexBlock(nn.Module):
    """Object-token self-attention (within each object), object tokens -> shared view tokens, token MLP.

    ``tokens [V, N, K, D]`` (K tokens of N objects on V views), ``token_pe`` the same shape, the view's attention
    keys ``[V, P, D]`` (its tokens plus their positional code) and values ``[V, P, D]`` (its tokens), shared by the
    N objects of a view, ``attn_bias [V, heads, N * K, P]`` (optional, added to the cross-attention logits) ->
    ``[V, N, K, D]``.
    """

    def __init__(self, dim: int, num_heads: int, mlp_dim: int) -> None:
        super().__init__()
        self.self_attn = Attention(dim, num_heads)
        self.norm1 = nn.LayerNorm(dim)
        self.cross_attn = Attention(dim, num_heads, downsample_rate=2)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_dim), nn.ReLU(), nn.Linear(mlp_dim, dim))
        self.norm3 = nn.LayerNorm(dim)

    def forward(self, tokens: torch.Tensor, token_pe: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                attn_bias: torch.Tensor | None = None) -> torch.Tensor:
        v, n, k, d = tokens.shape
        flat, flat_pe = tokens.reshape(v * n, k, d), token_pe.reshape(v * n, k, d)
        q = flat + flat_pe
        flat = self.norm1(flat + self.self_attn(q, q, flat))
        # every object's queries of a view in one attention over that view's tokens
        q = (flat + flat_pe).reshape(v, n * k, d)
        tokens = flat.reshape(v, n * k, d)
        tokens = self.norm2(tokens + self.cross_attn(q, keys, values, attn_bias=attn_bias))
        tokens = self.norm3(tokens + self.mlp(tokens))
        return tokens.reshape(v, n, k, d)


class MultiplexDecoder(nn.Module):
    """Masks, IoU and presence of N objects on V views from one shared decoding per view (module docstring).

    Args:
        dim: token width. num_masks: hypotheses per object. depth / num_heads / mlp_dim: the object-token blocks.
        map_attention: the object's maps, pooled to the token grid, bias its tokens' attention to the view's tokens
            (a learned weight per map channel and head, starting at 0: Mask2Former's masked attention, with the
            prompt and 3D proximity maps as the soft mask).
        map_channels: channels of the per-object maps (prompt maps and 3D proximity maps), each giving one map
            token and an input of the dynamic mask head.
    """

    def __init__(self, dim: int, num_masks: int = 3, depth: int = 2, num_heads: int = 4, mlp_dim: int = 128,
                 map_channels: int = 8, map_attention: bool = True) -> None:
        super().__init__()
        if map_channels < 1:
            raise ValueError(f"the multiplexed decoder reads per-object maps; map_channels must be >= 1, "
                             f"got {map_channels}")
        self.num_masks = num_masks
        self.map_channels = map_channels
        self.presence_token = nn.Parameter(torch.randn(1, dim) * 0.02)
        self.iou_token = nn.Parameter(torch.randn(1, dim) * 0.02)
        self.mask_tokens = nn.Parameter(torch.randn(num_masks, dim) * 0.02)
        self.map_tokens = nn.Parameter(torch.randn(map_channels, dim) * 0.02)
        self.map_pool_proj = nn.Linear(dim, dim)
        self.num_heads = num_heads
        self.map_bias = nn.Linear(map_channels, num_heads, bias=False) if map_attention else None
        if self.map_bias is not None:
            nn.init.zeros_(self.map_bias.weight)
        self.reader = Attention(dim, num_heads)
        self.reader_norm = nn.LayerNorm(dim)
        self.blocks = nn.ModuleList(MultiplexBlock(dim, num_heads, mlp_dim) for _ in range(depth))
        self.final_attn = Attention(dim, num_heads, downsample_rate=2)
        self.final_norm = nn.LayerNorm(dim)
        c = dim // 2
        self.feature_channels = c  # K: channels of the shared upsampled features and of the dynamic head
        self.upscale = nn.Sequential(nn.ConvTranspose2d(dim, c, 2, stride=2), LayerNorm2d(c), nn.GELU(),
                                     nn.ConvTranspose2d(c, c, 2, stride=2))
        self.hires = hires_stem(c, c)
        self.map_weights = nn.Linear(dim, c * (map_channels + 1))  # W [K, C] and b [K] of the dynamic head
        self.hypernets = nn.ModuleList(Mlp(dim, dim, c, 3) for _ in range(num_masks))
        self.iou_head = Mlp(dim, dim, num_masks, 3)
        self.presence_head = Mlp(dim, dim, 1, 3)

    def encode_hires(self, rgb: torch.Tensor, grid_hw: tuple[int, int]) -> torch.Tensor:
        """Stride-2 features of images ``[V, 3, H, W]`` in [0, 1] -> ``[V, D // 2, 4gh, 4gw]`` (resized to
        ``8 * grid`` first when H is not 8x the grid)."""
        return encode_hires(self.hires, rgb, grid_hw)

    def map_token_values(self, image: torch.Tensor, grid_maps: torch.Tensor) -> torch.Tensor:
        """The view's tokens ``image [V, P, D]`` averaged under each of the objects' maps pooled to the token grid
        ``grid_maps [V, N, C, P]`` (weights normalised per map, an all-zero map gives 0) and projected ->
        ``[V, N, C, D]``."""
        v, n, c, p = grid_maps.shape
        weights = grid_maps / grid_maps.sum(-1, keepdim=True).clamp(min=1e-6)
        pooled = torch.bmm(weights.view(v, n * c, p), image)  # [V, N*C, D]
        return self.map_pool_proj(pooled).view(v, n, c, -1)

    def forward(self, image: torch.Tensor, image_pe: torch.Tensor, sparse: torch.Tensor, sparse_pad: torch.Tensor,
                hires: torch.Tensor, maps: torch.Tensor) -> dict[str, torch.Tensor]:
        """Decode N objects on V views.

        Args:
            image: the views' features ``[V, D, gh, gw]`` (shared by the objects); image_pe: their positional code.
            sparse: prompt tokens ``[G, N, T, D]`` with G = V (per view) or a divisor of V: then the views are G
                clips of V / G consecutive views, each clip's objects with one set of prompt tokens, read once;
                sparse_pad: ``[G, N, T]`` True = padding.
            hires: :meth:`encode_hires` of the views' images ``[V, D // 2, 4gh, 4gw]``.
            maps: per-object maps ``[V, N, map_channels, 4gh, 4gw]``.

        Returns:
            ``masks [V, N, num_masks, 4gh, 4gw]`` logits, ``iou [V, N, num_masks]`` (unbounded regression),
            ``presence [V, N]`` logits.
        """
        v, d, gh, gw = image.shape
        g, n = sparse.shape[:2]
        if v % g:
            raise ValueError(f"prompt tokens for {g} clips do not divide {v} views")
        if tuple(maps.shape) != (v, n, self.map_channels, 4 * gh, 4 * gw):
            raise ValueError(f"this decoder reads maps [V={v}, N={n}, {self.map_channels}, {4 * gh}, {4 * gw}]; got "
                             f"{tuple(maps.shape)}")
        used = ~sparse_pad.flatten(0, 1).all(0)  # slots that are padding in every pair: no token reads them
        if not torch.compiler.is_exporting() and not bool(used.all()):  # an exported graph keeps them (same masks)
            sparse, sparse_pad = sparse[:, :, used], sparse_pad[:, :, used]
        src = image.flatten(2).transpose(1, 2)  # [V, P, D]
        keys = src + image_pe.flatten(2).transpose(1, 2)
        fixed = torch.cat([self.presence_token, self.iou_token, self.mask_tokens], dim=0)
        fixed = fixed[None].expand(g * n, -1, -1)  # [G*N, F, D]
        if sparse.shape[2]:
            read = self.reader(fixed, sparse.flatten(0, 1), sparse.flatten(0, 1),
                               key_padding_mask=sparse_pad.flatten(0, 1))
            fixed = self.reader_norm(fixed + read)
        fixed = fixed.view(g, 1, n, -1, d).expand(g, v // g, n, -1, d).reshape(v, n, -1, d)
        grid_maps = F.adaptive_avg_pool2d(maps.flatten(0, 1), (gh, gw)).view(v, n, self.map_channels, gh * gw)
        map_tok = self.map_tokens + self.map_token_values(keys, grid_maps)  # [V, N, C, D]
        tokens = torch.cat([fixed, map_tok], dim=2)  # [V, N, K, D]
        k = tokens.shape[2]
        bias = None
        if self.map_bias is not None:  # [V, N, P, heads] -> [V, heads, N * K, P]: the same for an object's tokens
            bias = self.map_bias(grid_maps.transpose(2, 3)).permute(0, 3, 1, 2)[:, :, :, None]
            bias = bias.expand(v, self.num_heads, n, k, gh * gw).reshape(v, self.num_heads, n * k, gh * gw)
        token_pe = tokens
        for block in self.blocks:
            tokens = block(tokens, token_pe, keys, src, bias)
        q = (tokens + token_pe).reshape(v, n * k, d)
        out = self.final_attn(q, keys, src, attn_bias=bias)
        out = self.final_norm(tokens.reshape(v, n * k, d) + out).view(v, n, k, d)
        k_ch, c = self.feature_channels, self.map_channels
        up = (self.upscale(image) + hires).flatten(2)  # [V, K, 16 gh gw], once per view
        mask_out = out[:, :, 2:2 + self.num_masks]
        dynamic = self.map_weights(mask_out[:, :, 0]).view(v, n, k_ch, c + 1)  # [V, N, K, C + 1]
        hidden = torch.matmul(dynamic[..., :c], maps.flatten(3)) + dynamic[..., c:]  # [V, N, K, 16 gh gw]
        hidden = F.gelu(hidden + up[:, None])
        hyper = torch.stack([net(mask_out[:, :, i]) for i, net in enumerate(self.hypernets)], dim=2)  # [V, N, M, K]
        masks = torch.matmul(hyper, hidden).view(v, n, self.num_masks, 4 * gh, 4 * gw)
        return {"masks": masks, "iou": self.iou_head(out[:, :, 1]), "presence": self.presence_head(out[:, :, 0])[..., 0]}
