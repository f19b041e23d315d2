"""The ``vision-evaluate`` flags of each task and the scorer options they give, named by the registry
(``Task.evaluate_flags`` / ``Task.evaluate_args``, :mod:`vision.tasks`). Importable without any scoring
dependency: the command line builds its parser from them.

``<task>_flags(group)`` adds the task's flags to an argparse group (every default None or False: a flag given to
another task is refused by the command line); ``<task>_options(args, split)`` turns the parsed flags into the
options of :func:`vision.evaluation.evaluate.evaluate` (``split``: the split file's path).
"""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import Any

__all__ = ["PROTOCOLS", "detection_flags", "detection_options", "tracking_flags", "tracking_options",
           "forensics_flags", "forensics_options", "concept_flags", "concept_options", "id_list", "finite_float",
           "positive_int"]

#: The tracking protocols (see :func:`vision.evaluation.tracking.evaluate_tracking`).
PROTOCOLS: tuple[str, ...] = ("vos-benchmark", "davis2017")


def id_list(text: str) -> list[int]:
    """Comma-separated integer ids."""
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integer ids, got {text!r}") from None


def positive_int(text: str) -> int:
    """An integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def finite_float(text: str) -> float:
    """A finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def _category_ids(text: str) -> list[int] | str:
    """``--category-ids``: comma-separated ids, or ``vocabulary`` (the split's ``info.vocabulary``)."""
    return "vocabulary" if text.strip() == "vocabulary" else id_list(text)


def _default_processes() -> int:
    """2 where this process may run on two or more cores and the platform forks, else 1."""
    from vision.evaluation.fork import can_fork

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 2 if cores > 1 and can_fork() else 1


def _given(args: argparse.Namespace, names: tuple[str, ...]) -> dict[str, Any]:
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


# ------------------------------------------------------------------------------------------------------ detection

def detection_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--category-ids", type=_category_ids,
                       help="restrict AP to these ids (IV mAP), or 'vocabulary': the ids of the split's "
                            "info.vocabulary (the figures tools/train.py test prints)")
    group.add_argument("--extra-category-ids", type=id_list,
                       help="ids accepted in results besides the split's (e.g. oov)")
    group.add_argument("--unknown-category-id", type=int,
                       help="the id of rejected (OOV) detections; adds the open-set metrics")
    group.add_argument("--openset-convention", choices=("coco", "opendet2"),
                       help="how AP_U and WI are computed (default coco; opendet2: OpenDet2's evaluator)")
    group.add_argument("--processes", type=positive_int, default=None,
                       help="2 scores mask AP in a second process while box AP runs (default: 2 where this process "
                            "may use two or more cores and the platform forks, else 1)")


def detection_options(args: argparse.Namespace, split: Path) -> dict[str, Any]:
    options = _given(args, ("category_ids", "extra_category_ids", "unknown_category_id", "openset_convention"))
    options["processes"] = args.processes if args.processes is not None else _default_processes()
    return options


# ------------------------------------------------------------------------------------------------------- tracking

def tracking_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--prompted-image-ids", type=id_list, help="views to exclude (prompted)")
    group.add_argument("--skip-first-and-last", action="store_true",
                       help="drop the first and last frame (DAVIS semi-supervised protocol)")
    group.add_argument("--protocol", choices=PROTOCOLS,
                       help="which frames and objects J&F scores (default vos-benchmark)")


def tracking_options(args: argparse.Namespace, split: Path) -> dict[str, Any]:
    options = _given(args, ("prompted_image_ids", "protocol"))
    options["skip_first_and_last"] = args.skip_first_and_last
    try:  # the 3D figures read the split's depth files next to it
        options["split_root"] = str(split.resolve().parent)
    except (OSError, RuntimeError):  # a link loop: reading the split then reports it in one line
        options["split_root"] = str(split.absolute().parent)
    return options


# ------------------------------------------------------------------------------------------------------ forensics

def forensics_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--threshold", type=finite_float,
                       help="the detector's threshold (fixed on real validation videos)")


def forensics_options(args: argparse.Namespace, split: Path) -> dict[str, Any]:
    return _given(args, ("threshold",))


# -------------------------------------------------------------------------------------------------------- concept

def concept_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--score-threshold", type=finite_float,
                       help="the score at which an instance counts for cgF1 / IL_MCC (default 0.5)")
    group.add_argument("--presence-threshold", type=finite_float,
                       help="the presence at which a presence record says present (default 0.5)")
    group.add_argument("--accept-iou", type=finite_float,
                       help="the mask IoU at which an instance covers an object outside the phrases (default 0.5)")


def concept_options(args: argparse.Namespace, split: Path) -> dict[str, Any]:
    return _given(args, ("score_threshold", "presence_threshold", "accept_iou"))
