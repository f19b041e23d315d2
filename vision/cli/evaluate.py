"""``vision-evaluate`` (and ``python tools/evaluate.py``): score a results file against a split.

    vision-evaluate --split SPLIT.json --results RESULTS.json --task detection|tracking|forensics|geometry|concept
                    [--out METRICS.json]

Prints a table of metrics (then a ``note:`` line for anything not scored, e.g. mask AP skipped on a box-only split)
and, with ``--out``, writes them as JSON (atomically; ``--out`` may not name the split or the results). Bad input
exits with status 2 and one line on stderr naming the file, the field and the problem; nothing is written then.
``--split`` and ``--results`` must be regular files (not a FIFO or a device) of at most
:data:`vision.data.files.MAX_JSON_BYTES` bytes.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from pathlib import Path

from vision.errors import VisionError
from vision.evaluation.options import PROTOCOLS, TASKS

__all__ = ["main", "build_parser"]


def _id_list(text: str) -> list[int]:
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integer ids, got {text!r}") from None


def _category_ids(text: str) -> list[int] | str:
    """``--category-ids``: comma-separated ids, or ``vocabulary`` (the split's ``info.vocabulary``)."""
    return "vocabulary" if text.strip() == "vocabulary" else _id_list(text)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def _default_processes() -> int:
    """2 where this process may run on two or more cores and the platform forks, else 1."""
    import os

    from vision.evaluation.fork import can_fork

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 2 if cores > 1 and can_fork() else 1


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``vision-evaluate``."""
    parser = argparse.ArgumentParser(description="Score COCO-format results against a split.")
    parser.add_argument("--split", required=True, type=Path, help="the split's COCO JSON (ground truth)")
    parser.add_argument("--results", required=True, type=Path, help="the results JSON (a list)")
    parser.add_argument("--task", required=True, choices=TASKS)
    parser.add_argument("--out", help="write the metrics here as JSON (not the split or the results file)")
    parser.add_argument("--category-ids", type=_category_ids,
                        help="detection: restrict AP to these ids (IV mAP), or 'vocabulary': the ids of the split's "
                             "info.vocabulary (the figures tools/train.py test prints)")
    parser.add_argument("--extra-category-ids", type=_id_list,
                        help="detection: ids accepted in results besides the split's (e.g. oov)")
    parser.add_argument("--unknown-category-id", type=int,
                        help="detection: the id of rejected (OOV) detections; adds the open-set metrics")
    parser.add_argument("--openset-convention", choices=("coco", "opendet2"),
                        help="detection: how AP_U and WI are computed (default coco; opendet2: OpenDet2's evaluator)")
    parser.add_argument("--processes", type=_positive_int, default=None,
                        help="detection: 2 scores mask AP in a second process while box AP runs (default: 2 where "
                             "this process may use two or more cores and the platform forks, else 1)")
    parser.add_argument("--prompted-image-ids", type=_id_list, help="tracking: views to exclude (prompted)")
    parser.add_argument("--skip-first-and-last", action="store_true",
                        help="tracking: drop the first and last frame (DAVIS semi-supervised protocol)")
    parser.add_argument("--protocol", choices=PROTOCOLS,
                        help="tracking: which frames and objects J&F scores (default vos-benchmark)")
    parser.add_argument("--threshold", type=_finite_float,
                        help="forensics: the detector's threshold (fixed on real validation videos)")
    parser.add_argument("--score-threshold", type=_finite_float,
                        help="concept: the score at which an instance counts for cgF1 / IL_MCC (default 0.5)")
    parser.add_argument("--presence-threshold", type=_finite_float,
                        help="concept: the presence at which a presence record says present (default 0.5)")
    parser.add_argument("--accept-iou", type=_finite_float,
                        help="concept: the mask IoU at which an instance covers an object outside the phrases "
                             "(default 0.5)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``), score, print the table; 0 on success, 2 with one ``error:`` line
    when a file or option is bad."""
    parser = build_parser()
    args = parser.parse_args(argv)
    detection_flags = (args.category_ids is not None or args.extra_category_ids is not None
                       or args.unknown_category_id is not None or args.openset_convention is not None
                       or args.processes is not None)
    tracking_flags = args.prompted_image_ids is not None or args.skip_first_and_last or args.protocol is not None
    forensics_flags = args.threshold is not None
    concept = {"score_threshold": args.score_threshold, "presence_threshold": args.presence_threshold,
               "accept_iou": args.accept_iou}
    concept_flags = any(v is not None for v in concept.values())
    if ((args.task != "detection" and detection_flags) or (args.task != "tracking" and tracking_flags)
            or (args.task != "forensics" and forensics_flags) or (args.task != "concept" and concept_flags)):
        parser.error(f"an option given does not apply to --task {args.task}")
    options: dict = {}
    if args.task == "detection":
        if args.category_ids is not None:
            options["category_ids"] = args.category_ids
        if args.extra_category_ids is not None:
            options["extra_category_ids"] = args.extra_category_ids
        if args.unknown_category_id is not None:
            options["unknown_category_id"] = args.unknown_category_id
        if args.openset_convention is not None:
            options["openset_convention"] = args.openset_convention
        options["processes"] = args.processes if args.processes is not None else _default_processes()
    elif args.task == "tracking":
        if args.prompted_image_ids is not None:
            options["prompted_image_ids"] = args.prompted_image_ids
        options["skip_first_and_last"] = args.skip_first_and_last
        if args.protocol is not None:
            options["protocol"] = args.protocol
        try:
            options["split_root"] = str(args.split.resolve().parent)
        except (OSError, RuntimeError):  # a link loop: reading the split then reports it in one line
            options["split_root"] = str(args.split.absolute().parent)
    elif args.task == "concept":
        options.update({k: v for k, v in concept.items() if v is not None})
    elif args.threshold is not None:
        options["threshold"] = args.threshold
    # imported here: the scorers load NumPy, OpenCV and SciPy, which --help and a bad command line do not need
    from vision.data.files import output_file, write_failure
    from vision.data.io import atomic_write_json
    from vision.evaluation.evaluate import evaluate, format_table

    try:
        out = None if args.out is None else output_file(args.out, inputs=[args.split, args.results])
        metrics = evaluate(args.split, args.results, args.task, **options)
        if out is not None:
            try:
                atomic_write_json(out, metrics, indent=2)
            except OSError as exc:
                raise write_failure(exc, out.parent) from None
    except VisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a file the scorers read failed below the checks (an I/O error): one line
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    print(format_table(metrics))
    for note in metrics.get("notes", []):
        print(f"note: {note}")
    return 0
