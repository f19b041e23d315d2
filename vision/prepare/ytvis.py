"""Convert a YouTube-VIS annotation file (2019, 2021, and LV-VIS, which shares the layout) into one COCO-video split
(``vision prepare ytvis``).

Read: ``ANNOTATIONS.json`` (``train.json``, ``valid.json``, ``instances.json`` ...) with

- ``videos``: ``{id, width, height, length?, file_names: [<video>/<frame>.jpg, ...]}``, the frames named relative
  to ``--frames`` (the ``JPEGImages`` folder);
- ``annotations`` (absent or null in files without ground truth): ``{id, video_id, category_id, iscrowd?,
  segmentations: [one per frame of the video: an RLE (``counts`` compressed or a list of runs), a list of
  polygons, or null where the object is not on that frame], areas, bboxes}``;
- ``categories``: ``{id, name}``.

Written (``OUT/<name>.json``, ``name`` defaulting to the file's stem; frames copied, or hard-linked with ``--link``,
to ``OUT/<name>/<file_name>``):

- ``categories``: the file's, ids kept; ``name`` is the phrase (``giant_panda`` -> ``giant panda``, see
  :func:`vision.prepare.instances.phrase_of`), the upstream name kept as ``source_name`` where it differs;
- ``videos``: one per YouTube-VIS video in the file's order, id kept, ``ordered: true``, ``name`` the folder of its
  frames; ``concepts``: the categories of its tracks (YouTube-VIS annotates every instance of the categories
  present in a video, and says nothing of the others);
- ``images``: one per frame, ``frame_index`` its position in ``file_names``; ``annotated`` false when the file has
  no annotations;
- ``tracks``: one per annotation with at least one non-empty mask, ``category_id`` kept, ``source_id`` = the
  annotation's id;
- ``annotations``: one per non-null, non-empty frame segmentation: compressed RLE at the frame's size, ``bbox`` and
  ``area`` from the mask (the file's ``bboxes`` / ``areas`` are not trusted), ``iscrowd`` kept.

Every declared size is bounded by ``max_pixels`` before a mask of it is decoded, and every frame's header must give
its video's size.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from vision.data.checker import Checker
from vision.data.io import MAX_INPUT_PIXELS
from vision.errors import DataError
from vision.prepare.instances import (Conversion, add_categories, annotation_main, declared_size, decode_segmentation,
                                      iscrowd_of, read_document, video_and_category)

__all__ = ["convert_ytvis", "add_ytvis_videos", "main"]


def add_ytvis_videos(conv: Conversion, doc: dict, c: Checker, frames: Path, source: str) -> dict[int, set[int]]:
    """Add the ``videos``, their frames and the ``annotations`` of a YouTube-VIS-layout document to ``conv`` (its
    categories must be added first). Returns, per video id, the category ids of its tracks.

    Raises:
        DataError: naming the file and field: a missing or mistyped field, a frame or path problem (see
            :meth:`Conversion.add_frame`), a ``segmentations`` list of another length than the video's frames, a
            mask of another size than its video's, an unknown video or category id.
    """
    annotations = doc.get("annotations")
    annotated = annotations is not None
    frame_ids: dict[int, list[int]] = {}
    for i, video in enumerate(c.list_(c.key(doc, "videos", "<top level>"), "videos")):
        field = f"videos[{i}]"
        c.dict_(video, field)
        ident = c.int_(c.key(video, "id", field), f"{field}.id")
        size = declared_size(c, video, field, conv.max_pixels)
        file_names = c.list_(c.key(video, "file_names", field), f"{field}.file_names")
        if not file_names:
            raise c.fail("video has no frames", f"{field}.file_names", file_names)
        if "length" in video and c.int_(video["length"], f"{field}.length") != len(file_names):
            raise c.fail(f"length differs from the {len(file_names)} file_names", f"{field}.length", video["length"])
        first = c.str_(file_names[0], f"{field}.file_names[0]", nonempty=True)
        name = PurePosixPath(first).parent.as_posix()
        conv.add_video(c, field, ident, name if name != "." else str(ident), size, source)
        frame_ids[ident] = [conv.add_frame(c, f"{field}.file_names[{t}]", frames, file_name, ident, t, annotated)
                            for t, file_name in enumerate(file_names)]
    present: dict[int, set[int]] = {ident: set() for ident in frame_ids}
    for i, ann in enumerate(c.list_(annotations, "annotations") if annotated else []):
        field = f"annotations[{i}]"
        video_id, category_id = video_and_category(conv, c, ann, field, frame_ids, "annotation")
        iscrowd = iscrowd_of(c, ann, field)
        segmentations = c.list_(c.key(ann, "segmentations", field), f"{field}.segmentations")
        images = frame_ids[video_id]
        if len(segmentations) != len(images):
            raise c.fail(f"{len(segmentations)} segmentations but video {video_id} has {len(images)} frames",
                         f"{field}.segmentations", len(segmentations))
        video = conv.videos[video_id]
        track_id = None
        for t, segmentation in enumerate(segmentations):
            if segmentation is None:
                continue
            mask = decode_segmentation(c, segmentation, f"{field}.segmentations[{t}]", video["height"],
                                       video["width"])
            if not mask.any():
                continue
            if track_id is None:
                extra = {"source_id": ann["id"]} if isinstance(ann.get("id"), (int, str)) else {}
                track_id = conv.add_track(video_id, category_id, **extra)
                present[video_id].add(category_id)
            conv.add_mask(images[t], track_id, mask, iscrowd)
    return present


def convert_ytvis(annotations: str | Path, frames: str | Path, out: str | Path, name: str | None = None,
                  link: bool = False, max_pixels: int | None = MAX_INPUT_PIXELS) -> Path:
    """Convert a YouTube-VIS / LV-VIS annotation file (see the module docstring) into ``OUT/<name>.json``.

    Args:
        annotations: the upstream JSON. frames: the folder its ``file_names`` are relative to (``JPEGImages``).
        out: the output folder. name: the split's name (default: the JSON's stem). link: hard-link the frames.
        max_pixels: the per-frame pixel limit (None: none).

    Returns:
        The path of the written split.

    Raises:
        InputError: a bad split name or ``out``. DataError: bad input, naming the file and field; nothing is
            written then.
    """
    annotations, frames = Path(annotations), Path(frames)
    conv = Conversion(out, name or annotations.stem, link, max_pixels)
    doc, c = read_document(annotations)
    if not frames.is_dir():
        raise DataError("frames folder (--frames) not found", file=frames)
    add_categories(conv, c, doc, identifiers=True)
    present = add_ytvis_videos(conv, doc, c, frames, "ytvis")
    for ident, categories in present.items():
        conv.videos[ident]["concepts"] = sorted(categories)
    return conv.write({"description": f"YouTube-VIS-layout conversion of {annotations.name}"})


def main(argv: Sequence[str] | None = None) -> int:
    """``vision prepare ytvis``: :func:`~vision.prepare.instances.annotation_main` with the YouTube-VIS help texts."""
    return annotation_main(argv, __doc__, convert_ytvis, "frames",
                           "YouTube-VIS / LV-VIS annotation JSON (train.json, valid.json, ...)",
                           "the folder the file_names are relative to (JPEGImages)")
