"""Loading and validating results files (COCO results format).

Detection: ``[{image_id, category_id, bbox: [x, y, w, h], score}]`` (+ optional ``segmentation`` RLE).
Tracking: ``[{video_id, track_id, image_id, segmentation: RLE, score[, prompt_type]}]``.
Concept: instance records ``{video_id, image_id, track_id, category_id, phrase, segmentation, bbox, score
[, prompt_type]}`` and presence records ``{video_id, image_id, category_id, presence}`` (see
:func:`validate_concept_results`).
Forensics: ``[{video_id, score[, verdict]}]``, one per labelled video of the split.
Geometry: one entry per image of each predicted clip (see :func:`validate_geometry_results`):
``[{image_id, clip: [image ids], extrinsics: 3x4, depth: array, world_points: array[, head_extrinsics: 3x4]
[, match_extrinsics: 3x4][, ray_extrinsics: 3x4]}]`` with dense maps as :func:`encode_array` objects.

Results get the same validation as splits (and share its checks, :mod:`vision.data.checker`): every number is
finite (NaN, Infinity and numbers beyond a double's range are refused wherever they appear), every mask's counts
decode to exactly the H x W pixels of its image, and every problem raises a :class:`DataError` naming the file,
the entry and the field, e.g. ``preds.json: results[3].bbox=[1, 2]: bbox must be 4 finite numbers``.
Each ``validate_*_results`` first checks the parts of the split that scoring reads
(:func:`vision.data.schema.validate_scored_parts`), so that a malformed split is reported the same way before any
metric is computed.
"""

from __future__ import annotations

import base64
import binascii
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from vision.data.checker import ScalarChecker, check_rle
from vision.data.files import read_json
from vision.data.schema import (MAX_IMAGE_SIDE, VIDEO_LABELS, check_detection_parts, check_forensics_parts,
                                check_concept_parts, check_geometry_parts, check_tracking_parts)
from vision.data.schema_columns import DeferredRle
from vision.errors import DataError

__all__ = ["load_document", "load_json", "load_results", "check_finite", "validate_detection_results", "validate_tracking_results", "validate_forensics_results",
           "validate_geometry_results", "validate_concept_results", "encode_array", "decode_array",
           "GEOMETRY_CAMERA_FIELDS"]

def load_json(path: str | Path, what: str = "JSON file") -> Any:
    """Read a JSON file with :func:`vision.data.files.read_json`: anything but a regular file of bounded size
    (a FIFO, a device, a link loop), bad UTF-8, bad JSON or JSON nested too deeply raises :class:`DataError`
    naming the file; integers too long to be finite doubles are read as infinite floats, which
    :func:`check_finite` refuses by field. ``what`` names the file's role in messages."""
    return read_json(path, what=what)


def load_document(value: Any, expected: type, message: str, what: str = "JSON file") -> tuple[Any, str | None]:
    """Return ``(document, file name or None)``: a path is read as JSON, an object is taken as it is; the top level
    must be an instance of ``expected``, else a :class:`DataError` with ``message``."""
    file = None
    if isinstance(value, (str, Path)):
        file = str(value)
        value = load_json(value, what)
    if not isinstance(value, expected):
        raise DataError(message, file=file, value=type(value).__name__)
    return value, file


def load_results(results: list | str | Path) -> tuple[list, str | None]:
    """Return (results list, file name or None). A path is read as JSON; the top level must be a list and every
    number in it finite (see :func:`check_finite`)."""
    results, file = load_document(results, list, "a results file must be a JSON list of objects", "results file")
    check_finite(results, file)
    return results, file


def _all_finite(document: Any) -> bool:
    """True when no number anywhere in ``document`` is NaN, infinite or beyond a double's range (the walk of
    :func:`check_finite` without building field names; exact JSON types take the quick tests)."""
    stack = [document]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is dict:
            stack.extend(value.values())
        elif kind is list:
            stack.extend(value)
        elif kind is float:
            if not math.isfinite(value):
                return False
        elif kind is int:
            if value.bit_length() > 1023 and _beyond_double(value):
                return False
        elif kind is not str and kind is not bool and value is not None:
            if isinstance(value, (list, tuple)):
                stack.extend(value)
            elif isinstance(value, dict):
                stack.extend(value.values())
            elif _beyond_double(value):
                return False
    return True


