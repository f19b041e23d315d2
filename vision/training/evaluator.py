"""The one evaluation interface of every task's LightningModule: collect keyed results, gather them across ranks,
score them with :func:`vision.evaluation.evaluate.evaluate`, log them under one naming rule.

A module holds one :class:`TaskEvaluator` (the shape of detectron2's ``DatasetEvaluator``: reset / process /
evaluate). Its ``validation_step`` / ``test_step`` hand it each dataset item's output with
:meth:`TaskEvaluator.process`, under a key that names the item (an image id, a clip's image ids, a
``(video id, prompt type)``); ``on_validation_epoch_end`` / ``on_test_epoch_end`` call
:meth:`TaskEvaluator.evaluate`, which

1. gathers every rank's items (:func:`vision.training.collect.gather_unique`: one per key, the distributed sampler's
   padded repeats dropped, in key order, the same on every rank) and empties the evaluator. It is a collective:
   every rank calls it, in Lightning's sanity check too;
2. stops there (returns None: nothing scored, nothing logged) in the sanity check and when the epoch gathered no
   item;
3. turns the items into results: by default each item is a list of COCO-format result dicts and the results are
   their concatenation; a task's ``results`` hook may do more (forensics re-fits its calibration on the gathered
   feature rows, then scores them);
4. scores them: ``evaluate(split, results, task, **options)``, the split being the datamodule's
   ``split_path(stage)`` unless the task's ``split`` hook gives another (a path or a split dict), the options the
   task's ``options`` hook gives (none by default);
5. logs every finite scalar figure under :func:`metric_prefix` (:func:`log_metrics`) and returns the metrics.

The naming rule: modules name stages as Lightning does (``train``, ``validate``, ``test``, ``predict``); figures
and losses are logged as ``{metric_prefix(stage)}/{name}``: ``train/...``, ``val/...``, ``test/...``
(:data:`STAGE_PREFIX`; the checkpoint callbacks of ``configs/`` monitor ``val/...``).

The evaluator holds per-rank state of the running epoch only (emptied by every gather); it is not part of a
checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import Any

import lightning as L
import torch

from vision.errors import InputError
from vision.evaluation.evaluate import evaluate
from vision.tasks import get_task
from vision.training.collect import gather_unique

__all__ = ["STAGE_PREFIX", "TaskEvaluator", "log_losses", "log_metrics", "metric_prefix"]

#: Lightning stage -> the prefix its figures and losses are logged under.
STAGE_PREFIX: dict[str, str] = {"train": "train", "validate": "val", "test": "test"}

#: ``(stage, gathered items) -> results`` (a task's own conversion of the gathered items).
ResultsHook = Callable[[str, list[Any]], list[dict]]
#: ``(stage, results) -> the split to score against`` (a split file path or a split dict).
SplitHook = Callable[[str, list[dict]], str | Path | dict]
#: ``stage -> evaluate's task options``, read after the results hook ran.
OptionsHook = Callable[[str], Mapping[str, Any]]


def metric_prefix(stage: str) -> str:
    """The prefix figures and losses of the Lightning stage ``stage`` are logged under (:data:`STAGE_PREFIX`)."""
    if stage not in STAGE_PREFIX:
        raise InputError(f"stage must be one of {', '.join(STAGE_PREFIX)}, got {stage!r}")
    return STAGE_PREFIX[stage]


def log_metrics(module: Any, stage: str, metrics: Mapping[str, Any]) -> dict[str, float]:
    """Log every finite scalar of ``metrics`` as ``{metric_prefix(stage)}/{name}`` (the same value on every rank:
    ``sync_dist``) and return them. Booleans, non-scalars (``per_track``, ``per_class``...) and nan are left out."""
    prefix = metric_prefix(stage)
    logged: dict[str, float] = {}
    for name, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(float(value)):
            continue
        logged[f"{prefix}/{name}"] = float(value)
    if logged:
        module.log_dict(logged, sync_dist=True)
    return logged


def log_losses(module: L.LightningModule, stage: str, losses: Mapping[str, torch.Tensor], batch_size: int) -> None:
    """Log a step's loss terms: ``{prefix}/loss`` (``losses["loss"]``, on the progress bar) and ``{prefix}/{name}``
    for every other entry; outside training the values are averaged over ranks (``sync_dist``)."""
    prefix = metric_prefix(stage)
    sync = stage != "train"
    module.log(f"{prefix}/loss", losses["loss"], prog_bar=True, batch_size=batch_size, sync_dist=sync)
    module.log_dict({f"{prefix}/{name}": value for name, value in losses.items() if name != "loss"},
                    batch_size=batch_size, sync_dist=sync)


def _concatenated(stage: str, items: list[Any]) -> list[dict]:
    """The default conversion: each gathered item is a list of results; their concatenation, in key order."""
    return [result for results in items for result in results]


class TaskEvaluator:
    """Collect one epoch's keyed items of one task, then gather, score and log them (see the module docstring).

    Args:
        task: a registered task (:mod:`vision.tasks`), scored by :func:`vision.evaluation.evaluate.evaluate`.
        results: hook ``(stage, gathered items) -> results`` (default: the items are lists of results,
            concatenated).
        split: hook ``(stage, results) -> split`` (a path or a split dict; default: the trainer's datamodule's
            ``split_path(stage)``).
        options: hook ``stage -> evaluate's options`` (default: none), called after the results hook.
    """

    def __init__(self, task: str, results: ResultsHook | None = None, split: SplitHook | None = None,
                 options: OptionsHook | None = None) -> None:
        self.task = get_task(task).name  # an unknown task is an InputError here, not at the epoch's end
        self._results = results or _concatenated
        self._split = split
        self._options = options
        self._items: list[tuple[Hashable, Any]] = []

    def reset(self) -> None:
        """Drop the items collected so far."""
        self._items = []

    def process(self, key: Hashable, item: Any) -> None:
        """Keep one dataset item's output (a list of results, or what the results hook reads) under ``key``; keys
        of one epoch must be comparable with each other."""
        self._items.append((key, item))

    def __len__(self) -> int:
        return len(self._items)

    def gather(self) -> list[Any]:
        """Every rank's items, one per key (the first seen), in key order; then empty (a collective: every rank
        calls it)."""
        items, self._items = self._items, []
        return gather_unique(items)

    def score(self, module: L.LightningModule, stage: str, results: list[dict]) -> dict[str, Any]:
        """``evaluate(split, results, task, **options)`` with the split and options of ``stage`` (no gather, no
        logging)."""
        split = (self._split(stage, results) if self._split is not None
                 else module.trainer.datamodule.split_path(stage))
        options = dict(self._options(stage)) if self._options is not None else {}
        return evaluate(split, results, self.task, **options)

    def evaluate(self, module: L.LightningModule, stage: str) -> dict[str, Any] | None:
        """Gather, convert, score and log the epoch of ``stage`` (``validate`` or ``test``); the metrics, or None
        in the sanity check and for an epoch without items (see the module docstring)."""
        items = self.gather()
        if module.trainer.sanity_checking or not items:
            return None
        metrics = self.score(module, stage, self._results(stage, items))
        log_metrics(module, stage, metrics)
        return metrics

    def print_table(self, module: L.LightningModule, metrics: dict[str, Any] | None, heading: str) -> None:
        """Print ``metrics`` (what :meth:`evaluate` returned; nothing when None) under ``heading``, on rank 0 only:
        the table ``tools/train.py test`` shows."""
        if metrics is not None and module.trainer.is_global_zero:
            from vision.evaluation.evaluate import format_table

            print(f"\n{heading}:")
            print(format_table(metrics))
