"""The registry of tasks: each task's name, its folder and where it is scored, so that nothing outside a task's
folder (and its evaluation file) names a task. The CLIs, the scorer, the split checks, the demo, the ONNX export, the
model folder, the benchmarks and the contract tests (``tests/test_tasks.py``) iterate it; adding a task is one
:class:`Task` entry (:func:`register_task`, or one line of :data:`BUILTIN`) plus its folder.

A task's parts are found by fixed names (:data:`PARTS`): a part is the attribute ``ATTRIBUTE`` of the module
``<package>.<MODULE>`` (or of the task's evaluation module), and a task lacks a part exactly when that module or
attribute is absent. Every task folder ``vision/<name>/`` has the same files, with the same signatures:

- ``task.py``: ``Config`` (a :class:`~vision.task_config.TaskConfig` dataclass whose ``task`` class attribute is the
  task's name), ``build_model(config=None)`` (an untrained model; a config, a mapping of its fields or None for the
  defaults), ``load(checkpoint, device="cpu") -> (model in eval mode on device, config)`` (a checkpoint read with
  ``weights_only=True`` or a model folder), ``save(model, config, folder)`` (:mod:`vision.model_folder`) and
  ``FOLDER_EXTRAS`` (optional: top-level checkpoint keys of plain data its model folder keeps). Inference code
  imports it; it never imports :mod:`vision.training` or Lightning.
- ``lightning.py``: ``Module``, the LightningModule that trains it, scores it with the task's metric
  (:class:`vision.training.evaluator.TaskEvaluator`) and records the task's name in its checkpoints.
- ``results.py``: ``to_results``, model outputs -> the task's COCO-format results.
- ``predictor.py`` (the tasks users run on their own inputs): ``Predictor``, a class with
  ``from_checkpoint(path, ...)``; ``real_frames.py`` (optional): ``Predictor``, the one that answers the task from
  the detector trained on real frames (the demo's ``--real-detection-ckpt``).
- ``cli.py`` (with a predictor): ``run(args, out)`` (``vision-predict --task NAME`` on one input into folder
  ``out``), ``add_flags(group)`` (its ``vision-predict`` flags), ``check(args)`` (its flags, checked before any
  input is read or model loaded), ``stream(args, out)`` (``vision-predict --stream``) and ``USAGE`` (what
  ``vision-predict --task NAME --ckpt FOLDER`` needs besides the input, for the model card) and ``DEFAULT_CKPT``
  (``(path, what writes it)``: the checkpoint ``vision-predict`` runs when ``--ckpt`` is not given, a path relative
  to the current folder, used when it exists), each optional but ``run``.
- ``demo.py``: ``tab(models, examples) -> (preload, outputs)``, the demo tab it builds inside ``gr.Tab``.
- ``onnx.py``: ``graphs(model, config, folder, seed) -> [Graph]``, its ONNX graphs (:mod:`vision.export.onnx`).

Its evaluation module (``vision/evaluation/tasks/<name>.py``, torch-free) holds ``score(split, results, *,
split_file, results_file, **options) -> metrics`` (validates the results, naming ``results_file``, and scores them;
what :func:`vision.evaluation.evaluate.evaluate` runs), ``OPTIONS`` (the options ``score`` takes; any other is
refused), ``check_split(split, file)`` (the parts of a split ``score`` reads: a :class:`~vision.errors.DataError`
naming ``file``, the entry and the field), ``check_results(results, split, file=None, split_file=None)`` and,
optionally, ``add_flags(group)`` with ``options(args, split) -> options`` (its ``vision-evaluate`` flags, every
default None or False, and the scorer's options from them).

The registry itself imports nothing but the standard library and :mod:`vision.errors`; a part's module is imported
only when the part is asked for (:meth:`Task.resolve`), so ``vision-evaluate`` and ``--help`` pay for no model.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

from vision.errors import InputError

__all__ = ["Task", "TASKS", "BUILTIN", "PARTS", "get_task", "task_names", "register_task", "unregister_task"]

#: The module standing for a task's evaluation module in :data:`PARTS`.
EVALUATION = "<evaluation>"

#: Every part of a task: part name -> (module within the task's package, or :data:`EVALUATION`; attribute).
PARTS: dict[str, tuple[str, str]] = {
    "config": ("task", "Config"),
    "build_model": ("task", "build_model"),
    "load": ("task", "load"),
    "save": ("task", "save"),
    "folder_extras": ("task", "FOLDER_EXTRAS"),
    "lightning": ("lightning", "Module"),
    "results": ("results", "to_results"),
    "predictor": ("predictor", "Predictor"),
    "real_frames_predictor": ("real_frames", "Predictor"),
    "predict": ("cli", "run"),
    "predict_flags": ("cli", "add_flags"),
    "predict_check": ("cli", "check"),
    "predict_usage": ("cli", "USAGE"),
    "default_ckpt": ("cli", "DEFAULT_CKPT"),
    "stream": ("cli", "stream"),
    "demo": ("demo", "tab"),
    "export_graphs": ("onnx", "graphs"),
    "scorer": (EVALUATION, "score"),
    "evaluate_options": (EVALUATION, "OPTIONS"),
    "split_check": (EVALUATION, "check_split"),
    "results_check": (EVALUATION, "check_results"),
    "evaluate_flags": (EVALUATION, "add_flags"),
    "evaluate_args": (EVALUATION, "options"),
}

#: The parts that are the whole job of their module: the task has one exactly when the module exists, so asking
#: does not import it (the predictors, models and the demo's Gradio stay unloaded until used).
_OWN_MODULE = ("config", "lightning", "results", "predictor", "real_frames_predictor", "demo", "export_graphs")

#: The parts that every task has.
REQUIRED = ("config", "build_model", "load", "save", "lightning", "results", "scorer", "evaluate_options",
            "split_check", "results_check")


def _module_exists(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it or its package (a package's ``__init__`` may load
    torch: looking for a task's ``predictor.py`` must not)."""
    if module in sys.modules:
        return True
    parent, _, leaf = module.rpartition(".")
    try:
        spec = importlib.util.find_spec(parent) if parent else None
    except ModuleNotFoundError:
        return False
    if spec is None:
        return importlib.util.find_spec(module) is not None if not parent else False
    return any((Path(place) / f"{leaf}.py").is_file() or (Path(place) / leaf / "__init__.py").is_file()
               for place in (spec.submodule_search_locations or ()))


