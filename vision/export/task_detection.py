"""Which registered task a checkpoint or model folder is: what ``vision-export`` and the other entrances ask the
registry (:mod:`vision.tasks`) before a task's own ``load`` reads the file.

- :func:`registered_config`: the :data:`~vision.model_folder.ConfigOf` of a reader of any registered task's model
  folder (``read_model(path, config_of=registered_config)``): the folder's config is checked by its task's config
  class before any weights are read, and a task the registry lacks is refused by name.
- :func:`task_of_checkpoint`: the task of a checkpoint already read: the ``task`` it records, else its training
  module's class path (:func:`task_of_class_path`), else the one task whose config takes its config.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from vision.errors import DataError, InputError
from vision.task_config import TaskConfig
from vision.tasks import TASKS, get_task, task_names

__all__ = ["registered_config", "task_of_checkpoint", "task_of_class_path"]


def registered_config(task: Any) -> type[TaskConfig]:
    """The config class of the registered task ``task``; a ``LookupError`` naming the known tasks for any other
    (:data:`vision.model_folder.ConfigOf`)."""
    if task not in task_names():
        raise LookupError(f"unknown task; expected one of {', '.join(task_names())}")
    return get_task(task).resolve("config")


def task_of_class_path(class_path: str) -> str | None:
    """The registered task whose training module ``class_path`` names (a Lightning checkpoint's
    ``hyper_parameters._class_path``): the task whose ``lightning`` part it is, else the one task whose training
    module's package holds it (``vision.detection.lightning.<Module>``: detection; a task registered from outside
    the package, such as ``tests.toy_task``, by its own package, not by a ``vision.<task>`` name); None otherwise."""
    exact = [task.name for task in TASKS if ".".join(task.where("lightning")) == class_path]
    if exact:
        return exact[0]
    packages = [task.name for task in TASKS
                if class_path.startswith(task.where("lightning")[0].rpartition(".")[0] + ".")]
    return packages[0] if len(packages) == 1 else None


def task_of_checkpoint(checkpoint: Mapping[str, Any], path: str | Path) -> str:
    """The task a checkpoint belongs to: a folder's ``task``, else the training module's ``_class_path``
    (:func:`task_of_class_path`), else ``hyper_parameters.task`` when it names a task, else the one task whose
    config takes ``hyper_parameters.config``.

    Raises:
        DataError: none of these tells (naming the file; give the task explicitly).
    """
    if checkpoint.get("task") in task_names():
        return str(checkpoint["task"])
    hparams = checkpoint.get("hyper_parameters")
    if not isinstance(hparams, Mapping) or not isinstance(hparams.get("config"), Mapping):
        raise DataError("not a task checkpoint of this version (no hyper_parameters.config)", file=path,
                        field="hyper_parameters.config")
    class_path = str(hparams.get("_class_path") or "")
    named = task_of_class_path(class_path)
    if named is not None:
        return named
    if hparams.get("task") in task_names():  # a training module that records its task among its hyper-parameters
        return str(hparams["task"])
    fits = []
    for name in task_names():
        try:
            get_task(name).resolve("config").from_value(hparams["config"])
        except (InputError, DataError, TypeError):
            continue
        fits.append(name)
    if len(fits) != 1:
        raise DataError(f"cannot tell which task this checkpoint is for (its config fits {fits or 'no task'}); "
                        f"name it with --task", file=path, field="hyper_parameters._class_path", value=class_path)
    return fits[0]
