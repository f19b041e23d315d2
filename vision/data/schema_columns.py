"""The fast paths of split validation: checks of many entries at once (by column, in NumPy batches, from one
directory listing per folder) that vouch for entries every one-by-one check of :mod:`vision.data.schema` would
surely accept.

Each fast path answers only "surely valid" or "cannot tell": exact types only, values well inside every limit,
compressed RLE counts decoded by :func:`~vision.data.rle.rle_runs_summary` only where it decodes them exactly.
Anything they cannot vouch for (every error included) goes to the one-by-one checks of :mod:`vision.data.schema`
(or :func:`~vision.data.checker.check_rle`), which decide and produce every error message, so the fast paths never
change a verdict or its wording.
"""

from __future__ import annotations

import math
import os
import sys
from itertools import chain, repeat
from pathlib import Path
from typing import Any

import numpy as np

from vision.data.checker import BOX_TOLERANCE_PX, Checker, check_rle
from vision.data.rle import rle_runs_summary
from vision.errors import DataError

__all__ = [
    "Listings",
    "DeferredRle",
    "rle_size_is",
    "Absent",
    "ABSENT",
    "NUMBER_TYPES",
    "INT_TYPES",
    "FLOAT_MAX",
    "FLOAT_MAX_INT",
    "polygons_pass",
    "annotations_pass_by_column",
]


class Listings:
    """Answers "is ``relative`` a plain file inside ``root``?" from one directory listing per folder instead of
    resolving and stat-ing every path (a COCO split names 118k images).

    :meth:`plain_file` is True only when every component of ``relative`` (split at ``/``) is an entry listed in
    its folder that is not a symbolic link, the last one a regular file and the others folders: then
    :func:`~vision.data.schema.safe_path` accepts the name (it stays inside ``root``) and the file exists. Anything
    else (absolute names, ``.``, ``..``, empty components, links, missing or unlistable entries) gets False, and the
    caller takes the exact path (``safe_path`` and a stat) that decides and words the verdict.
    """

    #: deeper names take the exact path (bounds the recursion of :meth:`_listing`)
    MAX_DEPTH = 32

    def __init__(self, root: Path) -> None:
        try:
            self.root: str | None = os.fspath(root.resolve())
        except (OSError, ValueError, RuntimeError):
            self.root = None
        # folder ("" = root, else "a/b") -> (regular files, folders) listed in it, links left out; None: not usable
        self._listings: dict[str, tuple[frozenset[str], frozenset[str]] | None] = {}

    def _listing(self, folder: str) -> tuple[frozenset[str], frozenset[str]] | None:
        """The listing of ``folder`` if it is a real folder reached through listed, unlinked folders, else None.
        Only real folders are remembered, so made-up names cost no memory."""
        if folder in self._listings:
            return self._listings[folder]
        parent, _, name = folder.rpartition("/")
        if folder and ((parent_listing := self._listing(parent)) is None or name not in parent_listing[1]):
            return None
        files, dirs = [], []
        try:
            with os.scandir(os.path.join(self.root, folder)) as entries:
                for entry in entries:
                    if entry.is_file(follow_symlinks=False):
                        files.append(entry.name)
                    elif entry.is_dir(follow_symlinks=False):
                        dirs.append(entry.name)
            listing: tuple[frozenset[str], frozenset[str]] | None = (frozenset(files), frozenset(dirs))
        except (OSError, ValueError):
            listing = None
        self._listings[folder] = listing
        return listing

    def plain_file(self, relative: Any) -> bool:
        """True when ``relative`` names a regular file inside the root through real (not linked) folders."""
        if (self.root is None or type(relative) is not str or relative.startswith("/")
                or relative.count("/") > self.MAX_DEPTH):
            return False
        folder, _, name = relative.rpartition("/")
        listing = self._listings[folder] if folder in self._listings else self._listing(folder)
        return listing is not None and name in listing[0]


def rle_size_is(seg: dict, height: int, width: int) -> bool:
    """True when the RLE object ``seg``'s ``size`` is exactly ``[height, width]``: a list of two ``int``."""
    size = seg.get("size")
    return (type(size) is list and len(size) == 2 and type(size[0]) is int and type(size[1]) is int
            and size[0] == height and size[1] == width)


