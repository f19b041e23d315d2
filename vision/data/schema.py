"""The COCO-format schema of a split, and its validation.

A split is one COCO JSON file plus the files it names, relative to the JSON's folder:

- Standard COCO: ``images`` ``{id, file_name, width, height}``, ``annotations`` ``{id, image_id, category_id, bbox
  (XYWH pixels), segmentation (RLE with str/list counts, or polygons), area, iscrowd}``, ``categories`` ``{id, name}``.
- Video / multi-view: ``videos`` ``{id, name, width?, height?, ordered?: bool (default true)}``; an image may carry
  ``video_id`` and ``frame_index`` (both or neither); an annotation may carry ``track_id``;
  ``tracks`` ``{id, video_id, category_id, caption?}``. ``ordered: false`` marks an unordered multi-view image set.
- Geometry: an image may carry ``camera: {K: 3x3, extrinsics: 3x4}`` (OpenCV, camera-from-world) and ``depth_file``
  (metric depth: float16 ``.npz`` with key ``"depth"`` in metres, or a 16-bit PNG in millimetres; 0 = invalid).
- Vocabulary: a category may carry ``split`` in ``iv | novel | oov``; ``info.vocabulary`` lists the category names a
  detector may be given.
- Forensics: a video may carry ``label`` in ``real | generated | cgi`` (``cgi``: computer-generated imagery that
  is not AI-generated, e.g. an animated film or a rendering: scored and reported apart, never a training positive),
  ``generator`` (the method), ``family`` (the group of generators a leave-family-out protocol holds out together),
  ``file_name`` (the video file) and ``source``.

:func:`validate_split` checks all of that and raises :class:`~vision.errors.DataError` naming the file, the field
(e.g. ``annotations[3].bbox``) and the value. It never raises anything else on any JSON-like input.
"""

from __future__ import annotations

import math
import os
import sys
from itertools import chain, repeat
from pathlib import Path
from typing import Any

import numpy as np

from vision.data.io import resolve_inside
from vision.errors import DataError

__all__ = [
    "CATEGORY_SPLITS",
    "VIDEO_LABELS",
    "DEPTH_SUFFIXES",
    "BOX_TOLERANCE_PX",
    "validate_split",
    "safe_path",
    "rle_counts_from_string",
    "rle_counts_batch",
    "rle_runs_summary",
    "Checker",
    "check_rle",
    "check_segmentation",
]

CATEGORY_SPLITS = ("iv", "novel", "oov")
VIDEO_LABELS = ("real", "generated", "cgi")
DEPTH_SUFFIXES = (".npz", ".png")
BOX_TOLERANCE_PX = 1.0
#: Largest image a split may declare (pixels per side, and pixels in all): masks are decoded at full size, so a
#: malformed width or height must be refused here rather than exhaust memory later.
MAX_IMAGE_SIDE = 1 << 15
MAX_IMAGE_PIXELS = 1 << 28
#: pycocotools reads each run length into a 64-bit integer, 5 bits per character: longer runs are malformed (and
#: decoding them here would build ever larger Python integers).
MAX_RLE_RUN_CHARS = 13


def safe_path(root: Path, relative: Any, *, file: str, field: str) -> Path:
    """``resolve_inside`` plus refusal of names the OS cannot represent (NUL bytes, over-long names)."""
    if isinstance(relative, str) and "\x00" in relative:
        raise DataError("path contains a NUL byte", file=file, field=field, value=relative)
    try:
        return resolve_inside(root, relative, file=file, field=field)
    except (OSError, ValueError) as exc:
        if isinstance(exc, DataError):
            raise
        raise DataError(f"unusable path ({exc.__class__.__name__}: {exc})", file=file, field=field,
                        value=relative) from exc


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False


