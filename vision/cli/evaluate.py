"""``vision evaluate`` (alias ``vision-evaluate``): score a results file against a split.

    vision-evaluate --split SPLIT.json --results RESULTS.json --task TASK (a registered task, vision.tasks)
                    [--out METRICS.json]

Prints a table of metrics (then a ``note:`` line for anything not scored, e.g. mask AP skipped on a box-only split)
and, with ``--out``, writes them as JSON (atomically; ``--out`` may not name the split or the results, a folder, a
FIFO, a device or a symbolic-link loop; a link to a file is written through, and stays a link). Bad input
exits with status 2 and one line on stderr naming the file, the field and the problem; nothing is written then.
``--split`` and ``--results`` must be regular files (not a FIFO or a device) of at most
:data:`vision.data.files.MAX_JSON_BYTES` bytes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from vision.errors import VisionError
from vision.cli.task_flags import add_task_flags, foreign_flags
from vision.tasks import Task, task_names

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``vision-evaluate``: the common flags, then one argument group per registered task with
    flags (``Task.evaluate_flags``)."""
    parser = argparse.ArgumentParser(description="Score COCO-format results against a split.")
    parser.add_argument("--split", required=True, type=Path, help="the split's COCO JSON (ground truth)")
    parser.add_argument("--results", required=True, type=Path, help="the results JSON (a list)")
    parser.add_argument("--task", required=True, choices=task_names())
    parser.add_argument("--out", help="write the metrics here as JSON (not the split or the results file)")
    add_task_flags(parser, "evaluate_flags")
    return parser


def _options(task: Task, args: argparse.Namespace, split: Path) -> dict:
    """The scorer's options from ``task``'s flags (none for a task without flags)."""
    return dict(task.resolve("evaluate_args")(args, split)) if task.has("evaluate_args") else {}


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``), score, print the table; 0 on success, 2 with one ``error:`` line
    when a file or option is bad."""
    parser = build_parser()
    args = parser.parse_args(argv)
    foreign = [action for actions in foreign_flags(parser, args, (args.task,)).values() for action in actions]
    if foreign:
        parser.error(f"an option given does not apply to --task {args.task}: "
                     + ", ".join(action.option_strings[0] for action in foreign))
    from vision.tasks import get_task

    options = _options(get_task(args.task), args, args.split)
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
    except MemoryError:  # a split or results file larger than this process may hold: one line, nothing written
        print(f"error: out of memory scoring {args.results} against {args.split}", file=sys.stderr)
        return 2
    print(format_table(metrics))
    for note in metrics.get("notes", []):
        print(f"note: {note}")
    return 0
