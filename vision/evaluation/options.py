"""The names evaluation accepts, importable without any scoring dependency (the command line builds its parser
from them): the tasks, each task's options, the tracking protocols."""

from __future__ import annotations

from vision.tasks import task_names

__all__ = ["TASKS", "TASK_OPTIONS", "PROTOCOLS"]

#: The tasks :func:`vision.evaluation.evaluate.evaluate` scores: every task of the registry (:mod:`vision.tasks`).
TASKS: tuple[str, ...] = task_names()

#: The options each task accepts (see :mod:`vision.evaluation.evaluate`); one entry per task of :data:`TASKS`.
TASK_OPTIONS: dict[str, frozenset[str]] = {
    "detection": frozenset({"category_ids", "extra_category_ids", "unknown_category_id", "openset_convention",
                            "processes"}),
    "tracking": frozenset({"protocol", "prompted_image_ids", "skip_first_and_last", "match_iou",
                           "allow_unknown_tracks", "tolerance", "split_root", "voxel_size", "presence_threshold"}),
    "forensics": frozenset({"threshold", "pass_rate", "fpr"}),
    "geometry": frozenset({"split_root", "max_points", "seed"}),
    "concept": frozenset({"score_threshold", "presence_threshold", "accept_iou"}),
}

#: The tracking protocols (see :func:`vision.evaluation.tracking.evaluate_tracking`).
PROTOCOLS: tuple[str, ...] = ("vos-benchmark", "davis2017")