def check_finite(document: Any, file: str | None, root: str = "results") -> None:
    """Raise a :class:`DataError` naming the field (``results[3].bbox[2]``) of the first number that is NaN,
    infinite or beyond a double's range, anywhere in ``document``."""
    if _all_finite(document):
        return
    stack: list[tuple[Any, str]] = [(document, root)]
    while stack:
        value, field = stack.pop()
        if isinstance(value, dict):
            stack.extend((v, f"{field}.{k}") for k, v in reversed(list(value.items())))
        elif isinstance(value, (list, tuple)):
            stack.extend((v, f"{field}[{i}]") for i, v in reversed(list(enumerate(value))))
        elif _beyond_double(value):
            raise DataError("numbers must be finite (NaN, Infinity and numbers beyond a double's range are "
                            "refused)", file=file, field=field, value=value)


def _beyond_double(value: Any) -> bool:
    if isinstance(value, (float, np.floating)):
        return not math.isfinite(value)
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return abs(int(value)) > sys.float_info.max
    return False


class _Checker(ScalarChecker):
    """The typed checks of :mod:`vision.data.checker` (NumPy scalars accepted: results built in Python), plus the
    checks of a result entry."""

    def entry(self, value: Any, field: str, required: tuple[str, ...]) -> dict:
        if not isinstance(value, dict):
            raise self.fail("each result must be an object", field, value)
        for key in required:
            self.key(value, key, field)
        return value

    def bbox(self, value: Any, field: str) -> list[float]:
        if not (isinstance(value, (list, tuple)) and len(value) == 4
                and all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                        for v in value)):
            raise self.fail("bbox must be 4 finite numbers [x, y, w, h]", field, value)
        box = [self.number(v, f"{field}[{j}]") for j, v in enumerate(value)]
        if box[2] < 0 or box[3] < 0:
            raise self.fail("bbox width and height must be >= 0", field, value)
        return box


# ---------------------------------------------------------------- results


def validate_detection_results(results: list, split: dict, file: str | None = None,
                               extra_category_ids: tuple[int, ...] = (), split_file: str | None = None) -> bool:
    """Check the split (:func:`vision.data.schema.validate_scored_parts`, errors naming
    ``split_file``) and the detection results in
    ``file`` against it; return True when every result carries a segmentation (so segm AP can be computed too).
    ``extra_category_ids`` are accepted besides the split's categories (e.g. an ``oov`` id for rejected objects;
    they never match ground truth)."""
    check_detection_parts(split, split_file)
    c = _Checker(file)
    images = {int(img["id"]): img for img in split.get("images", [])}
    categories = {int(cat["id"]) for cat in split.get("categories", [])} | {int(i) for i in extra_category_ids}
    all_segm = bool(results)
    with DeferredRle(c, "results") as deferred:  # compressed RLE counts are decoded in batches
        for i, r in enumerate(results):
            if _plain_detection(r, images, categories):  # every check of _checked_image surely passes
                image = images[r["image_id"]]
            else:
                image = _checked_image(c, r, f"results[{i}]", images, categories)
            if "segmentation" not in r:
                all_segm = False
            elif not deferred.offer(i, r["segmentation"], image["height"], image["width"]):
                check_rle(c, r["segmentation"], f"results[{i}].segmentation", image["height"], image["width"])
    return all_segm


def _checked_image(c: _Checker, r: Any, field: str, images: dict[int, dict], categories: set[int]) -> dict:
    """Every check of one detection result but its segmentation, one by one, each error naming the field and
    the value; returns the split's image the result is on."""
    c.entry(r, field, ("image_id", "category_id", "bbox", "score"))
    image_id = c.int_(r["image_id"], f"{field}.image_id")
    if image_id not in images:
        raise c.fail("image_id is not in the split", f"{field}.image_id", image_id)
    category_id = c.int_(r["category_id"], f"{field}.category_id")
    if category_id not in categories:
        raise c.fail("category_id is not in the split's categories", f"{field}.category_id", category_id)
    c.bbox(r["bbox"], f"{field}.bbox")
    c.number(r["score"], f"{field}.score")
    return images[image_id]


def _plain_detection(r: Any, images: dict[int, dict], categories: set[int]) -> bool:
    """True when :func:`_checked_image` surely accepts result ``r`` (every check but the segmentation): exact
    JSON types (a dict; int ids of the split; a list of four finite int / float numbers, width and height >= 0; a
    finite score). False: the one-by-one checks decide and word the error."""
    if type(r) is not dict:
        return False
    image_id, category_id, bbox, score = r.get("image_id"), r.get("category_id"), r.get("bbox"), r.get("score")
    if (type(image_id) is not int or image_id not in images or type(category_id) is not int
            or category_id not in categories or type(bbox) is not list or len(bbox) != 4):
        return False
    for v in (*bbox, score):
        if type(v) is float:
            if not math.isfinite(v):
                return False
        elif type(v) is not int or v.bit_length() > 1023:
            return False
    return bbox[2] >= 0 and bbox[3] >= 0