class DeferredRle:
    """Compressed RLE ``counts`` of annotations that passed every other check, checked many at once.

    :meth:`add` (or :meth:`offer`) queues an annotation's segmentation (its ``size`` already checked);
    :meth:`flush` (called when a batch is full, and by ``with DeferredRle(...)`` when a later annotation fails and
    at the end) decodes the batch with :func:`rle_runs_summary` and hands every string it cannot vouch for (not
    decoded, a run out of range, a sum other than ``height * width``) to :func:`check_rle`, in file order: the
    first error is the one the one-by-one checks would raise.
    """

    #: a batch is decoded once it holds this many characters or strings: this bounds the decoder's memory, and
    #: batches this small keep its arrays within the processor's cache (see docs/speed.md)
    MAX_CHARS = 1 << 18
    MAX_STRINGS = 1 << 15

    def __init__(self, c: Checker, prefix: str = "annotations") -> None:
        self.c = c
        self.prefix = prefix  # errors name f"{prefix}[{index}].segmentation"
        self.indexes: list[int] = []
        self.segmentations: list[dict] = []
        self.strings: list[str] = []
        self.pixels: list[int] = []
        self.chars = 0

    def add(self, index: int, seg: dict, counts: str, pixels: int) -> None:
        self.indexes.append(index)
        self.segmentations.append(seg)
        self.strings.append(counts)
        self.pixels.append(pixels)
        self.chars += len(counts)
        if self.chars >= self.MAX_CHARS or len(self.strings) >= self.MAX_STRINGS:
            self.flush()

    def __enter__(self) -> "DeferredRle":
        return self

    def __exit__(self, kind: type | None, error: BaseException | None, trace: Any) -> bool:
        """Flush at the end of the block, and when a check of a later entry fails (a :class:`DataError`): a
        deferred RLE of an earlier entry is then the first error, and it is the one raised."""
        if kind is None or issubclass(kind, DataError):
            self.flush()
        return False

    def offer(self, index: int, seg: Any, height: int, width: int) -> bool:
        """Queue ``seg`` when it is a compressed RLE whose ``size`` is exactly ``[height, width]`` (ints) and
        return True; False for anything else, which :func:`check_rle` (or the polygon checks) must decide now."""
        if type(seg) is dict and type(counts := seg.get("counts")) is str and rle_size_is(seg, height, width):
            self.add(index, seg, counts, height * width)
            return True
        return False

    def flush(self) -> None:
        if not self.strings:
            return
        plausible, sums = rle_runs_summary(self.strings)
        suspects = np.flatnonzero(~plausible | (sums != np.asarray(self.pixels, np.int64)))
        indexes, segmentations = self.indexes, self.segmentations
        self.indexes, self.segmentations, self.strings, self.pixels, self.chars = [], [], [], [], 0
        for k in suspects.tolist():
            height, width = segmentations[k]["size"]
            check_rle(self.c, segmentations[k], f"{self.prefix}[{indexes[k]}].segmentation", height, width)


NUMBER_TYPES = frozenset((int, float))
INT_TYPES = frozenset((int,))
FLOAT_MAX = sys.float_info.max
FLOAT_MAX_INT = int(FLOAT_MAX)  # the largest integer that float() converts


class Absent:
    """The type of :data:`ABSENT`, a key's default that no split value can be."""


ABSENT = Absent()


def polygons_pass(seg: list, width: int, height: int) -> bool:
    """True when :func:`~vision.data.schema.check_segmentation` surely accepts the polygons ``seg`` on a ``width``
    x ``height`` image (False: it has to decide). Exact types only (``int``/``float``, not ``bool``); a finite sum
    means no NaN or infinity, so the extremes of the x and y coordinates bound them all."""
    tol = BOX_TOLERANCE_PX
    for poly in seg:
        if (type(poly) is not list or len(poly) < 6 or len(poly) % 2
                or not NUMBER_TYPES.issuperset(map(type, poly))):
            return False
        try:
            if not math.isfinite(sum(poly)):
                return False
        except OverflowError:  # an integer beyond float range
            return False
        xs, ys = poly[0::2], poly[1::2]
        if not (min(xs) >= -tol and max(xs) <= width + tol and min(ys) >= -tol and max(ys) <= height + tol):
            return False
    return True


def _numbers(values: list) -> np.ndarray | None:
    """``values`` as float64 when all are exactly ``int`` or ``float`` and within float range, else None."""
    if not NUMBER_TYPES.issuperset(map(type, values)):
        return None
    try:
        return np.array(values, np.float64)
    except OverflowError:
        return None


_POLYGON_BLOCK = 1 << 15


