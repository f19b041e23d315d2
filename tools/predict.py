#!/usr/bin/env python
"""Run a trained model on an image, a folder of images or a video.

  python tools/predict.py --task detection --ckpt CKPT --vocabulary "mug,chair,lamp" INPUT [--out DIR]
      -> DIR/results.json (COCO results; rejected OOV objects use category id 1000) + DIR/annotated.mp4
  python tools/predict.py --task tracking --ckpt CKPT INPUT --view 0 --points "120,80;140,90" --labels "1,0"
                          [--box "x0,y0,x1,y1"] [--text "the red mug"] [--out DIR]
  python tools/predict.py --task tracking --ckpt CKPT INPUT --prompt "object 1 frame 0 positive 120,80" \\
                          --prompt "object 2 frame 0 box 10,20,60,90" --prompt "object 3 text the red mug"
      -> DIR/results.json (COCO-video results) + DIR/annotated.mp4 + DIR/masks.zip + DIR/object_<id>.ply
         + DIR/scene.ply / scene.glb (the reconstruction with the tracked objects coloured)
  python tools/predict.py --task forensics --ckpt CKPT VIDEO [--out DIR]
      -> DIR/report.json + DIR/report.html

Coordinates are pixels of the input. Errors (missing files, unreadable videos, malformed prompts) print one line
and exit with status 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from vision.errors import InputError, VisionError  # noqa: E402

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff"}


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


def load_input(path: Path) -> np.ndarray | Path:
    """A video path is passed through (decoded by the predictors); images and folders become uint8 [T, H, W, 3]."""
    from vision.data.video import read_frames_from_paths

    if not path.exists():
        raise InputError(f"input not found: {path}")
    if path.is_dir():
        images = sorted(p for p in path.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not images:
            raise InputError(f"no images ({', '.join(sorted(IMAGE_SUFFIXES))}) in folder {path}")
        return read_frames_from_paths(images)
    if path.suffix.lower() in IMAGE_SUFFIXES:
        return read_frames_from_paths([path])
    return path


def _frames(source: np.ndarray | Path) -> np.ndarray:
    from vision.data.video import read_video

    return source if isinstance(source, np.ndarray) else read_video(source)


def _bar(total: int | None, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="frame", disable=None)


def run_detection(args: argparse.Namespace, out: Path) -> None:
    from vision.data.video import probe_video
    from vision.detection.predictor import DetectorPredictor

    if not args.vocabulary:
        raise InputError("--task detection needs --vocabulary 'name,name,...'")
    vocabulary = [v.strip() for v in args.vocabulary.split(",")]
    predictor = DetectorPredictor.from_checkpoint(args.ckpt, vocabulary=vocabulary)
    source = load_input(args.input)
    total = len(source) if isinstance(source, np.ndarray) else probe_video(source).num_frames
    with _bar(total, "detecting") as bar:
        predictor.predict(source, results_path=out / "results.json", video_path=out / "annotated.mp4",
                          progress=lambda done: bar.update(done - bar.n))
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
    from vision.data.video import probe_video
    from vision.tracking.export import track_and_export
    from vision.tracking.predictor import TrackerPredictor

    prompts = tracking_prompts(args)
    source = load_input(args.input)
    fps = 10.0 if isinstance(source, np.ndarray) else probe_video(source).fps
    frames = _frames(source)
    predictor = TrackerPredictor.from_checkpoint(args.ckpt, presence_threshold=args.presence_threshold)
    state = predictor.init_state(frames)
    for spec in prompts:
        predictor.add_prompt(state, obj_id=spec.obj_id, mask=None, **spec.arrays())
    with _bar(state.num_views, "tracking") as bar:
        export = track_and_export(predictor, state, frames, out, fps=fps,
                                  progress=lambda done, total: bar.update(done - bar.n))
    written = [export.results, export.video, export.masks, *export.plys.values()]
    written += [p for p in (export.scene_ply, export.scene_glb) if p is not None]
    print("wrote " + ", ".join(str(p) for p in written))
    for obj_id in export.empty:
        print(f"object {obj_id} was not found in any frame: no .ply written for it")


def run_forensics(args: argparse.Namespace, out: Path) -> None:
    from vision.forensics.predictor import analyze_to_report

    source = load_input(args.input)
    report = analyze_to_report(args.ckpt, source, out)
    probability = report["probability"]
    shown = "n/a" if probability is None else f"{probability:.3f}"
    print(f"verdict: {report['verdict']} (p_generated={shown}); wrote {report['json']} and {report['html']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", type=Path, help="an image, a folder of images, or a video")
    parser.add_argument("--task", required=True, choices=["detection", "tracking", "forensics"])
    parser.add_argument("--ckpt", required=True, type=Path, help="a checkpoint written by tools/train.py")
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
    args = parser.parse_args(argv)
    try:
        if not args.ckpt.is_file():
            raise InputError(f"checkpoint not found: {args.ckpt}")
        if not args.input.exists():
            raise InputError(f"input not found: {args.input}")
        if args.out.exists() and not args.out.is_dir():
            raise InputError(f"--out exists and is not a folder: {args.out}")
        args.out.mkdir(parents=True, exist_ok=True)
        {"detection": run_detection, "tracking": run_tracking, "forensics": run_forensics}[args.task](args, args.out)
    except VisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
