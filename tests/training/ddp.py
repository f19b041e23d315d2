"""Shared by the per-task distributed tests: ``tools/train.py`` under DDP on the CPU (gloo, two processes) and the
same config in one process, with the figures each run logged.

Every test writes its own YAML config (:func:`training_config`), runs ``fit`` (and ``validate``) with
:func:`train_cli` (``ddp=True`` adds ``--trainer.strategy ddp --trainer.devices 2 --trainer.accelerator cpu``),
reads what the run logged with :func:`logged` (the CSVLogger's ``metrics.csv``), and compares with a single-process
``validate`` of the same checkpoint (:func:`validate_in_process`).
"""

from __future__ import annotations

import csv
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
DDP = ("--trainer.strategy", "ddp", "--trainer.devices", "2", "--trainer.accelerator", "cpu")


def training_config(root: Path, model: dict, data: dict, *, max_steps: int, monitor: str, mode: str = "max",
                    val_check_interval: int | None = None) -> dict:
    """A small ``fit`` config: CSV logs and checkpoints (best by ``monitor`` + last) under ``root``, no progress
    bar, validation at the end of training (or every ``val_check_interval`` steps)."""
    return {
        "seed_everything": 0,
        "trainer": {
            "accelerator": "cpu", "devices": 1, "max_steps": max_steps, "max_epochs": -1,
            "default_root_dir": str(root), "enable_progress_bar": False, "enable_model_summary": False,
            "num_sanity_val_steps": 0, "log_every_n_steps": 1,
            "val_check_interval": val_check_interval or max_steps, "check_val_every_n_epoch": None,
            "logger": {"class_path": "lightning.pytorch.loggers.CSVLogger",
                       "init_args": {"save_dir": str(root), "name": "logs"}},
            "callbacks": [{"class_path": "lightning.pytorch.callbacks.ModelCheckpoint",
                           "init_args": {"dirpath": str(root / "checkpoints"), "filename": "best",
                                         "monitor": monitor, "mode": mode, "save_top_k": 1, "save_last": True}}],
        },
        "model": model,
        "data": data,
    }


def write_config(path: Path, config: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(config))
    return path


def train_cli(subcommand: str, config: Path, *extra: str, ddp: bool = False,
              timeout: float = 300) -> subprocess.CompletedProcess:
    """Run ``tools/train.py SUBCOMMAND --config CONFIG [extra] [DDP]`` in a fresh process (one thread per rank; the
    repository on ``PYTHONPATH`` so a config may name test callbacks ``tests.*``); a failure shows the end of its
    output."""
    cmd = [sys.executable, str(ROOT / "tools" / "train.py"), subcommand, "--config", str(config), *extra]
    if ddp:
        cmd += list(DDP)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "PYTHONHASHSEED": "0",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    env.pop("LOCAL_RANK", None)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{' '.join(cmd)} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


def logged(root: Path) -> list[dict[str, float]]:
    """Every row of every ``metrics.csv`` under ``root`` (CSVLogger), numbers as floats, empty cells dropped."""
    rows: list[dict[str, float]] = []
    for path in sorted(root.rglob("metrics.csv")):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                rows.append({k: float(v) for k, v in row.items() if v not in ("", None)})
    return rows


def last_logged(root: Path, name: str) -> float:
    """The last value of ``name`` logged under ``root``."""
    values = [row[name] for row in logged(root) if name in row and not math.isnan(row[name])]
    assert values, f"{name} was never logged under {root}"
    return values[-1]


def validate_in_process(config: Path, ckpt: Path, *extra: str) -> dict[str, float]:
    """``validate`` of ``ckpt`` with ``config`` in this process (one device): the metrics it logged."""
    from vision.training.cli import main

    cli = main(["validate", "--config", str(config), "--ckpt_path", str(ckpt), "--trainer.logger", "false",
                *extra])
    return {k: float(v) for k, v in cli.trainer.callback_metrics.items()}


def checkpoint_files(root: Path) -> list[str]:
    """Names of the files in ``root / "checkpoints"`` (temporary files of interrupted writes included)."""
    folder = root / "checkpoints"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def as_plain(value: Any) -> Any:
    """YAML-safe copy of a config value (tuples as lists)."""
    if isinstance(value, dict):
        return {k: as_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_plain(v) for v in value]
    return value
