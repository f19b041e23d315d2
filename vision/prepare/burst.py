"""Convert a BURST annotation file (TAO-based video instance masks) into one COCO-video split
(``vision prepare burst``).

Read: a BURST JSON (``train/all_classes.json``, ``val/all_classes.json``, ``val/common_classes.json`` ...; the
layout of ``ANNOTATION_FORMAT.md`` in Ali2500/BURST-benchmark, read as its ``burstapi`` reads it):

- ``split`` (``train`` / ``val`` / ``test``), ``categories`` ``{id, name, ...}`` (LVIS ids and names);
- ``sequences``: ``{id, width, height, dataset, seq_name, fps?, all_image_paths, annotated_image_paths,
  track_category_ids: {track id: category id}, segmentations: [one per annotated frame: {track id: {rle: str,
  ...}}], neg_category_ids, not_exhaustive_category_ids}`` (track ids are strings in JSON).

Frames are read as ``burstapi`` finds them: ``--frames`` holds ``<split>/<dataset>/<seq_name>/<frame>`` (TAO's
``frames`` folder).

Written (``OUT/<name>.json``, ``name`` defaulting to ``<split>_<file stem>``, e.g. ``val_all_classes``; frames copied
or hard-linked to ``OUT/<name>/<split>/<dataset>/<seq_name>/<frame>``):

- ``categories``: the file's, ids kept; ``name`` the phrase (``aerosol_can`` -> ``aerosol can``), the LVIS name kept
  as ``source_name`` where it differs;
- ``videos``: one per sequence, id kept, ``name`` ``<dataset>/<seq_name>``, ``ordered: true``, ``fps``;
  ``concepts``: the categories of its tracks that are annotated exhaustively (those in
  ``not_exhaustive_category_ids`` are left out: they cannot be scored exhaustively) plus ``neg_category_ids``
  (verified absent: negative phrases);
- ``images``: the annotated frames only, in order, ``frame_index`` 0, 1, ... (the frame's name is kept in
  ``file_name``);
- ``tracks``: one per BURST track with at least one non-empty mask, ``object_id`` = the BURST track id;
- ``annotations``: one per non-empty mask: compressed RLE at the sequence's size, ``bbox`` and ``area`` from it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vision.data.checker import Checker
from vision.data.io import MAX_INPUT_PIXELS
from vision.errors import DataError
from vision.prepare.instances import (Conversion, add_categories, annotation_main, declared_size, decode_segmentation,
                                      read_document)

__all__ = ["convert_burst", "main"]


def _id_list(conv: Conversion, c: Checker, sequence: dict, key: str, field: str) -> list[int]:
    """A sequence's list of category ids under ``key`` (absent: empty), each a category of the file."""
    values = c.list_(sequence.get(key, []), f"{field}.{key}")
    return [conv.category(c, f"{field}.{key}[{j}]", value) for j, value in enumerate(values)]


def _track_ids(conv: Conversion, c: Checker, sequence: dict, field: str) -> dict[str, int]:
    """``track_category_ids`` as {track id string: category id}, keys being decimal integers."""
    tracks = c.dict_(c.key(sequence, "track_category_ids", field), f"{field}.track_category_ids")
    out: dict[str, int] = {}
    for key, value in tracks.items():
        where = f"{field}.track_category_ids.{key}"
        if not key.isdigit():
            raise c.fail("track ids must be integers (written as strings)", where, key)
        out[key] = conv.category(c, where, value)
    return out


