"""Training, validating and testing the toy model with Lightning (``tools/train.py fit|test --config C``).

Batches come from :class:`ToyDataModule`: ``images`` float ``[B, 3, H, W]`` in [0, 1] and ``image_ids`` int64
``[B]``. The loss is the mean absolute error of the per-pixel brightness (:func:`.task.brightness`). Validation and
test hand each image's result (:func:`.results.image_results`) to the module's ``TaskEvaluator("toy")``, which
scores the epoch against the stage's split with the registered scorer and logs ``val/brightness_mae``, ... (``test``
also prints the table). ``predict_step`` returns ``(image_id, [result])`` pairs for the results writer.
"""

from __future__ import annotations

from typing import Any

import lightning as L
import numpy as np
import torch

from vision.data.coco import load_split
from vision.data.datamodule import SplitDataModule
from vision.data.datasets import DetectionImageDataset
from vision.errors import InputError
from vision.evaluation.evaluate import format_table
from vision.training.evaluator import TaskEvaluator, log_losses

from .results import image_results
from .task import ToyConfig, brightness, build_model

__all__ = ["ToyDataModule", "ToyModule", "collate_images"]


def collate_images(samples: list[dict[str, Any]]) -> dict[str, torch.Tensor]:
    """Samples of :class:`~vision.data.datasets.DetectionImageDataset` (``image`` uint8 ``[H, W, 3]``, one size)
    -> ``{"images": float [B, 3, H, W] in [0, 1], "image_ids": int64 [B]}``; boxes and masks are not used."""
    images = np.stack([sample["image"] for sample in samples])
    return {"images": torch.from_numpy(images).permute(0, 3, 1, 2).float().div(255.0),
            "image_ids": torch.tensor([sample["image_id"] for sample in samples], dtype=torch.int64)}


class ToyDataModule(SplitDataModule):
    """The images of COCO-format splits (native size, no augmentation; the images of one split share a size).

    Args:
        train_split / val_split: split JSON files.
        test_split / predict_split: the splits of ``test`` and ``predict`` (default: the one before).
        batch_size / num_workers: DataLoader settings.
    """

    collate = staticmethod(collate_images)

    def __init__(self, train_split: str, val_split: str, test_split: str | None = None,
                 predict_split: str | None = None, batch_size: int = 2, num_workers: int = 0) -> None:
        super().__init__()
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InputError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        self.save_hyperparameters()
        self.train_split, self.val_split = train_split, val_split
        self.test_split, self.predict_split = test_split, predict_split
        self.batch_size, self.num_workers = batch_size, num_workers

    def setup(self, stage: str | None = None) -> None:
        if stage in (None, "fit") and self.train_dataset is None:
            self.train_dataset = DetectionImageDataset(load_split(self.train_split))
        self._setup_eval(stage, lambda path: DetectionImageDataset(load_split(path)))


class ToyModule(L.LightningModule):
    """Train a toy model built by :func:`.task.build_model` from ``config``.

    Args:
        config: the model (:class:`~.task.ToyConfig`, a mapping of its fields, or None for the defaults).
        lr: Adam's learning rate.
    """

    def __init__(self, config: ToyConfig = ToyConfig(), lr: float = 0.05) -> None:
        super().__init__()
        config = ToyConfig.from_value(config)
        self.save_hyperparameters(ignore=["config"])
        self.hparams["config"] = config.to_dict()
        self.config = config
        self.model = build_model(config)
        self.evaluator = TaskEvaluator(ToyConfig.task)

    def on_save_checkpoint(self, checkpoint: dict[str, Any]) -> None:
        """Record the task's name in the checkpoint (every loader reads it; nothing guesses it from a path)."""
        checkpoint["task"] = self.evaluator.task

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """``[B, 3, H, W]`` in [0, 1] -> brightness ``[B, H, W]``."""
        return self.model(images)

    def _loss(self, batch: dict[str, torch.Tensor], stage: str) -> tuple[torch.Tensor, torch.Tensor]:
        """``(loss, predicted maps [B, H, W])``; the loss logged under the stage's prefix."""
        maps = self.model(batch["images"])
        loss = torch.nn.functional.l1_loss(maps, brightness(batch["images"]))
        log_losses(self, stage, {"loss": loss}, batch["images"].shape[0])
        return loss, maps

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        return self._loss(batch, "train")[0]

    def _evaluation_step(self, batch: dict[str, torch.Tensor], stage: str) -> None:
        _, maps = self._loss(batch, stage)
        for result in image_results(batch["image_ids"].tolist(), maps):
            self.evaluator.process(result["image_id"], [result])

    def validation_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._evaluation_step(batch, "validate")

    def test_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> None:
        self._evaluation_step(batch, "test")

    def predict_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> list[tuple[int, list[dict]]]:
        """``[(image_id, [{image_id, brightness}])]`` for :class:`vision.training.writer.ResultsWriter`."""
        results = image_results(batch["image_ids"].tolist(), self.model(batch["images"]))
        return [(result["image_id"], [result]) for result in results]

    def on_validation_epoch_end(self) -> None:
        self.evaluator.evaluate(self, "validate")

    def on_test_epoch_end(self) -> None:
        metrics = self.evaluator.evaluate(self, "test")
        if metrics is not None and self.trainer.is_global_zero:
            print(format_table(metrics))

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.model.parameters(), lr=self.hparams.lr)

#: the registry's fixed name (vision.tasks.PARTS)
Module = ToyModule
