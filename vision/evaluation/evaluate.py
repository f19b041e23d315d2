"""One entry point: ``evaluate(split, results, task)`` -> metrics dict, and ``format_table`` for printing.

Tasks:
- ``"detection"``: COCO bbox AP/AR (keys ``AP, AP50, AP75, APs, APm, APl, AR1, AR10, AR100``); when every result
  carries a ``segmentation``, also mask AP/AR under the same keys prefixed ``segm_``. Options: ``category_ids``
  (restrict to a vocabulary: IV mAP), ``extra_category_ids`` (ids accepted in results besides the split's
  categories, e.g. an ``oov`` id; they never match ground truth).
- ``"tracking"``: J, F, J&F, recalls, decays, matched mIoU (see :func:`vision.evaluation.tracking.evaluate_tracking`).
  Options: ``prompted_image_ids``, ``skip_first_and_last``, ``match_iou``, ``allow_unknown_tracks``.

All figures are on the 0-1 scale.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from vision.errors import DataError, InputError
from vision.evaluation.detection import coco_ap, coco_ground_truth
from vision.evaluation.results import (load_json, load_results, validate_detection_results,
                                       validate_tracking_results)
from vision.evaluation.tracking import evaluate_tracking

__all__ = ["TASKS", "evaluate", "format_table"]

TASKS: tuple[str, ...] = ("detection", "tracking")

_OPTIONS = {
    "detection": {"category_ids", "extra_category_ids"},
    "tracking": {"prompted_image_ids", "skip_first_and_last", "match_iou", "allow_unknown_tracks", "tolerance"},
}


def _load_split(split: dict | str | Path) -> tuple[dict, str | None]:
    file = None
    if isinstance(split, (str, Path)):
        file = str(split)
        split = load_json(split)
    if not isinstance(split, dict):
        raise DataError("a split must be a JSON object", file=file, value=type(split).__name__)
    return split, file


def evaluate(split: dict | str | Path, results: list | str | Path, task: str, **options: Any) -> dict:
    """Score ``results`` against the ground truth in ``split`` for ``task``.

    Args:
        split: a COCO-format split dict or the path of its JSON (only the annotations are read).
        results: a COCO results list or the path of its JSON.
        task: one of :data:`TASKS`.
        **options: task options (see the module docstring); unknown ones raise :class:`InputError`.

    Returns:
        A flat dict of scalar metrics (plus ``per_track`` details for tracking).
    """
    if task not in TASKS:
        raise InputError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    unknown = set(options) - _OPTIONS[task]
    if unknown:
        raise InputError(f"unknown option(s) for task {task!r}: {', '.join(sorted(unknown))}")
    gt, split_file = _load_split(split)
    results, results_file = load_results(results)

    if task == "detection":
        coco_gt = coco_ground_truth(gt, file=split_file)
        with_segm = validate_detection_results(results, gt, results_file,
                                               tuple(options.get("extra_category_ids", ())))
        category_ids = options.get("category_ids")
        metrics: dict[str, Any] = dict(coco_ap(coco_gt, results, "bbox", category_ids=category_ids))
        if with_segm:
            coco_gt_segm = coco_ground_truth(gt, file=split_file, need_segmentation=True)
            segm = coco_ap(coco_gt_segm, results, "segm", category_ids=category_ids)
            metrics.update({f"segm_{k}": v for k, v in segm.items()})
        metrics["num_results"] = len(results)
        return metrics

    validate_tracking_results(results, gt, results_file)
    return evaluate_tracking(gt, results, results_file=results_file, gt_file=split_file, **options)


def format_table(metrics: dict) -> str:
    """Two-column text table of the scalar entries of ``metrics`` (floats with 4 decimals, in insertion order;
    ``-1.0000`` means undefined, as in COCO). Non-scalar entries (e.g. ``per_track``) are left out."""
    rows = []
    for key, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if isinstance(value, int):
            rows.append((str(key), str(value)))
        else:
            rows.append((str(key), "nan" if math.isnan(value) else f"{value:.4f}"))
    if not rows:
        return "(no metrics)"
    width = max(len("metric"), *(len(k) for k, _ in rows))
    vwidth = max(len("value"), *(len(v) for _, v in rows))
    lines = [f"{'metric':<{width}}  {'value':>{vwidth}}", f"{'-' * width}  {'-' * vwidth}"]
    lines += [f"{k:<{width}}  {v:>{vwidth}}" for k, v in rows]
    return "\n".join(lines)
