"""``vision-predict`` (and ``python tools/predict.py``): run a trained model on an image, a folder of images or a
video.

  vision-predict --task detection --ckpt CKPT --vocabulary "mug,chair,lamp" INPUT [--out DIR]
      -> DIR/results.json (COCO results; rejected OOV objects use category id 1000) + DIR/annotated.mp4
  vision-predict --task tracking --ckpt CKPT INPUT --view 0 --points "120,80;140,90" --labels "1,0"
                 [--box "x0,y0,x1,y1"] [--text "the red mug"] [--out DIR]
  vision-predict --task tracking --ckpt CKPT INPUT --prompt "object 1 frame 0 positive 120,80" \\
                 --prompt "object 2 frame 0 box 10,20,60,90" --prompt "object 3 text the red mug"
      -> DIR/results.json (COCO-video results) + DIR/annotated.mp4 + DIR/masks.zip + DIR/object_<id>.ply
         + DIR/scene.ply / scene.glb (the reconstruction with the tracked objects coloured)
  vision-predict --task tracking --ckpt CONCEPT_CKPT INPUT --concept "mug" [--concept "chair"] \\
                 [--exemplar VIEW,x0,y0,x1,y1[,neg]]          (or --task concept; vision/cli/concept.py)
      -> every instance of each phrase: DIR/results.json (instance + presence records) + DIR/annotated.mp4
         (or DIR/annotated/*.png for images) + DIR/instance_<id>.ply + DIR/scene.ply / scene.glb
  vision-predict --task forensics --ckpt CKPT VIDEO [--out DIR]
      -> DIR/report.json + DIR/report.html
  vision-predict --task detection --ckpt CKPT a.mp4 b.mp4 "more/*.png" --vocabulary "mug" --vocabulary "cat,dog"
      -> DIR/<input name>/vocabulary_<k>/... per input and vocabulary; a bad input is reported at the end (exit 2)
  vision-predict --task tracking --ckpt CKPT --stream rtsp://host/feed --points "120,80" [--follow]
      -> DIR/results.jsonl (one line per frame, as it comes) + DIR/annotated.mp4 (vision/cli/stream.py)

--device auto|cpu|cuda[:N]|mps and --precision 32|bf16|16 choose where and how the networks run (vision/device.py);
a device or precision this machine lacks is one error line, before any model is loaded.

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

import numpy as np

from vision.cli.batch import device_options, expand_inputs, loaded, run_inputs
from vision.cli.concept import add_concept_arguments, check_concept_arguments, run_concept
from vision.cli.inputs import Input, load_input
from vision.data.files import output_folder, output_path
from vision.data.io import MAX_INPUT_FRAMES, MAX_INPUT_PIXELS, MAX_WORKING_PIXELS
from vision.errors import InputError, VisionError
from vision.tasks import task_names

__all__ = ["RUNNERS", "main", "build_parser", "parse_points", "tracking_prompts"]


def _numbers(text: str, what: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",")]
    except ValueError:
        raise InputError(f"{what} must be comma-separated numbers, got {text!r}") from None


def _labels(text: str) -> list[int]:
    """``--labels``: each value exactly 1 (positive click) or 0 (negative); anything else (``0.5``, ``2``) is
    refused rather than rounded to a click of the other kind."""
    values = _numbers(text, "--labels")
    if any(v not in (0.0, 1.0) for v in values):
        raise InputError(f"--labels must be 1 (positive) or 0 (negative) for each point, got {text!r}")
    return [int(v) for v in values]


def parse_points(text: str) -> np.ndarray:
    """``"x,y;x,y"`` -> float [N, 2]."""
    points = [_numbers(p, "--points") for p in text.split(";") if p.strip()]
    if not points or any(len(p) != 2 for p in points):
        raise InputError(f"--points must look like 'x,y;x,y', got {text!r}")
    return np.asarray(points, np.float32)


def _notes(source: Input, drawn: bool = True) -> None:
    """Print what the user should know about how the input was used (``drawn``: the task writes annotated.mp4)."""
    if source.note:
        print(f"note: {source.note}")
    if drawn and source.working_size != (source.width, source.height):
        w, h = source.working_size
        print(f"note: the {source.width}x{source.height} frames are drawn at {w}x{h} in annotated.mp4 (frames over "
              f"{MAX_WORKING_PIXELS} pixels are downscaled); results are in the input's pixels")


def _bar(total: int | None, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="frame", disable=None)


def run_detection(args: argparse.Namespace, out: Path) -> None:
    from vision.detection.predictor import DetectorPredictor

    if not args.vocabulary:
        raise InputError("--task detection needs --vocabulary 'name,name,...'")
    vocabularies = [[v.strip() for v in text.split(",")] for text in args.vocabulary]
    source = load_input(args.input, args.max_frames, args.max_pixels)
    predictor = loaded(args, "detection", lambda: DetectorPredictor.from_checkpoint(
        args.ckpt, vocabulary=vocabularies[0], device=args.device, precision=args.precision))
    # one vocabulary writes into the input's folder, several into vocabulary_<k>/ each
    for k, vocabulary in enumerate(vocabularies, 1):
        folder = out if len(vocabularies) == 1 else out / f"vocabulary_{k}"
        folder.mkdir(exist_ok=True)
        predictor.set_vocabulary(vocabulary)
        with _bar(source.frames, "detecting") as bar:
            predictor.predict(source.source, results_path=folder / "results.json",
                              video_path=folder / "annotated.mp4", fps=source.fps, max_frames=source.max_frames,
                              max_pixels=source.max_pixels, progress=lambda done: bar.update(done - bar.n))
        print(f"wrote {folder / 'results.json'} and {folder / 'annotated.mp4'} ({', '.join(vocabulary)})")
    _notes(source)


def tracking_prompts(args: argparse.Namespace) -> list:
    """The prompts of ``--prompt`` lines, or of ``--points/--labels/--box/--text`` as object 1 (with the first
    ``--text``; each further ``--text`` is one more object, 2, 3, ...)."""
    from vision.tracking.prompt_text import ObjectPromptSpec, parse_prompt_lines

    single = any(v is not None for v in (args.points, args.box, args.text))
    if args.prompt and single:
        raise InputError("give either --prompt lines or --points/--labels/--box/--text, not both")
    if args.prompt:
        return parse_prompt_lines("\n".join(args.prompt))
    if not single:
        raise InputError("--task tracking needs a prompt: --points (with --labels), --box, --text, or --prompt lines")
    texts = list(args.text or [])
    spec = ObjectPromptSpec(1, frame=args.view if args.points or args.box else None, text=texts[0] if texts else None)
    if args.points:
        spec.points = parse_points(args.points).tolist()
        spec.labels = _labels(args.labels) if args.labels else [1] * len(spec.points)
    elif args.labels:
        raise InputError("--labels needs --points")
    if args.box:
        spec.box = _numbers(args.box, "--box")
    return [spec] + [ObjectPromptSpec(k, text=text) for k, text in enumerate(texts[1:], 2)]


def tracker_options(args: argparse.Namespace) -> dict:
    """The ``TrackerPredictor`` arguments the command line sets beyond the predictor's defaults."""
    return {} if args.memory_points is None else {"memory_points": args.memory_points}