def _add_sequence(conv: Conversion, c: Checker, i: int, sequence: dict, frames: Path, split: str) -> None:
    field = f"sequences[{i}]"
    c.dict_(sequence, field)
    ident = c.int_(c.key(sequence, "id", field), f"{field}.id")
    size = declared_size(c, sequence, field, conv.max_pixels)
    dataset = c.str_(c.key(sequence, "dataset", field), f"{field}.dataset", nonempty=True)
    seq_name = c.str_(c.key(sequence, "seq_name", field), f"{field}.seq_name", nonempty=True)
    extra = {}
    if sequence.get("fps") is not None:
        extra["fps"] = c.number(sequence["fps"], f"{field}.fps", minimum=0.0)
    video = conv.add_video(c, field, ident, f"{dataset}/{seq_name}", size, "burst", **extra)
    paths = c.list_(c.key(sequence, "annotated_image_paths", field), f"{field}.annotated_image_paths")
    segmentations = c.list_(c.key(sequence, "segmentations", field), f"{field}.segmentations")
    if len(segmentations) != len(paths):
        raise c.fail(f"{len(segmentations)} segmentations but {len(paths)} annotated_image_paths",
                     f"{field}.segmentations", len(segmentations))
    c.list_(c.key(sequence, "all_image_paths", field), f"{field}.all_image_paths")
    categories = _track_ids(conv, c, sequence, field)
    negative = _id_list(conv, c, sequence, "neg_category_ids", field)
    not_exhaustive = set(_id_list(conv, c, sequence, "not_exhaustive_category_ids", field))
    track_of: dict[str, int] = {}
    for t, (path, frame) in enumerate(zip(paths, segmentations)):
        where = f"{field}.annotated_image_paths[{t}]"
        relative = f"{split}/{dataset}/{seq_name}/{c.str_(path, where, nonempty=True)}"
        image_id = conv.add_frame(c, where, frames, relative, ident, t)
        for key, entry in c.dict_(frame, f"{field}.segmentations[{t}]").items():
            at = f"{field}.segmentations[{t}].{key}"
            if key not in categories:
                raise c.fail("track id is not in the sequence's track_category_ids", at, key)
            rle = c.str_(c.key(c.dict_(entry, at), "rle", at), f"{at}.rle")
            mask = decode_segmentation(c, {"size": [size[1], size[0]], "counts": rle}, f"{at}.rle", size[1], size[0])
            if not mask.any():
                continue
            if key not in track_of:
                track_of[key] = conv.add_track(ident, categories[key], object_id=int(key))
            conv.add_mask(image_id, track_of[key], mask)
    present = {categories[key] for key in track_of}
    clash = sorted(present & set(negative))
    if clash:
        raise c.fail("a category of the sequence's tracks is also listed as absent (neg_category_ids)",
                     f"{field}.neg_category_ids", clash)
    video["concepts"] = sorted((present - not_exhaustive) | set(negative))


def convert_burst(annotations: str | Path, frames: str | Path, out: str | Path, name: str | None = None,
                  link: bool = False, max_pixels: int | None = MAX_INPUT_PIXELS) -> Path:
    """Convert a BURST annotation file (see the module docstring) into ``OUT/<name>.json``.

    Args:
        annotations: the BURST JSON. frames: the folder holding ``<split>/<dataset>/<seq_name>/`` frame folders.
        out: the output folder. name: the split's name (default ``<split>_<file stem>``). link: hard-link frames.
        max_pixels: the per-frame pixel limit (None: none).

    Returns:
        The path of the written split.

    Raises:
        InputError: a bad split name or ``out``. DataError: bad input, naming the file and field (a missing
            field, a frame path escaping ``frames``, an RLE that is not of its sequence's size, a track id without
            a category, an unknown category id); nothing is written then.
    """
    annotations, frames = Path(annotations), Path(frames)
    doc, c = read_document(annotations)
    split = c.str_(c.key(doc, "split", "<top level>"), "split", nonempty=True)
    conv = Conversion(out, name or f"{split}_{annotations.stem}", link, max_pixels)
    if not frames.is_dir():
        raise DataError("frames folder (--frames) not found", file=frames)
    add_categories(conv, c, doc, identifiers=True)
    for i, sequence in enumerate(c.list_(c.key(doc, "sequences", "<top level>"), "sequences")):
        _add_sequence(conv, c, i, sequence, frames, split)
    return conv.write({"description": f"BURST conversion of {annotations.name} ({split})"})


def main(argv: Sequence[str] | None = None) -> int:
    """``vision prepare burst``: :func:`~vision.prepare.instances.annotation_main` with the BURST help texts."""
    return annotation_main(argv, __doc__, convert_burst, "frames", "BURST annotation JSON (e.g. val/all_classes.json)",
                           "TAO frames folder holding <split>/<dataset>/<seq_name>/",
                           name_default="<split>_<file stem>")
