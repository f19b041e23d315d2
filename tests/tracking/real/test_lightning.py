"""Training the presence head (vision.tracking.real.lightning) with Lightning: rows read from a cache written for
the data module's settings (a cache of other settings is refused by name), validation logs val/AUC, and a run
stopped after its first epochs and resumed from last.ckpt ends with the very weights of an uninterrupted run."""

from __future__ import annotations

import io
from pathlib import Path

import lightning as L
import numpy as np
import pytest
import torch

from vision.data.io import atomic_write_bytes
from vision.errors import DataError
from vision.tracking.real.cues import CUES
from vision.tracking.real.lightning import PresenceDataModule, RealTrackerModule


def _cache(path: Path, module: PresenceDataModule, fingerprint: str | None = None) -> None:
    """32 rows: 24 training rows (photographs 1-3) and 8 validation rows (photograph 0), learnable labels."""
    from vision.tracking.real.cue_data import builtin_photos

    rng = np.random.default_rng(0)
    cues = rng.normal(size=(32, len(CUES))).astype(np.float32)
    label = (cues[:, 0] > 0).astype(np.int64)
    rows = {"cues": cues, "label": label, "clip": np.arange(32) // 4, "photo": np.arange(32) % 4,
            "fingerprint": np.array(fingerprint or module._fingerprint([n for n, _ in builtin_photos()]))}
    buffer = io.BytesIO()
    np.savez(buffer, **rows)
    atomic_write_bytes(path, buffer.getvalue())


def _fit(root: Path, cache: Path, epochs: int, resume: Path | None = None) -> RealTrackerModule:
    L.seed_everything(3)
    data = PresenceDataModule(photos=None, cache=str(cache), batch_size=8)
    module = RealTrackerModule()
    checkpoint = L.pytorch.callbacks.ModelCheckpoint(dirpath=root, filename="last", save_top_k=1)
    trainer = L.Trainer(max_epochs=epochs, accelerator="cpu", logger=False, enable_progress_bar=False,
                        enable_model_summary=False, callbacks=[checkpoint], default_root_dir=root)
    trainer.fit(module, data, ckpt_path=resume)
    assert "val/AUC" in trainer.callback_metrics
    return module


def test_resume_is_exact(pretrained_weights: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cues.npz"
    _cache(cache, PresenceDataModule(photos=None, cache=str(cache)))
    whole = _fit(tmp_path / "whole", cache, 4)
    _fit(tmp_path / "parts", cache, 2)
    resumed = _fit(tmp_path / "parts", cache, 4, resume=tmp_path / "parts" / "last.ckpt")
    for key, value in whole.model.head.state_dict().items():
        assert torch.equal(resumed.model.head.state_dict()[key], value), key
    assert not torch.equal(whole.model.head.mean, torch.zeros(len(CUES)))  # standardised by the training rows
    saved = torch.load(tmp_path / "parts" / "last.ckpt", weights_only=True)
    assert saved["hyper_parameters"]["real_tracker"] is True and saved["hyper_parameters"]["config"]["memory"] == "3d"


def test_a_cache_of_other_settings_is_refused(tmp_path: Path) -> None:
    cache = tmp_path / "cues.npz"
    module = PresenceDataModule(photos=None, cache=str(cache))
    _cache(cache, module, fingerprint="0" * 64)
    with pytest.raises(DataError, match="other photographs or settings"):
        module.setup()
