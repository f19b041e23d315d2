"""``vision-fit-light-points``: a trained G2TAM as a model folder whose tracking reads light point maps.

  vision-fit-light-points --ckpt runs/tracking/tiny/checkpoints/last.ckpt \\
      --split datasets/synthetic/tracking_train_video.json datasets/synthetic/tracking_train_unordered.json \\
      --val-split datasets/synthetic/tracking_val.json --out models/tracking-tiny-light

Reads the videos of ``--split`` in windows of ``--window`` consecutive frames (as the predictor encodes them), fits
:class:`~vision.tracking.light_points.LightPointHead` to the model's own DPT point head in closed form
(:func:`~vision.tracking.light_points.fit_light_points`) and writes the model with ``tracking_points: light`` as a
model folder (:mod:`vision.model_folder`; the checkpoint's training record is kept). It prints the mean relative
point error against the DPT head on the fitted windows and, with ``--val-split``, on those of another split. Every
other weight is the checkpoint's; ``TrackerPredictor`` and the benchmarks take the folder in place of a checkpoint.

Exit status: 0 on success, 2 with one ``error:`` line on bad input (a missing checkpoint or split, a checkpoint that
is not G2TAM's, an ``--out`` that holds something else); nothing is written then.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from vision.errors import InputError, VisionError

__all__ = ["build_parser", "main", "split_windows"]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``vision-fit-light-points``."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ckpt", required=True, type=Path, help="a G2TAM checkpoint or model folder")
    parser.add_argument("--split", required=True, nargs="+", type=Path,
                        help="COCO-video split(s) whose videos the map is fitted on")
    parser.add_argument("--val-split", type=Path, help="also report the error on this split's videos")
    parser.add_argument("--out", required=True, type=Path, help="the model folder to write (new or empty)")
    parser.add_argument("--videos", type=int, default=200, help="at most this many videos per split (default 200)")
    parser.add_argument("--window", type=int, default=8, help="views per window (the predictor's window_size)")
    parser.add_argument("--ridge", type=float, default=1e-4,
                        help="ridge penalty relative to the mean diagonal of the normal matrix (default 1e-4)")
    parser.add_argument("--overwrite", action="store_true", help="replace --out when it is a model folder")
    return parser


def split_windows(split_path: Path, image_size: int, videos: int, window: int) -> Iterator:
    """Float ``[1, S, 3, s, s]`` windows of ``window`` consecutive frames (the last ones of a video that do not fill a
    window are left out; a shorter video is one window) of at most ``videos`` videos of a split, read and resized
    as the predictor reads them."""
    import numpy as np
    import torch

    from vision.data.coco import load_split
    from vision.data.video import read_frames
    from vision.tracking.inference import video_frames

    split = load_split(split_path)
    for video_id in sorted(split.images_by_video)[:videos]:
        frames = video_frames(split, video_id)
        pixels, _ = read_frames(np.stack([split.load_image(im) for im in frames]), (image_size, image_size))
        views = torch.from_numpy(np.ascontiguousarray(pixels)).permute(0, 3, 1, 2).float() / 255
        for start in range(0, max(1, len(views) - window + 1), window):
            yield views[start:start + window][None]


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``), fit and write; 0 on success, 2 with one ``error:`` line on bad
    input."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    args = build_parser().parse_args(argv)
    try:
        from vision.checkpoint import load_weights, read_model
        from vision.export.from_checkpoint import folder_of_checkpoint
        from vision.export.model_card import model_card
        from vision.export.task_detection import registered_config
        from vision.model_folder import write_model_folder
        from vision.tracking import task
        from vision.tracking.light_points import fit_light_points, light_point_error

        for path in (args.ckpt, *args.split, *([args.val_split] if args.val_split else [])):
            if not path.exists():
                raise InputError(f"not found: {path}")
        if args.videos < 1 or args.window < 2 or not args.ridge >= 0:
            raise InputError(f"need --videos >= 1, --window >= 2, --ridge >= 0; got {args.videos}, {args.window}, "
                             f"{args.ridge}")
        folder = folder_of_checkpoint(read_model(args.ckpt, config_of=registered_config), args.ckpt, task="tracking")
        config = task.TrackingConfig.from_value(folder.config, file=args.ckpt)
        if config.architecture != "g2tam":
            raise InputError(f"{args.ckpt} is a {config.architecture!r} tracker; light point maps are G2TAM's")
        if config.tracking_points != "dpt":
            raise InputError(f"{args.ckpt} already reads {config.tracking_points!r} point maps, trained with it; "
                             "vision-fit-light-points fits them to a G2TAM trained with tracking_points 'dpt'")
        light = task.build_model(config.replace(tracking_points="light"))
        # every weight is the checkpoint's (checked as task.load checks them) but the light head's, fitted below
        fresh = {f"light_points.{k}": v for k, v in light.light_points.state_dict().items()}
        load_weights(light, {**folder.weights["model"], **fresh}, args.ckpt, hint=task.RETRAIN_HINT)
        light.eval()

        def windows(paths: Sequence[Path]) -> Iterator:
            for path in paths:
                yield from split_windows(path, config.image_size, args.videos, args.window)

        stats = fit_light_points(light, windows(args.split), ridge=args.ridge)
        error = light_point_error(light, windows(args.split))
        print(f"fitted on {stats['windows']} windows ({stats['cells']} cells): mean relative point error against "
              f"the DPT point head {error:.4f}")
        if args.val_split:
            print(f"{args.val_split}: mean relative point error against the DPT point head "
                  f"{light_point_error(light, windows([args.val_split])):.4f}")
        fit = {"splits": [str(p) for p in args.split], "videos": args.videos, "window": args.window,
               "ridge": args.ridge, "relative_error": error}
        folder = dataclasses.replace(folder, config=config.replace(tracking_points="light").to_dict(),
                                     weights={**folder.weights, "model": light.state_dict()},
                                     training={**folder.training, "light_points": fit})
        write_model_folder(folder, args.out, overwrite=args.overwrite, card=model_card)
        print(f"wrote the tracking model folder {args.out} (tracking_points: light)")
    except VisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