class _Listings:
    """Answers "is ``relative`` a plain file inside ``root``?" from one directory listing per folder instead of
    resolving and stat-ing every path (a COCO split names 118k images).

    :meth:`plain_file` is True only when every component of ``relative`` (split at ``/``) is an entry listed in
    its folder that is not a symbolic link, the last one a regular file and the others folders: then
    :func:`safe_path` accepts the name (it stays inside ``root``) and the file exists. Anything else (absolute
    names, ``.``, ``..``, empty components, links, missing or unlistable entries) gets False, and the caller takes
    the exact path (``safe_path`` and a stat) that decides and words the verdict.
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


def rle_counts_from_string(counts: str) -> list[int]:
    """Decode the compressed COCO RLE ``counts`` string (pycocotools' LEB128-like format) into run lengths.

    Pure Python, so a malformed string is detected before pycocotools' C decoder could read out of bounds.
    Raises ``ValueError`` on characters outside the alphabet, a truncated value or a run length of more than
    :data:`MAX_RLE_RUN_CHARS` characters.
    """
    runs: list[int] = []
    pos = 0
    n = len(counts)
    while pos < n:
        value = 0
        shift = 0
        more = True
        while more:
            if pos >= n:
                raise ValueError("truncated run length")
            if shift >= 5 * MAX_RLE_RUN_CHARS:
                raise ValueError(f"a run length of more than {MAX_RLE_RUN_CHARS} characters")
            code = ord(counts[pos]) - 48
            if code < 0 or code > 63:
                raise ValueError(f"character {counts[pos]!r} is not in the RLE alphabet")
            value |= (code & 0x1F) << shift
            more = bool(code & 0x20)
            pos += 1
            shift += 5
            if not more and (code & 0x10):
                value |= -1 << shift
        if len(runs) > 2:
            value += runs[-2]
        runs.append(value)
    return runs


#: The batch decoder (:func:`rle_counts_batch`) decodes runs of at most this many characters: 30 bits, values in
#: ``-2**29 .. 2**29 - 1``, enough for any difference of two runs of a mask within :data:`MAX_IMAGE_PIXELS` (2**28);
#: longer ones are left to :func:`rle_counts_from_string`.
FAST_RLE_RUN_CHARS = 6
#: ... and strings of at most this many characters.
FAST_RLE_STRING_CHARS = 1 << 26

# By character code 0..255 (``ord(c) - 48``; codes past 63 are outside the alphabet and mark their string):
#: the payload bits of a character, and the signed value of a run's last character (bit 0x10 is the sign).
_RLE_PAYLOAD = np.array([c & 0x1F for c in range(256)], np.int32)
_RLE_LAST_VALUE = np.array([(c & 0x1F) - ((c & 0x10) << 1) for c in range(256)], np.int32)


def rle_counts_batch(strings: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Decode many compressed RLE ``counts`` strings at once with NumPy, as :func:`rle_counts_from_string` would.

    Returns ``(runs, offsets, decoded)``: ``runs`` (int32) holds the run lengths of all strings one after the other,
    those of ``strings[i]`` being ``runs[offsets[i]:offsets[i + 1]]``; ``decoded[i]`` is False where this function
    did not decode ``strings[i]`` (its runs are then meaningless): a character outside the alphabet ``'0'..'o'``
    (or not ASCII), a truncated last run, a run spelled with more than :data:`FAST_RLE_RUN_CHARS` characters or a
    string of more than :data:`FAST_RLE_STRING_CHARS` characters. Such a string may still be valid (e.g. a run
    spelled with 7..13 characters), so the caller must hand it to :func:`rle_counts_from_string` for the verdict and
    the message.

    Exactness: the runs are computed modulo 2**32. Where all of a decoded string's runs are in
    ``0..MAX_IMAGE_PIXELS``, they are exactly the pure-Python decoder's; where one is not, the first such run (in
    the order each run is derived from the one two places earlier) is exact, so it shows outside that range too:
    every value is below 2**29 in magnitude, so it lies within int32 when the run it is added to was in range.

    Conventions (pycocotools' ``rleFrString``): each run is a little-endian sequence of characters ``c``, value
    ``ord(c) - 48`` holding 5 bits of payload (``& 0x1f``) and a continuation bit (``& 0x20``); the last character's
    bit ``0x10`` is the sign (two's complement over the run's ``5 * length`` bits). From the fourth run on (index
    3), the decoded value is a difference to the run two places earlier.
    """
    n = len(strings)
    lengths = np.fromiter(map(len, strings), np.int64, n)
    ends = np.cumsum(lengths)
    decoded = lengths <= FAST_RLE_STRING_CHARS
    if not n or ends[-1] == 0:
        return np.zeros(0, np.int32), np.zeros(n + 1, np.int64), decoded
    joined = "".join(strings)
    if joined.isascii():
        code = np.frombuffer(joined.encode("ascii"), np.uint8) - np.uint8(48)  # below '0' wraps past 63
    else:  # code points: anything outside '0'..'o' becomes 255
        points = np.frombuffer(joined.encode("utf-32-le", "surrogatepass"), np.uint32) - np.uint32(48)
        code = np.where(points > 63, 255, points).astype(np.uint8)
    del joined
    if code.max() > 63:
        decoded[np.searchsorted(ends, np.flatnonzero(code > 63), side="right")] = False
    continued = code & 0x20
    is_end = continued == 0
    nonempty = np.flatnonzero(lengths)
    last = ends[nonempty] - 1
    decoded[nonempty[~is_end[last]]] = False  # truncated: the last run continues past the end
    is_end[last] = True  # so that a malformed string's runs never reach into the next string
    run_end = np.flatnonzero(is_end)  # index of every run's last character
    offsets = np.zeros(n + 1, np.int64)
    offsets[1:] = np.searchsorted(run_end, ends, side="left")
    # one character per run (most of them): the signed 5-bit value of that character
    value = _RLE_LAST_VALUE[code[run_end]]
    # several characters (found from the continued ones): the last, signed, holds the top 5 bits, those before it
    # the lower ones, lowest first
    multi = np.searchsorted(run_end, np.flatnonzero(continued))
    if multi.size:
        multi = multi[np.concatenate(([True], multi[1:] != multi[:-1]))]
        chars = run_end[multi] - np.where(multi > 0, run_end[np.maximum(multi - 1, 0)], -1)
        long_runs = chars > FAST_RLE_RUN_CHARS
        if long_runs.any():
            decoded[np.searchsorted(offsets[1:], multi[long_runs], side="right")] = False
            chars = np.minimum(chars, FAST_RLE_RUN_CHARS)  # garbage for those strings, but bounded
        first = run_end[multi] - chars + 1
        low = np.zeros(multi.size, np.int32)
        for k in range(int(chars.max()) - 1):
            has = np.flatnonzero(chars - 1 > k)
            low[has] |= _RLE_PAYLOAD[code[first[has] + k]] << (5 * k)
        value[multi] = (value[multi] << (5 * (chars - 1)).astype(np.int32)) + low
    # runs 1, 3, 5, ... and runs 2, 4, 6, ... of a string are running sums of its values (run 0 is in neither):
    # running sums over the whole batch, one per parity of the position, less each string's sum before its start
    # (int32 sums wrap; see "Exactness" above)
    starts = offsets[:-1][nonempty]
    chained = value.copy()
    chained[starts] = 0
    summed = np.empty_like(chained)
    np.cumsum(chained[0::2], out=summed[0::2], dtype=np.int32)
    np.cumsum(chained[1::2], out=summed[1::2], dtype=np.int32)
    start = np.minimum(offsets[:-1], run_end.size - 1)  # (an empty string at the end has no runs to correct)
    before_same = summed[start]  # chained[start] = 0: the sum before the string, same parity as its start
    before_other = np.where(start > 0, summed[np.maximum(start - 1, 0)], 0).astype(np.int32)
    start_even = (start & 1) == 0
    base_even = np.where(start_even, before_same, before_other)  # for runs at even positions of the batch
    base_odd = np.where(start_even, before_other, before_same)
    string_of_run = np.repeat(np.arange(n, dtype=np.int32), np.diff(offsets))
    runs = summed
    runs[0::2] -= base_even[string_of_run[0::2]]
    runs[1::2] -= base_odd[string_of_run[1::2]]
    runs[starts] = value[starts]
    return runs, offsets, decoded


def rle_runs_summary(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(plausible, sums)`` for compressed RLE ``counts`` strings: ``plausible[i]`` is True when
    :func:`rle_counts_batch` decoded ``strings[i]`` and its runs are all in ``0..MAX_IMAGE_PIXELS``; ``sums[i]`` is
    then the exact sum of its runs (0 for an empty string). Where ``plausible[i]`` is False, or the sum is not
    the mask's ``height * width``, the string needs :func:`check_rle`'s pure-Python verdict."""
    runs, offsets, decoded = rle_counts_batch(strings)
    sums = np.zeros(len(strings), np.int64)
    plausible = decoded.copy()
    if runs.size:
        # negative runs become huge as unsigned: one comparison finds both ends of the range
        out_of_range = np.flatnonzero(runs.view(np.uint32) > MAX_IMAGE_PIXELS)
        plausible[np.searchsorted(offsets[1:], out_of_range, side="right")] = False
        has_runs = np.flatnonzero(offsets[1:] > offsets[:-1])
        # every run of a plausible string is in 0..2**28 and it has < 2**26 runs: its sum is exact in an int64
        sums[has_runs] = np.add.reduceat(runs, offsets[has_runs], dtype=np.int64)
    return plausible, sums


class Checker:
    """Holds the file name for messages and offers small typed checks (shared with the results validation of
    :mod:`vision.evaluation.results`)."""

    def __init__(self, file: str | None) -> None:
        self.file = file

    def fail(self, message: str, field: str, value: Any) -> DataError:
        return DataError(message, file=self.file, field=field, value=value)

    def dict_(self, value: Any, field: str) -> dict:
        if not isinstance(value, dict):
            raise self.fail(f"expected an object, got {type(value).__name__}", field, value)
        return value

    def list_(self, value: Any, field: str) -> list:
        if not isinstance(value, list):
            raise self.fail(f"expected a list, got {type(value).__name__}", field, value)
        return value

    def key(self, obj: dict, key: str, field: str) -> Any:
        if key not in obj:
            raise self.fail(f"missing required key {key!r} (the entry has keys shown)", f"{field}.{key}",
                            sorted(map(str, obj.keys())))
        return obj[key]

    def int_(self, value: Any, field: str, minimum: int | None = None, maximum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"expected an integer, got {type(value).__name__}", field, value)
        if minimum is not None and value < minimum:
            raise self.fail(f"expected an integer >= {minimum}", field, value)
        if maximum is not None and value > maximum:
            raise self.fail(f"expected an integer <= {maximum}", field, value)
        return value

    def number(self, value: Any, field: str, minimum: float | None = None) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"expected a number, got {type(value).__name__}", field, value)
        try:
            as_float = float(value)
        except OverflowError as exc:
            raise self.fail("number is too large", field, value) from exc
        if not math.isfinite(as_float):
            raise self.fail("expected a finite number", field, value)
        if minimum is not None and as_float < minimum:
            raise self.fail(f"expected a number >= {minimum}", field, value)
        return as_float

    def str_(self, value: Any, field: str, nonempty: bool = False) -> str:
        if not isinstance(value, str):
            raise self.fail(f"expected a string, got {type(value).__name__}", field, value)
        if nonempty and not value:
            raise self.fail("expected a non-empty string", field, value)
        return value

    def bool_(self, value: Any, field: str) -> bool:
        if not isinstance(value, bool):
            raise self.fail(f"expected true or false, got {type(value).__name__}", field, value)
        return value

    def choice(self, value: Any, field: str, choices: tuple[str, ...]) -> str:
        if not isinstance(value, str) or value not in choices:
            raise self.fail(f"expected one of {', '.join(choices)}", field, value)
        return value

    def matrix(self, value: Any, field: str, rows: int, cols: int) -> list[list[float]]:
        self.list_(value, field)
        if len(value) != rows or any(not isinstance(r, list) or len(r) != cols for r in value):
            raise self.fail(f"expected a {rows}x{cols} matrix (list of {rows} lists of {cols} numbers)", field,
                            value)
        return [[self.number(v, f"{field}[{i}][{j}]") for j, v in enumerate(r)] for i, r in enumerate(value)]

    def unique_id(self, seen: dict[int, int], obj: dict, field: str) -> int:
        ident = self.int_(self.key(obj, "id", field), f"{field}.id")
        if ident in seen:
            raise self.fail(f"duplicate id (first used by entry {seen[ident]})", f"{field}.id", ident)
        return ident


def validate_split(dataset: Any, root: str | Path, file: str | Path, check_files: bool = True) -> None:
    """Validate a split dict against the schema of this module.

    Args:
        dataset: the parsed JSON.
        root: the folder the split's relative paths are resolved against (the JSON's folder).
        file: the JSON's name, used in messages.
        check_files: also require every named image, depth and video file to exist.

    Raises:
        DataError: naming the file, the field (e.g. ``annotations[3].bbox``) and the offending value.
    """
    root = Path(root)
    c = Checker(str(file))
    c.dict_(dataset, "<top level>")
    for key in ("images", "annotations", "categories"):
        if key not in dataset:
            raise c.fail(f"missing required key {key!r}", key, sorted(map(str, dataset.keys())))
    categories = _check_categories(c, dataset)
    videos = _check_videos(c, dataset, root, check_files)
    tracks = _check_tracks(c, dataset, videos, categories)
    images = _check_images(c, dataset, videos, root, check_files)
    _check_annotations(c, dataset, images, categories, tracks)
    _check_info(c, dataset, categories)


def _check_categories(c: Checker, dataset: dict) -> dict[int, dict]:
    categories: dict[int, dict] = {}
    first: dict[int, int] = {}
    names: dict[str, int] = {}
    for i, cat in enumerate(c.list_(dataset["categories"], "categories")):
        field = f"categories[{i}]"
        c.dict_(cat, field)
        ident = c.unique_id(first, cat, field)
        name = c.str_(c.key(cat, "name", field), f"{field}.name", nonempty=True)
        if name in names:
            raise c.fail(f"duplicate category name (first used by categories[{names[name]}])", f"{field}.name", name)
        if "split" in cat:
            c.choice(cat["split"], f"{field}.split", CATEGORY_SPLITS)
        if "supercategory" in cat:
            c.str_(cat["supercategory"], f"{field}.supercategory")
        first[ident] = i
        names[name] = i
        categories[ident] = cat
    return categories


def _check_videos(c: Checker, dataset: dict, root: Path, check_files: bool) -> dict[int, dict]:
    videos: dict[int, dict] = {}
    first: dict[int, int] = {}
    for i, video in enumerate(c.list_(dataset.get("videos", []), "videos")):
        field = f"videos[{i}]"
        c.dict_(video, field)
        ident = c.unique_id(first, video, field)
        c.str_(c.key(video, "name", field), f"{field}.name")
        for key in ("width", "height"):
            if key in video:
                c.int_(video[key], f"{field}.{key}", minimum=1, maximum=MAX_IMAGE_SIDE)
        if "ordered" in video:
            c.bool_(video["ordered"], f"{field}.ordered")
        if "label" in video:
            c.choice(video["label"], f"{field}.label", VIDEO_LABELS)
        if "generator" in video and video["generator"] is not None:
            c.str_(video["generator"], f"{field}.generator")
        for key in ("source", "family"):
            if key in video and video[key] is not None:
                c.str_(video[key], f"{field}.{key}")
        if "file_name" in video:
            path = safe_path(root, video["file_name"], file=c.file, field=f"{field}.file_name")
            if check_files and not _is_file(path):
                raise c.fail(f"video file not found at {path}", f"{field}.file_name", video["file_name"])
        first[ident] = i
        videos[ident] = video
    return videos


def _check_tracks(c: Checker, dataset: dict, videos: dict[int, dict], categories: dict[int, dict]) -> dict[int, dict]:
    tracks: dict[int, dict] = {}
    first: dict[int, int] = {}
    for i, track in enumerate(c.list_(dataset.get("tracks", []), "tracks")):
        field = f"tracks[{i}]"
        c.dict_(track, field)
        ident = c.unique_id(first, track, field)
        video_id = c.int_(c.key(track, "video_id", field), f"{field}.video_id")
        if video_id not in videos:
            raise c.fail("track points to a video id that is not in 'videos'", f"{field}.video_id", video_id)
        category_id = c.int_(c.key(track, "category_id", field), f"{field}.category_id")
        if category_id not in categories:
            raise c.fail("track points to a category id that is not in 'categories'", f"{field}.category_id",
                         category_id)
        if "caption" in track and track["caption"] is not None:
            c.str_(track["caption"], f"{field}.caption")
        first[ident] = i
        tracks[ident] = track
    return tracks


def _check_camera(c: Checker, camera: Any, field: str) -> None:
    c.dict_(camera, field)
    c.matrix(c.key(camera, "K", field), f"{field}.K", 3, 3)
    c.matrix(c.key(camera, "extrinsics", field), f"{field}.extrinsics", 3, 4)


def _check_images(c: Checker, dataset: dict, videos: dict[int, dict], root: Path,
                  check_files: bool) -> dict[int, dict]:
    images: dict[int, dict] = {}
    first: dict[int, int] = {}
    frames: dict[tuple[int, int], int] = {}
    listings = _Listings(root)
    for i, img in enumerate(c.list_(dataset["images"], "images")):
        # Fast path: a plain image (no video, camera or depth) whose every check below is sure to pass; anything
        # else (including every error) takes the checks below, which decide and word the verdict.
        if type(img) is dict and not ("video_id" in img or "frame_index" in img or "camera" in img
                                      or "depth_file" in img):
            ident, width, height = img.get("id"), img.get("width"), img.get("height")
            if (type(ident) is int and ident not in first and type(width) is int and type(height) is int
                    and 1 <= width <= MAX_IMAGE_SIDE and 1 <= height <= MAX_IMAGE_SIDE
                    and width * height <= MAX_IMAGE_PIXELS and listings.plain_file(img.get("file_name"))):
                first[ident] = i
                images[ident] = img
                continue
        field = f"images[{i}]"
        c.dict_(img, field)
        ident = c.unique_id(first, img, field)
        file_name = c.key(img, "file_name", field)
        path = safe_path(root, file_name, file=c.file, field=f"{field}.file_name")
        width = c.int_(c.key(img, "width", field), f"{field}.width", minimum=1, maximum=MAX_IMAGE_SIDE)
        height = c.int_(c.key(img, "height", field), f"{field}.height", minimum=1, maximum=MAX_IMAGE_SIDE)
        if width * height > MAX_IMAGE_PIXELS:
            raise c.fail(f"image of {width}x{height} pixels exceeds the limit of {MAX_IMAGE_PIXELS} pixels",
                         f"{field}.width", width)
        if check_files and not _is_file(path):
            raise c.fail(f"image file not found at {path}", f"{field}.file_name", file_name)
        has_video, has_frame = "video_id" in img, "frame_index" in img
        if has_video != has_frame:
            missing = "frame_index" if has_video else "video_id"
            raise c.fail(f"an image with video_id needs frame_index and vice versa; {missing!r} is missing "
                         "(the entry has keys shown)", f"{field}.{missing}", sorted(map(str, img.keys())))
        if has_video:
            video_id = c.int_(img["video_id"], f"{field}.video_id")
            if video_id not in videos:
                raise c.fail("image points to a video id that is not in 'videos'", f"{field}.video_id", video_id)
            frame = c.int_(img["frame_index"], f"{field}.frame_index", minimum=0)
            if (video_id, frame) in frames:
                raise c.fail(f"two images of video {video_id} share a frame_index "
                             f"(first: images[{frames[(video_id, frame)]}])", f"{field}.frame_index", frame)
            frames[(video_id, frame)] = i
        if "camera" in img:
            _check_camera(c, img["camera"], f"{field}.camera")
        if "depth_file" in img:
            depth_name = img["depth_file"]
            depth_path = safe_path(root, depth_name, file=c.file, field=f"{field}.depth_file")
            if depth_path.suffix.lower() not in DEPTH_SUFFIXES:
                raise c.fail("depth_file must be a float16 .npz (key 'depth', metres) or a 16-bit .png (mm)",
                             f"{field}.depth_file", depth_name)
            if check_files and not _is_file(depth_path):
                raise c.fail(f"depth file not found at {depth_path}", f"{field}.depth_file", depth_name)
        first[ident] = i
        images[ident] = img
    return images


def check_rle(c: Checker, seg: Any, field: str, height: int, width: int) -> None:
    """A COCO RLE ``{size, counts}`` of an image of ``height`` x ``width``: its size is that of the image, its counts
    (a compressed string or a list of integers) are non-negative run lengths summing to exactly ``height * width``
    (pycocotools would otherwise decode uninitialised memory or write past the mask)."""
    c.dict_(seg, field)
    size = c.key(seg, "size", field)
    if (not isinstance(size, list) or len(size) != 2
            or any(isinstance(v, bool) or not isinstance(v, int) for v in size)):
        raise c.fail("expected [height, width] integers", f"{field}.size", size)
    if size != [height, width]:
        raise c.fail(f"RLE size does not match its image's [height, width] = [{height}, {width}]", f"{field}.size",
                     size)
    counts = c.key(seg, "counts", field)
    if isinstance(counts, str):
        try:
            runs = rle_counts_from_string(counts)
        except ValueError as exc:
            raise c.fail(f"malformed compressed RLE counts: {exc}", f"{field}.counts", counts) from exc
    elif isinstance(counts, list):
        runs = [c.int_(v, f"{field}.counts[{j}]") for j, v in enumerate(counts)]
    else:
        raise c.fail(f"expected counts as a string (compressed) or a list of integers, got "
                     f"{type(counts).__name__}", f"{field}.counts", counts)
    if any(r < 0 for r in runs):
        raise c.fail("RLE has a negative run length", f"{field}.counts", counts)
    if sum(runs) != height * width:
        raise c.fail(f"RLE run lengths sum to {sum(runs)}, not height*width = {height * width}", f"{field}.counts",
                     counts)


def check_segmentation(c: Checker, seg: Any, field: str, height: int, width: int) -> None:
    """An RLE (see :func:`check_rle`) or a list of polygons whose vertices lie on the image (within
    :data:`BOX_TOLERANCE_PX`)."""
    if isinstance(seg, dict):
        check_rle(c, seg, field, height, width)
        return
    if isinstance(seg, list):
        for j, poly in enumerate(seg):
            c.list_(poly, f"{field}[{j}]")
            if len(poly) < 6 or len(poly) % 2:
                raise c.fail("a polygon needs an even number (>= 6) of coordinates x0, y0, x1, y1, ...",
                             f"{field}[{j}]", poly)
            for k, v in enumerate(poly):
                limit = width if k % 2 == 0 else height
                value = c.number(v, f"{field}[{j}][{k}]")
                # pycocotools rasterises a polygon edge by edge, so a vertex far off the image would make it
                # allocate memory in proportion to the edge's length (gigabytes for 1e6, a crash for 1e300).
                if not -BOX_TOLERANCE_PX <= value <= limit + BOX_TOLERANCE_PX:
                    axis = "x" if k % 2 == 0 else "y"
                    raise c.fail(f"polygon {axis} coordinate lies outside its {width}x{height} image (tolerance "
                                 f"{BOX_TOLERANCE_PX:g} px)", f"{field}[{j}][{k}]", v)
        return
    raise c.fail(f"expected an RLE object or a list of polygons, got {type(seg).__name__}", field, seg)


class _DeferredRle:
    """Compressed RLE ``counts`` of annotations that passed every other check, checked many at once.

    :meth:`add` queues an annotation's segmentation (its ``size`` already checked); :meth:`flush` (called when a
    batch is full, when a later annotation fails, and at the end) decodes the batch with :func:`rle_runs_summary`
    and hands every string it cannot vouch for (not decoded, a run out of range, a sum other than ``height *
    width``) to :func:`check_rle`, in file order: the first error is the one the one-by-one checks would raise.
    """

    #: a batch is decoded once it holds this many characters or strings (bounds the decoder's memory)
    MAX_CHARS = 1 << 20
    MAX_STRINGS = 1 << 15

    def __init__(self, c: Checker) -> None:
        self.c = c
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

    def flush(self) -> None:
        if not self.strings:
            return
        plausible, sums = rle_runs_summary(self.strings)
        suspects = np.flatnonzero(~plausible | (sums != np.asarray(self.pixels, np.int64)))
        indexes, segmentations = self.indexes, self.segmentations
        self.indexes, self.segmentations, self.strings, self.pixels, self.chars = [], [], [], [], 0
        for k in suspects.tolist():
            height, width = segmentations[k]["size"]
            check_rle(self.c, segmentations[k], f"annotations[{indexes[k]}].segmentation", height, width)


_NUMBER_TYPES = frozenset((int, float))
_INT_TYPES = frozenset((int,))
_FLOAT_MAX = sys.float_info.max
_FLOAT_MAX_INT = int(_FLOAT_MAX)  # the largest integer that float() converts


class _Absent:
    """The type of :data:`_ABSENT`, a key's default that no split value can be."""