@dataclasses.dataclass(frozen=True)
class Task:
    """One task of the package: its folder, its evaluation module and how the shared tools present it.

    Args:
        name: the task's name (``--task`` on every CLI, the ``task`` of its checkpoints and model folders).
        summary: one line for help texts and model cards.
        package: its folder, as a module (``"vision.tracking"``); its parts are found there by :data:`PARTS`.
        evaluation: its torch-free evaluation module (default ``"vision.evaluation.tasks.<name>"``).
        alias_of: ``(task, dest)``: ``--task task`` with the flag stored in ``args.<dest>`` given runs this task
            (``--task tracking --concept mug`` is the concept task).
        demo_tab: the demo tab that uses its model (its ``--<name>-ckpt`` option; None: not in the demo). A task
            without a ``demo`` part only lends its model to that tab.
        demo_options: the predictor's options the demo sets from its configuration (``DemoConfig`` field names).
        shared_flags: the ``dest`` of another task's ``vision-predict`` flags that this task reads too (the concept
            task's ``solve_cameras``, a flag of the tracking task): given with ``--task <name>``, they are its
            check's to accept or refuse, not refused as another task's.
    """

    name: str
    summary: str
    package: str
    evaluation: str = ""
    alias_of: tuple[str, str] | None = None
    demo_tab: str | None = None
    demo_options: tuple[str, ...] = ()
    shared_flags: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.evaluation:
            object.__setattr__(self, "evaluation", f"vision.evaluation.tasks.{self.name}")

    @property
    def module(self) -> str:
        """The module of its config class, which also defines ``build_model``, ``load`` and ``save``."""
        return self.where("config")[0]

    def where(self, part: str) -> tuple[str, str]:
        """``(module, attribute)`` of ``part`` (a key of :data:`PARTS`); ``KeyError`` for an unknown part."""
        module, attribute = PARTS[part]
        return (self.evaluation if module == EVALUATION else f"{self.package}.{module}"), attribute

    def has(self, part: str) -> bool:
        """Whether the task has ``part``: its module exists and (unless the module is the part's alone, which is
        then not imported) defines the attribute."""
        module, attribute = self.where(part)
        if not _module_exists(module):
            return False
        return part in _OWN_MODULE or hasattr(importlib.import_module(module), attribute)

    def resolve(self, part: str) -> Any:
        """Import and return ``part`` (a key of :data:`PARTS`); ``KeyError`` when the task has no such part."""
        module, attribute = self.where(part)
        if not _module_exists(module):
            raise KeyError(f"task {self.name!r} has no {part} (no module {module})")
        value = getattr(importlib.import_module(module), attribute, None)
        if value is None:
            raise KeyError(f"task {self.name!r} has no {part} ({module} defines no {attribute})")
        return value

    def get(self, part: str, default: Any = None) -> Any:
        """``part`` when the task has it, else ``default`` (for the optional data parts: ``predict_usage``,
        ``folder_extras``)."""
        return self.resolve(part) if self.has(part) else default

    @property
    def evaluate_options(self) -> frozenset[str]:
        """The options its scorer takes (``OPTIONS`` of its evaluation module)."""
        return frozenset(self.resolve("evaluate_options"))

    def build_model(self, config: Any = None) -> Any:
        """``build_model(config)`` of its ``task.py``."""
        return self.resolve("build_model")(config)

    def load(self, checkpoint: Any, device: Any = "cpu") -> tuple[Any, Any]:
        """``load(checkpoint, device)`` of its ``task.py``: ``(model in eval mode, config)``."""
        return self.resolve("load")(checkpoint, device=device)


