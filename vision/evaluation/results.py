"""Loading and validating results files (COCO results format) against a split.

Detection: ``[{image_id, category_id, bbox: [x, y, w, h], score}]`` (+ optional ``segmentation`` RLE).
Tracking: ``[{video_id, track_id, image_id, segmentation: RLE, score}]``.
Every problem raises a :class:`DataError` naming the results file, the index and the field,
e.g. ``preds.json: results[3].bbox=[1, 2]: bbox must be 4 numbers``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np

from vision.errors import DataError

__all__ = ["load_document", "load_json", "load_results", "validate_detection_results", "validate_tracking_results"]


def load_json(path: str | Path) -> Any:
    """Read a JSON file; a missing file or bad JSON raises :class:`DataError` naming the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError("file not found", file=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read file ({exc})", file=path) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DataError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", file=path) from None


def load_document(value: Any, expected: type, message: str) -> tuple[Any, str | None]:
    """Return ``(document, file name or None)``: a path is read as JSON, an object is taken as it is; the top level
    must be an instance of ``expected``, else a :class:`DataError` with ``message``."""
    file = None
    if isinstance(value, (str, Path)):
        file = str(value)
        value = load_json(value)
    if not isinstance(value, expected):
        raise DataError(message, file=file, value=type(value).__name__)
    return value, file


def load_results(results: list | str | Path) -> tuple[list, str | None]:
    """Return (results list, file name or None). A path is read as JSON; the top level must be a list."""
    return load_document(results, list, "a results file must be a JSON list of objects")


def _is_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
        and math.isfinite(float(value))


def _check_entry(entry: Any, i: int, required: tuple[str, ...], file: str | None) -> None:
    if not isinstance(entry, dict):
        raise DataError("each result must be an object", file=file, field=f"results[{i}]", value=entry)
    for key in required:
        if key not in entry:
            raise DataError(f"missing required key {key!r}", file=file, field=f"results[{i}].{key}")
    for key in required:
        if key != "bbox" and key != "segmentation" and key != "score" and not _is_int(entry[key]):
            raise DataError("expected an integer id", file=file, field=f"results[{i}].{key}", value=entry[key])
    if not _is_number(entry["score"]):
        raise DataError("score must be a finite number", file=file, field=f"results[{i}].score", value=entry["score"])


def _check_rle(rle: Any, i: int, image: dict | None, file: str | None) -> None:
    field = f"results[{i}].segmentation"
    if not isinstance(rle, dict) or "size" not in rle or "counts" not in rle:
        raise DataError("segmentation must be a COCO RLE {size: [H, W], counts}", file=file, field=field, value=rle)
    size = rle["size"]
    if not (isinstance(size, (list, tuple)) and len(size) == 2 and all(_is_int(v) for v in size)):
        raise DataError("RLE size must be [H, W] integers", file=file, field=f"{field}.size", value=size)
    if not isinstance(rle["counts"], (str, list)):
        raise DataError("RLE counts must be a string or a list of ints", file=file, field=f"{field}.counts",
                        value=type(rle["counts"]).__name__)
    if image is not None and "height" in image and "width" in image \
            and [int(size[0]), int(size[1])] != [int(image["height"]), int(image["width"])]:
        raise DataError(f"RLE size does not match the image's [height, width] = "
                        f"[{image['height']}, {image['width']}]", file=file, field=f"{field}.size", value=size)


def validate_detection_results(results: list, split: dict, file: str | None = None,
                               extra_category_ids: tuple[int, ...] = ()) -> bool:
    """Check detection results against the split; return True when every result carries a segmentation
    (so segm AP can be computed too). ``extra_category_ids`` are accepted besides the split's categories
    (e.g. an ``oov`` id for rejected objects; they never match ground truth)."""
    images = {int(img["id"]): img for img in split.get("images", [])}
    categories = {int(c["id"]) for c in split.get("categories", [])} | {int(c) for c in extra_category_ids}
    all_segm = bool(results)
    for i, r in enumerate(results):
        _check_entry(r, i, ("image_id", "category_id", "bbox", "score"), file)
        if int(r["image_id"]) not in images:
            raise DataError("image_id is not in the split", file=file, field=f"results[{i}].image_id",
                            value=r["image_id"])
        if int(r["category_id"]) not in categories:
            raise DataError("category_id is not in the split's categories", file=file,
                            field=f"results[{i}].category_id", value=r["category_id"])
        bbox = r["bbox"]
        if not (isinstance(bbox, (list, tuple)) and len(bbox) == 4 and all(_is_number(v) for v in bbox)):
            raise DataError("bbox must be 4 finite numbers [x, y, w, h]", file=file, field=f"results[{i}].bbox",
                            value=bbox)
        if bbox[2] < 0 or bbox[3] < 0:
            raise DataError("bbox width and height must be >= 0", file=file, field=f"results[{i}].bbox", value=bbox)
        if "segmentation" in r:
            _check_rle(r["segmentation"], i, images[int(r["image_id"])], file)
        else:
            all_segm = False
    return all_segm


def validate_tracking_results(results: list, split: dict, file: str | None = None) -> None:
    """Check tracking results against the split: ids are integers, video_id and image_id exist, the image
    belongs to that video, the score is a number and the segmentation an RLE of the image's size."""
    images = {int(img["id"]): img for img in split.get("images", [])}
    videos = {int(v["id"]) for v in split.get("videos", [])} | \
        {int(img["video_id"]) for img in images.values() if img.get("video_id") is not None}
    for i, r in enumerate(results):
        _check_entry(r, i, ("video_id", "track_id", "image_id", "segmentation", "score"), file)
        if int(r["video_id"]) not in videos:
            raise DataError("video_id is not in the split", file=file, field=f"results[{i}].video_id",
                            value=r["video_id"])
        image = images.get(int(r["image_id"]))
        if image is None:
            raise DataError("image_id is not in the split", file=file, field=f"results[{i}].image_id",
                            value=r["image_id"])
        if image.get("video_id") is None or int(image["video_id"]) != int(r["video_id"]):
            raise DataError(f"image {r['image_id']} belongs to video {image.get('video_id')}, not to this video_id",
                            file=file, field=f"results[{i}].video_id", value=r["video_id"])
        _check_rle(r["segmentation"], i, image, file)
