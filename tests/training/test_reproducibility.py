"""Bit-exact training on the CPU, for every task, through ``tools/train.py``:

- the same seed gives the same model: two uninterrupted runs in separate processes (different ``PYTHONHASHSEED``
  and number of DataLoader workers) end with identical weights and optimizer state;
- resume is exact: a run SIGKILLed mid-epoch (after a validation, so that it also checks that validation leaves
  the training randomness alone) and resumed from its last checkpoint ends with the weights and optimizer state
  of the uninterrupted run, bit for bit.

Each config switches on the randomness its task has: random windows, augmentation, sampled prompts and text
prompts through the real text encoder (tracking), flips, OOV synthesis and mining (detection), shuffled batches.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml

from vision.tasks import task_names
from vision.training.checkpoint_io import load_checkpoint

pytestmark = pytest.mark.slow  # trains every task twice in subprocesses and kills one

ROOT = Path(__file__).resolve().parents[2]
MAX_STEPS = 7
KILL_AT = 4  # batches per epoch are 3 for every task below: the kill lands mid-epoch, after the validation at 3


def _data(root: Path) -> dict[str, dict]:
    """``{task: {"model": ..., "data": ...}}`` init args for tiny runs on data written under ``root``."""
    from vision.synthetic.scenes import write_split
    from vision.synthetic.detection import write_oov_synthetic
    from tests.forensics.conftest import make_tiny_split

    video = write_split(root / "mv", "video", scenes=4, views=4, size=32, mode="video", seed=0, threads=1,
                        min_objects=2, max_objects=3)
    unordered = write_split(root / "mv", "unordered", scenes=2, views=4, size=32, mode="unordered", seed=1,
                            threads=1, min_objects=2, max_objects=3)
    multiview = {"train_split": [str(video), str(unordered)], "val_split": str(unordered), "views": 2,
                 "batch_size": 2, "augment": True}  # image_size: linked from the model's config
    oov = write_oov_synthetic(root / "oov", train_scenes=3, val_scenes=1, test_scenes=1, views=2, size=64, seed=0)
    aigv = make_tiny_split(root / "aigv")
    tools = ["spectrum", "residual", "temporal"]
    return {
        "geometry": {  # with make train's viewpoint curriculum: its limit changes between epoch 0 and the kill's
            "model": {"class_path": "vision.geometry.lightning.GeometryModule",
                      "init_args": {"config": {"size": "tiny", "image_size": 32, "match_dim": 64}, "warmup_steps": 2,
                                    "match_weight": 1.0}},
            "data": {"class_path": "vision.data.datamodule.MultiViewDataModule",
                     "init_args": {**multiview, "max_stride": 2, "curriculum": [30, 180]}},
            "trainer": {"reload_dataloaders_every_n_epochs": 1},
        },
        "tracking": {
            "model": {"class_path": "vision.tracking.lightning.TrackingModule",
                      "init_args": {"config": {"image_size": 32, "dim": 32, "text_encoder": "minilm"},
                                    "max_objects": 2, "negative_text": 0.5, "memory_prob": 0.5, "warmup_steps": 2}},
            "data": {"class_path": "vision.data.datamodule.MultiViewDataModule", "init_args": multiview},
        },
        "detection": {
            "model": {"class_path": "vision.detection.lightning.OOVDetModule",
                      "init_args": {"config": {"channels": 32}, "queue_size": 64, "samples_per_class": 64,
                                    "synthesis_start": 0.0,
                                    "mining_start": 0.0, "mining_min_objectness": 0.0, "warmup_steps": 2}},
            "data": {"class_path": "vision.data.datamodule.DetectionDataModule",
                     "init_args": {"train_split": str(oov["train"]), "val_split": str(oov["val"]), "batch_size": 2,
                                   "augment": True}},
        },
        "forensics": {
            "model": {"class_path": "vision.forensics.lightning.ForensicsModule",
                      "init_args": {"config": {"tools": tools, "hidden": 16, "image_size": 48, "max_frames": 8}}},
            "data": {"class_path": "vision.forensics.lightning.ForensicFeatureDataModule",
                     "init_args": {"train_split": str(aigv["train"]), "val_split": str(aigv["val"]),
                                   "cache_dir": str(root / "aigv_cache"), "batch_size": 4}},
        },
    }


def _config(run: Path, task: dict, workers: int, kill_at: int | None) -> Path:
    callbacks = [{"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                  "init_args": {"dirpath": str(run / "ckpt"), "save_last": True, "save_top_k": 0,
                                "every_n_train_steps": 1}}]
    if kill_at is not None:
        callbacks.append({"class_path": "tests.training.resume_probe.KillAtStep", "init_args": {"step": kill_at}})
    data = {**task["data"], "init_args": dict(task["data"]["init_args"])}
    if "num_workers" in _datamodule_args(data["class_path"]):
        data["init_args"]["num_workers"] = workers
    cfg = {
        "seed_everything": 7,
        "trainer": {"accelerator": "cpu", "devices": 1, "max_steps": MAX_STEPS, "max_epochs": -1,
                    "default_root_dir": str(run), "logger": False, "enable_progress_bar": False,
                    "enable_model_summary": False, "num_sanity_val_steps": 1, "val_check_interval": 3,
                    "check_val_every_n_epoch": None, "limit_val_batches": 1, "callbacks": callbacks},
        "model": task["model"],
        "data": data,
    }
    cfg["trainer"].update(task.get("trainer", {}))
    path = run / "config.yaml"
    run.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg))
    return path


def _datamodule_args(class_path: str) -> set[str]:
    import importlib
    import inspect

    module, name = class_path.rsplit(".", 1)
    return set(inspect.signature(getattr(importlib.import_module(module), name)).parameters)


def _train(config: Path, hash_seed: int, resume: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "PYTHONHASHSEED": str(hash_seed),
           "HF_HUB_OFFLINE": "1"}
    cmd = [sys.executable, str(ROOT / "tools" / "train.py"), "--config", str(config)]
    if resume is not None:
        cmd += ["--ckpt_path", str(resume)]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def _final_state(run: Path) -> dict:
    ckpt = load_checkpoint(run / "ckpt" / "last.ckpt")
    assert ckpt["global_step"] == MAX_STEPS
    return ckpt


def _assert_identical(a: dict, b: dict) -> None:
    assert a["state_dict"].keys() == b["state_dict"].keys()
    differ = [k for k in a["state_dict"] if not torch.equal(a["state_dict"][k], b["state_dict"][k])]
    assert not differ, f"{len(differ)} of {len(a['state_dict'])} tensors differ, e.g. {differ[:5]}"
    for opt_a, opt_b in zip(a["optimizer_states"], b["optimizer_states"], strict=True):
        for key, state in opt_a["state"].items():
            for name, value in state.items():
                assert torch.equal(torch.as_tensor(value), torch.as_tensor(opt_b["state"][key][name])), (key, name)
    if "oov_bank" in a:
        for name in a["oov_bank"]:
            assert torch.equal(a["oov_bank"][name], b["oov_bank"][name]), name


@pytest.fixture(scope="module")
def tasks(tmp_path_factory) -> dict[str, dict]:
    torch.set_num_threads(1)
    return _data(tmp_path_factory.mktemp("repro_data"))


@pytest.fixture(scope="module")
def uninterrupted(tasks, tmp_path_factory):
    """One uninterrupted run per task (no DataLoader workers), run lazily and shared by both tests."""
    root = tmp_path_factory.mktemp("repro_runs")
    done: dict[str, Path] = {}

    def run(name: str) -> Path:
        if name not in done:
            out = root / name / "plain"
            result = _train(_config(out, tasks[name], workers=0, kill_at=None), hash_seed=1)
            assert result.returncode == 0, result.stderr[-3000:]
            done[name] = out
        return done[name]

    return run


@pytest.mark.parametrize("task", task_names())
def test_same_seed_gives_the_same_model(task, tasks, uninterrupted, tmp_path):
    again = tmp_path / "again"
    result = _train(_config(again, tasks[task], workers=1, kill_at=None), hash_seed=2)
    assert result.returncode == 0, result.stderr[-3000:]
    _assert_identical(_final_state(uninterrupted(task)), _final_state(again))


@pytest.mark.parametrize("task", task_names())
def test_resume_after_sigkill_is_bit_exact(task, tasks, uninterrupted, tmp_path):
    run = tmp_path / "interrupted"
    killed = _train(_config(run, tasks[task], workers=1, kill_at=KILL_AT), hash_seed=3)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    last = run / "ckpt" / "last.ckpt"
    assert load_checkpoint(last)["global_step"] == KILL_AT
    resumed = _train(_config(run, tasks[task], workers=0, kill_at=None), hash_seed=4, resume=last)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    _assert_identical(_final_state(uninterrupted(task)), _final_state(run))
