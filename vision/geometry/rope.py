"""2D rotary position embedding (RoPE) for patch tokens.

Convention (the one VGGT's checkpoint was trained with): the head dimension ``D`` is split in two halves; the
first half is rotated by the token's row (y) position, the second half by its column (x) position. Inside each
half of size ``d`` the "rotate-half" pairing is used: feature ``i`` pairs with feature ``i + d/2`` and both
rotate by the angle ``pos * freq ** (-2i / d)``. Positions are integers; special tokens (camera, registers) get
position (0, 0) and patch ``(r, c)`` gets ``(r + 1, c + 1)`` so that no patch shares the special tokens' position.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["RotaryEmbedding2D", "patch_positions", "token_positions"]


def patch_positions(grid_h: int, grid_w: int, device: torch.device | None = None) -> torch.Tensor:
    """Integer (y, x) positions of a row-major ``grid_h x grid_w`` patch grid: ``[grid_h * grid_w, 2]`` (long)."""
    ys = torch.arange(grid_h, device=device)
    xs = torch.arange(grid_w, device=device)
    yy, xx = torch.meshgrid(ys, xs, indexing="ij")
    return torch.stack([yy.reshape(-1), xx.reshape(-1)], dim=-1)


def token_positions(grid_h: int, grid_w: int, num_special: int, device: torch.device | None = None) -> torch.Tensor:
    """Positions of one frame's tokens ``[num_special + grid_h * grid_w, 2]``: special tokens at (0, 0), patches
    shifted by +1 (see the module docstring)."""
    special = torch.zeros(num_special, 2, dtype=torch.long, device=device)
    return torch.cat([special, patch_positions(grid_h, grid_w, device) + 1], dim=0)


class RotaryEmbedding2D(nn.Module):
    """Applies 2D RoPE to queries or keys. Holds no parameters.

    Args:
        freq: base frequency (VGGT: 100).
    """

    def __init__(self, freq: float = 100.0) -> None:
        super().__init__()
        self.freq = float(freq)

    def _cos_sin(self, positions: torch.Tensor, dim: int,
                 dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
        """cos/sin tables for 1D integer positions ``[N, T]`` -> each ``[N, 1, T, dim]``. Positions broadcast
        along N (stride 0, as the aggregator passes one frame's positions for every frame) are computed once."""
        n = positions.shape[0]
        shared = n > 1 and positions.stride(0) == 0
        if shared:
            positions = positions[:1]
        exponents = torch.arange(0, dim, 2, device=positions.device, dtype=torch.float32) / dim
        inv_freq = self.freq ** (-exponents)  # [dim/2]
        angles = positions.to(torch.float32)[..., None] * inv_freq  # [N, T, dim/2]
        angles = torch.cat([angles, angles], dim=-1)  # [N, T, dim]
        cos, sin = angles.cos().to(dtype)[:, None], angles.sin().to(dtype)[:, None]
        if shared:
            cos, sin = cos.expand(n, -1, -1, -1), sin.expand(n, -1, -1, -1)
        return cos, sin

    @staticmethod
    def _rotate_half(x: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        return torch.cat([-x[..., half:], x[..., :half]], dim=-1)

    def tables(self, positions: torch.Tensor, head_dim: int,
               dtype: torch.dtype) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The (cos, sin) tables of the y and x halves for integer positions ``[N, T, 2]`` and a head dimension
        ``head_dim`` (a multiple of 4), for :meth:`rotate`: compute them once for queries and keys."""
        if head_dim % 4 != 0:
            raise ValueError(f"2D RoPE needs a head dimension divisible by 4, got {head_dim}")
        return [self._cos_sin(positions[..., axis], head_dim // 2, dtype) for axis in range(2)]

    def rotate(self, x: torch.Tensor, tables: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        """Rotate ``x [N, heads, T, D]`` with :meth:`tables` computed for its positions."""
        half = x.shape[-1] // 2
        out = [part * cos + self._rotate_half(part) * sin
               for part, (cos, sin) in zip((x[..., :half], x[..., half:]), tables)]
        return torch.cat(out, dim=-1)

    def forward(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Rotate ``x`` ``[N, heads, T, D]`` by integer positions ``[N, T, 2]`` (y, x). ``D`` must be a multiple of 4."""
        return self.rotate(x, self.tables(positions, x.shape[-1], x.dtype))
