"""Training the forensic detector with Lightning: features are extracted once per split (cached), then an MLP
trains on them; every validation epoch re-fits the calibration (logit / real-anomaly standardisation, Platt scaling)
and the real-calibrated threshold, which are
buffers of the detector and so live in the checkpoint.

``python tools/train.py --config configs/forensics/tiny.yaml``
"""

from __future__ import annotations

from typing import Any, Sequence

import lightning as L
import numpy as np
import torch
import torch.nn.functional as F
from sklearn.metrics import roc_auc_score
from torch.utils.data import DataLoader, TensorDataset

from vision.data.datamodule import ResumableDataModule
from vision.errors import DataError
from vision.forensics.features import split_features
from vision.forensics.model import ForensicDetector, calibrate, feature_matrix
from vision.forensics.tools import build_tools, feature_names

__all__ = ["ForensicFeatureDataModule", "ForensicsModule", "DEFAULT_TOOLS", "tool_reliability"]

DEFAULT_TOOLS = ("spectrum", "residual", "npr", "temporal", "motion", "codec", "geometry")


def tool_reliability(x: np.ndarray, y: np.ndarray, names: Sequence[str]) -> dict[str, float]:
    """Per tool, the best single-feature AUC (orientation-free, ``max(auc, 1 - auc)``) on ``x [N, F]``;
    0.5 when it cannot be measured (one class, or no finite values)."""
    best: dict[str, float] = {}
    for j, name in enumerate(names):
        tool = name.split(".")[0]
        col = x[:, j]
        ok = np.isfinite(col)
        auc = 0.5
        if ok.sum() >= 4 and len(np.unique(y[ok])) == 2:
            a = float(roc_auc_score(y[ok], col[ok]))
            auc = max(a, 1.0 - a)
        best[tool] = max(best.get(tool, 0.5), auc)
    return best


class ForensicFeatureDataModule(ResumableDataModule):
    """Tool features of two splits as tensors: batches ``(features float [B, F] (nan = missing), label [B])``.

    Args:
        train_split / val_split: split JSON files with labelled videos.
        tools: tool names (see :data:`vision.forensics.tools.TOOL_NAMES`).
        size / max_frames: clip policy of :func:`vision.forensics.features.load_clip`.
        cache_dir: feature cache folder (None: no cache). batch_size: training batch size.
    """

    def __init__(self, train_split: str, val_split: str, tools: Sequence[str] = DEFAULT_TOOLS, size: int = 64,
                 max_frames: int = 16, cache_dir: str | None = None, batch_size: int = 64) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.tool_objects = build_tools(list(tools))
        self.names = feature_names(self.tool_objects)
        self.arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def load(self, which: str) -> tuple[np.ndarray, np.ndarray]:
        """Features ``float32 [N, F]`` (nan = missing) and labels ``int64 [N]`` of ``"train"`` or ``"val"``."""
        if which not in self.arrays:
            split = self.hparams.train_split if which == "train" else self.hparams.val_split
            rows, labels, _ = split_features(split, self.tool_objects, self.hparams.size, self.hparams.max_frames,
                                             self.hparams.cache_dir)
            if len(np.unique(labels)) < 2:
                raise DataError("a forensic split needs both real and generated videos", file=split,
                                field="videos[].label", value=sorted(set(labels.tolist())))
            self.arrays[which] = (feature_matrix(rows, self.names), labels)
        return self.arrays[which]

    def setup(self, stage: str | None = None) -> None:
        self.load("train")
        self.load("val")

    def _dataset(self, which: str) -> TensorDataset:
        x, y = self.load(which)
        return TensorDataset(torch.as_tensor(x), torch.as_tensor(y, dtype=torch.float32))

    def train_dataloader(self) -> DataLoader:
        return self.train_loader(self._dataset("train"), self.hparams.batch_size, 0, None, with_seeds=False)

    def val_dataloader(self) -> DataLoader:
        dataset = self._dataset("val")
        return self.eval_loader(dataset, len(dataset), 0, None)


class ForensicsModule(L.LightningModule):
    """The detector's LightningModule.

    Args:
        tools: tool names; they fix the feature list (and must match the datamodule's).
        hidden: MLP width. lr / weight_decay: AdamW. pass_rate: share of real validation videos below the
            threshold. size / max_frames: the clip policy, stored for the predictor.
    """

    def __init__(self, tools: Sequence[str] = DEFAULT_TOOLS, hidden: int = 32, lr: float = 3e-3,
                 weight_decay: float = 5e-2, pass_rate: float = 0.95, size: int = 64, max_frames: int = 16) -> None:
        super().__init__()
        self.save_hyperparameters()
        self.names = feature_names(build_tools(list(tools)))
        self.detector = ForensicDetector(self.names, hidden=hidden)
        self.register_buffer("reliability", torch.full((len(tools),), 0.5))
        self._val: list[tuple[torch.Tensor, torch.Tensor]] = []
        self._fitted_stats = False

    def setup(self, stage: str | None = None) -> None:
        """Standardisation and the real reference come from the training features (once, before training)."""
        dm = getattr(self.trainer, "datamodule", None) if self._trainer is not None else None
        if stage == "fit" and dm is not None and not self._fitted_stats:
            x, y = dm.load("train")
            if list(dm.names) != self.names:
                raise DataError("datamodule tools differ from the model's", field="data.init_args.tools",
                                value=list(dm.hparams.tools))
            self.detector.set_normalisation(x)
            self.detector.set_reference(x, y)
            self._fitted_stats = True

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        return self.detector(features)

    def _loss(self, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x, y = batch
        pos = y.mean().clamp(0.05, 0.95)
        weight = torch.where(y > 0.5, 0.5 / pos, 0.5 / (1 - pos))
        return F.binary_cross_entropy_with_logits(self.detector(x), y, weight=weight)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> dict[str, torch.Tensor]:
        loss = self._loss(batch)
        self.log("train/loss", loss, prog_bar=True, batch_size=len(batch[1]))
        return {"loss": loss}

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        loss = self._loss(batch)
        self.log("val/loss", loss, prog_bar=True, batch_size=len(batch[1]))
        self._val.append((batch[0].detach().cpu(), batch[1].detach().cpu()))

    def on_validation_epoch_end(self) -> None:
        if not self._val:
            return
        x = torch.cat([v[0] for v in self._val]).numpy()
        y = torch.cat([v[1] for v in self._val]).numpy().astype(np.int64)
        self._val.clear()
        calibrate(self.detector, x, y, self.hparams.pass_rate)
        with torch.no_grad():
            probs = self.detector.probability(torch.as_tensor(x)).numpy()
        if len(np.unique(y)) == 2:
            self.log("val/auc", float(roc_auc_score(y, probs)))
            self.log("val/real_acc", float((probs[y == 0] < float(self.detector.threshold)).mean()))
        rel = tool_reliability(x, y, self.names)
        self.reliability.copy_(torch.tensor([rel.get(t, 0.5) for t in self.hparams.tools]))

    def configure_optimizers(self) -> Any:
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=self.hparams.weight_decay)
