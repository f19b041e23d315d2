"""The aggregator: patch embedding + alternating frame-wise / global attention (VGGT's trunk).

Input images ``[B, S, 3, H, W]`` in [0, 1] are normalised with ImageNet mean/std here. Each frame gets the tokens
``[camera, register x R, patches]``; frame 0 takes its camera/register tokens from index 0 of the learned
``[1, 2, n, C]`` parameters, frames 1..S-1 from index 1, so frame 0 defines the world frame while the other frames
are treated alike (the network is permutation-equivariant over frames 1..S-1). Patch tokens carry 2D RoPE
positions (y+1, x+1); special tokens sit at position 0.

Each of the ``depth`` pairs runs a frame block on ``[B*S, P, C]`` (attention inside each frame) and then a global
block on ``[B, S*P, C]`` (attention across all frames); the pair's output is ``concat(frame_out, global_out)``,
``[B, S, P, 2C]``. ``forward`` returns the list of the ``depth`` pair outputs (entries not in ``keep_layers`` are
``None`` to save memory) and ``patch_start_idx = 1 + num_register_tokens``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

from vision.geometry.layers import Block
from vision.geometry.patch_embed import build_patch_embed, embed_patches, patch_size_of
from vision.geometry.rope import RotaryEmbedding2D, token_positions

__all__ = ["Aggregator", "IMAGENET_MEAN", "IMAGENET_STD"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def _frame_special_tokens(param: torch.Tensor, batch: int, frames: int) -> torch.Tensor:
    """Expand a ``[1, 2, n, C]`` token parameter to ``[B*S, n, C]``: index 0 for frame 0, index 1 for the others."""
    first = param[:, :1].expand(batch, 1, -1, -1)
    others = param[:, 1:].expand(batch, frames - 1, -1, -1)
    return torch.cat([first, others], dim=1).reshape(batch * frames, param.shape[2], param.shape[3])


class Aggregator(nn.Module):
    """VGGT-style alternating-attention aggregator.

    Args:
        img_size: nominal square image size (only sets a timm ViT's absolute position grid).
        patch_size: patch size in pixels (H and W must be multiples of it).
        embed_dim, depth, num_heads, mlp_ratio: width, number of frame/global block pairs, heads, MLP ratio.
        num_register_tokens: register tokens per frame (VGGT 4).
        patch_embed: ``"conv"`` or a timm ViT name (see :func:`build_patch_embed`).
        patch_embed_weights: optional local weights file for a timm patch embed.
        qk_norm, rope_freq, init_values: qk-norm on/off, RoPE base frequency (<= 0 disables), LayerScale init.
        use_checkpoint: gradient checkpointing of each block (``use_reentrant=False``) while training.
        keep_layers: indices of pair outputs to keep (``None`` keeps all); others are returned as ``None``.
    """

    def __init__(self, img_size: int = 518, patch_size: int = 14, embed_dim: int = 1024, depth: int = 24,
                 num_heads: int = 16, mlp_ratio: float = 4.0, num_register_tokens: int = 4,
                 patch_embed: str = "conv", patch_embed_weights: str | Path | None = None, qkv_bias: bool = True,
                 proj_bias: bool = True, ffn_bias: bool = True, qk_norm: bool = True, rope_freq: float = 100.0,
                 init_values: float = 0.01, use_checkpoint: bool = False,
                 keep_layers: Sequence[int] | None = None) -> None:
        super().__init__()
        self.img_size = img_size
        self.embed_dim = embed_dim
        self.depth = depth
        self.num_register_tokens = num_register_tokens
        self.patch_start_idx = 1 + num_register_tokens
        self.use_checkpoint = use_checkpoint
        self.keep_layers = None if keep_layers is None else sorted({int(i) % depth for i in keep_layers})
        self.patch_embed = build_patch_embed(patch_embed, img_size, patch_size, embed_dim, patch_embed_weights)
        self.patch_size = patch_size_of(self.patch_embed)
        self.rope = RotaryEmbedding2D(rope_freq) if rope_freq > 0 else None

        def make_block() -> Block:
            return Block(embed_dim, num_heads, mlp_ratio, qkv_bias=qkv_bias, proj_bias=proj_bias, ffn_bias=ffn_bias,
                         init_values=init_values, qk_norm=qk_norm, rope=self.rope)

        self.frame_blocks = nn.ModuleList([make_block() for _ in range(depth)])
        self.global_blocks = nn.ModuleList([make_block() for _ in range(depth)])
        self.camera_token = nn.Parameter(torch.randn(1, 2, 1, embed_dim) * 1e-6)
        self.register_token = nn.Parameter(torch.randn(1, 2, num_register_tokens, embed_dim) * 1e-6)
        self.register_buffer("_mean", torch.tensor(IMAGENET_MEAN).view(1, 1, 3, 1, 1), persistent=False)
        self.register_buffer("_std", torch.tensor(IMAGENET_STD).view(1, 1, 3, 1, 1), persistent=False)

    def _run(self, block: nn.Module, tokens: torch.Tensor, pos: torch.Tensor | None) -> torch.Tensor:
        if self.use_checkpoint and self.training and torch.is_grad_enabled():
            return checkpoint(block, tokens, pos, use_reentrant=False)
        return block(tokens, pos)

    def forward(self, images: torch.Tensor) -> tuple[list[torch.Tensor | None], int]:
        """``images [B, S, 3, H, W]`` in [0, 1] -> (list of ``depth`` tensors ``[B, S, P, 2C]`` or ``None``,
        ``patch_start_idx``), with ``P = 1 + R + (H/p)*(W/p)``. Input validation is the caller's job
        (:class:`GeometryBackbone` does it)."""
        b, s, _, h, w = images.shape
        x = (images - self._mean.to(images.dtype)) / self._std.to(images.dtype)
        patches = embed_patches(self.patch_embed, x.reshape(b * s, 3, h, w))  # [B*S, hw, C]
        camera = _frame_special_tokens(self.camera_token, b, s).to(patches.dtype)
        registers = _frame_special_tokens(self.register_token, b, s).to(patches.dtype)
        tokens = torch.cat([camera, registers, patches], dim=1)  # [B*S, P, C]
        p, c = tokens.shape[1], tokens.shape[2]
        gh, gw = h // self.patch_size, w // self.patch_size
        frame_pos = token_positions(gh, gw, self.patch_start_idx, device=images.device)  # [P, 2]
        pos_frame = frame_pos[None].expand(b * s, -1, -1) if self.rope is not None else None
        pos_global = frame_pos[None].expand(b, s, -1, -1).reshape(b, s * p, 2) if self.rope is not None else None
        last_needed = self.depth - 1 if self.keep_layers is None else max(self.keep_layers)

        outputs: list[torch.Tensor | None] = []
        for i in range(self.depth):
            if i > last_needed:
                outputs.append(None)
                continue
            tokens = self._run(self.frame_blocks[i], tokens.reshape(b * s, p, c), pos_frame)
            frame_out = tokens.reshape(b, s, p, c)
            tokens = self._run(self.global_blocks[i], tokens.reshape(b, s * p, c), pos_global)
            global_out = tokens.reshape(b, s, p, c)
            if self.keep_layers is None or i in self.keep_layers:
                outputs.append(torch.cat([frame_out, global_out], dim=-1))
            else:
                outputs.append(None)
        return outputs, self.patch_start_idx
