"""The geometry task under DDP (two CPU processes, gloo): the validation metric gathered across ranks equals the
single-process figure of the same checkpoint on a split whose clip count the ranks do not divide (the sampler
pads one rank with a repeated clip), checkpoints are written once (best + last, no temporary files), and ``fit``
resumes from last.ckpt under DDP."""

from __future__ import annotations

import pytest

from tests.training.ddp import (checkpoint_files, last_logged, train_cli, training_config, validate_in_process,
                                write_config)
from vision.checkpoint import load_checkpoint
from vision.synthetic.scenes import write_split

pytestmark = [pytest.mark.slow, pytest.mark.long]  # tools/train.py under DDP (two processes)

METRICS = ("val/abs_rel", "val/delta_1.25", "val/AUC@30", "val/RRA@15", "val/chamfer", "val/match_pose/AUC@30")


def _model() -> dict:
    return {"class_path": "vision.geometry.lightning.GeometryModule",
            "init_args": {"config": {"size": "tiny", "image_size": 32, "match_dim": 8}, "warmup_steps": 1,
                          "match_weight": 1.0}}


def test_ddp_fit_validates_like_one_process_and_resumes(tmp_path):
    data = tmp_path / "data"
    train = write_split(data, "train", scenes=2, views=4, size=32, mode="unordered", seed=1, threads=1)
    val = write_split(data, "val", scenes=3, views=2, size=32, mode="unordered", seed=2, threads=1)  # 3 clips
    root = tmp_path / "run"
    datamodule = {"class_path": "vision.data.datamodule.MultiViewDataModule",
                  "init_args": {"train_split": str(train), "val_split": str(val), "views": 2, "batch_size": 1,
                                "num_workers": 0, "augment": False}}
    config = write_config(tmp_path / "fit.yaml", training_config(root, _model(), datamodule, max_steps=2,
                                                                 monitor="val/abs_rel", mode="min"))
    train_cli("fit", config, ddp=True)

    assert checkpoint_files(root) == ["best.ckpt", "last.ckpt"]
    last = root / "checkpoints" / "last.ckpt"
    assert load_checkpoint(last)["global_step"] == 2
    single = validate_in_process(config, last)
    for name in METRICS:
        assert single[name] == pytest.approx(last_logged(root, name), abs=1e-6), name
    assert single["val/clips"] == 3

    resumed = write_config(tmp_path / "resume.yaml", training_config(root, _model(), datamodule, max_steps=3,
                                                                     monitor="val/abs_rel", mode="min"))
    train_cli("fit", resumed, "--ckpt_path", str(last), ddp=True)
    assert load_checkpoint(last)["global_step"] == 3
    assert checkpoint_files(root) == ["best.ckpt", "last.ckpt"]
