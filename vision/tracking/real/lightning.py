"""Training the real tracker's presence head with Lightning (``python tools/train.py --config
configs/tracking/real.yaml``; ``real_2d.yaml`` trains the 2D-memory control the same way).

:class:`PresenceDataModule` collects the training data once (:mod:`vision.tracking.real.cue_data`: the tracker on
camera-path clips over photographs, never over the real clips it is evaluated on) and caches it in ``cache``
(written atomically; a cache made from other photographs or settings is refused by name, not reused). Clips are
split by their photograph: every ``val_every``-th photograph's clips are the validation split. The labelled
answers (label 0 or 1) are the rows.

:class:`RealTrackerModule` holds a :class:`~vision.tracking.real.model.RealG2TAM` whose pretrained parts (NanoTrack,
TCMonoDepth) are frozen; only the presence head trains, with binary cross-entropy, its input standardised by the
training rows. Validation logs ``val/AUC`` (ROC area) and ``val/accuracy`` (at 0.5) of the presence calls. The
checkpoint keeps the tracker's config as plain data under ``hyper_parameters.config`` and every weight under
``model.``: :func:`vision.tracking.real.checkpoint.load_real_tracker` reads it with ``weights_only=True``.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path
from typing import Any

import lightning as L
import numpy as np
import torch
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics.classification import BinaryAUROC

from vision.data.datamodule import ResumableDataModule
from vision.data.io import atomic_write_bytes
from vision.errors import DataError
from vision.tracking.real.model import RealG2TAM, RealTrackerConfig

__all__ = ["PresenceDataModule", "RealTrackerModule"]


class PresenceDataModule(ResumableDataModule):
    """Cue rows of the presence head (see the module docstring).

    Args:
        photos: a folder of photographs (besides scikit-image's); None: scikit-image's only.
        cache: the ``.npz`` the collected rows are kept in.
        clips_per_object, frames, width, height: the camera-path clips (per object, length, frame size).
        val_every: every ``val_every``-th photograph is a validation photograph.
        batch_size: rows per batch.
        seed: the objects' and clips' random seed.
    """

    def __init__(self, photos: str | None = "datasets/real_checked_photos", cache: str = "runs/tracking/real/cues.npz",
                 clips_per_object: int = 3, frames: int = 48, width: int = 320, height: int = 240,
                 val_every: int = 4, batch_size: int = 512, seed: int = 0) -> None:
        super().__init__()
        self.photos, self.cache = photos, Path(cache)
        self.val_split = str(self.cache)  # the rows file serves every stage
        self.settings = {"photos": photos, "clips_per_object": clips_per_object, "frames": frames,
                         "size": [width, height], "seed": seed}
        self.val_every, self.batch_size = val_every, batch_size
        self.rows: dict[str, np.ndarray] | None = None

    def _fingerprint(self, names: list[str]) -> str:
        """What the rows depend on: the settings, the photographs' names, the cues and the clips' events."""
        from vision.tracking.real.camera_paths import EVENTS
        from vision.tracking.real.cues import CUES

        content = {**self.settings, "names": names, "cues": list(CUES), "events": list(EVENTS)}
        return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()

    def collect(self) -> dict[str, np.ndarray]:
        """The rows: read from the cache, or collected and cached."""
        from vision.tracking.real.cue_data import builtin_photos, collect_cues, folder_photos, photo_objects

        photos = builtin_photos() + (folder_photos(self.photos) if self.photos else [])
        fingerprint = self._fingerprint([name for name, _ in photos])
        if self.cache.exists():
            with np.load(self.cache) as data:
                if str(data["fingerprint"]) != fingerprint:
                    raise DataError("the cached presence rows were collected from other photographs or settings; "
                                    "remove the file to collect them again", file=self.cache)
                return {k: data[k] for k in data.files}
        model = RealG2TAM()
        objects = photo_objects(photos, seed=self.settings["seed"])
        rows = collect_cues(photos, objects, model.make_target, model.perception, self.settings["clips_per_object"],
                            self.settings["frames"], tuple(self.settings["size"]), self.settings["seed"],
                            log=lambda line: print(line, flush=True))
        rows["fingerprint"] = np.array(fingerprint)
        self.cache.parent.mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        np.savez(buffer, **rows)
        atomic_write_bytes(self.cache, buffer.getvalue())
        return rows

    def setup(self, stage: str | None = None) -> None:
        if self.rows is None:
            self.rows = self.collect()

    def _split(self, validation: bool) -> TensorDataset:
        rows = self.rows
        keep = (rows["label"] >= 0) & (((rows["photo"] % self.val_every) == 0) == validation)
        if not keep.any():
            raise DataError(f"no {'validation' if validation else 'training'} rows in the presence data",
                            file=self.cache)
        return TensorDataset(torch.from_numpy(rows["cues"][keep]), torch.from_numpy(rows["label"][keep]).float())

    def training_cues(self) -> torch.Tensor:
        """Every training row's cues (the head's standardisation)."""
        self.setup()
        return self._split(False).tensors[0]

    def train_dataloader(self) -> DataLoader:
        """Shuffled from the run's seed and epoch (resumes exactly, mid-epoch included)."""
        return self.train_loader(self._split(False), self.batch_size, 0, None, with_seeds=False)

    def val_dataloader(self) -> DataLoader:
        return self.eval_loader(self._split(True), 4096, 0, None)


class RealTrackerModule(L.LightningModule):
    """Trains the presence head of a :class:`RealG2TAM` (see the module docstring).

    Args:
        config: the tracker's :class:`~vision.tracking.real.model.RealTrackerConfig` fields.
        lr: AdamW learning rate; weight_decay: its decay.
    """

    def __init__(self, config: dict[str, Any] | None = None, lr: float = 3e-3, weight_decay: float = 1e-4) -> None:
        super().__init__()
        config = RealTrackerConfig(**(config or {})).to_dict()
        self.save_hyperparameters({"config": config, "lr": lr, "weight_decay": weight_decay, "task": "tracking",
                                   "real_tracker": True})
        self.model = RealG2TAM(config)
        self.auroc = BinaryAUROC()
        self.val_hits = 0.0
        self.val_rows = 0

    def setup(self, stage: str) -> None:
        if stage == "fit" and self.trainer is not None and self.trainer.datamodule is not None \
                and not bool(self.model.head.std.ne(1).any() or self.model.head.mean.ne(0).any()):
            self.model.head.set_normalisation(self.trainer.datamodule.training_cues())

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        cues, labels = batch
        loss = torch.nn.functional.binary_cross_entropy_with_logits(self.model.head(cues), labels)
        self.log("train/loss", loss, prog_bar=True, batch_size=len(labels))
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        cues, labels = batch
        logits = self.model.head(cues)
        self.auroc.update(torch.sigmoid(logits), labels.long())
        self.log("val/loss", torch.nn.functional.binary_cross_entropy_with_logits(logits, labels),
                 batch_size=len(labels))
        self.val_hits += float(((logits >= 0) == (labels > 0.5)).sum())
        self.val_rows += len(labels)

    def on_validation_epoch_end(self) -> None:
        self.log("val/AUC", self.auroc.compute(), prog_bar=True)
        self.auroc.reset()
        hits = self.all_gather(torch.tensor([self.val_hits, float(self.val_rows)]))
        hits = hits.reshape(-1, 2).sum(0)
        self.log("val/accuracy", hits[0] / hits[1].clamp(min=1))
        self.val_hits, self.val_rows = 0.0, 0

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.AdamW(self.model.head.parameters(), lr=self.hparams.lr,
                                 weight_decay=self.hparams.weight_decay)

