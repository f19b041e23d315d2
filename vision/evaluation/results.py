"""Loading and validating results files (COCO results format).

Detection: ``[{image_id, category_id, bbox: [x, y, w, h], score}]`` (+ optional ``segmentation`` RLE and
``category_name``, by which the result is scored under the split's id of that name:
:func:`vision.evaluation.tasks.detection.named_category_ids`).
Tracking: ``[{video_id, track_id, image_id, segmentation: RLE, score[, prompt_type]}]``.
Concept: instance records ``{video_id, image_id, track_id, category_id, phrase, segmentation, bbox, score
[, prompt_type]}`` and presence records ``{video_id, image_id, category_id, presence}``.
Forensics: ``[{video_id, score[, verdict]}]``, one per labelled video of the split.
Geometry: one entry per image of each predicted clip:
``[{image_id, clip: [image ids], extrinsics: 3x4, depth: array, world_points: array[, head_extrinsics: 3x4]
[, match_extrinsics: 3x4][, ray_extrinsics: 3x4]}]`` with dense maps as :func:`encode_array` objects.

Results get the same validation as splits (and share its checks, :mod:`vision.data.checker`): every number is
finite (NaN, Infinity and numbers beyond a double's range are refused wherever they appear), every mask's counts
decode to exactly the H x W pixels of its image, and every problem raises a :class:`DataError` naming the file,
the entry and the field, e.g. ``preds.json: results[3].bbox=[1, 2]: bbox must be 4 finite numbers``.
This module holds what the validators share; each task's validator (``check_results`` of its evaluation module,
:mod:`vision.evaluation.tasks`) first checks the parts of the split that scoring reads (its ``check_split``), so
that a malformed split is reported the same way before any metric is computed.
"""

from __future__ import annotations

import base64
import binascii
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

from vision.data.checker import ScalarChecker
from vision.data.files import read_json
from vision.data.schema import MAX_IMAGE_SIDE
from vision.errors import DataError

__all__ = ["load_document", "load_json", "load_results", "check_finite", "ResultsChecker", "camera_matrix",
           "encode_array", "decode_array", "GEOMETRY_CAMERA_FIELDS", "ROTATION_TOLERANCE"]

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


class ResultsChecker(ScalarChecker):
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


def encode_array(array: Any) -> dict:
    """A dense float map as a results-file object: ``{"size": [d0, d1, ...], "float32": base64}``, the values as
    little-endian float32 in C order (exact for float32 predictions; 4/3 x 4 bytes per value)."""
    values = np.ascontiguousarray(np.asarray(array, dtype="<f4"))
    return {"size": [int(d) for d in values.shape], "float32": base64.b64encode(values.tobytes()).decode("ascii")}


def decode_array(value: Any, field: str, file: str | None = None, size: tuple[int, ...] | None = None) -> np.ndarray:
    """The float32 array of an :func:`encode_array` object; a wrong layout, a ``size`` other than the one
    expected (None: any), a byte count that does not match it, or a NaN / infinite value is a :class:`DataError`
    naming ``file`` and ``field``."""
    c = ResultsChecker(file)
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


def camera_matrix(c: ScalarChecker, value: Any, field: str) -> np.ndarray:
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


