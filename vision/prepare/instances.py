"""What the concept / video-instance converters share (:mod:`vision.prepare.ytvis`, :mod:`vision.prepare.burst`,
:mod:`vision.prepare.saco`): reading an upstream annotation JSON with errors that name its file and field, turning
an upstream segmentation (RLE with compressed or uncompressed counts, or polygons) into a checked mask, and
:class:`Conversion`, which collects categories, videos, frames, tracks and masks and writes one COCO-video split, and
:func:`annotation_main`, their common command line.

Nothing is written on bad input: every frame header, declared size and mask is read and checked while the split is
collected, the split is validated (:func:`vision.data.schema.validate_split`, files aside) before the first frame is
copied, and the frames and the JSON are built beside ``OUT`` and moved in only once complete
(:func:`vision.prepare.files.staged_output`).
"""

from __future__ import annotations

from collections.abc import Callable, Container, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pycocotools import mask as mask_utils

from vision.data.checker import Checker
from vision.data.coco import write_split
from vision.data.files import read_json, regular_file
from vision.data.io import MAX_INPUT_PIXELS, check_pixels, image_size, resolve_inside
from vision.data.masks import decode_rle, encode_mask, mask_to_bbox
from vision.data.schema import MAX_IMAGE_SIDE, check_segmentation, validate_split
from vision.errors import InputError
from vision.prepare.converter import add_link, add_out, converter_parser, run
from vision.prepare.files import output_folder, place_file, staged_output

__all__ = ["read_document", "check_split_name", "phrase_of", "declared_size", "decode_segmentation", "iscrowd_of",
           "video_and_category", "add_categories", "Conversion", "annotation_main"]


def read_document(path: str | Path) -> tuple[dict, Checker]:
    """The upstream annotation JSON at ``path`` (a regular file, at most :data:`vision.data.files.MAX_JSON_BYTES`)
    and a :class:`Checker` whose errors name it.

    Raises:
        DataError: naming the file: missing, not a regular file, not JSON, or not a JSON object.
    """
    document = read_json(path, what="annotation file")
    checker = Checker(str(path))
    checker.dict_(document, "<top level>")
    return document, checker


def check_split_name(name: str) -> str:
    """``name`` when it can name a split (``OUT/<name>.json`` and the frame folder ``OUT/<name>/``): letters,
    digits, ``-``, ``_`` and ``.`` (not first).

    Raises:
        InputError: any other name (a path separator, ``..``, an empty name).
    """
    if not name or name.startswith(".") or not name.replace("-", "").replace("_", "").replace(".", "").isalnum():
        raise InputError(f"split name must be letters, digits, '-', '_' or '.' (not first); got {name!r}")
    return name


def phrase_of(name: str) -> str:
    """The noun phrase of an identifier-style category name (YouTube-VIS, LVIS / TAO): underscores become spaces,
    runs of white space one space (``"giant_panda"`` -> ``"giant panda"``)."""
    return " ".join(name.replace("_", " ").split())


def declared_size(c: Checker, entry: dict, field: str, max_pixels: int | None = MAX_INPUT_PIXELS) -> tuple[int, int]:
    """``(width, height)`` that an upstream entry declares (its keys ``width`` and ``height``), each in
    ``1..MAX_IMAGE_SIDE`` and at most ``max_pixels`` pixels in all: checked before any mask of that size is decoded.

    Raises:
        DataError: a missing or non-integer size, or one over the limits (the message names the file and field).
    """
    width = c.int_(c.key(entry, "width", field), f"{field}.width", minimum=1, maximum=MAX_IMAGE_SIDE)
    height = c.int_(c.key(entry, "height", field), f"{field}.height", minimum=1, maximum=MAX_IMAGE_SIDE)
    if max_pixels is not None and width * height > max_pixels:
        raise c.fail(f"declared size {width}x{height} is over the limit of {max_pixels} pixels per frame (raise it "
                     f"with --max-pixels)", f"{field}.width", width)
    return width, height


