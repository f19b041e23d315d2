"""The optimiser recipe shared by the task modules: AdamW, no weight decay on norms / biases / tokens, and a
linear warm-up followed by cosine decay, stepped every optimisation step."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

__all__ = ["decay_param_groups", "warmup_cosine"]


def decay_param_groups(named_parameters: Iterable[tuple[str, torch.nn.Parameter]], weight_decay: float,
                       no_decay: Callable[[str, torch.nn.Parameter], bool] | None = None) -> list[dict[str, Any]]:
    """Two AdamW groups: weights with ``weight_decay``, and (1-d tensors or names ``no_decay`` selects) without."""
    decay, plain = [], []
    for name, p in named_parameters:
        if not p.requires_grad:
            continue
        skip = p.ndim < 2 or (no_decay is not None and no_decay(name, p))
        (plain if skip else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": plain, "weight_decay": 0.0}]


def warmup_cosine(optimizer: torch.optim.Optimizer, lr: float, warmup_steps: int, total_steps: int,
                  final_ratio: float = 0.02) -> dict[str, Any]:
    """Lightning's ``configure_optimizers`` dict: linear warm-up from 1% over ``min(warmup_steps, total / 10)``
    steps, then cosine decay to ``lr * final_ratio`` at ``total_steps``."""
    total = max(1, int(total_steps))
    warmup = min(warmup_steps, max(1, total // 10))
    sched = torch.optim.lr_scheduler.SequentialLR(
        optimizer,
        [torch.optim.lr_scheduler.LinearLR(optimizer, start_factor=0.01, total_iters=warmup),
         torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=max(1, total - warmup), eta_min=lr * final_ratio)],
        milestones=[warmup])
    return {"optimizer": optimizer, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
