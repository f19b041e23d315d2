"""Reading checkpoints (``torch.load(weights_only=True)``) and model folders into a task's config and weights.

Every task defines one ``load(checkpoint)`` in ``vision/<task>/task.py``; its LightningModule stores the task's
config (:class:`~vision.task_config.TaskConfig`) in the checkpoint's hyper-parameters as a plain dict under
``"config"`` (so ``weights_only=True`` reads it) and its weights under a prefix (``"model."``).
:func:`read_task_checkpoint` is the one reader of that layout, given the task's config class. Inference code imports
this module, never :mod:`vision.training`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import torch

from vision.data.files import regular_file
from vision.errors import DataError
from vision.model_folder import ConfigOf, one_task, read_model_folder
from vision.task_config import TaskConfig

__all__ = ["load_checkpoint", "load_failure", "read_model", "load_weights", "first_mismatch", "read_task_checkpoint",
           "task_checkpoint_parts"]

C = TypeVar("C", bound=TaskConfig)


def load_checkpoint(path: str | Path, map_location: Any = "cpu", mmap: bool = False) -> dict:
    """Read a checkpoint with ``torch.load(weights_only=True)``; a missing, unreadable or unsafe file (or one that is
    not a regular file: a FIFO, a device, a link loop) is a one-line ``DataError``. ``mmap``: the tensors are mapped
    from the file, not read (a cheap look at a large checkpoint's hyper-parameters)."""
    path = regular_file(path, what="checkpoint file")
    try:
        return torch.load(path, map_location=map_location, weights_only=True, mmap=mmap)
    except Exception as exc:  # torch raises many types for corrupt or unsafe files
        raise DataError(f"cannot read checkpoint ({load_failure(exc)})", file=path) from exc


def read_model(path: str | Path, map_location: Any = "cpu", config_of: ConfigOf | None = None) -> dict:
    """A checkpoint file (:func:`load_checkpoint`) or a model folder (:mod:`vision.model_folder`: config.json +
    safetensors, never unpickled), in the checkpoint layout: the one reader behind every task's ``load`` and the
    backbone-weight options, so each takes either. ``config_of`` checks a folder's task and config before its weights
    are read (:func:`vision.model_folder.read_model_folder`)."""
    if Path(path).is_dir():
        return read_model_folder(path, map_location=map_location, config_of=config_of).as_checkpoint()
    return load_checkpoint(path, map_location=map_location)


def load_failure(exc: BaseException) -> str:
    """torch's (or safetensors') reason a file could not be read, in one line; for a refused pickle only the
    offending global, never torch's advice to load the file with ``weights_only=False`` (which would run whatever
    code it holds)."""
    text = str(exc)
    if "Weights only load failed" in text:
        reason = next((line.strip() for line in text.splitlines() if "WeightsUnpickler error" in line), "")
        reason = reason.split(" was not an allowed global")[0]
        return ("the file holds more than tensors and plain data, and only weights are loaded"
                + (f"; {reason}" if reason else ""))
    return f"{type(exc).__name__}: {' '.join(text.split())}"


def load_weights(module: torch.nn.Module, state_dict: dict[str, Any], file: str | Path, strict: bool = True,
                 hint: str = "") -> None:
    """``module.load_state_dict(state_dict)``; weights that do not fit (missing or unexpected keys, other shapes) are a
    :class:`DataError` naming the checkpoint ``file`` and the first mismatch, in one line (then ``hint``)."""
    try:
        module.load_state_dict(state_dict, strict=strict)
    except RuntimeError as exc:
        raise DataError(f"the checkpoint's weights do not fit this {type(module).__name__} "
                        f"({first_mismatch(exc)}){'; ' + hint if hint else ''}", file=file) from None


def first_mismatch(exc: RuntimeError) -> str:
    """The first line of detail of torch's ``load_state_dict`` error (missing / unexpected keys, a shape), at most
    300 characters."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    detail = " ".join(lines[1:2] or lines[:1])
    return detail if len(detail) <= 300 else detail[:297] + "..."


def read_task_checkpoint(path: str | Path, config_cls: type[C], prefix: str = "model.",
                         map_location: Any = "cpu") -> tuple[C, dict[str, torch.Tensor], dict]:
    """Read a task's Lightning checkpoint or model folder (:func:`read_model`): ``(config, weights under prefix with
    the prefix removed, checkpoint)``.

    The config comes from ``hyper_parameters["config"]``; a checkpoint without one, or without weights under
    ``prefix``, is a :class:`DataError` naming the file (and saying which task's checkpoint was expected).
    """
    checkpoint = read_model(path, map_location=map_location, config_of=one_task(config_cls))
    config, weights = task_checkpoint_parts(checkpoint, path, config_cls, prefix)
    return config, weights, checkpoint


def _task_of(checkpoint: Mapping[str, Any], config_cls: type[TaskConfig]) -> str | None:
    """The task a checkpoint or model folder records (``task``); for a checkpoint that does not record it, None when
    the training module that wrote it (``hyper_parameters._class_path``) lies in the package of ``config_cls`` (or
    is not recorded), else that module's class path: another task's training module."""
    if isinstance(checkpoint.get("task"), str):
        return checkpoint["task"]
    hparams = checkpoint.get("hyper_parameters")
    class_path = str(hparams.get("_class_path") or "") if isinstance(hparams, Mapping) else ""
    package = config_cls.__module__.rpartition(".")[0]
    return class_path if class_path and not class_path.startswith(package + ".") else None


def task_checkpoint_parts(checkpoint: Mapping[str, Any], path: str | Path, config_cls: type[C],
                          prefix: str = "model.") -> tuple[C, dict[str, torch.Tensor]]:
    """``(config, weights under prefix with the prefix removed)`` of a checkpoint already read from ``path``
    (:func:`read_task_checkpoint`'s checks and errors; a model folder or a training module of another task is
    refused by name)."""
    task = config_cls.task
    hparams = checkpoint.get("hyper_parameters")
    other = _task_of(checkpoint, config_cls)
    if other is not None and other != task:
        recorded = isinstance(checkpoint.get("task"), str)
        what = f"a {other} model" if recorded else f"the model of another task's training module ({other})"
        raise DataError(f"holds {what}, not a {task} model; give a {task} checkpoint or model folder",
                        file=path, field="task", value=other)
    state = checkpoint.get("state_dict")
    if not isinstance(hparams, Mapping) or not isinstance(hparams.get("config"), Mapping):
        raise DataError(f"not a {task} checkpoint of this version (no hyper_parameters.config); retrain it with "
                        "tools/train.py", file=path, field="hyper_parameters.config")
    weights = {k[len(prefix):]: v for k, v in (state or {}).items() if k.startswith(prefix)}
    if not weights:
        raise DataError(f"not a {task} checkpoint (no weights under {prefix!r})", file=path, field="state_dict")
    return config_cls.from_value(hparams["config"], file=path), weights
