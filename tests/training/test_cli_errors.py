"""A missing or corrupt checkpoint given to tools/train.py (``fit`` / ``test`` with --ckpt_path, and a tracking
config's geometry_checkpoint) is one error line naming the file on stderr and exit status 2, without a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from vision.synthetic.scenes import write_split

pytestmark = pytest.mark.slow  # tools/train.py in subprocesses

ROOT = Path(__file__).resolve().parents[2]


def bad_checkpoint(folder: Path, kind: str, hyper_parameters: dict | None = None) -> Path:
    """``garbage``: random bytes; ``missing``: no file; ``mismatched``: a readable checkpoint whose weights fit no
    model of ours (a tensor of every prefix the loaders look for, all of the wrong shape); ``foreign``: a bare state
    dict, not a Lightning checkpoint."""
    path = folder / f"{kind}.ckpt"
    if kind == "garbage":
        path.write_bytes(np.random.default_rng(0).bytes(512))
    elif kind == "mismatched":
        state = {f"{prefix}aggregator.camera_token": torch.zeros(3) for prefix in ("model.", "model.backbone.")}
        state["detector.net.0.weight"] = torch.zeros(3)
        torch.save({"state_dict": state, "hyper_parameters": hyper_parameters or {}, "global_step": 0,
                    "pytorch-lightning_version": "2.6.6"}, path)
    elif kind == "foreign":
        torch.save({"weight": torch.zeros(3)}, path)
    return path


def assert_one_error_line(code: int, stderr: str, path: Path) -> None:
    assert code == 2, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    errors = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and str(path) in errors[0], stderr[-3000:]


@pytest.fixture(scope="module")
def tracking_config(tmp_path_factory) -> Path:
    """configs/tracking/tiny.yaml on a one-scene synthetic split: one CPU step, no logger, no checkpoints."""
    folder = tmp_path_factory.mktemp("train")
    split = write_split(folder / "data", "train", scenes=1, views=4, size=32, mode="video", seed=1, threads=1)
    config = yaml.safe_load((ROOT / "configs" / "tracking" / "tiny.yaml").read_text())
    config["trainer"].update(accelerator="cpu", max_steps=1, default_root_dir=str(folder / "run"), logger=False,
                             callbacks=None, enable_checkpointing=False, enable_progress_bar=False,
                             num_sanity_val_steps=0, limit_val_batches=0, val_check_interval=None,
                             check_val_every_n_epoch=1)
    config["model"]["init_args"]["config"]["text_encoder"] = None
    config["data"]["init_args"].update(train_split=str(split), val_split=str(split), views=2, batch_size=1,
                                       num_workers=0, augment=False)
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.parametrize("kind", ["garbage", "missing", "mismatched", "foreign"])
@pytest.mark.parametrize("subcommand, option", [("fit", "--ckpt_path"), ("fit", "--model.init_args.geometry_checkpoint"),
                                                ("test", "--ckpt_path")])
def test_train_refuses_a_bad_checkpoint_in_one_line(tmp_path, tracking_config, subcommand, option, kind):
    ckpt = bad_checkpoint(tmp_path, kind)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, str(ROOT / "tools" / "train.py"), subcommand, "--config",
                           str(tracking_config), option, str(ckpt)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300)
    assert_one_error_line(proc.returncode, proc.stderr, ckpt)
