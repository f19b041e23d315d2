"""Callbacks the resume tests stop runs with, at a given step: real signals to the process group (a subprocess run,
as a scheduler stops it) or their in-process stand-ins."""

from __future__ import annotations

import os

import lightning.pytorch as pl


class SignalAtStep(pl.Callback):
    """Sends ``signal`` to its whole process group (DataLoader workers included, as a scheduler does) when the
    training batch after global step ``step`` starts; once."""

    def __init__(self, step: int, signal: int) -> None:
        self.step, self.signal, self.sent = step, signal, False

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch, batch_idx: int) -> None:
        if not self.sent and trainer.global_step >= self.step:
            self.sent = True
            os.killpg(os.getpgid(0), self.signal)


class Killed(BaseException):
    """What :class:`RaiseAtStep` raises: a stop without any cleanup of the run's state (a SIGKILL's effect on disk,
    in-process); a BaseException, so no handler of the training code catches it."""


class RaiseAtStep(pl.Callback):
    """Raises :class:`Killed` when the training batch after global step ``step`` starts, or sends ``SIGTERM`` to
    its own process (``signal=15``: Lightning's handler then stops the run after that batch): the in-process
    stand-ins of a SIGKILL and of :class:`SignalAtStep`'s SIGTERM."""

    def __init__(self, step: int, signal: int = 9) -> None:
        self.step, self.signal, self.done = step, signal, False

    def on_train_batch_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch, batch_idx: int) -> None:
        if self.done or trainer.global_step < self.step:
            return
        self.done = True
        if self.signal == 9:
            raise Killed(f"stopped as step {trainer.global_step + 1} starts")
        os.kill(os.getpid(), self.signal)