def validate_tracking_results(results: list, split: dict, file: str | None = None,
                              split_file: str | None = None) -> None:
    """Check the split (:func:`vision.data.schema.validate_scored_parts`, errors naming
    ``split_file``) and the tracking results in
    ``file`` against it: ids are integers, video_id and image_id exist, the image belongs to that video, the score
    is a finite number, the segmentation an RLE of exactly the image's pixels and ``prompt_type`` (optional) a
    string."""
    check_tracking_parts(split, split_file)
    c = _Checker(file)
    images = {int(img["id"]): img for img in split.get("images", [])}
    videos = {int(v["id"]) for v in split.get("videos") or []} | \
        {int(img["video_id"]) for img in images.values() if img.get("video_id") is not None}
    for i, r in enumerate(results):
        field = f"results[{i}]"
        c.entry(r, field, ("video_id", "track_id", "image_id", "segmentation", "score"))
        video_id = c.int_(r["video_id"], f"{field}.video_id")
        c.int_(r["track_id"], f"{field}.track_id")
        image_id = c.int_(r["image_id"], f"{field}.image_id")
        c.number(r["score"], f"{field}.score")
        if video_id not in videos:
            raise c.fail("video_id is not in the split", f"{field}.video_id", video_id)
        image = images.get(image_id)
        if image is None:
            raise c.fail("image_id is not in the split", f"{field}.image_id", image_id)
        if image.get("video_id") != video_id:
            raise c.fail(f"image {image_id} belongs to video {image.get('video_id')}, not to this video_id",
                         f"{field}.video_id", video_id)
        check_rle(c, r["segmentation"], f"{field}.segmentation", image["height"], image["width"])
        if "prompt_type" in r:
            c.str_(r["prompt_type"], f"{field}.prompt_type")


#: The fields of a concept instance record that a presence record must not carry.
_INSTANCE_ONLY = ("track_id", "phrase", "segmentation", "bbox", "score", "prompt_type")