def decode_segmentation(c: Checker, segmentation: Any, field: str, height: int, width: int) -> np.ndarray:
    """Bool mask ``[height, width]`` of an upstream segmentation: a COCO RLE (``counts`` a compressed string or a
    list of run lengths; its ``size`` must be ``[height, width]``) or a list of polygons ``[[x0, y0, x1, y1, ...],
    ...]`` in pixels (their union). Checked first (:func:`vision.data.schema.check_segmentation`), so malformed
    counts, a mask of another size or a vertex far off the image is a :class:`DataError`, never a crash.
    """
    check_segmentation(c, segmentation, field, height, width)
    if isinstance(segmentation, dict):
        return decode_rle(segmentation)
    if not segmentation:
        return np.zeros((height, width), bool)
    polygons = [[float(v) for v in polygon] for polygon in segmentation]
    rle = mask_utils.merge(mask_utils.frPyObjects(polygons, height, width))
    return mask_utils.decode(rle).astype(bool)


class Conversion:
    """One COCO-video split being collected from an upstream annotation file, written by :meth:`write`.

    Frames are placed (copied, or hard-linked with ``link``) at ``OUT/<name>/<path relative to the frame root>``,
    so the split's ``file_name`` entries stay inside ``OUT``. Ids of videos and categories are the caller's (kept
    from upstream where it has them); images, tracks and annotations are numbered 1, 2, ... in the order added.
    """

    def __init__(self, out: str | Path, name: str, link: bool = False,
                 max_pixels: int | None = MAX_INPUT_PIXELS) -> None:
        self.out = output_folder(out)
        self.name = check_split_name(name)
        self.link = link
        self.max_pixels = max_pixels
        self.categories: dict[int, dict] = {}
        self.videos: dict[int, dict] = {}
        self.images: list[dict] = []
        self.tracks: list[dict] = []
        self.annotations: list[dict] = []
        self._category_names: dict[str, int] = {}
        self._placed: dict[str, Path] = {}  # split file_name -> source frame

    def add_category(self, c: Checker, field: str, ident: int, name: str, **extra: Any) -> None:
        """Category ``ident`` named ``name`` (the phrase), with ``extra`` keys (e.g. ``source_name``).

        Raises:
            DataError: naming ``field``: a repeated id or name (two categories with one phrase).
        """
        if ident in self.categories:
            raise c.fail("duplicate category id", f"{field}.id", ident)
        if not name:
            raise c.fail("category name (the phrase) is empty", f"{field}.name", name)
        if name in self._category_names:
            raise c.fail(f"two categories share the phrase {name!r} (first: category id "
                         f"{self._category_names[name]})", f"{field}.name", name)
        self._category_names[name] = ident
        self.categories[ident] = {"id": ident, "name": name, **extra}

    def category(self, c: Checker, field: str, value: Any) -> int:
        """``value`` as the id of a category added before.

        Raises:
            DataError: naming ``field``: not an integer, or no such category.
        """
        ident = c.int_(value, field)
        if ident not in self.categories:
            raise c.fail("category id is not in the file's categories", field, ident)
        return ident

    def add_video(self, c: Checker, field: str, ident: int, name: str, size: tuple[int, int], source: str,
                  ordered: bool = True, **extra: Any) -> dict:
        """Video ``ident`` of frames of ``size`` ``(W, H)``; returns its entry (the caller may add ``concepts``).

        Raises:
            DataError: naming ``field``: a repeated id.
        """
        if ident in self.videos:
            raise c.fail("duplicate video id", f"{field}.id", ident)
        entry = {"id": ident, "name": name, "width": size[0], "height": size[1], "ordered": ordered, "source": source,
                 **extra}
        self.videos[ident] = entry
        return entry

    def add_frame(self, c: Checker, field: str, root: Path, relative: Any, video_id: int, frame_index: int,
                  annotated: bool = True) -> int:
        """The frame ``root / relative`` as image ``frame_index`` of video ``video_id``; returns its image id.

        The path must stay inside ``root`` and name a regular image file whose header (read, not decoded) gives
        the video's size.

        Raises:
            DataError: naming the annotation file and ``field``: a path escaping ``root``, a missing or unreadable
                frame, a frame of another size than the video's, or over ``max_pixels``.
        """
        source = resolve_inside(root, relative, file=c.file, field=field)
        regular_file(source, what="frame", file=c.file, field=field, value=relative)
        size = image_size(source)
        check_pixels(*size, source, self.max_pixels)
        video = self.videos[video_id]
        if size != (video["width"], video["height"]):
            raise c.fail(f"frame {source} is {size[0]}x{size[1]} but its video is declared "
                         f"{video['width']}x{video['height']}", field, relative)
        target = f"{self.name}/{source.relative_to(Path(root).resolve()).as_posix()}"
        self._placed[target] = source
        image_id = len(self.images) + 1
        self.images.append({"id": image_id, "file_name": target, "width": size[0], "height": size[1],
                            "video_id": video_id, "frame_index": frame_index, "annotated": annotated})
        return image_id

    def add_track(self, video_id: int, category_id: int, **extra: Any) -> int:
        """A new track of ``category_id`` in video ``video_id`` (``extra``: e.g. the upstream id); returns its id."""
        track_id = len(self.tracks) + 1
        self.tracks.append({"id": track_id, "video_id": video_id, "category_id": category_id, **extra})
        return track_id

    def add_mask(self, image_id: int, track_id: int, mask: np.ndarray, iscrowd: int = 0) -> bool:
        """The annotation of track ``track_id`` on image ``image_id``: ``mask`` (bool ``[H, W]``) as a compressed
        RLE at the image's size, its tight ``bbox`` (XYWH pixels) and ``area``. An empty mask adds nothing (returns
        False): an object absent from a frame has no annotation there."""
        if not mask.any():
            return False
        track = self.tracks[track_id - 1]
        self.annotations.append({
            "id": len(self.annotations) + 1, "image_id": image_id, "track_id": track_id,
            "category_id": track["category_id"], "segmentation": encode_mask(mask), "bbox": mask_to_bbox(mask),
            "area": float(np.count_nonzero(mask)), "iscrowd": iscrowd})
        return True

    def write(self, info: dict) -> Path:
        """Validate the split, place its frames and write ``OUT/<name>.json``; returns that path. The frame folder
        and the JSON are built beside ``OUT`` and replace their namesakes there once both are complete
        (:func:`vision.prepare.files.staged_output`).

        ``OUT/<name>`` may be the frame folder itself (``--out ytvis --name JPEGImages``): the frames are then the
        split's files already, and only the JSON is written.

        Raises:
            DataError: the collected split fails the schema (nothing is written then).
            InputError: some frames lie inside ``OUT/<name>`` but others would be copied there, so writing the
                frame folder would replace frames it reads (nothing is written then).
        """
        dataset = {"info": info, "videos": list(self.videos.values()), "images": self.images, "tracks": self.tracks,
                   "annotations": self.annotations, "categories": list(self.categories.values())}
        path = self.out / f"{self.name}.json"
        validate_split(dataset, self.out, str(path), check_files=False)
        copies = {target: source for target, source in self._placed.items()
                  if resolve_inside(self.out, target, field="file_name") != source}
        folder = (self.out / self.name).resolve()
        inside = [source for source in self._placed.values() if folder in source.parents]
        if copies and inside:
            raise InputError(f"frame {inside[0]} lies inside {folder}, the split's frame folder that this "
                             f"conversion writes anew: give another --out or --name")
        with staged_output(self.out) as stage:
            for target, source in copies.items():
                place_file(source, resolve_inside(stage, target, field="file_name"), self.link)
            write_split(stage / path.name, dataset, check_files=len(copies) == len(self._placed))
        return path