_ABSENT = _Absent()


def _polygons_pass(seg: list, width: int, height: int) -> bool:
    """True when :func:`check_segmentation` surely accepts the polygons ``seg`` on a ``width`` x ``height`` image
    (False: it has to decide). Exact types only (``int``/``float``, not ``bool``); a finite sum means no NaN or
    infinity, so the extremes of the x and y coordinates bound them all."""
    tol = BOX_TOLERANCE_PX
    for poly in seg:
        if (type(poly) is not list or len(poly) < 6 or len(poly) % 2
                or not _NUMBER_TYPES.issuperset(map(type, poly))):
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
    if not _NUMBER_TYPES.issuperset(map(type, values)):
        return None
    try:
        return np.array(values, np.float64)
    except OverflowError:
        return None


_POLYGON_BLOCK = 1 << 15


def _polygons_pass_by_column(which: list[int], segs: list, width: np.ndarray, height: np.ndarray) -> bool:
    """True when the polygon lists ``segs[i]`` (``i`` in ``which``) surely pass :func:`check_segmentation` on images
    of ``width[i]`` x ``height[i]``; all coordinates at once, as in :func:`_polygons_pass`."""
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


def _annotations_pass_by_column(anns: list, images: dict[int, dict], categories: dict[int, dict]) -> bool:
    """True when every annotation surely passes :func:`_check_annotation`, checked one key at a time across all
    annotations (C-level iteration and NumPy instead of a Python loop per annotation); False when they must be
    checked one by one, which finds and words the first error. Conservative like the fast path of
    :func:`_check_annotations`: exact types only; tracks, scores and uncompressed RLE counts give False."""
    n = len(anns)
    if not n:
        return True
    if set(map(type, anns)) != {dict} or any(map(dict.__contains__, anns, repeat("track_id", n))) \
            or any(map(dict.__contains__, anns, repeat("score", n))):
        return False

    def column(source: list, key: str, default: Any = _ABSENT) -> list:
        return list(map(dict.get, source, repeat(key, len(source)), repeat(default, len(source))))

    ids, image_ids, category_ids = column(anns, "id"), column(anns, "image_id"), column(anns, "category_id")
    crowd = column(anns, "iscrowd", 0)
    if (set(map(type, ids)) != _INT_TYPES or len(set(ids)) != n or set(map(type, image_ids)) != _INT_TYPES
            or not images.keys() >= set(image_ids) or set(map(type, category_ids)) != _INT_TYPES
            or not categories.keys() >= set(category_ids) or set(map(type, crowd)) != _INT_TYPES
            or not {0, 1}.issuperset(crowd)):
        return False
    area = _numbers(column(anns, "area", 0))
    if area is None or not ((area >= 0.0) & (area <= _FLOAT_MAX)).all():
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
    if not {list, dict, _Absent}.issuperset(kinds):
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
        if set(map(type, flat)) != _INT_TYPES:
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
        # batches of about _DeferredRle.MAX_CHARS characters bound the decoder's memory
        cuts = np.searchsorted(np.cumsum(lengths), np.arange(1, int(lengths.sum()) // _DeferredRle.MAX_CHARS + 1)
                               * _DeferredRle.MAX_CHARS)
        for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(counts)]):
            if hi > lo:
                plausible, sums = rle_runs_summary(counts[lo:hi])
                if not (plausible & (sums == pixels[lo:hi])).all():
                    return False
    return True