def validate_concept_results(results: list, split: dict, file: str | None = None,
                             split_file: str | None = None) -> None:
    """Check the split (:func:`vision.data.schema.check_concept_parts`, then its concept parts:
    :func:`vision.evaluation.concept.concept_split`; errors naming ``split_file``) and the concept results in
    ``file`` against it. Each record is one of:

    - an instance record ``{video_id, image_id, track_id, category_id, phrase, segmentation, bbox, score
      [, prompt_type]}``: the image belongs to that video, the category is a phrase queried on the video and
      ``phrase`` its name, the segmentation an RLE of the image's size, ``score`` in [0, 1]; one record per
      (video, track_id, image_id), and a track_id keeps one category_id within its video;
    - a presence record ``{video_id, image_id, category_id, presence}`` (none of the fields only instance records
      carry: track_id, phrase, segmentation, bbox, score, prompt_type): ``presence`` in [0, 1], the category
      queried on the video, one record per (image, category).

    Ids are any integers (the scorer ranks them); other keys are left alone, as in tracking results.
    """
    from vision.evaluation.concept import concept_split  # the one reading of a split's concept parts

    check_concept_parts(split, split_file)
    gt = concept_split(split, split_file)
    c = _Checker(file)
    images = {int(img["id"]): img for img in split.get("images", [])}
    first: dict[tuple, int] = {}  # (video, track, image) or (image, category) -> first record's index
    categories: dict[tuple[int, int], tuple[int, int]] = {}  # (video, track) -> (category, first record)
    with DeferredRle(c, "results") as deferred:
        for i, r in enumerate(results):
            field = f"results[{i}]"
            kind = "presence" if isinstance(r, dict) and "presence" in r else "instance"
            required = (("video_id", "image_id", "category_id", "presence") if kind == "presence" else
                        ("video_id", "image_id", "track_id", "category_id", "phrase", "segmentation", "bbox",
                         "score"))
            c.entry(r, field, required)
            video_id = c.int_(r["video_id"], f"{field}.video_id")
            image_id = c.int_(r["image_id"], f"{field}.image_id")
            category_id = c.int_(r["category_id"], f"{field}.category_id")
            if video_id not in gt.video_images:
                raise c.fail("video_id is not in the split", f"{field}.video_id", video_id)
            if image_id not in images:
                raise c.fail("image_id is not in the split", f"{field}.image_id", image_id)
            if image_id not in gt.video_images[video_id]:
                raise c.fail(f"image {image_id} belongs to video {images[image_id].get('video_id')}, not to this "
                             f"video_id", f"{field}.video_id", video_id)
            if category_id not in gt.phrases:
                raise c.fail("category_id is not in the split's categories", f"{field}.category_id", category_id)
            if category_id not in gt.queried[video_id]:
                raise c.fail(f"phrase {gt.phrases[category_id]!r} is not queried on video {video_id}",
                             f"{field}.category_id", category_id)
            if kind == "presence":
                for key in _INSTANCE_ONLY:  # a record of both kinds: which one was meant is unknown
                    if key in r:
                        raise c.fail(f"a presence record carries no {key} (only instance records do)",
                                     f"{field}.{key}", r[key])
                if not 0.0 <= c.number(r["presence"], f"{field}.presence") <= 1.0:
                    raise c.fail("presence must be in [0, 1]", f"{field}.presence", r["presence"])
                key = ("presence", image_id, category_id)
            else:
                track_id = c.int_(r["track_id"], f"{field}.track_id")
                if c.str_(r["phrase"], f"{field}.phrase") != gt.phrases[category_id]:
                    raise c.fail(f"phrase is not the name of category {category_id} "
                                 f"({gt.phrases[category_id]!r})", f"{field}.phrase", r["phrase"])
                c.bbox(r["bbox"], f"{field}.bbox")
                if not 0.0 <= c.number(r["score"], f"{field}.score") <= 1.0:
                    raise c.fail("score must be in [0, 1]", f"{field}.score", r["score"])
                if "prompt_type" in r:
                    c.str_(r["prompt_type"], f"{field}.prompt_type")
                known, at = categories.setdefault((video_id, track_id), (category_id, i))
                if known != category_id:
                    raise c.fail(f"track {track_id} of video {video_id} has category {known} in results[{at}]",
                                 f"{field}.category_id", category_id)
                image = images[image_id]
                if not deferred.offer(i, r["segmentation"], image["height"], image["width"]):
                    check_rle(c, r["segmentation"], f"{field}.segmentation", image["height"], image["width"])
                key = ("instance", video_id, track_id, image_id)
            if key in first:
                what = "(image_id, category_id)" if kind == "presence" else "(track_id, image_id)"
                raise c.fail(f"duplicate record for this {what} (first: results[{first[key]}])", field,
                             {k: r[k] for k in ("video_id", "image_id", "category_id", "track_id") if k in r})
            first[key] = i


def validate_forensics_results(results: list, split: dict, file: str | None = None,
                               split_file: str | None = None) -> None:
    """Check the split (:func:`vision.data.schema.validate_scored_parts`, errors naming
    ``split_file``) and the forensics results in
    ``file`` against it: one result per labelled video, each with an integer video_id of a labelled video and a
    finite score."""
    check_forensics_parts(split, split_file)
    c = _Checker(file)
    labelled = {v["id"] for v in split["videos"] if v.get("label") in VIDEO_LABELS}
    seen: set[int] = set()
    for i, r in enumerate(results):
        field = f"results[{i}]"
        c.entry(r, field, ("video_id", "score"))
        video_id = c.int_(r["video_id"], f"{field}.video_id")
        if video_id not in labelled:
            raise c.fail("video_id is not a labelled video of the split", f"{field}.video_id", video_id)
        if video_id in seen:
            raise c.fail("duplicate result for this video", f"{field}.video_id", video_id)
        seen.add(video_id)
        c.number(r["score"], f"{field}.score")
    missing = sorted(labelled - seen)
    if missing:
        raise c.fail(f"{len(missing)} labelled video(s) have no result", "video_id", missing[:10])


def encode_array(array: Any) -> dict:
    """A dense float map as a results-file object: ``{"size": [d0, d1, ...], "float32": base64}``, the values as
    little-endian float32 in C order (exact for float32 predictions; 4/3 x 4 bytes per value)."""
    values = np.ascontiguousarray(np.asarray(array, dtype="<f4"))
    return {"size": [int(d) for d in values.shape], "float32": base64.b64encode(values.tobytes()).decode("ascii")}


