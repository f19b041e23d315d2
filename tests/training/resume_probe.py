"""Callbacks used by the resume tests: one records the step count and optimizer state at the start of training, two
stop the process at a given step (SIGKILL to itself; any signal to its process group)."""

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


class SignalAtStep(pl.Callback):
    """Sends ``signal`` to its whole process group (DataLoader workers included, as a scheduler does), once: when the
    training batch after global step ``step`` starts, or (``during="validation"``) when a validation batch starts
    at or after that step."""

    def __init__(self, step: int, signal: int, during: str = "training") -> None:
        self.step, self.signal, self.during, self.sent = step, signal, during, False

    def _send(self, trainer: pl.Trainer, during: str) -> None:
        if not self.sent and during == self.during and trainer.global_step >= self.step \
                and not trainer.sanity_checking:
            self.sent = True
            os.killpg(os.getpgid(0), self.signal)

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch, batch_idx: int) -> None:
        self._send(trainer, "training")

    def on_validation_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch, batch_idx: int,
                                  dataloader_idx: int = 0) -> None:
        self._send(trainer, "validation")


class Killed(BaseException):
    """What :class:`RaiseAtStep` raises: a stop without any cleanup of the run's state (a SIGKILL's effect on disk,
    in-process); a BaseException, so no handler of the training code catches it."""


class RaiseAtStep(pl.Callback):
    """Raises :class:`Killed` when the training batch after global step ``step`` starts, or sends ``SIGTERM`` to
    its own process (``signal=15``: Lightning's handler then stops the run after that batch): the in-process
    stand-ins of :class:`KillAtStep` and :class:`SignalAtStep`."""

    def __init__(self, step: int, signal: int = 9) -> None:
        self.step, self.signal, self.done = step, signal, False

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch, batch_idx: int) -> None:
        if self.done or trainer.global_step < self.step:
            return
        self.done = True
        if self.signal == 9:
            raise Killed(f"stopped as step {trainer.global_step + 1} starts")
        os.kill(os.getpid(), self.signal)