def iscrowd_of(c: Checker, entry: dict, field: str) -> int:
    """An upstream annotation's ``iscrowd`` (0 when absent): 0 or 1 (``false`` / ``true`` accepted)."""
    value = entry.get("iscrowd", 0)
    if value not in (0, 1) or not isinstance(value, (int, bool)):
        raise c.fail("expected iscrowd 0 or 1", f"{field}.iscrowd", value)
    return int(value)


def video_and_category(conv: Conversion, c: Checker, entry: Any, field: str, video_ids: Container[int],
                       what: str) -> tuple[int, int]:
    """``(video_id, category_id)`` of the upstream entry ``field`` (a dict; ``what`` names it in errors: annotation,
    pair) that points to one of ``video_ids`` and to a category added to ``conv`` before.

    Raises:
        DataError: naming the field: not a dict, a missing or unknown video or category id.
    """
    c.dict_(entry, field)
    video_id = c.int_(c.key(entry, "video_id", field), f"{field}.video_id")
    if video_id not in video_ids:
        raise c.fail(f"{what} points to a video id that is not in 'videos'", f"{field}.video_id", video_id)
    return video_id, conv.category(c, f"{field}.category_id", c.key(entry, "category_id", field))


def add_categories(conv: Conversion, c: Checker, doc: dict, identifiers: bool) -> None:
    """Add the document's ``categories`` ``[{id, name, ...}]`` to ``conv``, ids kept. ``identifiers``: the names
    are identifiers (YouTube-VIS, LVIS: ``giant_panda``), turned into phrases by :func:`phrase_of` with the upstream
    name kept as ``source_name`` where it differs; else the names are phrases already (SA-Co) and kept.

    Raises:
        DataError: naming the file and field: a missing list, id or name, a repeated id or phrase.
    """
    for i, category in enumerate(c.list_(c.key(doc, "categories", "<top level>"), "categories")):
        field = f"categories[{i}]"
        c.dict_(category, field)
        upstream = c.str_(c.key(category, "name", field), f"{field}.name", nonempty=True)
        phrase = phrase_of(upstream) if identifiers else upstream
        conv.add_category(c, field, c.int_(c.key(category, "id", field), f"{field}.id"), phrase,
                          **({"source_name": upstream} if upstream != phrase else {}))


