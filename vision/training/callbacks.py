"""Callbacks shared by every task."""

from __future__ import annotations

import math
from typing import Any

import lightning.pytorch as pl
import torch

from vision.errors import VisionError
from vision.rng import get_rng_state, set_rng_state

__all__ = ["NonFiniteLossError", "FiniteLossGuard", "RandomStateCheckpoint", "check_finite"]


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


class RandomStateCheckpoint(pl.Callback):
    """Makes training randomness continue exactly across a checkpoint and leaves it untouched by validation.

    - Every checkpoint holds the global random state of torch, numpy and Python (:func:`vision.rng.get_rng_state`)
      as of the save; resuming restores it, so the draws of the next training step (prompt sampling, OOV
      synthesis, flips) are those of the uninterrupted run.
    - Validation (and Lightning's sanity check) runs between a capture and a restore of that state, so whether
      and when validation runs never shifts the training draws.

    With the datamodules' :class:`~vision.data.sampler.ResumableSampler` (data order and augmentation from the
    seed), a run killed and resumed from its last checkpoint ends with the same weights, bit for bit on the CPU, as
    one that was never interrupted. Under DDP the state saved is rank 0's.
    """

    def __init__(self) -> None:
        self._outside_validation: dict[str, Any] | None = None

    def state_dict(self) -> dict[str, Any]:
        # a checkpoint written at the end of validation must hold the training state, not validation's
        return {"rng": self._outside_validation or get_rng_state()}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        if "rng" in state_dict:
            set_rng_state(state_dict["rng"])

    def on_validation_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._outside_validation = get_rng_state()

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        if self._outside_validation is not None:
            set_rng_state(self._outside_validation)
            self._outside_validation = None
