"""Convert an SA-Co annotation file (facebookresearch/sam3's concept-segmentation benchmarks) into one COCO-video
split (``vision prepare saco``).

Two layouts, told apart by their keys:

- **image** (SA-Co/Gold, SA-Co/Silver: ``images`` with ``text_input``): each ``images`` entry is an (image, noun
  phrase) pair ``{id, file_name, text_input, width, height, is_instance_exhaustive?, ...}``; ``annotations``
  ``{id, image_id (the pair), segmentation (RLE at the image's size, or polygons), iscrowd, bbox, area}`` exist
  only for positive pairs, a pair without annotations being a negative phrase; ``categories`` is a placeholder
  (ignored). The annotations' ``bbox`` / ``area`` are normalised by the image size upstream: both are recomputed
  here from the mask.
- **video** (SA-Co/VEval, SA-FARI: ``videos`` and ``video_np_pairs``): the YouTube-VIS layout
  (:mod:`vision.prepare.ytvis`) with ``categories`` ``{id, name}`` whose names are the noun phrases, and
  ``video_np_pairs`` ``{id, video_id, category_id, noun_phrase}`` listing the phrases asked on each video, positive
  and negative.

``--media`` is the folder the file names are relative to (the image folder of the subset, or its
``JPEGImages_*fps`` frame folder).

Written (``OUT/<name>.json``, ``name`` defaulting to the file's stem; media copied, or hard-linked with ``--link``,
to ``OUT/<name>/<file_name>``):

- image layout: one category per distinct noun phrase (``name`` = the phrase, ids 1, 2, ... in order of first use);
  one single-image video per distinct media file (``name`` its file name); ``concepts`` of that video = the
  phrases of its pairs, positive and negative; one track (and one annotation) per positive annotation with a
  non-empty mask. Pairs with ``is_instance_exhaustive`` 0 are not added to ``concepts`` (sam3 scores only
  exhaustive pairs), their annotations are kept as tracks;
- video layout: as :mod:`vision.prepare.ytvis` (categories and their ids kept, names unchanged), ``concepts`` = the
  video's ``video_np_pairs`` (positive and negative phrases) and the categories of its tracks.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vision.data.checker import Checker
from vision.data.io import MAX_INPUT_PIXELS, resolve_inside
from vision.errors import DataError
from vision.prepare.instances import (Conversion, add_categories, annotation_main, declared_size, decode_segmentation,
                                      iscrowd_of, read_document, video_and_category)
from vision.prepare.ytvis import add_ytvis_videos

__all__ = ["LAYOUTS", "layout_of", "convert_saco", "main"]

LAYOUTS: tuple[str, ...] = ("image", "video")


def layout_of(doc: dict) -> str:
    """``"video"`` for a document with ``videos`` or ``video_np_pairs`` (SA-Co/VEval), else ``"image"``."""
    return "video" if "videos" in doc or "video_np_pairs" in doc else "image"


def _pair_id(c: Checker, value: Any, field: str) -> int | str:
    """An (image, phrase) pair id: an integer or a string (the README documents strings, the files hold
    integers)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise c.fail(f"expected an integer or string id, got {type(value).__name__}", field, value)
    return value


def _exhaustive(c: Checker, entry: dict, field: str) -> bool:
    value = entry.get("is_instance_exhaustive", True)
    if value not in (0, 1) or not isinstance(value, (int, bool)):
        raise c.fail("expected is_instance_exhaustive 0 or 1", f"{field}.is_instance_exhaustive", value)
    return bool(value)


