"""Where the stop checkpoint goes: the file a resume reads (``StopCheckpoint`` itself is exercised by the SIGTERM
runs of tests/training/test_reproducibility.py)."""

from __future__ import annotations

from pathlib import Path

import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint

from vision.training.callbacks import last_checkpoint_path


def _trainer(tmp_path: Path, *callbacks) -> L.Trainer:
    return L.Trainer(default_root_dir=tmp_path / "root", callbacks=list(callbacks), logger=False,
                     enable_progress_bar=False, accelerator="cpu")


def test_the_last_checkpoint_of_the_shipped_configs(tmp_path):
    best = ModelCheckpoint(dirpath=tmp_path / "ckpt", filename="best", monitor="val/x", save_top_k=1)
    last = ModelCheckpoint(dirpath=tmp_path / "ckpt", filename="last", monitor=None, save_top_k=1)
    assert last_checkpoint_path(_trainer(tmp_path, best, last)) == tmp_path / "ckpt" / "last.ckpt"


def test_save_last_names_its_folder(tmp_path):
    steps = ModelCheckpoint(dirpath=tmp_path / "steps", every_n_train_steps=1, save_last=True)
    assert last_checkpoint_path(_trainer(tmp_path, steps)) == tmp_path / "steps" / "last.ckpt"


def test_without_a_last_checkpoint_the_run_folder(tmp_path):
    best = ModelCheckpoint(dirpath=tmp_path / "ckpt", filename="best", monitor="val/x", save_top_k=1)
    assert last_checkpoint_path(_trainer(tmp_path, best)) == tmp_path / "root" / "checkpoints" / "last.ckpt"