def annotation_main(argv: Sequence[str] | None, doc: str,
                    convert: Callable[[str, str, str, str | None, bool, int], Path], source: str,
                    annotations_help: str, source_help: str, name_default: str = "the annotation file's stem",
                    unit: str = "frame") -> int:
    """The command line of a converter of one annotation JSON: ``ANNOTATIONS --<source> DIR --out OUT [--name NAME]
    [--link] [--max-pixels N]``, parsed from ``argv`` (None: ``sys.argv[1:]``), then ``convert(annotations, DIR,
    OUT, NAME, link, max_pixels)`` and the split's path printed; 0 on success, 2 with one ``error:`` line naming
    the file and field on bad input.

    ``doc`` is the converter's module docstring (its first line describes the command); ``source`` names the folder
    the annotation's file names are relative to (``frames``, ``media``: also what ``--link`` links and ``--out``
    holds); ``name_default`` says in words what ``--name`` defaults to; ``unit`` is what ``--max-pixels`` bounds
    (``frame``, ``image``).
    """
    parser = converter_parser(doc)
    parser.add_argument("annotations", help=annotations_help)
    parser.add_argument(f"--{source}", required=True, help=source_help)
    add_out(parser, help=f"output folder (the split JSON + its {source})")
    parser.add_argument("--name", default=None, help=f"split name (default: {name_default})")
    add_link(parser, source)
    parser.add_argument("--max-pixels", type=int, default=MAX_INPUT_PIXELS, help=f"per-{unit} pixel limit")
    return run(parser, argv, lambda args: [
        convert(args.annotations, getattr(args, source), args.out, args.name, args.link, args.max_pixels)])
