"""A callback of the detection DDP test: every rank writes the OOV bank it holds when training ends."""

from __future__ import annotations

from pathlib import Path

import lightning.pytorch as pl
import torch


class BankProbe(pl.Callback):
    """Saves ``pl_module.bank.state_dict()`` to ``<folder>/bank_rank<global rank>.pt`` at the end of training."""

    def __init__(self, folder: str) -> None:
        self.folder = Path(folder)

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        torch.save(pl_module.bank.state_dict(), self.folder / f"bank_rank{trainer.global_rank}.pt")
