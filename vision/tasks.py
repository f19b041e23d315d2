"""The registry of tasks: each task's name and where its parts live. The CLIs, the demo, the benchmarks and the
contract tests (``tests/test_tasks.py``) iterate it; adding a task is one :class:`Task` entry plus its folder.

Every task's folder ``vision/<name>/`` holds the same parts, with the same signatures:

- ``task.py``: ``<Name>Config`` (a :class:`~vision.checkpoint.TaskConfig` dataclass), ``build_model(config=None)``
  (an untrained model; a config, a mapping of its fields or None for the defaults) and
  ``load(checkpoint, device="cpu") -> (model in eval mode on device, config)``, which reads a checkpoint with
  ``weights_only=True`` or a model folder (safetensors), and ``save(model, config, folder)``, which writes that
  folder (:mod:`vision.model_folder`). Inference code imports it; it never imports :mod:`vision.training` or
  Lightning.
- ``lightning.py``: the LightningModule that trains it and scores it with the task's metric
  (:class:`vision.training.evaluator.TaskEvaluator`); the class ``tools/train.py`` builds from the YAML.
- ``predictor.py`` (the tasks users run on their own inputs): a class with ``from_checkpoint(path, ...)``.
- ``results.py``: model outputs -> the task's COCO-format results, which ``vision.evaluation.evaluate(split, results,
  name)`` scores (the scorer is the task's name there).

The registry itself imports nothing but the standard library and :mod:`vision.errors`: a part is named ``"module:attribute"`` and imported
only when asked for, so ``vision-evaluate`` and ``--help`` pay for no model.
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from vision.errors import InputError

__all__ = ["Task", "TASKS", "get_task", "task_names"]


@dataclasses.dataclass(frozen=True)
class Task:
    """One task of the package.

    Args:
        name: the task's name (``--task`` on every CLI, the scorer's name in :func:`vision.evaluation.evaluate`).
        summary: one line for help texts.
        config: ``"module:Class"`` of its :class:`~vision.checkpoint.TaskConfig`.
        lightning: ``"module:Class"`` of its LightningModule.
        predictor: ``"module:Class"`` of its predictor, None when users do not run it on their own inputs.
        results: ``"module:function"`` that turns its model's outputs into COCO-format results.
        demo_tab: the demo's tab for it (None: not in the demo).
    """

    name: str
    summary: str
    config: str
    lightning: str
    predictor: str | None
    results: str
    demo_tab: str | None = None

    @property
    def package(self) -> str:
        return f"vision.{self.name}"

    def resolve(self, part: str) -> Any:
        """Import and return the part named ``part`` (``"config"``, ``"lightning"``, ``"predictor"``,
        ``"results"``), or a function of ``task.py`` (``"build_model"``, ``"load"``)."""
        if part in ("build_model", "load"):
            return getattr(importlib.import_module(f"{self.package}.task"), part)
        target = getattr(self, part)
        if target is None:
            raise KeyError(f"task {self.name!r} has no {part}")
        module, _, attribute = target.partition(":")
        return getattr(importlib.import_module(module), attribute)

    def build_model(self, config: Any = None) -> Any:
        """``vision.<name>.task.build_model(config)``."""
        return self.resolve("build_model")(config)

    def load(self, checkpoint: Any, device: Any = "cpu") -> tuple[Any, Any]:
        """``vision.<name>.task.load(checkpoint, device)``: ``(model in eval mode, config)``."""
        return self.resolve("load")(checkpoint, device=device)


TASKS: tuple[Task, ...] = (
    Task(name="geometry", summary="the shared VGGT-style backbone: depth, point maps and cameras from views",
         config="vision.geometry.task:GeometryConfig", lightning="vision.geometry.lightning:GeometryModule",
         predictor=None, results="vision.geometry.results:clip_results"),
    Task(name="tracking", summary="G2TAM: promptable instance tracking in 3D over videos and unordered views",
         config="vision.tracking.task:TrackingConfig", lightning="vision.tracking.lightning:TrackingModule",
         predictor="vision.tracking.predictor:TrackerPredictor", results="vision.tracking.results:propagated_results",
         demo_tab="track"),
    Task(name="detection", summary="OOVDet: zero-shot detection that rejects out-of-vocabulary objects",
         config="vision.detection.task:DetectionConfig", lightning="vision.detection.lightning:OOVDetModule",
         predictor="vision.detection.predictor:DetectorPredictor", results="vision.detection.results:image_results",
         demo_tab="detect"),
    Task(name="forensics", summary="AI-generated video forensics with an evidence graph",
         config="vision.forensics.task:ForensicsConfig", lightning="vision.forensics.lightning:ForensicsModule",
         predictor="vision.forensics.predictor:ForensicsPredictor", results="vision.forensics.results:results_of",
         demo_tab="forensics"),
    Task(name="concept", summary="concept prompts: every instance of a phrase or of exemplar boxes, tracked in 3D",
         config="vision.concept.task:ConceptConfig", lightning="vision.concept.lightning:ConceptModule",
         predictor="vision.concept.predictor:ConceptPredictor", results="vision.concept.results:concept_results"),
)


def task_names(predictor: bool = False) -> tuple[str, ...]:
    """The registered task names (``predictor``: only those with a predictor), in registry order."""
    return tuple(task.name for task in TASKS if not predictor or task.predictor is not None)


def get_task(name: str) -> Task:
    """The :class:`Task` called ``name``; an unknown name is an :class:`~vision.errors.InputError` listing the known
    ones."""
    for task in TASKS:
        if task.name == name:
            return task
    raise InputError(f"unknown task {name!r}; expected one of {', '.join(task_names())}")