def _add_image_pairs(conv: Conversion, doc: dict, c: Checker, media: Path) -> None:
    """The image layout: media -> single-image videos, phrases -> categories, pairs -> concepts, positive
    annotations -> tracks."""
    media_of: dict[Path, tuple[int, int, int]] = {}  # media file -> (video id, image id, index of its first pair)
    phrases: dict[str, int] = {}
    pairs: dict[int | str, tuple[int, int, int]] = {}  # pair id -> (video id, image id, category id)
    listed: dict[tuple[int, int], int] = {}  # (video id, category id) -> index of its pair
    for i, entry in enumerate(c.list_(c.key(doc, "images", "<top level>"), "images")):
        field = f"images[{i}]"
        c.dict_(entry, field)
        ident = _pair_id(c, c.key(entry, "id", field), f"{field}.id")
        if ident in pairs:
            raise c.fail("duplicate (image, phrase) pair id", f"{field}.id", ident)
        phrase = c.str_(c.key(entry, "text_input", field), f"{field}.text_input")
        if not phrase.strip():
            raise c.fail("empty noun phrase", f"{field}.text_input", phrase)
        file_name = c.key(entry, "file_name", field)
        source = resolve_inside(media, file_name, file=c.file, field=f"{field}.file_name")
        size = declared_size(c, entry, field, conv.max_pixels)
        if source not in media_of:
            video_id = len(conv.videos) + 1
            video = conv.add_video(c, field, video_id, file_name, size, "saco")
            video["concepts"] = []
            media_of[source] = (video_id, conv.add_frame(c, f"{field}.file_name", media, file_name, video_id, 0), i)
        video_id, image_id, first = media_of[source]
        video = conv.videos[video_id]
        if size != (video["width"], video["height"]):
            raise c.fail(f"the image is declared {video['width']}x{video['height']} by images[{first}]",
                         f"{field}.width", size[0])
        if phrase not in phrases:
            phrases[phrase] = len(phrases) + 1
            conv.add_category(c, f"{field}.text_input", phrases[phrase], phrase)
        category_id = phrases[phrase]
        if (video_id, category_id) in listed:
            raise c.fail(f"the same (image, phrase) pair is listed twice (first: "
                         f"images[{listed[video_id, category_id]}])", f"{field}.text_input", phrase)
        listed[video_id, category_id] = i
        if _exhaustive(c, entry, field):
            video["concepts"].append(category_id)
        pairs[ident] = (video_id, image_id, category_id)
    for i, ann in enumerate(c.list_(doc.get("annotations", []), "annotations")):
        field = f"annotations[{i}]"
        c.dict_(ann, field)
        pair = _pair_id(c, c.key(ann, "image_id", field), f"{field}.image_id")
        if pair not in pairs:
            raise c.fail("annotation points to an (image, phrase) pair id that is not in 'images'",
                         f"{field}.image_id", pair)
        video_id, image_id, category_id = pairs[pair]
        video = conv.videos[video_id]
        mask = decode_segmentation(c, c.key(ann, "segmentation", field), f"{field}.segmentation", video["height"],
                                   video["width"])
        if mask.any():
            extra = {"source_id": ann["id"]} if isinstance(ann.get("id"), (int, str)) else {}
            conv.add_mask(image_id, conv.add_track(video_id, category_id, **extra), mask, iscrowd_of(c, ann, field))
    for video in conv.videos.values():
        video["concepts"].sort()


def _add_video_pairs(conv: Conversion, doc: dict, c: Checker, media: Path) -> None:
    """The video layout: YouTube-VIS videos and masklets, ``video_np_pairs`` -> concepts."""
    add_categories(conv, c, doc, identifiers=False)
    present = add_ytvis_videos(conv, doc, c, media, "saco")
    queried: dict[int, set[int]] = {ident: set() for ident in conv.videos}
    for i, pair in enumerate(c.list_(doc.get("video_np_pairs", []), "video_np_pairs")):
        field = f"video_np_pairs[{i}]"
        video_id, category_id = video_and_category(conv, c, pair, field, queried, "pair")
        if category_id in queried[video_id]:
            raise c.fail(f"the same (video, phrase) pair is listed twice (video {video_id})", f"{field}.category_id",
                         category_id)
        queried[video_id].add(category_id)
    for ident, video in conv.videos.items():
        video["concepts"] = sorted(queried[ident] | present[ident])


def convert_saco(annotations: str | Path, media: str | Path, out: str | Path, name: str | None = None,
                 link: bool = False, max_pixels: int | None = MAX_INPUT_PIXELS) -> Path:
    """Convert an SA-Co annotation file (either layout, see the module docstring) into ``OUT/<name>.json``.

    Args:
        annotations: the SA-Co JSON. media: the folder its file names are relative to. out: the output folder.
        name: the split's name (default: the JSON's stem). link: hard-link the media files instead of copying.
        max_pixels: the per-image pixel limit (None: none).

    Returns:
        The path of the written split.

    Raises:
        InputError: a bad split name or ``out``. DataError: bad input, naming the file and field (a missing
            field, a path escaping ``media``, a mask not of its image's size, an annotation of an unknown pair, a
            pair listed twice); nothing is written then.
    """
    annotations, media = Path(annotations), Path(media)
    conv = Conversion(out, name or annotations.stem, link, max_pixels)
    doc, c = read_document(annotations)
    if not media.is_dir():
        raise DataError("media folder (--media) not found", file=media)
    layout = layout_of(doc)
    if layout == "video":
        _add_video_pairs(conv, doc, c, media)
    else:
        _add_image_pairs(conv, doc, c, media)
    return conv.write({"description": f"SA-Co ({layout}) conversion of {annotations.name}"})


def main(argv: Sequence[str] | None = None) -> int:
    """``vision prepare saco``: :func:`~vision.prepare.instances.annotation_main` with the SA-Co help texts."""
    return annotation_main(argv, __doc__, convert_saco, "media",
                           "SA-Co annotation JSON (Gold / Silver images, or VEval videos)",
                           "the folder the file names are relative to", unit="image")
