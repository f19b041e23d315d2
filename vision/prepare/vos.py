"""Convert a video object segmentation dataset (DAVIS 2017, YouTube-VOS, MOSE) into one COCO-video split
(``vision prepare vos``).

Layouts read (``layout=``):

- ``davis``: ``ROOT/JPEGImages/480p/<video>/<frame>.jpg``, ``ROOT/Annotations/480p/<video>/<frame>.png``; ``subset``
  names a list ``ROOT/ImageSets/2017/<subset>.txt`` (``train``, ``val``, ...), one video name a line; without it
  every video folder of ``JPEGImages/480p`` is converted. ``resolution`` (default ``480p``) picks the sub-folder.
- ``youtube`` (YouTube-VOS 2018/2019) and ``mose``: ``ROOT/<subset>/JPEGImages/<video>/<frame>.jpg``,
  ``ROOT/<subset>/Annotations/<video>/<frame>.png`` and ``ROOT/<subset>/meta.json``
  (``{"videos": {video: {"objects": {"1": {"category": "person", "frames": [...]}}}}}``); ``subset`` is the split
  folder (``train``, ``valid``); without it ROOT itself holds ``JPEGImages/`` and ``Annotations/``. ``meta.json``
  is required for ``youtube`` (it gives the categories) and optional for ``mose``.

Masks are palette PNGs (mode ``P``; single-channel ``L`` PNGs of object ids are accepted too): pixel value = object
id, 0 = background, 255 = void (ignored: part of no object). RGB masks are refused (colours are not ids). A mask
must have its frame's size, and every frame of a video the same size.

What is written (``OUT/<name>.json``, ``name`` defaulting to the subset or ``all``; frames copied, or hard-linked
with ``link=True``, to ``OUT/<name>/<video>/<frame>``, so the split's relative ``file_name`` stay inside OUT):

- ``videos``: ``{id, name, width, height, ordered: true, source}`` in name order;
- ``images``: one per frame file, ``frame_index`` = its position (0, 1, ...) in the sorted frame names (YouTube-VOS
  keeps every 5th frame; the original name stays in ``file_name``); ``annotated`` says whether the frame has a
  mask file (sparse annotations: YouTube-VOS / MOSE validation sets annotate only an object's first frame, and a
  frame without a mask says nothing about where the objects are);
- ``tracks``: one per object id present in some mask of the video, ``{id, video_id, category_id, object_id}``
  (``object_id`` = the palette index); the category is the object's ``category`` in ``meta.json`` or ``object``;
- ``annotations``: one per (object, frame) where the object has at least one pixel in the frame's mask: RLE
  ``segmentation`` (``counts`` a str), ``bbox`` XYWH in pixels, ``area`` in pixels, ``iscrowd`` 0, ``track_id``.
  An object entering late has its first annotation on the frame it first appears in.

Every decoded frame and mask is bounded by :data:`vision.data.io.MAX_INPUT_PIXELS` (checked from its header).

The command line converts one or more subsets in one run, each into its own split (``--subset train val`` writes
``OUT/train.json`` and ``OUT/val.json``, DAVIS 2017's two annotated lists).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from pycocotools import mask as mask_utils

from vision.data.coco import read_json
from vision.data.io import MAX_INPUT_PIXELS, check_pixels, image_size, resolve_inside
from vision.errors import DataError, InputError
from vision.prepare.converter import add_link, add_out, converter_parser, run
from vision.prepare.files import decode_mask_png, output_folder, place_file, staged_output, write_named_split

__all__ = ["LAYOUTS", "VOID", "read_mask", "convert_vos", "main"]

LAYOUTS: tuple[str, ...] = ("davis", "youtube", "mose")
#: Mask value of void / ignored pixels (part of no object).
VOID = 255
#: Category of objects without a category in meta.json (DAVIS, MOSE).
DEFAULT_CATEGORY = "object"
FRAME_SUFFIXES: tuple[str, ...] = (".jpg", ".jpeg", ".png")


def read_mask(path: str | Path, size: tuple[int, int], max_pixels: int | None = MAX_INPUT_PIXELS) -> np.ndarray:
    """Object ids ``uint8 [H, W]`` of a palette (or single-channel) mask PNG whose frame is ``size`` = ``(W, H)``.

    Raises:
        DataError: the file cannot be read, is not a palette / single-channel image, or its size differs from
            ``size`` (the message names the file and both sizes).
    """
    path = Path(path)
    width, height = image_size(path)
    check_pixels(width, height, path, max_pixels)
    if (width, height) != tuple(size):
        raise DataError(f"mask is {width}x{height} but its frame is {size[0]}x{size[1]}", file=path)
    return decode_mask_png(path, ("P", "L"),
                           "a palette PNG (mode 'P', pixel value = object id) or single-channel ids (mode 'L')")


def _frames(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in FRAME_SUFFIXES)


def _folders(root: Path, layout: str, subset: str | None, resolution: str) -> tuple[Path, Path, Path | None]:
    """``(frames folder, masks folder, meta.json or None)`` of the layout, each checked to exist."""
    if layout == "davis":
        base, frames, masks = root, root / "JPEGImages" / resolution, root / "Annotations" / resolution
    else:
        base = resolve_inside(root, subset, field="subset") if subset else root
        frames, masks = base / "JPEGImages", base / "Annotations"
    for folder in (frames, masks):
        if not folder.is_dir():
            raise DataError(f"{layout} layout: folder not found", file=folder)
    meta = None
    if layout != "davis":
        meta = base / "meta.json"
        if not meta.is_file():
            if layout == "youtube":
                raise DataError("youtube layout: meta.json not found (it gives the object categories)", file=meta)
            meta = None
    return frames, masks, meta


def _video_names(root: Path, frames: Path, layout: str, subset: str | None) -> list[str]:
    if layout == "davis" and subset:
        listing = resolve_inside(root / "ImageSets" / "2017", f"{subset}.txt", field="subset")
        if not listing.is_file():
            raise DataError("davis layout: video list not found", file=listing, field="subset", value=subset)
        try:
            lines = listing.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"cannot read the video list ({exc})", file=listing) from None
        names = []
        for number, line in enumerate(lines, 1):
            name = line.strip()
            if name:
                path = resolve_inside(frames, name, file=listing, field=f"line {number}")
                if not path.is_dir():
                    raise DataError(f"listed video has no frame folder {path}", file=listing, field=f"line {number}",
                                    value=name)
                names.append(name)
        return names
    return sorted(p.name for p in frames.iterdir() if p.is_dir())


def _categories_of(meta: Path | None) -> dict[str, dict[int, str]]:
    """video -> object id -> category name, from meta.json (empty without one)."""
    if meta is None:
        return {}
    doc = read_json(meta)
    videos = doc.get("videos") if isinstance(doc, dict) else None
    if not isinstance(videos, dict):
        raise DataError("expected an object {'videos': {video: {'objects': {...}}}}", file=meta, field="videos")
    out: dict[str, dict[int, str]] = {}
    for video, entry in videos.items():
        objects = entry.get("objects", {}) if isinstance(entry, dict) else None
        if not isinstance(objects, dict):
            raise DataError("expected an object of objects", file=meta, field=f"videos.{video}.objects", value=objects)
        out[video] = {}
        for key, obj in objects.items():
            field = f"videos.{video}.objects.{key}"
            if not (isinstance(key, str) and key.isdigit() and 0 < int(key) < VOID):
                raise DataError(f"object ids must be integers 1..{VOID - 1}", file=meta, field=field, value=key)
            category = obj.get("category") if isinstance(obj, dict) else None
            if category is not None and (not isinstance(category, str) or not category):
                raise DataError("category must be a non-empty string", file=meta, field=f"{field}.category",
                                value=category)
            out[video][int(key)] = category or DEFAULT_CATEGORY
    return out


def convert_vos(root: str | Path, out: str | Path, layout: str = "davis", subset: str | None = None,
                link: bool = False, name: str | None = None, resolution: str = "480p",
                max_pixels: int | None = MAX_INPUT_PIXELS) -> Path:
    """Convert a DAVIS 2017 / YouTube-VOS / MOSE folder (see the module docstring) into ``OUT/<name>.json``.

    Args:
        root: the dataset folder. out: the output folder (created). layout: one of :data:`LAYOUTS`.
        subset: DAVIS: an ``ImageSets/2017`` list name; YouTube-VOS / MOSE: the split folder under ``root``.
        link: hard-link the frames instead of copying them (copied where linking fails).
        name: the split's name (JSON and frame folder); default ``subset`` or ``all``.
        resolution: DAVIS's resolution folder. max_pixels: the per-frame pixel limit (None: none).

    Returns:
        The path of the written split JSON.

    Raises:
        InputError: a bad layout or name. DataError: a missing folder or file, an unreadable or mis-sized frame or
            mask, a mask file without a frame; the message names the file. ``out`` is left as it was then (the
            split is built beside it, :func:`vision.prepare.files.staged_output`).
    """
    out = output_folder(out)
    with staged_output(out, inputs=[root]) as stage:
        written = _convert_into(stage, root, layout, subset, link, name, resolution, max_pixels)
    return out / written.name


def _convert_into(out: Path, root: str | Path, layout: str, subset: str | None, link: bool, name: str | None,
                  resolution: str, max_pixels: int | None) -> Path:
    """:func:`convert_vos` into the folder ``out`` (a staging folder); returns the split's path there."""
    if layout not in LAYOUTS:
        raise InputError(f"layout must be one of {', '.join(LAYOUTS)}; got {layout!r}")
    root = Path(root)
    if not root.is_dir():
        raise DataError("dataset folder not found", file=root)
    frames_dir, masks_dir, meta = _folders(root, layout, subset, resolution)
    name = name or (Path(subset).name if subset else "all")
    if not name.replace("-", "").replace("_", "").replace(".", "").isalnum() or name.startswith("."):
        raise InputError(f"split name must be letters, digits, '-', '_' or '.' (not first); got {name!r}")
    categories_of = _categories_of(meta)
    names = _video_names(root, frames_dir, layout, subset)
    if not names:
        raise DataError("no video folders found", file=frames_dir)

    category_ids: dict[str, int] = {}
    videos, images, tracks, annotations = [], [], [], []
    for video_name in names:
        frame_dir = resolve_inside(frames_dir, video_name, field="video")
        mask_dir = resolve_inside(masks_dir, video_name, field="video")
        frames = _frames(frame_dir)
        if not frames:
            raise DataError("video folder has no frames (.jpg / .png)", file=frame_dir)
        if not mask_dir.is_dir():
            raise DataError("video has no annotation folder", file=mask_dir)
        mask_files = {p.stem: p for p in mask_dir.iterdir() if p.is_file() and p.suffix.lower() == ".png"}
        orphans = sorted(set(mask_files) - {f.stem for f in frames})
        if orphans:
            raise DataError("mask has no frame of the same name", file=mask_files[orphans[0]])
        video_id = len(videos) + 1
        size = image_size(frames[0])
        check_pixels(*size, frames[0], max_pixels)
        videos.append({"id": video_id, "name": video_name, "width": size[0], "height": size[1], "ordered": True,
                       "source": layout})
        track_of: dict[int, int] = {}
        for index, frame in enumerate(frames):
            if image_size(frame) != size:
                raise DataError(f"frame is {'x'.join(map(str, image_size(frame)))} but the video's first frame "
                                f"{frames[0].name} is {size[0]}x{size[1]}", file=frame)
            target = f"{name}/{video_name}/{frame.name}"
            place_file(frame, resolve_inside(out, target, field="file_name"), link)
            image_id = len(images) + 1
            mask_file = mask_files.get(frame.stem)
            images.append({"id": image_id, "file_name": target, "width": size[0], "height": size[1],
                           "video_id": video_id, "frame_index": index, "annotated": mask_file is not None})
            if mask_file is None:
                continue
            ids = read_mask(mask_file, size, max_pixels)
            for object_id in (int(v) for v in np.unique(ids) if 0 < v < VOID):
                if object_id not in track_of:
                    category = categories_of.get(video_name, {}).get(object_id, DEFAULT_CATEGORY)
                    category_ids.setdefault(category, len(category_ids) + 1)
                    track_of[object_id] = len(tracks) + 1
                    tracks.append({"id": track_of[object_id], "video_id": video_id,
                                   "category_id": category_ids[category], "object_id": object_id})
                rle = mask_utils.encode(np.asfortranarray(ids == object_id, dtype=np.uint8))
                annotations.append({
                    "id": len(annotations) + 1, "image_id": image_id, "track_id": track_of[object_id],
                    "category_id": tracks[track_of[object_id] - 1]["category_id"], "segmentation": rle,
                    "bbox": [float(v) for v in mask_utils.toBbox(rle)], "area": float(mask_utils.area(rle)),
                    "iscrowd": 0})
    dataset = {
        "info": {"description": f"{layout} conversion of {root.name}" + (f", {subset}" if subset else "")},
        "videos": videos, "images": images, "tracks": tracks, "annotations": annotations,
        "categories": [{"id": i, "name": n} for n, i in category_ids.items()],
    }
    return write_named_split(out, name, dataset)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and convert each subset given (or the whole folder without one),
    printing each split's path; 0 on success, 2 with one ``error:`` line naming the file on a bad layout, file or
    argument."""
    parser = converter_parser(__doc__)
    parser.add_argument("root", help="the dataset folder")
    add_out(parser, help="output folder (one split JSON per subset + the frames)")
    parser.add_argument("--layout", choices=LAYOUTS, default="davis")
    parser.add_argument("--subset", nargs="+", default=None,
                        help="one or more subsets, each written as OUT/<subset>.json; davis: ImageSets/2017 lists "
                             "(train val); youtube / mose: split folders (train, valid)")
    parser.add_argument("--name", default=None, help="split name (default: the subset, or 'all'; one subset only)")
    parser.add_argument("--resolution", default="480p", help="davis resolution folder")
    add_link(parser, "frames")

    def convert(args: argparse.Namespace) -> Iterator[Path]:
        subsets: list[str | None] = list(dict.fromkeys(args.subset)) if args.subset else [None]
        if args.name is not None and len(subsets) > 1:
            parser.error("--name names one split: give one --subset with it")
        out = output_folder(args.out)
        with staged_output(out, inputs=[args.root]) as stage:  # every subset, or none should one fail
            written = [_convert_into(stage, args.root, args.layout, subset, args.link, args.name, args.resolution,
                                     MAX_INPUT_PIXELS) for subset in subsets]
        for path in written:
            yield out / path.name

    return run(parser, argv, convert)