def run_tracking(args: argparse.Namespace, out: Path) -> None:
    from vision.tracking.export import track_and_export
    from vision.tracking.predictor import TrackerPredictor

    if getattr(args, "concept_prompts", None):  # every instance of a phrase: the concept tracker
        run_concept(args, out)
        return
    prompts = tracking_prompts(args)
    source = load_input(args.input, args.max_frames, args.max_pixels)
    predictor = loaded(args, "tracking", lambda: TrackerPredictor.from_checkpoint(
        args.ckpt, presence_threshold=args.presence_threshold, device=args.device, precision=args.precision,
        **tracker_options(args)))
    # the state reads the files straight to the model size and keeps the input's size for prompts and masks
    # (the images of a folder are frames in name order); annotated.mp4 is drawn on frames at the working size
    state = predictor.init_state(source.source, ordered=True, max_frames=source.max_frames,
                                 max_pixels=source.max_pixels)
    for spec in prompts:
        predictor.add_prompt(state, obj_id=spec.obj_id, mask=None, **spec.arrays())
    with _bar(state.num_views, "tracking") as bar:
        export = track_and_export(predictor, state, source.working_frames(), out, fps=source.fps,
                                  progress=lambda done, total: bar.update(done - bar.n))
    _notes(source)
    written = [export.results, export.video, export.masks, *export.plys.values()]
    written += [p for p in (export.scene_ply, export.scene_glb) if p is not None]
    print("wrote " + ", ".join(str(p) for p in written))
    for obj_id in export.empty:
        print(f"object {obj_id} was not found in any frame: no .ply written for it")


def run_forensics(args: argparse.Namespace, out: Path) -> None:
    from vision.forensics.predictor import ForensicsPredictor, analyze_to_report

    source = load_input(args.input, args.max_frames, args.max_pixels)
    # a video is analysed from its file (the codec tool reads the bitstream); images as frames at the working size
    video = source.video if source.video is not None else source.working_frames()
    predictor = loaded(args, "forensics", lambda: ForensicsPredictor.from_checkpoint(
        args.ckpt, device=args.device, precision=args.precision))
    report = analyze_to_report(predictor, video, out, max_pixels=source.max_pixels)
    _notes(source, drawn=False)
    probability = report["probability"]
    shown = "n/a" if probability is None else f"{probability:.3f}"
    print(f"verdict: {report['verdict']} (p_generated={shown}); wrote {report['json']} and {report['html']}")


