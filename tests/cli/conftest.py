"""Shared helpers of the CLI tests."""

from __future__ import annotations

from pathlib import Path

import torch

from vision.tasks import get_task


def _class_path(cls: type) -> str:
    """The dotted path Lightning records for a class (``hyper_parameters._class_path``)."""
    return f"{cls.__module__}.{cls.__qualname__}"


def write_task_checkpoint(path: Path, name: str, **config_fields) -> tuple[Path, torch.nn.Module]:
    """A training checkpoint of task ``name`` at ``path`` (untrained weights of ``config_fields``, seed 0), as
    ``tools/train.py`` lays it out: ``(path, model)``."""
    torch.manual_seed(0)
    task = get_task(name)
    config = task.resolve("config")(**config_fields)
    model = task.build_model(config)
    torch.save({"state_dict": {f"model.{k}": v for k, v in model.state_dict().items()},
                "hyper_parameters": {"_class_path": _class_path(task.resolve("lightning")), "config": config.to_dict()},
                "epoch": 0, "global_step": 1}, path)
    return path, model
