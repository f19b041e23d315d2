"""A callback used by the resume test: at the start of training it records the step count and optimizer state."""

from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
import torch


class RecordTrainStart(pl.Callback):
    """Saves ``{"global_step", "optimizer"}`` to ``path`` when training (re)starts."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)

    def on_train_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        torch.save({"global_step": trainer.global_step, "optimizer": trainer.optimizers[0].state_dict()}, self.path)
