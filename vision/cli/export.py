"""``vision-export``: a checkpoint as a shareable model folder, optionally with ONNX graphs.

  vision-export --ckpt runs/detection/tiny/checkpoints/best.ckpt --out models/detection-tiny
  vision-export --ckpt runs/geometry/tiny/checkpoints/best.ckpt --out models/geometry-tiny --onnx

The folder (:mod:`vision.model_folder`) holds ``config.json`` (the task and its model config, the training
hyper-parameters), ``model.safetensors`` (and ``backbone.safetensors`` for a forensic detector with a geometry
backbone) and a model card ``README.md`` with what the model was trained on and the figures its validation logged
(from the checkpoint and the run folder's ``metrics.csv``). Every ``--ckpt`` option of the package (``vision-predict``,
the demo, ``task.load``, the training configs' backbone weights) takes the folder in place of the checkpoint.

``--onnx`` also writes the task's graphs (:mod:`vision.export.graphs`) into ``DIR/onnx/<graph>.onnx``, each checked
with onnxruntime against PyTorch on views of the synthetic renderer at the model's input size (the largest
difference per output is printed). ``--ckpt`` may itself be a model folder.

``--out`` is checked before the checkpoint is read: a new or empty folder, or with ``--overwrite`` a model folder
holding nothing but a model folder's files (``config.json``, ``README.md``, ``*.safetensors``, ``onnx/*.onnx``); an
``--out`` that holds an input (``--ckpt``, ``--metrics``) or anything else is refused, so ``--overwrite`` never
deletes what it did not write. The folder is written beside ``--out`` and renamed into place, so a full disk or a
read-only mount leaves nothing (and a replaced folder as it was). ``--metrics`` must be a regular file or a folder,
and must give the card its figures (a ``val/*`` row at the checkpoint's epoch): a ``--metrics`` that is not used is
an error, not silently dropped.

Exit status: 0 on success, 2 with one ``error:`` line on bad input (a missing or foreign checkpoint, a folder that is
not a model folder, an ``--out`` that holds something else or cannot be written, an unusable ``--metrics``);
nothing is written then.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from vision.errors import InputError, VisionError
from vision.tasks import task_names

__all__ = ["build_parser", "main", "export_onnx", "check_metrics", "check_metrics_used"]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``vision-export``."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ckpt", required=True, type=Path,
                        help="a checkpoint written by vision-train (tools/train.py), or a model folder")
    parser.add_argument("--out", required=True,
                        help="the model folder to write (new or empty; with --overwrite, a model folder)")
    parser.add_argument("--task", choices=task_names(),
                        help="the checkpoint's task (default: read from the checkpoint; a checkpoint of another "
                             "task is refused)")
    parser.add_argument("--metrics", type=Path,
                        help="the run's metrics.csv (or a folder of them) for the model card's validation figures "
                             "(default: the metrics.csv files of the checkpoint's run folder)")
    parser.add_argument("--onnx", action="store_true",
                        help="also export the task's ONNX graphs into DIR/onnx/, each checked with onnxruntime")
    parser.add_argument("--overwrite", action="store_true",
                        help="replace --out when it is a model folder (holding nothing but a model folder's files)")
    return parser


def export_onnx(folder: Path, out_dir: Path) -> dict[str, dict[str, float]]:
    """Export the graphs of the model in ``folder`` (a model folder or checkpoint) into ``out_dir`` (created) and
    check each with onnxruntime on its example inputs: ``{graph: {output: largest absolute difference}}``."""
    from vision.export.graphs import graphs_of
    from vision.export.onnx import check_graph, export_graph
    from vision.checkpoint import read_model
    from vision.export.task_detection import task_of_checkpoint
    from vision.tasks import get_task

    task = task_of_checkpoint(read_model(folder), folder)
    model, config = get_task(task).load(folder)
    graphs = graphs_of(task, model, config, folder=folder)
    out_dir.mkdir(parents=True, exist_ok=True)
    checks = {}
    for graph in graphs:
        path = export_graph(graph, out_dir / f"{graph.name}.onnx")
        checks[graph.name] = check_graph(graph, path)
    return checks


def check_metrics(metrics: Path) -> None:
    """Refuse a ``--metrics`` that is neither a folder nor a regular file (missing, a device such as ``/dev/zero``,
    a FIFO, a symbolic-link loop): :class:`InputError`, one line naming it."""
    from vision.data.files import regular_file

    if not os.path.isdir(metrics):
        regular_file(metrics, what="--metrics", error=InputError)


def check_metrics_used(metrics: Path, checkpoint: Mapping[str, Any], training: Mapping[str, Any]) -> None:
    """Refuse a ``--metrics`` that gave the model card nothing (:class:`InputError` saying why): the checkpoint is a
    model folder that keeps its own training record, records no epoch, or the files hold no readable ``val/*`` row
    at its epoch."""
    if checkpoint.get("training"):
        reason = "--ckpt is a model folder, which keeps the training record it was exported with"
    elif not isinstance(checkpoint.get("epoch"), int):
        reason = "the checkpoint records no epoch to find its row by"
    elif (training.get("validation") or {}).get("source") is None:
        reason = f"it holds no readable metrics.csv with a val/* row at the checkpoint's epoch {checkpoint['epoch']}"
    else:
        return
    raise InputError(f"--metrics {metrics} is not used: {reason}")


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and export; 0 on success, 2 with one ``error:`` line on bad input."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the text encoder's weights are installed as a package
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    args = build_parser().parse_args(argv)
    try:
        from vision.checkpoint import read_model
        from vision.data.files import output_path
        from vision.export.from_checkpoint import folder_of_checkpoint
        from vision.export.model_card import model_card
        from vision.export.task_detection import registered_config
        from vision.model_folder import ONNX_FOLDER, check_model_folder_out, write_model_folder
        from vision.tasks import get_task

        out = output_path(args.out)  # an empty --out would be the current folder
        if not args.ckpt.exists():
            raise InputError(f"checkpoint not found: {args.ckpt}")
        if args.metrics is not None:
            check_metrics(args.metrics)
        inputs = [args.ckpt, *([args.metrics] if args.metrics is not None else [])]
        check_model_folder_out(out, overwrite=args.overwrite, inputs=inputs)  # before the checkpoint is read
        checkpoint = read_model(args.ckpt, config_of=registered_config)
        folder = folder_of_checkpoint(checkpoint, args.ckpt, task=args.task, metrics=args.metrics)
        if args.metrics is not None:
            check_metrics_used(args.metrics, checkpoint, folder.training)
        get_task(folder.task).load(args.ckpt)  # the weights fit the config: the folder will load
        checks: dict[str, dict[str, float]] = {}

        def add_graphs(staging: Path) -> None:  # the graphs go in before the folder is renamed into place
            checks.update(export_onnx(staging, staging / ONNX_FOLDER))

        write_model_folder(folder, out, overwrite=args.overwrite, inputs=inputs, card=model_card,
                           add=add_graphs if args.onnx else None)
    except VisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not args.onnx:
        print(f"wrote the {folder.task} model folder {out}")
        return 0
    print(f"wrote the {folder.task} model folder {out} with ONNX graphs in {out / ONNX_FOLDER}")
    for name, differences in checks.items():
        worst = ", ".join(f"{k} {v:.2g}" for k, v in differences.items())
        print(f"  {name}.onnx: onnxruntime vs PyTorch, largest absolute difference: {worst}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
