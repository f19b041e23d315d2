#!/usr/bin/env python
"""Evaluate a geometry checkpoint on a split beside trivial baselines and print a table.

``python tools/eval_geometry.py --ckpt runs/geometry/tiny/checkpoints/last.ckpt --split datasets/synthetic/geometry_val.json``
"""

from __future__ import annotations

import argparse
import json
import sys

from vision.data.io import atomic_write_json  # noqa: E402
from vision.errors import VisionError  # noqa: E402
from vision.geometry.lightning import GeometryModule  # noqa: E402
from vision.geometry.evaluation import evaluate_geometry, format_geometry_table  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ckpt", required=True, help="Lightning checkpoint of a GeometryModule")
    parser.add_argument("--split", required=True, help="split JSON with cameras and depth")
    parser.add_argument("--views", type=int, default=4)
    parser.add_argument("--max-clips", type=int, default=None)
    parser.add_argument("--out", default=None, help="write the metrics as JSON here")
    args = parser.parse_args(argv)
    try:
        module = GeometryModule.from_checkpoint(args.ckpt)
        results = evaluate_geometry(module.model, args.split, views=args.views,
                                    image_size=module.hparams.image_size, max_clips=args.max_clips,
                                    match=module.match)
    except VisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_geometry_table(results))
    if args.out:
        atomic_write_json(args.out, results, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
