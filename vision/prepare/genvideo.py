"""Convert a GenVideo-style folder layout into our split format (``vision prepare genvideo``).

Layout read::

    ROOT/real/**/*.mp4                  real videos
    ROOT/fake/<generator>/**/*.mp4      generated videos, one folder per generator

``vision prepare genvideo ROOT --out datasets/genvideo [--val 0.1] [--test 0.2] [--link]``

Every video is assigned to ``train``, ``val`` or ``test`` by a hash of its path relative to ROOT (stable across
runs and machines); ``--holdout GEN`` puts all of generator GEN into ``test`` (leave-one-generator-out). The
files are copied (or hard-linked with ``--link``; copied where a hard link cannot reach) under ``OUT/videos/`` so
the split JSONs' relative ``file_name`` stay inside OUT. Videos are probed; unreadable files are reported and skipped.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from collections.abc import Sequence
from pathlib import Path

from vision.data.coco import write_split
from vision.data.io import VIDEO_SUFFIXES
from vision.data.video import probe_video
from vision.errors import DataError, InputError, VideoError
from vision.prepare.converter import add_link, add_out, converter_parser, run
from vision.prepare.files import output_folder, place_file, staged_output

__all__ = ["scan", "assign_side", "convert", "main"]


def scan(root: str | Path) -> list[tuple[Path, str, str | None]]:
    """``(path, label, generator)`` for every video under ``root/real`` and ``root/fake/<generator>``, sorted."""
    root = Path(root)
    if not (root / "real").is_dir() or not (root / "fake").is_dir():
        raise DataError("expected folders 'real/' and 'fake/<generator>/'", file=root)
    items: list[tuple[Path, str, str | None]] = []
    for path in sorted((root / "real").rglob("*")):
        if path.is_file() and path.suffix.lower() in VIDEO_SUFFIXES:
            items.append((path, "real", None))
    for gen_dir in sorted(p for p in (root / "fake").iterdir() if p.is_dir()):
        for path in sorted(gen_dir.rglob("*")):
            if path.is_file() and path.suffix.lower() in VIDEO_SUFFIXES:
                items.append((path, "generated", gen_dir.name))
    if not items:
        raise DataError("no video files found under real/ or fake/", file=root)
    return items


def assign_side(rel: str, val: float, test: float) -> str:
    """Deterministic split of a relative path: hash -> u in [0, 1): test if u < test, val if u < test + val."""
    u = int(hashlib.sha1(rel.encode("utf-8")).hexdigest()[:12], 16) / float(16 ** 12)
    return "test" if u < test else "val" if u < test + val else "train"


def convert(root: str | Path, out: str | Path, val: float = 0.1, test: float = 0.2, holdout: str | None = None,
            link: bool = False) -> dict[str, Path]:
    """Write ``OUT/{train,val,test}.json`` (sides with no videos are skipped) and the videos under ``OUT/videos``,
    all built beside ``OUT`` and moved in once complete (:func:`vision.prepare.files.staged_output`: a failure
    leaves ``OUT`` as it was); returns ``{side: path}``."""
    if not (0 <= val < 1 and 0 <= test < 1 and val + test < 1):
        raise InputError(f"val and test fractions must be in [0, 1) with val + test < 1; got {val}, {test}")
    root, out = Path(root), output_folder(out)
    sides: dict[str, list[dict]] = {"train": [], "val": [], "test": []}
    skipped = []
    paths = {}
    # videos/ is merged, not replaced: a side with no video keeps its old split, whose videos must stay
    with staged_output(out, merge={"videos"}, inputs=[root]) as stage:
        for path, label, generator in scan(root):
            rel = path.relative_to(root).as_posix()
            try:
                info = probe_video(path)
            except VideoError as exc:
                skipped.append(f"{rel}: {exc}")
                continue
            side = "test" if holdout is not None and generator == holdout else assign_side(rel, val, test)
            if holdout is not None and side == "test" and label == "generated" and generator != holdout:
                side = "train"
            target = f"videos/{rel}"
            place_file(path, stage / target, link)
            entry = {"id": len(sides[side]) + 1, "name": rel, "file_name": target, "label": label,
                     "source": "genvideo", "width": info.width, "height": info.height, "ordered": True}
            if generator is not None:
                entry["generator"] = generator
            sides[side].append(entry)
        for side, videos in sides.items():
            if not videos:
                continue
            dataset = {"info": {"description": f"GenVideo-layout conversion of {root.name}, {side}"}, "images": [],
                       "annotations": [], "categories": [], "videos": videos}
            write_split(stage / f"{side}.json", dataset)
            paths[side] = out / f"{side}.json"
    for line in skipped:
        print(f"skipped {line}", file=sys.stderr)
    return paths


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and convert; 0 on success, 2 with one ``error:`` line on a bad layout
    or arguments."""
    parser = converter_parser(__doc__)
    parser.add_argument("root")
    add_out(parser)
    parser.add_argument("--val", type=float, default=0.1)
    parser.add_argument("--test", type=float, default=0.2)
    parser.add_argument("--holdout", default=None, help="put this generator entirely into test")
    add_link(parser, "the videos")
    return run(parser, argv, _convert)


def _convert(args: argparse.Namespace) -> list[str]:
    paths = convert(args.root, args.out, args.val, args.test, args.holdout, args.link)
    return [f"{side}: {path}" for side, path in paths.items()]
