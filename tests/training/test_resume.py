"""SIGKILL mid-epoch, resume from the last checkpoint: the step count and the optimizer state continue exactly.

The process kills itself at a fixed step (``KillAtStep``) rather than being killed from outside after polling: a
poll can miss the middle of a ten-step epoch on a loaded machine. A kill during a checkpoint write is covered by
``test_checkpoint_io``."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from vision.synthetic.scenes import write_split
from vision.training.checkpoint_io import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # tools/train.py killed mid-epoch, then resumed


def _config(tmp: Path, train: Path, val: Path, max_steps: int, probe: Path, kill_at: int | None = None) -> Path:
    callbacks = [
        {"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
         "init_args": {"dirpath": str(tmp / "ckpt"), "save_last": True, "save_top_k": 0, "every_n_train_steps": 2}},
        {"class_path": "tests.training.resume_probe.RecordTrainStart", "init_args": {"path": str(probe)}},
    ]
    if kill_at is not None:
        callbacks.append({"class_path": "tests.training.resume_probe.KillAtStep", "init_args": {"step": kill_at}})
    cfg = {
        "seed_everything": 0,
        "trainer": {
            "accelerator": "cpu", "devices": 1, "max_steps": max_steps, "max_epochs": -1,
            "default_root_dir": str(tmp / "run"), "logger": False, "enable_progress_bar": False,
            "num_sanity_val_steps": 0, "limit_val_batches": 0,
            "callbacks": callbacks,
        },
        "model": {"class_path": "vision.geometry.lightning.GeometryModule",
                  "init_args": {"config": {"size": "tiny", "image_size": 32}, "warmup_steps": 5}},
        "data": {"class_path": "vision.data.datamodule.MultiViewDataModule",
                 "init_args": {"train_split": str(train), "val_split": str(val), "views": 2, "batch_size": 1,
                               "image_size": 32, "num_workers": 0}},
    }
    path = tmp / f"config_{max_steps}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_sigkill_mid_epoch_then_resume(tmp_path):
    data = tmp_path / "data"
    train = write_split(data, "train", scenes=10, views=4, size=32, mode="video", seed=3)
    val = write_split(data, "val", scenes=1, views=4, size=32, mode="video", seed=3)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    probe1, probe2 = tmp_path / "start1.pt", tmp_path / "start2.pt"
    # random_window draws one 2-view window per video and epoch: 10 videos -> 10 steps per epoch
    cmd = [sys.executable, str(ROOT / "tools" / "train.py"), "--config"]
    killed_run = subprocess.run(cmd + [str(_config(tmp_path, train, val, 10_000, probe1, kill_at=6))], cwd=ROOT,
                                env=env, capture_output=True, text=True, timeout=240)
    assert killed_run.returncode == -9, f"training should die by SIGKILL: {killed_run.stderr[-2000:]}"
    last = tmp_path / "ckpt" / "last.ckpt"
    killed = load_checkpoint(last)
    step = killed["global_step"]
    loops = killed["loops"]["fit_loop"]
    batches_per_epoch = 10
    assert step == 6 and step % batches_per_epoch != 0, "the kill should land mid-epoch"
    assert loops["epoch_loop.batch_progress"]["current"]["completed"] % batches_per_epoch != 0

    resumed = subprocess.run(cmd + [str(_config(tmp_path, train, val, step + 4, probe2)), "--ckpt_path", str(last)],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    start = torch.load(probe2, weights_only=True)
    assert start["global_step"] == step
    saved = killed["optimizer_states"][0]
    restored = start["optimizer"]
    assert restored["param_groups"] == saved["param_groups"]
    assert saved["state"].keys() == restored["state"].keys()
    for key, state in saved["state"].items():
        for name, value in state.items():
            assert torch.equal(torch.as_tensor(value), torch.as_tensor(restored["state"][key][name])), (key, name)
    assert not [p for p in last.parent.iterdir() if p.suffix == ".tmp"], "leftover temporary files were not removed"
    final = load_checkpoint(last)
    assert final["global_step"] == step + 4  # checkpoints every 2 steps; step is even