def _polygons_pass_by_column(which: list[int], segs: list, width: np.ndarray, height: np.ndarray) -> bool:
    """True when the polygon lists ``segs[i]`` (``i`` in ``which``) surely pass
    :func:`~vision.data.schema.check_segmentation` on images of ``width[i]`` x ``height[i]``; all coordinates at
    once, as in :func:`polygons_pass`."""
    groups = [segs[i] for i in which]
    polys = list(chain.from_iterable(groups))
    if not polys:
        return True
    if set(map(type, polys)) != {list}:
        return False
    lengths = np.fromiter(map(len, polys), np.int64, len(polys))
    if (lengths < 6).any() or (lengths % 2).any():
        return False
    coords = _numbers(list(chain.from_iterable(polys)))
    if coords is None:
        return False
    # every polygon has an even length: x at even, y at odd positions of the concatenation
    vertex_of = np.repeat(np.repeat(np.asarray(which), np.fromiter(map(len, groups), np.int64, len(groups))),
                          lengths // 2)
    xs, ys = coords[0::2], coords[1::2]
    tol = BOX_TOLERANCE_PX
    return bool(((xs >= -tol) & (xs <= width[vertex_of] + tol) & (ys >= -tol)
                 & (ys <= height[vertex_of] + tol)).all())


def annotations_pass_by_column(anns: list, images: dict[int, dict], categories: dict[int, dict]) -> bool:
    """True when every annotation surely passes :func:`~vision.data.schema._check_annotation`, checked one key at a
    time across all annotations (C-level iteration and NumPy instead of a Python loop per annotation); False when
    they must be checked one by one, which finds and words the first error. Conservative like the fast path of
    :func:`~vision.data.schema._check_annotations`: exact types only; tracks, scores and uncompressed RLE counts
    give False."""
    n = len(anns)
    if not n:
        return True
    if set(map(type, anns)) != {dict} or any(map(dict.__contains__, anns, repeat("track_id", n))) \
            or any(map(dict.__contains__, anns, repeat("score", n))):
        return False

    def column(source: list, key: str, default: Any = ABSENT) -> list:
        return list(map(dict.get, source, repeat(key, len(source)), repeat(default, len(source))))

    ids, image_ids, category_ids = column(anns, "id"), column(anns, "image_id"), column(anns, "category_id")
    crowd = column(anns, "iscrowd", 0)
    if (set(map(type, ids)) != INT_TYPES or len(set(ids)) != n or set(map(type, image_ids)) != INT_TYPES
            or not images.keys() >= set(image_ids) or set(map(type, category_ids)) != INT_TYPES
            or not categories.keys() >= set(category_ids) or set(map(type, crowd)) != INT_TYPES
            or not {0, 1}.issuperset(crowd)):
        return False
    area = _numbers(column(anns, "area", 0))
    if area is None or not ((area >= 0.0) & (area <= FLOAT_MAX)).all():
        return False
    row = {ident: r for r, ident in enumerate(images)}
    at = np.fromiter(map(row.__getitem__, image_ids), np.int64, n)
    width = np.fromiter((img["width"] for img in images.values()), np.int64, len(images))[at]
    height = np.fromiter((img["height"] for img in images.values()), np.int64, len(images))[at]
    boxes = column(anns, "bbox")
    if set(map(type, boxes)) != {list} or set(map(len, boxes)) != {4}:
        return False
    box = _numbers(list(chain.from_iterable(boxes)))
    if box is None:
        return False
    x, y, w, h = box.reshape(n, 4).T
    tol = BOX_TOLERANCE_PX
    # NaN fails every comparison, an infinity one of them
    if not ((w >= 0) & (h >= 0) & (x >= -tol) & (y >= -tol) & (x + w <= width + tol) & (y + h <= height + tol)).all():
        return False
    segs = column(anns, "segmentation")
    kinds = set(map(type, segs))
    if not {list, dict, Absent}.issuperset(kinds):
        return False
    if list in kinds:
        polygon_anns = [i for i, seg in enumerate(segs) if type(seg) is list]
        # blocks of annotations bound the memory of the flattened coordinates
        for lo in range(0, len(polygon_anns), _POLYGON_BLOCK):
            if not _polygons_pass_by_column(polygon_anns[lo:lo + _POLYGON_BLOCK], segs, width, height):
                return False
    if dict in kinds:
        which = [i for i, seg in enumerate(segs) if type(seg) is dict]
        rles = [segs[i] for i in which]
        sizes = column(rles, "size")
        if set(map(type, sizes)) != {list} or set(map(len, sizes)) != {2}:
            return False
        flat = list(chain.from_iterable(sizes))
        if set(map(type, flat)) != INT_TYPES:
            return False
        try:
            size = np.array(flat, np.int64).reshape(-1, 2)
        except OverflowError:  # beyond int64: not the image's size anyway
            return False
        at = np.asarray(which)
        if not ((size[:, 0] == height[at]) & (size[:, 1] == width[at])).all():
            return False
        counts = column(rles, "counts")
        if set(map(type, counts)) != {str}:
            return False
        pixels = height[at] * width[at]
        lengths = np.fromiter(map(len, counts), np.int64, len(counts))
        # batches of about DeferredRle.MAX_CHARS characters bound the decoder's memory
        cuts = np.searchsorted(np.cumsum(lengths), np.arange(1, int(lengths.sum()) // DeferredRle.MAX_CHARS + 1)
                               * DeferredRle.MAX_CHARS)
        for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(counts)]):
            if hi > lo:
                plausible, sums = rle_runs_summary(counts[lo:hi])
                if not (plausible & (sums == pixels[lo:hi])).all():
                    return False
    return True
