"""The presence head: is the tracker's box on the prompted object in this frame?

A small MLP on the cues of one answer (:mod:`vision.tracking.real.cues`), standardised by the training set's mean
and spread (buffers, saved with the weights). ``memory="2d"`` builds the 2D-memory control: the cues that come from
the 3D memory are masked to 0, so the head decides from appearance alone.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from vision.errors import InputError
from vision.tracking.real.cues import CUES, GEOMETRY_CUES

__all__ = ["MEMORIES", "PresenceHead"]

#: ``3d``: every cue; ``2d``: the 3D memory's cues masked (the control)
MEMORIES = ("3d", "2d")


class PresenceHead(nn.Module):
    """``[..., len(CUES)]`` cues -> ``[...]`` presence logits.

    Args:
        memory: ``"3d"`` (every cue) or ``"2d"`` (the geometry cues masked to 0).
        hidden: width of the two hidden layers.
    """

    def __init__(self, memory: str = "3d", hidden: int = 32) -> None:
        super().__init__()
        if memory not in MEMORIES:
            raise InputError(f"presence memory must be one of {MEMORIES}, got {memory!r}")
        if hidden < 1:
            raise InputError(f"presence hidden width must be >= 1, got {hidden}")
        self.memory = memory
        mask = torch.tensor([0.0 if (memory == "2d" and c in GEOMETRY_CUES) else 1.0 for c in CUES])
        self.register_buffer("mask", mask)
        self.register_buffer("mean", torch.zeros(len(CUES)))
        self.register_buffer("std", torch.ones(len(CUES)))
        self.mlp = nn.Sequential(nn.Linear(len(CUES), hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
                                 nn.Linear(hidden, 1))

    def set_normalisation(self, cues: torch.Tensor) -> None:
        """Standardise by the mean and spread of training cues ``[N, len(CUES)]`` (a spread of 0 counts as 1)."""
        self.mean.copy_(cues.float().mean(0))
        std = cues.float().std(0)
        self.std.copy_(torch.where(std > 1e-6, std, torch.ones_like(std)))

    def forward(self, cues: torch.Tensor) -> torch.Tensor:
        x = (cues.float() - self.mean) / self.std * self.mask
        return self.mlp(x)[..., 0]

    @torch.no_grad()
    def probability(self, cues: np.ndarray) -> np.ndarray:
        """Presence probabilities ``[...]`` of numpy cues ``[..., len(CUES)]``."""
        device = self.mean.device
        return torch.sigmoid(self(torch.as_tensor(np.asarray(cues, np.float32), device=device))).cpu().numpy()