def _check_annotations(c: Checker, dataset: dict, images: dict[int, dict], categories: dict[int, dict],
                       tracks: dict[int, dict]) -> None:
    annotations = c.list_(dataset["annotations"], "annotations")
    if _annotations_pass_by_column(annotations, images, categories):
        return
    first: dict[int, int] = {}
    track_frames: dict[tuple[int, int], int] = {}
    deferred = _DeferredRle(c)
    tol = BOX_TOLERANCE_PX
    for i, ann in enumerate(annotations):
        # Fast path: exact types and values that every check of _check_annotation surely accepts; compressed RLE
        # counts are checked in batches (_DeferredRle). Everything else, errors included, takes _check_annotation.
        if type(ann) is dict and "track_id" not in ann and "score" not in ann:
            ident, image_id, category_id = ann.get("id"), ann.get("image_id"), ann.get("category_id")
            bbox, crowd, area = ann.get("bbox"), ann.get("iscrowd", 0), ann.get("area", 0)
            img = images.get(image_id) if type(image_id) is int else None
            if (img is not None and type(ident) is int and ident not in first and type(category_id) is int
                    and category_id in categories and type(crowd) is int and (crowd == 0 or crowd == 1)
                    and ((type(area) is float and 0.0 <= area <= _FLOAT_MAX)
                         or (type(area) is int and 0 <= area <= _FLOAT_MAX_INT))
                    and type(bbox) is list and len(bbox) == 4 and _NUMBER_TYPES.issuperset(map(type, bbox))):
                width, height = img["width"], img["height"]
                try:
                    x, y, w, h = float(bbox[0]), float(bbox[1]), float(bbox[2]), float(bbox[3])
                except OverflowError:  # an integer beyond float range: the checks below word it
                    x = y = w = h = math.nan
                # NaN fails every comparison, an infinity one of them
                if (w >= 0 and h >= 0 and x >= -tol and y >= -tol and x + w <= width + tol
                        and y + h <= height + tol):
                    seg = ann.get("segmentation", _ABSENT)
                    passed = False
                    if type(seg) is list:
                        passed = _polygons_pass(seg, width, height)
                    elif type(seg) is dict:
                        size, counts = seg.get("size"), seg.get("counts")
                        if (type(size) is list and len(size) == 2 and type(size[0]) is int
                                and type(size[1]) is int and size[0] == height and size[1] == width):
                            if type(counts) is str:
                                deferred.add(i, seg, counts, height * width)
                                passed = True
                            elif (type(counts) is list and counts and _INT_TYPES.issuperset(map(type, counts))
                                  and min(counts) >= 0 and sum(counts) == height * width):
                                passed = True
                    elif seg is _ABSENT:
                        passed = True
                    if passed:
                        first[ident] = i
                        continue
        error = None
        try:
            _check_annotation(c, i, ann, first, track_frames, images, categories, tracks)
        except DataError as exc:
            error = exc
        if error is not None:
            deferred.flush()  # a deferred RLE of an earlier annotation is the first error
            raise error
    deferred.flush()


