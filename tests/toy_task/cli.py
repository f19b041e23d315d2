"""``vision-predict --task toy``: the toy model on an image, a folder of images or a video (the registry's
``predict`` and ``predict_flags`` of the toy task).

  vision-predict --task toy --ckpt CKPT INPUT [--out DIR] [--brightness-map]
      -> DIR/results.json ``[{image_id, file_name, brightness}]``, one per frame (image_id: the frame's index, from
         0; file_name: the image's name, or the video's) [+ DIR/brightness.npy, float32 [T, H, W]]

Frames over MAX_WORKING_PIXELS (1280x720) are downscaled as they are read (:mod:`vision.cli.inputs`), so the maps
of such an input are at that size; an image's brightness, a mean, hardly changes.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["add_flags", "run"]


def add_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--brightness-map", action="store_true",
                       help="also write each frame's per-pixel brightness to brightness.npy (float32 [T, H, W])")


def run(args: argparse.Namespace, out: Path) -> None:
    """Predict every frame of ``args.input`` into the folder ``out`` (the predictor loaded once per command)."""
    import numpy as np
    import torch

    from vision.cli.batch import loaded
    from vision.cli.inputs import load_input, print_notes
    from vision.data.io import atomic_write_json

    from .predictor import ToyPredictor
    from .results import image_results

    source = load_input(args.input, args.max_frames, args.max_pixels)
    predictor = loaded(args, "toy", lambda: ToyPredictor.from_checkpoint(args.ckpt, device=args.device,
                                                                         precision=args.precision))
    frames = source.working_frames()  # uint8 [T, H, W, 3]
    maps = np.stack([predictor.predict(frame) for frame in frames])
    results = image_results(list(range(len(maps))), torch.from_numpy(maps))
    names = [p.name for p in source.images] if source.video is None else [source.video.name] * len(maps)
    for result, name in zip(results, names):
        result["file_name"] = name
    atomic_write_json(out / "results.json", results, indent=2)
    written = [out / "results.json"]
    if args.brightness_map:
        np.save(out / "brightness.npy", maps.astype(np.float32))
        written.append(out / "brightness.npy")
    print_notes(source, drawn=False)
    print(f"wrote {' and '.join(str(p) for p in written)}")
