"""The registry of tasks: each task's name and every part of its behaviour, so that nothing outside a task's folder
(and this file) names a task. The CLIs, the scorer, the split checks, the demo, the ONNX export, the model folder,
the benchmarks and the contract tests (``tests/test_tasks.py``) iterate it; adding a task is one :class:`Task` entry
(:func:`register_task`, or one line of :data:`BUILTIN`) plus its folder.

Every task's folder ``vision/<name>/`` holds the same parts, with the same signatures:

- ``task.py``: ``<Name>Config`` (a :class:`~vision.checkpoint.TaskConfig` dataclass whose ``task`` class attribute
  is the task's name), ``build_model(config=None)`` (an untrained model; a config, a mapping of its fields or None
  for the defaults) and ``load(checkpoint, device="cpu") -> (model in eval mode on device, config)``, which reads a
  checkpoint with ``weights_only=True`` or a model folder (safetensors), and ``save(model, config, folder)``, which
  writes that folder (:mod:`vision.model_folder`). Inference code imports it; it never imports
  :mod:`vision.training` or Lightning.
- ``lightning.py``: the LightningModule that trains it, scores it with the task's metric
  (:class:`vision.training.evaluator.TaskEvaluator`) and records the task's name in its checkpoints.
- ``predictor.py`` (the tasks users run on their own inputs): a class with ``from_checkpoint(path, ...)``.
- ``results.py``: model outputs -> the task's COCO-format results, which ``vision.evaluation.evaluate(split, results,
  name)`` scores with the task's ``scorer``.

The registry itself imports nothing but the standard library and :mod:`vision.errors`: a part is named
``"module:attribute"`` and imported only when asked for (:meth:`Task.resolve`), so ``vision-evaluate`` and
``--help`` pay for no model.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterator, Sequence
from typing import Any, overload

from vision.errors import InputError

__all__ = ["Task", "TASKS", "BUILTIN", "get_task", "task_names", "register_task", "unregister_task"]


@dataclasses.dataclass(frozen=True)
class Task:
    """One task of the package: where its parts live and how every shared tool treats it.

    Every ``str`` part below is ``"module:attribute"``, imported only by :meth:`resolve`; None: the task has no such
    part.

    Args:
        name: the task's name (``--task`` on every CLI, the ``task`` of its checkpoints and model folders).
        summary: one line for help texts and model cards.
        config: its :class:`~vision.checkpoint.TaskConfig` class.
        lightning: its LightningModule class.
        results: the function that turns its model's outputs into COCO-format results.
        scorer: ``scorer(split, results, *, split_file, results_file, **options) -> metrics``: validates the
            results (naming ``results_file``) and scores them; what :func:`vision.evaluation.evaluate` runs.
        split_check: ``split_check(split, file)``: checks the parts of a split that its scorer reads (a
            :class:`~vision.errors.DataError` naming ``file``, the entry and the field).
        results_check: ``results_check(results, split, file=None, split_file=None)``: the results validator.
        evaluate_options: the options its scorer takes (``vision.evaluation.evaluate(..., **options)``); any other
            is refused.
        evaluate_flags: ``evaluate_flags(group)``: adds its ``vision-evaluate`` flags to an argparse group, every
            flag's default None or False (a flag given to another task is refused).
        evaluate_args: ``evaluate_args(args, split) -> options``: the scorer's options from the parsed flags.
        predictor: its predictor class (with ``from_checkpoint``); None when users do not run it on their inputs.
        predict: ``predict(args, out)``: what ``vision-predict --task NAME`` runs on one input into folder ``out``.
        predict_flags: ``predict_flags(group)``: adds its ``vision-predict`` flags.
        predict_check: ``predict_check(args)``: checks its flags before any input is read or model loaded.
        predict_usage: what ``vision-predict --task NAME --ckpt FOLDER`` needs besides the input (the model card's
            example), e.g. ``--vocabulary 'name,name'``.
        stream: ``stream(args, out)``: ``vision-predict --stream`` (None: the task does not stream).
        alias_of: ``(task, dest)``: ``--task task`` with the flag stored in ``args.<dest>`` given runs this task
            (``--task tracking --concept mug`` is the concept task).
        demo_tab: the demo tab that uses its model (its ``--<name>-ckpt`` option; None: not in the demo).
        demo: ``demo(models, examples) -> (preload, outputs)``: builds that tab inside ``gr.Tab`` (None: the task
            only lends its model to another task's tab).
        demo_options: the predictor's options the demo sets from its configuration (``DemoConfig`` field names).
        real_frames_predictor: the predictor class that answers the task from the detector trained on real frames
            (the demo's ``--real-detection-ckpt``) when that checkpoint exists; None: the task's own model always.
        export_graphs: ``export_graphs(model, config, folder, seed) -> [Graph]``: its ONNX graphs
            (:mod:`vision.export.graphs`; None: nothing exports).
        folder_extras: top-level checkpoint keys (plain data) its model folder keeps besides the config and weights.
    """

    name: str
    summary: str
    config: str
    lightning: str
    results: str
    scorer: str
    split_check: str
    results_check: str
    evaluate_options: frozenset[str] = frozenset()
    evaluate_flags: str | None = None
    evaluate_args: str | None = None
    predictor: str | None = None
    predict: str | None = None
    predict_flags: str | None = None
    predict_check: str | None = None
    predict_usage: str = ""
    stream: str | None = None
    alias_of: tuple[str, str] | None = None
    demo_tab: str | None = None
    demo: str | None = None
    demo_options: tuple[str, ...] = ()
    real_frames_predictor: str | None = None
    export_graphs: str | None = None
    folder_extras: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if (self.predictor is None) != (self.predict is None):
            raise InputError(f"task {self.name!r}: a predictor and a predict runner go together")
        if (self.evaluate_flags is None) != (self.evaluate_args is None):
            raise InputError(f"task {self.name!r}: evaluate_flags and evaluate_args go together")

    @property
    def module(self) -> str:
        """The module of its config class, which also defines ``build_model``, ``load`` and ``save`` (a task
        folder's ``task.py``)."""
        return self.config.partition(":")[0]

    def resolve(self, part: str) -> Any:
        """Import and return the part named ``part`` (a field naming ``"module:attribute"``), or a function of
        the config's module (``"build_model"``, ``"load"``, ``"save"``); ``KeyError`` when the task has no such
        part."""
        if part in ("build_model", "load", "save"):
            return getattr(importlib.import_module(self.module), part)
        target = getattr(self, part)
        if target is None:
            raise KeyError(f"task {self.name!r} has no {part}")
        module, _, attribute = target.partition(":")
        return getattr(importlib.import_module(module), attribute)

    def build_model(self, config: Any = None) -> Any:
        """``build_model(config)`` of the config's module."""
        return self.resolve("build_model")(config)

    def load(self, checkpoint: Any, device: Any = "cpu") -> tuple[Any, Any]:
        """``load(checkpoint, device)`` of the config's module: ``(model in eval mode, config)``."""
        return self.resolve("load")(checkpoint, device=device)


_EVAL = "vision.evaluation"

#: The package's own tasks, in registry order.
BUILTIN: tuple[Task, ...] = (
    Task(name="geometry", summary="the shared VGGT-style backbone: depth, point maps and cameras from views",
         config="vision.geometry.task:GeometryConfig", lightning="vision.geometry.lightning:GeometryModule",
         results="vision.geometry.results:clip_results",
         scorer=f"{_EVAL}.scorers:score_geometry", split_check="vision.data.schema:check_geometry_parts",
         results_check=f"{_EVAL}.results:validate_geometry_results",
         evaluate_options=frozenset({"split_root", "max_points", "seed"}),
         export_graphs="vision.export.graphs:geometry_graphs"),
    Task(name="tracking", summary="G2TAM: promptable instance tracking in 3D over videos and unordered views",
         config="vision.tracking.task:TrackingConfig", lightning="vision.tracking.lightning:TrackingModule",
         results="vision.tracking.results:propagated_results",
         scorer=f"{_EVAL}.scorers:score_tracking", split_check="vision.data.schema:check_tracking_parts",
         results_check=f"{_EVAL}.results:validate_tracking_results",
         evaluate_options=frozenset({"protocol", "prompted_image_ids", "skip_first_and_last", "match_iou",
                                     "allow_unknown_tracks", "tolerance", "split_root", "voxel_size",
                                     "presence_threshold"}),
         evaluate_flags=f"{_EVAL}.flags:tracking_flags", evaluate_args=f"{_EVAL}.flags:tracking_options",
         predictor="vision.tracking.predictor:TrackerPredictor", predict="vision.cli.tracking:run_tracking",
         predict_flags="vision.cli.tracking:tracking_flags", predict_check="vision.cli.tracking:check_tracking",
         predict_usage="--points 'x,y'", stream="vision.cli.stream:run_tracking_stream",
         demo_tab="track", demo="vision.demo.app:track_tab", demo_options=("presence_threshold",),
         export_graphs="vision.export.graphs:tracking_graphs"),
    Task(name="detection", summary="OOVDet: zero-shot detection that rejects out-of-vocabulary objects",
         config="vision.detection.task:DetectionConfig", lightning="vision.detection.lightning:OOVDetModule",
         results="vision.detection.results:image_results",
         scorer=f"{_EVAL}.scorers:score_detection", split_check="vision.data.schema:check_detection_parts",
         results_check=f"{_EVAL}.results:validate_detection_results",
         evaluate_options=frozenset({"category_ids", "extra_category_ids", "unknown_category_id",
                                     "openset_convention", "processes"}),
         evaluate_flags=f"{_EVAL}.flags:detection_flags", evaluate_args=f"{_EVAL}.flags:detection_options",
         predictor="vision.detection.predictor:DetectorPredictor", predict="vision.cli.detection:run_detection",
         predict_flags="vision.cli.detection:detection_flags", predict_check="vision.cli.detection:check_detection",
         predict_usage="--vocabulary 'name,name'",
         demo_tab="detect", demo="vision.demo.app:detect_tab",
         real_frames_predictor="vision.detection.predictor:DetectorPredictor",
         export_graphs="vision.export.graphs:detection_graphs"),
    Task(name="forensics", summary="AI-generated video forensics with an evidence graph",
         config="vision.forensics.task:ForensicsConfig", lightning="vision.forensics.lightning:ForensicsModule",
         results="vision.forensics.results:results_of",
         scorer=f"{_EVAL}.scorers:score_forensics", split_check="vision.data.schema:check_forensics_parts",
         results_check=f"{_EVAL}.results:validate_forensics_results",
         evaluate_options=frozenset({"threshold", "pass_rate", "fpr"}),
         evaluate_flags=f"{_EVAL}.flags:forensics_flags", evaluate_args=f"{_EVAL}.flags:forensics_options",
         predictor="vision.forensics.predictor:ForensicsPredictor", predict="vision.cli.forensics:run_forensics",
         demo_tab="forensics", demo="vision.demo.app:forensics_tab", folder_extras=("forensics_backbone",)),
    Task(name="concept", summary="concept prompts: every instance of a phrase or of exemplar boxes, tracked in 3D",
         config="vision.concept.task:ConceptConfig", lightning="vision.concept.lightning:ConceptModule",
         results="vision.concept.results:concept_results",
         scorer=f"{_EVAL}.scorers:score_concept", split_check="vision.data.schema:check_concept_parts",
         results_check=f"{_EVAL}.results:validate_concept_results",
         evaluate_options=frozenset({"score_threshold", "presence_threshold", "accept_iou"}),
         evaluate_flags=f"{_EVAL}.flags:concept_flags", evaluate_args=f"{_EVAL}.flags:concept_options",
         predictor="vision.concept.predictor:ConceptPredictor", predict="vision.cli.concept:run_concept",
         predict_flags="vision.cli.concept:concept_flags", predict_check="vision.cli.concept:check_concept",
         predict_usage="--concept 'phrase'", alias_of=("tracking", "concept_prompts"), demo_tab="track",
         real_frames_predictor="vision.concept.detector_only:DetectorConceptPredictor"),
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
    return tuple(task.name for task in TASKS if not predictor or task.predictor is not None)


def get_task(name: str) -> Task:
    """The :class:`Task` called ``name``; an unknown name is an :class:`~vision.errors.InputError` listing the known
    ones."""
    task = _REGISTRY.get(name) if isinstance(name, str) else None
    if task is None:
        raise InputError(f"unknown task {name!r}; expected one of {', '.join(task_names())}")
    return task
