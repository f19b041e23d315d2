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

Exit status: 0 on success, 2 with one ``error:`` line on bad input (a missing or foreign checkpoint, a folder that is
not a model folder, an ``--out`` that holds something else); nothing is written then.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from vision.errors import InputError, VisionError
from vision.tasks import task_names

__all__ = ["build_parser", "main", "export_onnx"]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``vision-export``."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ckpt", required=True, type=Path,
                        help="a checkpoint written by vision-train (tools/train.py), or a model folder")
    parser.add_argument("--out", required=True, type=Path, help="the model folder to write (new or empty)")
    parser.add_argument("--task", choices=task_names(),
                        help="the checkpoint's task (default: read from the checkpoint; a checkpoint of another "
                             "task is refused)")
    parser.add_argument("--metrics", type=Path,
                        help="the run's metrics.csv (or a folder of them) for the model card's validation figures "
                             "(default: the metrics.csv files of the checkpoint's run folder)")
    parser.add_argument("--onnx", action="store_true",
                        help="also export the task's ONNX graphs into DIR/onnx/, each checked with onnxruntime")
    parser.add_argument("--overwrite", action="store_true", help="replace --out when it is a model folder")
    return parser


def export_onnx(folder: Path, out_dir: Path) -> dict[str, dict[str, float]]:
    """Export the graphs of the model in ``folder`` (a model folder or checkpoint) into ``out_dir`` (created) and
    check each with onnxruntime on its example inputs: ``{graph: {output: largest absolute difference}}``."""
    from vision.export.graphs import graphs_of
    from vision.export.onnx import check_graph, export_graph
    from vision.checkpoint import read_model
    from vision.model_folder import task_of_checkpoint
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


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and export; 0 on success, 2 with one ``error:`` line on bad input."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the text encoder's weights are installed as a package
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    args = build_parser().parse_args(argv)
    try:
        from vision.checkpoint import read_model
        from vision.model_folder import folder_of_checkpoint, write_model_folder
        from vision.tasks import get_task

        if not args.ckpt.exists():
            raise InputError(f"checkpoint not found: {args.ckpt}")
        if args.ckpt.resolve() == args.out.resolve():
            raise InputError(f"--out {args.out} is the model folder being read; give another folder")
        checkpoint = read_model(args.ckpt)
        folder = folder_of_checkpoint(checkpoint, args.ckpt, task=args.task, metrics=args.metrics)
        get_task(folder.task).load(args.ckpt)  # the weights fit the config: the folder will load
        if not args.onnx:
            write_model_folder(folder, args.out, overwrite=args.overwrite)
            print(f"wrote the {folder.task} model folder {args.out}")
            return 0
        staging = Path(tempfile.mkdtemp(prefix=".vision-export-"))
        try:  # the folder and its graphs are checked before --out is written
            written = write_model_folder(folder, staging / "model")
            checks = export_onnx(written, written / "onnx")
            write_model_folder(folder, args.out, overwrite=args.overwrite)
            shutil.copytree(written / "onnx", args.out / "onnx")
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        print(f"wrote the {folder.task} model folder {args.out} with ONNX graphs in {args.out / 'onnx'}")
        for name, differences in checks.items():
            worst = ", ".join(f"{k} {v:.2g}" for k, v in differences.items())
            print(f"  {name}.onnx: onnxruntime vs PyTorch, largest absolute difference: {worst}")
    except VisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
