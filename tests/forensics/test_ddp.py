"""The forensic detector under DDP (two CPU processes, gloo) through tools/train.py: the validation figure and the
calibration it re-fits are those of one process, the checkpoints are best + last only, and training resumes."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from lightning.pytorch.callbacks import Callback

from tests.forensics.conftest import FRAMES, SIZE, make_tiny_split
from tests.training.ddp import (
    ROOT,
    checkpoint_files,
    last_logged,
    train_cli,
    training_config,
    validate_in_process,
    write_config,
)
from vision.checkpoint import load_checkpoint
from vision.forensics.lightning import ForensicFeatureDataModule

pytestmark = [pytest.mark.slow, pytest.mark.long]  # tools/train.py under DDP (two processes)

TOOLS = ["spectrum", "npr", "temporal"]


class RankBuffers(Callback):
    """Writes every rank's detector buffers after each validation to ``out/buffers_rank{R}.pt``."""

    def __init__(self, out: str) -> None:
        self.out = out

    def on_validation_end(self, trainer, pl_module) -> None:
        if not trainer.sanity_checking:
            torch.save({k: v.detach().cpu() for k, v in pl_module.model.named_buffers()},
                       Path(self.out) / f"buffers_rank{trainer.global_rank}.pt")


@pytest.fixture(scope="module")
def odd_split(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The tiny split with a 7-video validation split (two ranks: the sampler pads one), features cached."""
    paths = make_tiny_split(tmp_path_factory.mktemp("aigv_ddp"))
    val = json.loads(paths["val"].read_text())
    val["videos"] = val["videos"][:-1]
    paths["val_odd"] = paths["root"] / "val_odd.json"
    paths["val_odd"].write_text(json.dumps(val))
    paths["cache"] = paths["root"] / "cache"
    dm = ForensicFeatureDataModule(str(paths["train"]), str(paths["val_odd"]), tools=TOOLS, image_size=SIZE,
                                   max_frames=FRAMES, cache_dir=str(paths["cache"]))
    dm.train_features()
    assert len(dm.eval_dataset("validate")) == 7
    return paths


def test_ddp_validation_equals_one_process_and_resumes(odd_split: dict[str, Path], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # the ranks import RankBuffers from this file
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    root = tmp_path / "run"
    root.mkdir()
    model = {"class_path": "vision.forensics.lightning.ForensicsModule",
             "init_args": {"config": {"tools": TOOLS, "hidden": 8, "image_size": SIZE, "max_frames": FRAMES},
                           "lr": 1e-2}}
    data = {"class_path": "vision.forensics.lightning.ForensicFeatureDataModule",
            "init_args": {"train_split": str(odd_split["train"]), "val_split": str(odd_split["val_odd"]),
                          "cache_dir": str(odd_split["cache"]), "batch_size": 4}}
    config = training_config(root, model, data, max_steps=3, monitor="val/AUC", mode="max")
    config["trainer"]["callbacks"].append({"class_path": "tests.forensics.test_ddp.RankBuffers",
                                           "init_args": {"out": str(root)}})
    path = write_config(tmp_path / "ddp.yaml", config)

    train_cli("fit", path, ddp=True)
    # (b) exactly best + last, written once
    assert checkpoint_files(root) == ["best.ckpt", "last.ckpt"]
    # every rank holds the same calibration, bit for bit, and the checkpoint holds it
    rank0, rank1 = (torch.load(root / f"buffers_rank{r}.pt", weights_only=True) for r in (0, 1))
    saved = {k[len("model."):]: v for k, v in load_checkpoint(root / "checkpoints" / "best.ckpt")["state_dict"].items()
             if k.startswith("model.") and k[len("model."):] in rank0}
    assert set(rank0) == set(rank1) == set(saved)
    for name in rank0:
        assert torch.equal(rank0[name], rank1[name]) and torch.equal(rank0[name], saved[name]), name

    # (a) the DDP figure (7 videos on two ranks, one padded) equals one process validating the same checkpoint
    single = validate_in_process(path, root / "checkpoints" / "best.ckpt",
                                 "--trainer.callbacks", "[]")
    for name in ("val/AUC", "val/ACC", "val/real_acc", "val/macro/AUC", "val/EER", "val/threshold", "val/num_real"):
        assert abs(last_logged(root, name) - single[name]) < 1e-6, name
    assert 0.0 <= single["val/AUC"] <= 1.0 and single["val/num_real"] + single["val/num_generated"] == 7
    assert single["val/threshold"] == float(saved["threshold"])  # validating re-fits the same calibration

    # (c) resume under DDP: the step count continues to the new max_steps
    train_cli("fit", path, "--ckpt_path", str(root / "checkpoints" / "last.ckpt"), "--trainer.max_steps", "5",
              "--trainer.val_check_interval", "5",
              ddp=True)
    assert load_checkpoint(root / "checkpoints" / "last.ckpt")["global_step"] == 5
    assert checkpoint_files(root) == ["best.ckpt", "last.ckpt"]