#: The package's own tasks, in registry order.
BUILTIN: tuple[Task, ...] = (
    Task(name="geometry", summary="the shared VGGT-style backbone: depth, point maps and cameras from views",
         package="vision.geometry"),
    Task(name="tracking", summary="G2TAM: promptable instance tracking in 3D over videos and unordered views",
         package="vision.tracking", demo_tab="track", demo_options=("presence_threshold",)),
    Task(name="detection", summary="OOVDet: zero-shot detection that rejects out-of-vocabulary objects",
         package="vision.detection", demo_tab="detect"),
    Task(name="forensics", summary="AI-generated video forensics with an evidence graph",
         package="vision.forensics", demo_tab="forensics"),
    Task(name="concept", summary="concept prompts: every instance of a phrase or of exemplar boxes, tracked in 3D",
         package="vision.concept", alias_of=("tracking", "concept_prompts"), demo_tab="track",
         shared_flags=("solve_cameras",)),
)

_REGISTRY: dict[str, Task] = {task.name: task for task in BUILTIN}


class _Tasks(Sequence[Task]):
    """The registered tasks in registry order (the built-in ones, then those of :func:`register_task`); a live view,
    so ``from vision.tasks import TASKS`` sees tasks registered later."""

    def __iter__(self) -> Iterator[Task]:
        return iter(tuple(_REGISTRY.values()))

    def __len__(self) -> int:
        return len(_REGISTRY)

    @overload
    def __getitem__(self, index: int) -> Task: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Task, ...]: ...

    def __getitem__(self, index: int | slice) -> Task | tuple[Task, ...]:
        return tuple(_REGISTRY.values())[index]

    def __repr__(self) -> str:
        return f"TASKS({', '.join(_REGISTRY)})"


#: Every registered task (a live, read-only sequence of :class:`Task`).
TASKS: Sequence[Task] = _Tasks()


def register_task(task: Task) -> Task:
    """Add ``task`` to the registry (timm's ``register_model``, for a task defined outside the package); a name
    already taken is an :class:`~vision.errors.InputError`. Returns ``task``."""
    if not isinstance(task, Task):
        raise InputError(f"register_task takes a Task, got {type(task).__name__}")
    if task.name in _REGISTRY:
        raise InputError(f"a task named {task.name!r} is already registered")
    _REGISTRY[task.name] = task
    return task


def unregister_task(name: str) -> None:
    """Remove a task added by :func:`register_task` (the built-in tasks stay)."""
    if any(task.name == name for task in BUILTIN):
        raise InputError(f"{name!r} is a built-in task and stays registered")
    get_task(name)
    del _REGISTRY[name]


def task_names(predictor: bool = False) -> tuple[str, ...]:
    """The registered task names (``predictor``: only those with a predictor), in registry order."""
    return tuple(task.name for task in TASKS if not predictor or task.has("predictor"))


def get_task(name: str) -> Task:
    """The :class:`Task` called ``name``; an unknown name is an :class:`~vision.errors.InputError` listing the known
    ones."""
    task = _REGISTRY.get(name) if isinstance(name, str) else None
    if task is None:
        raise InputError(f"unknown task {name!r}; expected one of {', '.join(task_names())}")
    return task
