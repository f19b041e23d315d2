"""Per-view SAM-style mask decoder: two-way attention between object tokens and one view's tokens.

Output tokens: a presence token (is the object visible in this view: occluded / outside = absent), an IoU token
and ``num_masks`` mask tokens (several hypotheses). After the two-way transformer, view features are upsampled
4x by transposed convolutions, fused with stride-2 convolutions of the RGB image and (optionally) with the
object's dense prompt maps at that resolution (prompt maps on the prompted view, 3D proximity maps), and each mask
token is mapped by a hypernetwork MLP to weights dotted with them: mask logits at half the input resolution
(``4 * grid = H / 2`` for patch size 8), which callers upsample bilinearly.
"""

from __future__ import annotations

import torch
from torch import nn

from vision.tracking.layers import Attention, LayerNorm2d, Mlp, encode_hires, hires_stem

__all__ = ["TwoWayBlock", "TwoWayTransformer", "MaskDecoder"]


class TwoWayBlock(nn.Module):
    """Token self-attention, tokens -> image cross-attention, token MLP, image -> tokens cross-attention.

    ``skip_first_layer_pe``: SAM's first block, whose self-attention reads the tokens without their positional code
    and has no residual connection (``tokens = norm1(self_attn(tokens, tokens, tokens))``).
    """

    def __init__(self, dim: int, num_heads: int, mlp_dim: int, skip_first_layer_pe: bool = False) -> None:
        super().__init__()
        self.skip_first_layer_pe = skip_first_layer_pe
        self.self_attn = Attention(dim, num_heads)
        self.norm1 = nn.LayerNorm(dim)
        self.cross_t2i = Attention(dim, num_heads, downsample_rate=2)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_dim), nn.ReLU(), nn.Linear(mlp_dim, dim))
        self.norm3 = nn.LayerNorm(dim)
        self.cross_i2t = Attention(dim, num_heads, downsample_rate=2)
        self.norm4 = nn.LayerNorm(dim)

    def forward(self, tokens: torch.Tensor, image: torch.Tensor, token_pe: torch.Tensor, image_pe: torch.Tensor,
                token_pad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.skip_first_layer_pe:
            tokens = self.norm1(self.self_attn(tokens, tokens, tokens, key_padding_mask=token_pad))
        else:
            q = tokens + token_pe
            tokens = self.norm1(tokens + self.self_attn(q, q, tokens, key_padding_mask=token_pad))
        q = tokens + token_pe
        tokens = self.norm2(tokens + self.cross_t2i(q, image + image_pe, image))
        tokens = self.norm3(tokens + self.mlp(tokens))
        q = tokens + token_pe
        image = self.norm4(image + self.cross_i2t(image + image_pe, q, tokens, key_padding_mask=token_pad))
        return tokens, image


class TwoWayTransformer(nn.Module):
    """``depth`` two-way blocks and a final tokens -> image attention.

    ``tokens [L, T, D]``, ``image [L, P, D]``, ``image_pe [L, P, D]``, ``token_pad [L, T]`` (True = padding).
    ``skip_first_layer_pe``: the first block is SAM's (see :class:`TwoWayBlock`).
    """

    def __init__(self, dim: int, depth: int, num_heads: int, mlp_dim: int, skip_first_layer_pe: bool = False) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(
            TwoWayBlock(dim, num_heads, mlp_dim, skip_first_layer_pe=skip_first_layer_pe and i == 0)
            for i in range(depth))
        self.final_attn = Attention(dim, num_heads, downsample_rate=2)
        self.final_norm = nn.LayerNorm(dim)

    def forward(self, tokens: torch.Tensor, image: torch.Tensor, image_pe: torch.Tensor,
                token_pad: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        token_pe = tokens
        for block in self.blocks:
            tokens, image = block(tokens, image, token_pe, image_pe, token_pad)
        q = tokens + token_pe
        tokens = self.final_norm(tokens + self.final_attn(q, image + image_pe, image))
        return tokens, image


class MaskDecoder(nn.Module):
    """Predict ``num_masks`` mask hypotheses, their IoU and the object's presence for (view, object) pairs.

    Args:
        dim: token width. num_masks: hypotheses per object. depth / num_heads / mlp_dim: two-way transformer.
        map_channels: channels of the per-object maps fused at the upsampled resolution (0: none).
        skip_first_layer_pe: SAM's first two-way block (:class:`TwoWayBlock`).
        iou_sigmoid: the IoU head ends in a sigmoid (SAM 2.1's ``iou_prediction_use_sigmoid``); otherwise it is an
            unbounded regression.

    With ``skip_first_layer_pe=True, iou_sigmoid=True, mlp_dim=8 * dim`` and ``num_masks=4`` the presence token,
    IoU token, mask tokens, two-way transformer, upscaling, hypernetworks, IoU head and presence head have the
    shapes and the computation of SAM 2.1's ``MaskDecoder`` (``pred_obj_scores_mlp=True``, without
    ``use_high_res_features``); :mod:`vision.tracking.sam2_keys` loads its weights.
    """

    def __init__(self, dim: int, num_masks: int = 3, depth: int = 2, num_heads: int = 4, mlp_dim: int = 128,
                 map_channels: int = 0, skip_first_layer_pe: bool = False, iou_sigmoid: bool = False) -> None:
        super().__init__()
        self.num_masks = num_masks
        self.iou_sigmoid = iou_sigmoid
        self.presence_token = nn.Parameter(torch.randn(1, dim) * 0.02)
        self.iou_token = nn.Parameter(torch.randn(1, dim) * 0.02)
        self.mask_tokens = nn.Parameter(torch.randn(num_masks, dim) * 0.02)
        self.transformer = TwoWayTransformer(dim, depth, num_heads, mlp_dim, skip_first_layer_pe=skip_first_layer_pe)
        c4, c8 = dim // 4, dim // 8
        self.upscale = nn.Sequential(nn.ConvTranspose2d(dim, c4, 2, stride=2), LayerNorm2d(c4), nn.GELU(),
                                     nn.ConvTranspose2d(c4, c8, 2, stride=2), nn.GELU())
        self.hires = hires_stem(c4, c8)
        self.map_channels = map_channels
        self.map_proj = (nn.Sequential(nn.Conv2d(map_channels, c8, 3, padding=1), nn.GELU(),
                                       nn.Conv2d(c8, c8, 3, padding=1)) if map_channels > 0 else None)
        self.hypernets = nn.ModuleList(Mlp(dim, dim, c8, 3) for _ in range(num_masks))
        self.iou_head = Mlp(dim, dim, num_masks, 3)
        self.presence_head = Mlp(dim, dim, 1, 3)

    def encode_hires(self, rgb: torch.Tensor, grid_hw: tuple[int, int]) -> torch.Tensor:
        """Stride-2 features of images ``[V, 3, H, W]`` in [0, 1] -> ``[V, D // 8, 4gh, 4gw]`` (resized to
        ``8 * grid`` first when H is not 8x the grid)."""
        return encode_hires(self.hires, rgb, grid_hw)

    def forward(self, image: torch.Tensor, image_pe: torch.Tensor, sparse: torch.Tensor, sparse_pad: torch.Tensor,
                hires: torch.Tensor, maps: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Decode ``L`` (view, object) pairs.

        Args:
            image: view features (+ dense prompt) ``[L, D, gh, gw]``; image_pe: their positional code, same shape.
            sparse: prompt tokens ``[L, T, D]``; sparse_pad: ``[L, T]`` True = padding.
            hires: :meth:`encode_hires` of the view's image, ``[L, D // 8, 4gh, 4gw]`` (may be an expanded view).
            maps: ``[L, map_channels, 4gh, 4gw]`` per-pair maps (required when ``map_channels`` > 0).

        Returns:
            ``masks [L, num_masks, 4gh, 4gw]`` logits, ``iou [L, num_masks]`` (predicted IoU, unbounded regression;
            in [0, 1] with ``iou_sigmoid``), ``presence [L]`` logits.
        """
        l, d, gh, gw = image.shape
        used = ~sparse_pad.all(0)  # token slots that are padding in every pair are dropped: no token reads them
        if not torch.compiler.is_exporting() and not bool(used.all()):  # an exported graph keeps them (same masks)
            sparse, sparse_pad = sparse[:, used], sparse_pad[:, used]
        out_tokens = torch.cat([self.presence_token, self.iou_token, self.mask_tokens], dim=0)
        out_tokens = out_tokens[None].expand(l, -1, -1)
        tokens = torch.cat([out_tokens, sparse], dim=1)
        pad = torch.cat([torch.zeros(l, out_tokens.shape[1], dtype=torch.bool, device=image.device), sparse_pad], 1)
        src = image.flatten(2).transpose(1, 2)
        pos = image_pe.flatten(2).transpose(1, 2)
        tokens, src = self.transformer(tokens, src, pos, pad)
        presence_out, iou_out = tokens[:, 0], tokens[:, 1]
        mask_out = tokens[:, 2:2 + self.num_masks]
        up = self.upscale(src.transpose(1, 2).reshape(l, d, gh, gw))  # [L, c8, 4gh, 4gw]
        up = up + hires
        if self.map_proj is not None:
            if maps is None or maps.shape[1] != self.map_channels:
                raise ValueError(f"this decoder fuses {self.map_channels}-channel maps; got "
                                 f"{None if maps is None else tuple(maps.shape)}")
            up = up + self.map_proj(maps)
        hyper = torch.stack([net(mask_out[:, i]) for i, net in enumerate(self.hypernets)], dim=1)  # [L, M, c8]
        masks = torch.einsum("lmc,lchw->lmhw", hyper, up)
        iou = self.iou_head(iou_out)
        if self.iou_sigmoid:
            iou = torch.sigmoid(iou)
        return {"masks": masks, "iou": iou, "presence": self.presence_head(presence_out)[:, 0]}