def decode_array(value: Any, field: str, file: str | None = None, size: tuple[int, ...] | None = None) -> np.ndarray:
    """The float32 array of an :func:`encode_array` object; a wrong layout, a ``size`` other than the one
    expected (None: any), a byte count that does not match it, or a NaN / infinite value is a :class:`DataError`
    naming ``file`` and ``field``."""
    c = _Checker(file)
    c.dict_(value, field)
    dims = c.list_(c.key(value, "size", field), f"{field}.size")
    dims = tuple(c.int_(d, f"{field}.size[{i}]", minimum=1, maximum=MAX_IMAGE_SIDE) for i, d in enumerate(dims))
    if size is not None and dims != tuple(size):
        raise c.fail(f"expected size {list(size)}", f"{field}.size", list(dims))
    text = c.str_(c.key(value, "float32", field), f"{field}.float32")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise c.fail("not base64 text", f"{field}.float32", text) from None
    count = math.prod(dims)
    if len(raw) != 4 * count:
        raise c.fail(f"{len(raw)} bytes do not hold the {count} float32 values of size {list(dims)}",
                     f"{field}.float32", text)
    array = np.frombuffer(raw, dtype="<f4").reshape(dims).astype(np.float32)
    if not np.isfinite(array).all():
        raise c.fail(f"{int((~np.isfinite(array)).sum())} value(s) are NaN or infinite", f"{field}.float32", text)
    return array


#: Largest entry of ``|R^T R - I|`` (and of ``|det R - 1|``) for a camera's rotation part to count as a rotation:
#: far above what float32 cameras written as JSON carry, far below a garbage or all-zero matrix.
ROTATION_TOLERANCE = 1e-2

#: The optional cameras a geometry result may carry beside its ``extrinsics``: the scoring's row name -> the field.
GEOMETRY_CAMERA_FIELDS: dict[str, str] = {"camera_head": "head_extrinsics", "match_pose": "match_extrinsics",
                                          "ray_pose": "ray_extrinsics"}

#: Largest magnitude of a camera entry (in practice of a translation): pose scoring takes vector norms, whose squares
#: overflow beyond about 1e154 (a RuntimeWarning and a wrong translation angle); far beyond any scene's units.
MAX_CAMERA_ENTRY = 1e100


def _camera(c: ScalarChecker, value: Any, field: str) -> np.ndarray:
    """A 3x4 camera-from-world matrix of finite numbers of magnitude at most :data:`MAX_CAMERA_ENTRY` whose left 3x3
    is a rotation, as float64."""
    matrix = np.asarray(c.matrix(value, field, 3, 4), np.float64)
    if np.abs(matrix).max() > MAX_CAMERA_ENTRY:
        raise c.fail(f"camera entries must be at most {MAX_CAMERA_ENTRY:g} in magnitude (pose scoring squares "
                     f"them)", field, value)
    rotation = matrix[:, :3]
    with np.errstate(all="ignore"):  # huge entries overflow to inf, which the test below refuses
        off = float(np.abs(rotation.T @ rotation - np.eye(3)).max())
        det = float(np.linalg.det(rotation))
    if off > ROTATION_TOLERANCE or abs(det - 1.0) > ROTATION_TOLERANCE:
        raise c.fail(f"the left 3x3 of a camera must be a rotation (|R^T R - I| reaches {off:.3g}, det R = "
                     f"{det:.3g})", field, value)
    return matrix


