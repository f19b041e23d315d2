"""Callbacks shared by every task."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
import torch
from lightning.pytorch.callbacks import ModelCheckpoint

from vision.errors import VisionError
from vision.rng import get_rng_state, set_rng_state

__all__ = ["NonFiniteLossError", "FiniteLossGuard", "RandomStateCheckpoint", "StopCheckpoint", "check_finite",
           "last_checkpoint_path"]


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


def last_checkpoint_path(trainer: pl.Trainer) -> Path:
    """Where a run keeps its latest checkpoint, the file a resume reads: ``last.ckpt`` in the folder of the first
    :class:`ModelCheckpoint` that writes one (``save_last``, or ``filename: last``), else in
    ``<default_root_dir>/checkpoints``."""
    for callback in trainer.checkpoint_callbacks:
        if isinstance(callback, ModelCheckpoint) and callback.dirpath is not None and (
                callback.save_last or callback.filename == callback.CHECKPOINT_NAME_LAST):
            return Path(callback.dirpath) / f"{callback.CHECKPOINT_NAME_LAST}{callback.FILE_EXTENSION}"
    return Path(trainer.default_root_dir) / "checkpoints" / "last.ckpt"


class StopCheckpoint(pl.Callback):
    """On SIGTERM (a scheduler's pre-emption, ``kill``), writes a checkpoint of the step training stopped at.

    Lightning catches SIGTERM, finishes the running batch (and a validation due after it) and raises
    ``SIGTERMException``; this callback then saves the run to :func:`last_checkpoint_path`, so the command that
    resumes a run (``--ckpt_path .../last.ckpt``, as ``make train`` does) continues from that step, and says so in
    one line on stderr. The checkpoint holds the same state as one written by ``ModelCheckpoint`` after that batch
    (data position, random state, loops), so the resumed run ends on the weights of an uninterrupted one.
    """

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        if not trainer.received_sigterm or trainer.state.fn != "fit" or trainer.sanity_checking:
            return
        if _epoch_completed(trainer):
            _start_next_epoch_counters(trainer)
        path = last_checkpoint_path(trainer)
        trainer.save_checkpoint(path)  # every rank calls it (sharded strategies gather); rank 0 writes
        if trainer.is_global_zero:
            print(f"SIGTERM: stopped after global step {trainer.global_step} (epoch {trainer.current_epoch}); "
                  f"saved {path}; resume with --ckpt_path {path}", file=sys.stderr, flush=True)


def _epoch_completed(trainer: pl.Trainer) -> bool:
    """Lightning stopped between epochs: the last epoch ran to its end (hooks included) and the next has not begun
    (a SIGTERM seen at the end of an epoch's last batch is raised there, after the epoch's validation)."""
    progress = trainer.fit_loop.epoch_progress.current
    return progress.ready == progress.started == progress.processed == progress.completed


def _start_next_epoch_counters(trainer: pl.Trainer) -> None:
    """Reset the training epoch loop's per-epoch counters as Lightning does when an epoch begins
    (``_TrainingEpochLoop.reset`` of a run that is not restarting). Lightning 2.6 restores a checkpoint written
    between epochs with the finished epoch's batch count still current and, in step-based training (where it always
    restarts), runs the next epoch with no batches; with these counters it runs that epoch whole."""
    epoch_loop = trainer.fit_loop.epoch_loop
    epoch_loop.batch_progress.reset_on_run()
    epoch_loop.scheduler_progress.reset_on_run()
    epoch_loop.automatic_optimization.optim_progress.reset_on_run()
    epoch_loop.val_loop.batch_progress.total.reset()
