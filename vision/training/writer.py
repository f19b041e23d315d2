"""The prediction writer: ``tools/train.py predict`` writes one merged COCO-format results file for the split.

A task's ``predict_step`` returns a list of ``(key, results)`` pairs (see :mod:`vision.training.collect`); the
writer keeps them, gathers them from every rank at the end of the epoch (one copy per key, in key order) and rank 0
writes the results as one JSON list, atomically, to ``output`` (default ``<default_root_dir>/predictions.json``).
``vision evaluate`` scores that file to the figures ``tools/train.py test`` prints.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.callbacks import BasePredictionWriter

from vision.data.io import atomic_write_json
from vision.errors import InputError
from vision.training.collect import gather_unique

__all__ = ["ResultsWriter"]


class ResultsWriter(BasePredictionWriter):
    """Write the predict epoch's results to ``output`` (a ``.json`` path; None: ``<default_root_dir>/predictions.json``)."""

    def __init__(self, output: str | None = None) -> None:
        super().__init__(write_interval="batch")
        self.output = output
        self._items: list[tuple[Hashable, list[dict]]] = []
        self.written: Path | None = None

    def path(self, trainer: Trainer) -> Path:
        return Path(self.output) if self.output else Path(trainer.default_root_dir) / "predictions.json"

    def on_predict_epoch_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self._items = []

    def write_on_batch_end(self, trainer: Trainer, pl_module: LightningModule, prediction: Any,
                           batch_indices: Sequence[int] | None, batch: Any, batch_idx: int,
                           dataloader_idx: int) -> None:
        if prediction is None:
            return
        if not isinstance(prediction, list) or not all(isinstance(p, tuple) and len(p) == 2 for p in prediction):
            raise InputError(f"{type(pl_module).__name__}.predict_step must return a list of (key, results) pairs "
                             "for ResultsWriter")
        self._items.extend((key, list(results)) for key, results in prediction)

    def on_predict_epoch_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        results = [r for rs in gather_unique(self._items) for r in rs]
        self._items = []
        path = self.path(trainer)
        if trainer.is_global_zero:
            atomic_write_json(path, results)
            print(f"wrote {len(results)} results to {path}")
        self.written = path
