"""Camera head (iterative, AdaLN-modulated trunk over camera tokens) and the DPT head re-export.

The camera head reads the camera token (index 0) of the last aggregator layer ``[B, S, 2C]`` and refines a 9-d pose
encoding ``[t(3), quaternion xyzw (4), fov_h, fov_w]`` over ``num_iterations`` steps: each step embeds the current
(detached) estimate, turns it into AdaLN shift/scale/gate for the tokens, runs the trunk and adds a predicted
delta. Activations: translation and quaternion linear, field of view ReLU (VGGT's defaults).
"""

from __future__ import annotations

import torch
from torch import nn

from vision.geometry.dpt import DPTHead, apply_activation
from vision.geometry.layers import Block, Mlp

__all__ = ["CameraHead", "DPTHead", "activate_pose"]


def activate_pose(pose_enc: torch.Tensor, trans_act: str = "linear", quat_act: str = "linear",
                  fov_act: str = "relu") -> torch.Tensor:
    """Apply the per-part activations to a raw ``[..., 9]`` pose encoding."""
    t = apply_activation(pose_enc[..., :3], trans_act)
    q = apply_activation(pose_enc[..., 3:7], quat_act)
    f = apply_activation(pose_enc[..., 7:], fov_act)
    return torch.cat([t, q, f], dim=-1)


class CameraHead(nn.Module):
    """Iterative camera head.

    Args:
        dim_in: token width (2C); trunk_depth: trunk blocks (VGGT 4); num_heads, mlp_ratio, init_values: trunk blocks.
        num_iterations: refinement steps (VGGT 4).

    ``forward(tokens_list) -> list of num_iterations tensors [B, S, 9]`` (activated), the last being the final.
    """

    target_dim = 9

    def __init__(self, dim_in: int = 2048, trunk_depth: int = 4, num_heads: int = 16, mlp_ratio: float = 4.0,
                 init_values: float = 0.01, num_iterations: int = 4, trans_act: str = "linear",
                 quat_act: str = "linear", fov_act: str = "relu") -> None:
        super().__init__()
        self.num_iterations = num_iterations
        self.acts = (trans_act, quat_act, fov_act)
        self.token_norm = nn.LayerNorm(dim_in)
        self.trunk = nn.Sequential(*[Block(dim_in, num_heads, mlp_ratio, init_values=init_values)
                                     for _ in range(trunk_depth)])
        self.trunk_norm = nn.LayerNorm(dim_in)
        self.empty_pose_tokens = nn.Parameter(torch.zeros(1, 1, self.target_dim))
        self.embed_pose = nn.Linear(self.target_dim, dim_in)
        self.poseLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(dim_in, 3 * dim_in))
        self.adaln_norm = nn.LayerNorm(dim_in, elementwise_affine=False, eps=1e-6)
        self.pose_branch = Mlp(dim_in, dim_in // 2, self.target_dim)

    def forward(self, tokens_list: list[torch.Tensor | None] | torch.Tensor,
                num_iterations: int | None = None) -> list[torch.Tensor]:
        """``tokens_list``: aggregator outputs (the last is used) or the last layer ``[B, S, P, 2C]`` itself."""
        last = tokens_list if isinstance(tokens_list, torch.Tensor) else tokens_list[-1]
        if last is None:
            raise ValueError("the camera head needs the last aggregator layer, which was not kept")
        tokens = self.token_norm(last[:, :, 0])  # [B, S, 2C]
        b, s, _ = tokens.shape
        pose_enc: torch.Tensor | None = None
        outputs = []
        for _ in range(num_iterations or self.num_iterations):
            if pose_enc is None:
                cond = self.embed_pose(self.empty_pose_tokens.expand(b, s, -1).to(tokens.dtype))
            else:
                cond = self.embed_pose(pose_enc.detach())
            shift, scale, gate = self.poseLN_modulation(cond).chunk(3, dim=-1)
            modulated = gate * (self.adaln_norm(tokens) * (1 + scale) + shift) + tokens
            delta = self.pose_branch(self.trunk_norm(self.trunk(modulated)))
            pose_enc = delta if pose_enc is None else pose_enc + delta
            outputs.append(activate_pose(pose_enc, *self.acts))
        return outputs