def _check_annotation(c: Checker, i: int, ann: Any, first: dict[int, int], track_frames: dict[tuple[int, int], int],
                      images: dict[int, dict], categories: dict[int, dict], tracks: dict[int, dict]) -> None:
    """Every check of ``annotations[i]``, one by one, each error naming the field and the value."""
    field = f"annotations[{i}]"
    c.dict_(ann, field)
    ident = c.unique_id(first, ann, field)
    image_id = c.int_(c.key(ann, "image_id", field), f"{field}.image_id")
    if image_id not in images:
        raise c.fail("annotation points to an image id that is not in 'images'", f"{field}.image_id", image_id)
    img = images[image_id]
    width, height = img["width"], img["height"]
    category_id = c.int_(c.key(ann, "category_id", field), f"{field}.category_id")
    if category_id not in categories:
        raise c.fail("annotation points to a category id that is not in 'categories'", f"{field}.category_id",
                     category_id)
    bbox = c.key(ann, "bbox", field)
    if not isinstance(bbox, list) or len(bbox) != 4:
        raise c.fail("expected bbox as [x, y, width, height] (XYWH pixels)", f"{field}.bbox", bbox)
    x, y, w, h = (c.number(v, f"{field}.bbox[{j}]") for j, v in enumerate(bbox))
    if w < 0 or h < 0:
        raise c.fail("bbox has a negative width or height", f"{field}.bbox", bbox)
    tol = BOX_TOLERANCE_PX
    if x < -tol or y < -tol or x + w > width + tol or y + h > height + tol:
        raise c.fail(f"bbox lies outside its {width}x{height} image (tolerance {tol:g} px)", f"{field}.bbox", bbox)
    if "segmentation" in ann:
        check_segmentation(c, ann["segmentation"], f"{field}.segmentation", height, width)
    if "area" in ann:
        c.number(ann["area"], f"{field}.area", minimum=0.0)
    if "iscrowd" in ann:
        crowd = ann["iscrowd"]
        if crowd not in (0, 1) or (not isinstance(crowd, (int, bool))):
            raise c.fail("expected iscrowd 0 or 1", f"{field}.iscrowd", crowd)
    if "score" in ann:
        c.number(ann["score"], f"{field}.score")
    if "track_id" in ann:
        track_id = c.int_(ann["track_id"], f"{field}.track_id")
        if track_id not in tracks:
            raise c.fail("annotation points to a track id that is not in 'tracks'", f"{field}.track_id",
                         track_id)
        track = tracks[track_id]
        if img.get("video_id") != track["video_id"]:
            raise c.fail(f"track {track_id} belongs to video {track['video_id']} but image {image_id} to video "
                         f"{img.get('video_id')}", f"{field}.track_id", track_id)
        if track["category_id"] != category_id:
            raise c.fail(f"annotation category differs from its track's category {track['category_id']}",
                         f"{field}.category_id", category_id)
        if (track_id, image_id) in track_frames:
            raise c.fail(f"track {track_id} has two annotations on image {image_id} "
                         f"(first: annotations[{track_frames[(track_id, image_id)]}])", f"{field}.track_id",
                         track_id)
        track_frames[(track_id, image_id)] = i
    first[ident] = i


def _check_info(c: Checker, dataset: dict, categories: dict[int, dict]) -> None:
    if "info" not in dataset:
        return
    info = c.dict_(dataset["info"], "info")
    if "vocabulary" in info:
        names = {cat["name"] for cat in categories.values()}
        for j, name in enumerate(c.list_(info["vocabulary"], "info.vocabulary")):
            c.str_(name, f"info.vocabulary[{j}]")
            if name not in names:
                raise c.fail("vocabulary name is not a category name", f"info.vocabulary[{j}]", name)