def validate_geometry_results(results: list, split: dict, file: str | None = None,
                              split_file: str | None = None) -> dict[tuple[int, ...], list[dict]]:
    """Check the split (:func:`vision.data.schema.validate_scored_parts`, errors naming
    ``split_file``) and the geometry results in
    ``file`` against it; return the clips: ``{clip image ids: [decoded entry per view, in clip order]}``.

    Each result is one image of one clip of S >= 2 views of the split:

    - ``image_id``: the image; ``clip``: the clip's image ids in view order, all of one video of the split, each
      with a ``camera`` (``K``, ``extrinsics``) and a ``depth_file``; every image of a clip has exactly one result
      that names the same clip;
    - ``extrinsics`` (3x4, OpenCV camera-from-world, the world being view 0's camera): the predicted camera;
    - ``depth``: predicted z-depth ``[H, W]`` (any scale: it is median-scaled per image), H = W the side the
      split's images are resized to for scoring; ``world_points``: predicted points ``[H, W, 3]`` in view 0's
      camera frame; both :func:`encode_array` objects;
    - the optional cameras of :data:`GEOMETRY_CAMERA_FIELDS` (3x4 each; every result carries a field or none does):
      ``head_extrinsics``, the camera head's when ``extrinsics`` are solved ones; ``match_extrinsics``, the camera
      registered from learned matches; ``ray_extrinsics``, the camera fitted to a predicted ray map.

    The decoded entries carry ``depth`` and ``world_points`` as float32 arrays, the cameras as float64 arrays and
    ``index``, the entry's place in ``results`` (for messages). A camera's left 3x3 must be a rotation (within
    :data:`ROTATION_TOLERANCE`): relative poses are scored as rotations.
    """
    check_geometry_parts(split, split_file)
    c = _Checker(file)
    g = _Checker(split_file)
    images = {int(img["id"]): img for img in split.get("images", [])}
    if not results:
        raise c.fail("no results: a geometry results file holds one entry per image of each clip", "results", [])
    clips: dict[tuple[int, ...], dict[int, dict]] = {}
    first: dict[tuple[tuple[int, ...], int], int] = {}
    with_optional: dict[str, bool] = {}  # optional camera field -> present in the first result
    side: int | None = None
    for i, r in enumerate(results):
        field = f"results[{i}]"
        c.entry(r, field, ("image_id", "clip", "extrinsics", "depth", "world_points"))
        image_id = c.int_(r["image_id"], f"{field}.image_id")
        clip = tuple(c.int_(v, f"{field}.clip[{j}]") for j, v in enumerate(c.list_(r["clip"], f"{field}.clip")))
        if len(clip) < 2 or len(set(clip)) != len(clip):
            raise c.fail("a clip is a list of at least 2 distinct image ids", f"{field}.clip", list(clip))
        if image_id not in clip:
            raise c.fail(f"image_id {image_id} is not one of its clip's images", f"{field}.clip", list(clip))
        for j, member in enumerate(clip):
            if member not in images:
                raise c.fail("image id is not in the split", f"{field}.clip[{j}]", member)
        videos = {images[m].get("video_id") for m in clip}
        if len(videos) != 1 or None in videos:
            raise c.fail("the images of a clip must belong to one video of the split (one world frame)",
                         f"{field}.clip", list(clip))
        if (clip, image_id) in first:
            raise c.fail(f"duplicate result for this image of this clip (first: results[{first[clip, image_id]}])",
                         f"{field}.image_id", image_id)
        first[clip, image_id] = i
        entry = {"index": i, "image_id": image_id, "clip": clip,
                 "extrinsics": _camera(c, r["extrinsics"], f"{field}.extrinsics")}
        for name in GEOMETRY_CAMERA_FIELDS.values():
            present = name in r
            if with_optional.setdefault(name, present) != present:
                raise c.fail(f"{name} must be given in every result or in none", f"{field}.{name}",
                             "present" if present else "absent")
            if present:
                entry[name] = _camera(c, r[name], f"{field}.{name}")
        depth = decode_array(r["depth"], f"{field}.depth", file)
        if depth.ndim != 2 or depth.shape[0] != depth.shape[1]:
            raise c.fail("depth must be a square [H, W] map (the split's images are resized to H x W to score it)",
                         f"{field}.depth.size", list(depth.shape))
        if side is not None and depth.shape[0] != side:
            raise c.fail(f"every depth map must have the same size (results[0]: {side} x {side})",
                         f"{field}.depth.size", list(depth.shape))
        side = depth.shape[0]
        entry["depth"] = depth
        entry["world_points"] = decode_array(r["world_points"], f"{field}.world_points", file, size=(side, side, 3))
        clips.setdefault(clip, {})[image_id] = entry
    for clip, entries in clips.items():
        missing = [m for m in clip if m not in entries]
        if missing:
            raise c.fail(f"clip {list(clip)} has no result for image(s) {missing}", "clip", list(clip))
        for m in clip:
            image = images[m]
            field = f"images[id={m}]"
            camera = g.dict_(g.key(image, "camera", field), f"{field}.camera")
            g.matrix(g.key(camera, "K", f"{field}.camera"), f"{field}.camera.K", 3, 3)
            _camera(g, g.key(camera, "extrinsics", f"{field}.camera"), f"{field}.camera.extrinsics")
            g.str_(g.key(image, "depth_file", field), f"{field}.depth_file", nonempty=True)
    return {clip: [entries[m] for m in clip] for clip, entries in clips.items()}