#: what ``vision-predict --task NAME`` runs, for every task of the registry that has a predictor
RUNNERS = {"detection": run_detection, "tracking": run_tracking, "forensics": run_forensics, "concept": run_concept}


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``vision-predict``."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", nargs="+",
                        help="one or more inputs: an image, a folder of images (one image sequence) or a video, or "
                             "a quoted glob pattern ('clips/*.mp4'); with --stream, a source PyAV opens (a URL, a "
                             "device, a growing file with --follow)")
    parser.add_argument("--task", required=True, choices=task_names(predictor=True))
    parser.add_argument("--ckpt", required=True, type=Path,
                        help="a checkpoint written by vision-train (tools/train.py), or a model folder "
                             "(vision-export)")
    parser.add_argument("--out", default="outputs",
                        help="output folder (created; not one of the inputs; nothing is left in it on an error)")
    parser.add_argument("--vocabulary", action="append",
                        help="detection: comma-separated class names; repeat it for several vocabularies (each "
                             "writes into vocabulary_<k>/)")
    parser.add_argument("--view", type=int, default=0, help="tracking: the frame the prompt is drawn on")
    parser.add_argument("--points", help="tracking: 'x,y;x,y' pixels")
    parser.add_argument("--labels", help="tracking: '1,0' (1 positive, 0 negative), one per point")
    parser.add_argument("--box", help="tracking: 'x0,y0,x1,y1' pixels")
    parser.add_argument("--text", action="append",
                        help="tracking: a text prompt such as 'the red mug'; repeat it for more objects (2, 3, ...)")
    parser.add_argument("--presence-threshold", type=float, default=0.5,
                        help="tracking: an object's mask is emptied in frames where its presence probability is lower")
    parser.add_argument("--memory-points", type=int, default=None,
                        help="tracking: 3D points each object carries between windows (default the predictor's; "
                             "fewer is faster at many objects, see docs/speed.md)")
    parser.add_argument("--prompt", action="append",
                        help="tracking, several objects: one prompt line, repeatable, e.g. "
                             "'object 2 frame 0 box 10,20,60,90' (see vision/tracking/prompt_text.py)")
    add_concept_arguments(parser)
    parser.add_argument("--device", default="auto",
                        help="auto (CUDA, then MPS, then the CPU), cpu, cuda, cuda:N or mps")
    parser.add_argument("--precision", default="32", choices=("32", "bf16", "16"),
                        help="the networks' compute precision (mixed: weights stay float32)")
    parser.add_argument("--stream", action="store_true",
                        help="tracking: track frames as they arrive from the input (a video, a URL, a device) and "
                             "write results.jsonl as it goes (see vision/cli/stream.py)")
    parser.add_argument("--follow", action="store_true",
                        help="--stream: the input is a file still being written; read until it stops growing")
    parser.add_argument("--stream-format", help="--stream: FFmpeg's input format (e.g. v4l2 for /dev/video0)")
    parser.add_argument("--max-frames", type=int, default=MAX_INPUT_FRAMES,
                        help="frames used (the first ones) of a video or a folder of images")
    parser.add_argument("--max-pixels", type=int, default=MAX_INPUT_PIXELS,
                        help="frames with more pixels are refused before decoding (default 4096x4096)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and run the task; 0 on success, 2 with one ``error:`` line on bad
    input (missing files, malformed prompts, unreadable or oversized frames)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the text encoder's weights are installed as a package
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    args = build_parser().parse_args(argv)
    try:
        if args.max_frames < 1 or args.max_pixels < 1:
            raise InputError(f"--max-frames and --max-pixels must be >= 1, got {args.max_frames} and "
                             f"{args.max_pixels}")
        if not args.ckpt.exists():  # a checkpoint file or a model folder (vision-export)
            raise InputError(f"checkpoint not found: {args.ckpt}")
        output_path(args.out)  # an empty --out would become the current folder
        if not 0.0 <= args.presence_threshold <= 1.0:  # NaN fails this too
            raise InputError(f"--presence-threshold must be a probability in [0, 1], got {args.presence_threshold}")
        if args.memory_points is not None and args.memory_points < 1:
            raise InputError(f"--memory-points must be an integer >= 1, got {args.memory_points}")
        check_concept_arguments(args)
        if args.stream:
            from vision.cli.stream import run_tracking_stream

            if args.task != "tracking" or len(args.input) != 1:
                raise InputError("--stream tracks one source with --task tracking")
            device_options(args)
            with output_folder(args.out, inputs=[args.ckpt]) as out:
                run_tracking_stream(args, out)
            return 0
        inputs, failures = expand_inputs(args.input)
        if inputs:
            device_options(args)
    except VisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # every input is run, a bad one reported and skipped; 2 at the end if one failed
    return run_inputs(args, RUNNERS[args.task], inputs, failures)
