"""Callbacks used by the resume tests: one records the step count and optimizer state at the start of training, one
kills the process at a given step."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import lightning.pytorch as pl
import torch


class RecordTrainStart(pl.Callback):
    """Saves ``{"global_step", "optimizer"}`` to ``path`` when training (re)starts."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        torch.save({"global_step": trainer.global_step, "optimizer": trainer.optimizers[0].state_dict()}, self.path)


class KillAtStep(pl.Callback):
    """SIGKILLs its own process when the batch after global step ``step`` starts (the checkpoints of that step are
    written by then): an interruption at a known place, without a cleanup of any kind."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch, batch_idx: int) -> None:
        if trainer.global_step >= self.step:
            os.kill(os.getpid(), signal.SIGKILL)
