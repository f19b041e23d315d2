"""``vision predict`` (alias ``vision-predict``): run a trained model on an image, a folder of images or a
video.

  vision-predict --task detection --ckpt CKPT --vocabulary "mug,chair,lamp" INPUT [--out DIR]
      -> DIR/results.json (COCO results; rejected OOV objects use category id 1000) + DIR/annotated.mp4
  vision-predict --task tracking --ckpt CKPT INPUT --points "120,80;140,90" --labels "1,0" [--out DIR]
      -> COCO-video results, annotated.mp4, masks.zip, 3D points per object (vision/tracking/cli.py)
  vision-predict --task tracking --ckpt CONCEPT_CKPT INPUT --concept "mug" [--concept "chair"] \\
                 [--exemplar VIEW,x0,y0,x1,y1[,neg]]          (--task concept; vision/concept/cli.py)
      -> every instance of each phrase: DIR/results.json (instance + presence records) + DIR/annotated.mp4
         (or DIR/annotated/*.png for images) + DIR/instance_<id>.ply + DIR/scene.ply / scene.glb
  vision-predict --task forensics --ckpt CKPT VIDEO [--out DIR]
      -> DIR/report.json + DIR/report.html
  (each task's runner: ``run`` of its ``cli.py``, :data:`vision.tasks.PARTS`, e.g. :mod:`vision.tracking.cli`)
  vision-predict --task detection --ckpt CKPT a.mp4 b.mp4 "more/*.png" --vocabulary "mug" --vocabulary "cat,dog"
      -> DIR/<input name>/vocabulary_<k>/... per input and vocabulary; a bad input is reported at the end (exit 2)
  vision-predict --task tracking --ckpt CKPT --stream rtsp://host/feed --points "120,80" [--follow]
      -> DIR/results.jsonl (one line per frame, as it comes) + DIR/annotated.mp4 (vision/tracking/cli.py)

--device auto|cpu|cuda[:N]|mps and --precision 32|bf16|16 choose where and how the networks run (vision/device.py);
a device or precision this machine lacks (16 on the CPU: use bf16) is one error line, before any model is loaded.

Coordinates (prompts and results) are pixels of the input. Errors (missing files, unreadable or truncated videos,
malformed prompts, frames over the pixel limit) print one line and exit with status 2.

Input limits (vision/data/io.py, applied by vision/cli/inputs.py), checked before any model is loaded: a frame
over --max-pixels (default MAX_INPUT_PIXELS, 4096x4096) is refused from the file's header, before decoding; only
the first --max-frames frames (default MAX_INPUT_FRAMES) are used, and the tool says so; frames over
MAX_WORKING_PIXELS (1280x720) are downscaled as they are read, so annotated.mp4 is drawn at that size, while
results.json and masks.zip stay in the input's pixels.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from vision.cli.batch import device_options, expand_inputs, run_inputs
from vision.cli.task_flags import add_task_flags, foreign_flags
from vision.data.files import output_folder, output_path
from vision.data.io import MAX_INPUT_FRAMES, MAX_INPUT_PIXELS
from vision.device import PRECISION_CHOICES
from vision.errors import InputError, VisionError
from vision.tasks import TASKS, Task, get_task, task_names

__all__ = ["main", "build_parser", "resolve_task", "default_checkpoint"]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``vision-predict``: the common flags, then one argument group per registered task with
    flags of its own (``add_flags`` of its ``cli.py``)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", nargs="+",
                        help="one or more inputs: an image, a folder of images (one image sequence) or a video, or "
                             "a quoted glob pattern ('clips/*.mp4'); with --stream, a source PyAV opens (a URL, a "
                             "device, a growing file with --follow)")
    parser.add_argument("--task", required=True, choices=task_names(predictor=True))
    parser.add_argument("--ckpt", type=Path,
                        help="a checkpoint written by vision-train (tools/train.py), or a model folder "
                             "(vision-export); without it, the task's default where it has one and it exists "
                             "(--task tracking: G2TAM on real video, from make train-real-tracking)")
    parser.add_argument("--out", default="outputs",
                        help="output folder (created; not one of the inputs; nothing is left in it on an error)")
    add_task_flags(parser, "predict_flags", "{name} (--task {name}{alias})")
    parser.add_argument("--device", default="auto",
                        help="auto (CUDA, then MPS, then the CPU), cpu, cuda, cuda:N or mps")
    parser.add_argument("--precision", default="32", choices=PRECISION_CHOICES,
                        help="the networks' compute precision (mixed: weights stay float32); 16 runs on a GPU, "
                             "the CPU's mixed precision is bf16")
    parser.add_argument("--stream", action="store_true",
                        help="track frames as they arrive from the input (a video, a URL, a device) and write "
                             "results.jsonl as it goes (the tasks that stream: see vision/tracking/cli.py)")
    parser.add_argument("--follow", action="store_true",
                        help="--stream: the input is a file still being written; read until it stops growing")
    parser.add_argument("--stream-format", help="--stream: FFmpeg's input format (e.g. v4l2 for /dev/video0)")
    parser.add_argument("--max-frames", type=int, default=MAX_INPUT_FRAMES,
                        help="frames used (the first ones) of a video or a folder of images")
    parser.add_argument("--max-pixels", type=int, default=MAX_INPUT_PIXELS,
                        help="frames with more pixels are refused before decoding (default 4096x4096)")
    return parser


def resolve_task(args: argparse.Namespace) -> Task:
    """The task ``args`` asks for: ``--task``, or the task that registers itself as an alias of it for a flag the
    command line gives (``--task tracking --concept mug`` is the concept task; ``Task.alias_of``)."""
    for task in TASKS:
        if task.alias_of is not None and task.alias_of[0] == args.task and getattr(args, task.alias_of[1], None):
            return task
    return get_task(args.task)


def default_checkpoint(task: Task) -> Path:
    """The checkpoint of ``--task`` when ``--ckpt`` is not given: the task's ``DEFAULT_CKPT`` when it exists (said
    on stderr), else an :class:`InputError` saying how to get one."""
    if not task.has("default_ckpt"):
        raise InputError(f"--task {task.name} needs --ckpt (a checkpoint of vision-train or a model folder)")
    path, how = task.resolve("default_ckpt")
    default = Path(path)
    if not default.is_file():
        raise InputError(f"--task {task.name} without --ckpt runs {default}, which is not here ({how} writes it); "
                         "or give --ckpt")
    print(f"no --ckpt: running {default}", file=sys.stderr)
    return default


def _check_flags(parser: argparse.ArgumentParser, args: argparse.Namespace, task: Task) -> None:
    """Refuse the flags of another task given on the command line; the flags of the ``--task`` a task is an alias
    of are its own check's (``--concept`` with ``--points``)."""
    for name, given in foreign_flags(parser, args, (task.name, args.task), task.shared_flags).items():
        owner = get_task(name)
        shown = " / ".join(dict.fromkeys(a.option_strings[0] for a in given))
        alias = f" or {owner.alias_of[0]}" if owner.alias_of else ""
        raise InputError(f"{shown} {'is an option' if len(given) == 1 else 'are options'} of --task "
                         f"{name}{alias}, not --task {args.task}")


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and run the task; 0 on success, 2 with one ``error:`` line on bad
    input (missing files, malformed prompts, unreadable or oversized frames)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the text encoder's weights are installed as a package
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.max_frames < 1 or args.max_pixels < 1:
            raise InputError(f"--max-frames and --max-pixels must be >= 1, got {args.max_frames} and "
                             f"{args.max_pixels}")
        task = resolve_task(args)
        if args.ckpt is None:
            args.ckpt = default_checkpoint(task)
        if not args.ckpt.exists():  # a checkpoint file or a model folder (vision-export)
            raise InputError(f"checkpoint not found: {args.ckpt}")
        output_path(args.out)  # an empty --out would become the current folder
        streaming = ", ".join(t.name for t in TASKS if t.has("stream"))
        if args.stream and (not get_task(args.task).has("stream") or len(args.input) != 1):
            raise InputError(f"--stream tracks one source with --task {streaming}")
        _check_flags(parser, args, task)
        if task.has("predict_check"):
            task.resolve("predict_check")(args)
        if args.stream and not task.has("stream"):  # an alias that does not stream (its check may say why first)
            raise InputError(f"--stream tracks one source with --task {streaming}")
        if args.stream:
            device_options(args)
            with output_folder(args.out, inputs=[args.ckpt]) as out:
                task.resolve("stream")(args, out)
            return 0
        inputs, failures = expand_inputs(args.input)
        if inputs:
            device_options(args)
    except VisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # every input is run, a bad one reported and skipped; 2 at the end if one failed
    return run_inputs(args, task.resolve("predict"), inputs, failures)
