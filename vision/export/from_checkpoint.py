"""A training checkpoint as a model folder: its config, weights, extras and what it was trained on, with the
validation figures its run logged (what ``vision-export`` writes).

:func:`folder_of_checkpoint` turns a checkpoint (a Lightning checkpoint read with ``weights_only=True``) into a
:class:`~vision.model_folder.ModelFolder`, with the figures its run's validation logged (the ``ModelCheckpoint``
score stored in the checkpoint, and the ``val/*`` row of the run's ``metrics.csv`` at the checkpoint's epoch,
:func:`run_validation_metrics`); the task's ``folder_extras`` (:mod:`vision.tasks`) name the plain-data entries
it keeps.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from vision.errors import DataError, InputError
from vision.export.task_detection import task_of_checkpoint
from vision.model_folder import ModelFolder, is_plain
from vision.tasks import get_task

__all__ = ["folder_of_checkpoint", "run_validation_metrics"]


def folder_of_checkpoint(checkpoint: Mapping[str, Any], path: str | Path, task: str | None = None,
                         metrics: str | Path | None = None) -> ModelFolder:
    """The :class:`ModelFolder` of a checkpoint read from ``path``: its config, its weights grouped by prefix, its
    hyper-parameters and plain-data extras, and what it was trained on (the training module, the datamodule's
    hyper-parameters, the epoch) with the validation figures: the ``ModelCheckpoint`` monitor and score stored in
    the checkpoint, and the run's logged ``val/*`` row at the checkpoint's epoch (:func:`run_validation_metrics`,
    from ``metrics`` or the run folder's ``metrics.csv`` files). A checkpoint that is itself a folder's keeps its
    ``training`` record.

    Raises:
        DataError: not a task checkpoint, or (``task`` given) another task's.
    """
    found = task_of_checkpoint(checkpoint, path)
    if task is not None and task != found:
        raise DataError(f"holds a {found} model, not a {task} model", file=path, field="task", value=found)
    hparams = dict(checkpoint["hyper_parameters"])
    config = dict(hparams.pop("config"))
    weights: dict[str, dict[str, torch.Tensor]] = {}
    for key, value in (checkpoint.get("state_dict") or {}).items():
        prefix, _, rest = key.partition(".")
        if rest and isinstance(value, torch.Tensor):
            weights.setdefault(prefix, {})[rest] = value
    if "model" not in weights:
        raise DataError(f"not a {found} checkpoint (no weights under 'model.')", file=path, field="state_dict")
    extras = {k: checkpoint[k] for k in get_task(found).get("folder_extras", ()) if k in checkpoint}
    training = dict(checkpoint.get("training") or {}) or _training_record(checkpoint, hparams, Path(path), metrics)
    return ModelFolder(task=found, config=config, weights=weights, hyper_parameters=hparams, extras=extras,
                       training=training)


def _training_record(checkpoint: Mapping[str, Any], hparams: Mapping[str, Any], path: Path,
                     metrics: str | Path | None) -> dict[str, Any]:
    record: dict[str, Any] = {"checkpoint": path.name}
    if hparams.get("_class_path"):
        record["module"] = hparams["_class_path"]
    for key in ("epoch", "global_step"):
        if isinstance(checkpoint.get(key), int):
            record[key] = checkpoint[key]
    data = checkpoint.get("datamodule_hyper_parameters")
    if isinstance(data, Mapping) and is_plain(data):
        record["data"] = {k: v for k, v in data.items() if k != "_instantiator"}
    validation: dict[str, Any] = {}
    for name, state in (checkpoint.get("callbacks") or {}).items():
        if str(name).startswith("ModelCheckpoint") and isinstance(state, Mapping) and state.get("monitor"):
            score = state.get("current_score")
            score = state.get("best_model_score") if score is None else score
            if isinstance(score, torch.Tensor) and score.numel() == 1:
                validation.update(monitor=str(state["monitor"]), score=float(score))
                break
    logged = run_validation_metrics(path, record.get("epoch"), metrics)
    if logged is not None:
        validation["metrics"], validation["source"] = logged
    if validation:
        record["validation"] = validation
    return record


def _metrics_files(root: Path) -> list[Path]:
    """The regular files named ``metrics.csv`` under the folder ``root`` (a FIFO of that name would block the
    read); a folder that cannot be listed, or vanishes while it is searched, is skipped."""
    found = []
    for folder, _, names in os.walk(root):
        if "metrics.csv" in names and os.path.isfile(os.path.join(folder, "metrics.csv")):
            found.append(Path(folder) / "metrics.csv")
    return sorted(found)


def _modified(file: Path) -> float:
    try:
        return file.stat().st_mtime
    except OSError:
        return 0.0


def run_validation_metrics(checkpoint: Path, epoch: int | None, metrics: str | Path | None = None
                           ) -> tuple[dict[str, float], str] | None:
    """The ``val/*`` figures a run logged at ``epoch`` (its last such row) and the file they came from.

    ``metrics``: a CSV logger's ``metrics.csv`` (or a folder searched for them); None: the run folder of a checkpoint
    under ``<run>/checkpoints/`` (``<run>/**/metrics.csv``, newest file first). None when no file has a ``val/*`` row
    at that epoch (or ``epoch`` is None)."""
    if epoch is None:
        return None
    if metrics is not None:
        root = Path(metrics)
        if not root.exists():
            raise InputError(f"--metrics {root} does not exist")
        files = [root] if root.is_file() else _metrics_files(root)
    elif checkpoint.parent.name == "checkpoints":
        files = _metrics_files(checkpoint.parent.parent)
    else:
        return None
    files.sort(key=_modified, reverse=True)
    for file in files:
        try:
            with file.open(newline="", encoding="utf-8") as handle:
                rows = list(csv.DictReader(handle))
        except (OSError, UnicodeDecodeError, csv.Error):
            continue
        found = None
        for row in rows:
            values = {k: v for k, v in row.items() if k and k.startswith("val/") and v not in (None, "")}
            if values and row.get("epoch") == str(epoch):
                found = values
        if found:
            figures = {}
            for key, value in found.items():
                try:
                    figures[key] = float(value)
                except ValueError:
                    continue
            return figures, str(file)
    return None
