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
  vision-predict --task forensics --ckpt CKPT VIDEO [--out DIR]
      -> DIR/report.json + DIR/report.html

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

from vision.cli.inputs import Input, load_input
from vision.data.io import MAX_INPUT_FRAMES, MAX_INPUT_PIXELS, MAX_WORKING_PIXELS
from vision.errors import InputError, VisionError
from vision.tasks import task_names

__all__ = ["RUNNERS", "main", "build_parser", "parse_points", "tracking_prompts"]


def _numbers(text: str, what: str) -> list[float]:
    try:
        return [float(v) for v in text.split(",")]
    except ValueError:
        raise InputError(f"{what} must be comma-separated numbers, got {text!r}") from None


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
    vocabulary = [v.strip() for v in args.vocabulary.split(",")]
    source = load_input(args.input, args.max_frames, args.max_pixels)
    predictor = DetectorPredictor.from_checkpoint(args.ckpt, vocabulary=vocabulary)
    with _bar(source.frames, "detecting") as bar:
        predictor.predict(source.source, results_path=out / "results.json", video_path=out / "annotated.mp4",
                          fps=source.fps, max_frames=source.max_frames, max_pixels=source.max_pixels,
                          progress=lambda done: bar.update(done - bar.n))
    _notes(source)
    print(f"wrote {out / 'results.json'} and {out / 'annotated.mp4'}")


def tracking_prompts(args: argparse.Namespace) -> list:
    """The prompts of ``--prompt`` lines, or of ``--points/--labels/--box/--text`` as object 1."""
    from vision.tracking.prompt_text import ObjectPromptSpec, parse_prompt_lines

    single = any(v is not None for v in (args.points, args.box, args.text))
    if args.prompt and single:
        raise InputError("give either --prompt lines or --points/--labels/--box/--text, not both")
    if args.prompt:
        return parse_prompt_lines("\n".join(args.prompt))
    if not single:
        raise InputError("--task tracking needs a prompt: --points (with --labels), --box, --text, or --prompt lines")
    spec = ObjectPromptSpec(1, frame=args.view if args.points or args.box else None, text=args.text)
    if args.points:
        spec.points = parse_points(args.points).tolist()
        spec.labels = [int(v) for v in _numbers(args.labels, "--labels")] if args.labels else [1] * len(spec.points)
    elif args.labels:
        raise InputError("--labels needs --points")
    if args.box:
        spec.box = _numbers(args.box, "--box")
    return [spec]


def run_tracking(args: argparse.Namespace, out: Path) -> None:
    from vision.tracking.export import track_and_export
    from vision.tracking.predictor import TrackerPredictor

    prompts = tracking_prompts(args)
    source = load_input(args.input, args.max_frames, args.max_pixels)
    predictor = TrackerPredictor.from_checkpoint(args.ckpt, presence_threshold=args.presence_threshold)
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
    from vision.forensics.predictor import analyze_to_report

    source = load_input(args.input, args.max_frames, args.max_pixels)
    # a video is analysed from its file (the codec tool reads the bitstream); images as frames at the working size
    video = source.video if source.video is not None else source.working_frames()
    report = analyze_to_report(args.ckpt, video, out, max_pixels=source.max_pixels)
    _notes(source, drawn=False)
    probability = report["probability"]
    shown = "n/a" if probability is None else f"{probability:.3f}"
    print(f"verdict: {report['verdict']} (p_generated={shown}); wrote {report['json']} and {report['html']}")


#: what ``vision-predict --task NAME`` runs, for every task of the registry that has a predictor
RUNNERS = {"detection": run_detection, "tracking": run_tracking, "forensics": run_forensics}


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``vision-predict``."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", type=Path, help="an image, a folder of images, or a video")
    parser.add_argument("--task", required=True, choices=task_names(predictor=True))
    parser.add_argument("--ckpt", required=True, type=Path,
                        help="a checkpoint written by vision-train (tools/train.py)")
    parser.add_argument("--out", type=Path, default=Path("outputs"), help="output folder (created)")
    parser.add_argument("--vocabulary", help="detection: comma-separated class names")
    parser.add_argument("--view", type=int, default=0, help="tracking: the frame the prompt is drawn on")
    parser.add_argument("--points", help="tracking: 'x,y;x,y' pixels")
    parser.add_argument("--labels", help="tracking: '1,0' (1 positive, 0 negative), one per point")
    parser.add_argument("--box", help="tracking: 'x0,y0,x1,y1' pixels")
    parser.add_argument("--text", help="tracking: a text prompt such as 'the red mug'")
    parser.add_argument("--presence-threshold", type=float, default=0.5,
                        help="tracking: an object's mask is emptied in frames where its presence probability is lower")
    parser.add_argument("--prompt", action="append",
                        help="tracking, several objects: one prompt line, repeatable, e.g. "
                             "'object 2 frame 0 box 10,20,60,90' (see vision/tracking/prompt_text.py)")
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
        if not args.ckpt.is_file():
            raise InputError(f"checkpoint not found: {args.ckpt}")
        if not args.input.exists():
            raise InputError(f"input not found: {args.input}")
        if args.out.exists() and not args.out.is_dir():
            raise InputError(f"--out exists and is not a folder: {args.out}")
        args.out.mkdir(parents=True, exist_ok=True)
        RUNNERS[args.task](args, args.out)
    except VisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
