"""Callbacks shared by every task."""

from __future__ import annotations

import math
from typing import Any

import lightning.pytorch as pl
import torch

from vision.errors import VisionError

__all__ = ["NonFiniteLossError", "FiniteLossGuard", "check_finite"]


class NonFiniteLossError(VisionError, FloatingPointError):
    """Training produced a NaN or infinite loss; the message names the step and the loss terms."""


def check_finite(losses: dict[str, torch.Tensor | float], step: int) -> None:
    """Raise :class:`NonFiniteLossError` naming every non-finite term of ``losses`` at ``step``."""
    bad = {}
    for name, value in losses.items():
        v = float(value.detach()) if isinstance(value, torch.Tensor) else float(value)
        if not math.isfinite(v):
            bad[name] = v
    if bad:
        terms = ", ".join(f"{k}={v}" for k, v in bad.items())
        raise NonFiniteLossError(
            f"non-finite loss at global step {step}: {terms}. The last good checkpoint is kept; "
            "lower the learning rate or check the inputs of this batch.")


class FiniteLossGuard(pl.Callback):
    """Stops training with a clear error when the training loss becomes NaN or infinite.

    The LightningModule's ``training_step`` must return a dict holding ``loss`` and may hold other terms under
    ``loss_*`` keys; all of them are checked after every batch.
    """

    def on_train_batch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any,
                           batch: Any, batch_idx: int) -> None:
        if not isinstance(outputs, dict):
            return
        terms = {k: v for k, v in outputs.items() if k == "loss" or k.startswith("loss_")}
        check_finite(terms, trainer.global_step)
