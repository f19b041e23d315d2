"""Convert one CO3Dv2 category into a multi-view split with cameras, optional depth and the object's mask track
(``vision prepare co3d``).

Input (CO3Dv2 as downloaded; every path inside the annotation files is relative to ROOT)::

    ROOT/<category>/frame_annotations.jgz       gzip JSON list of frame annotations (below)
    ROOT/<category>/sequence_annotations.jgz    gzip JSON list {sequence_name, category, ...}   (optional here)
    ROOT/<category>/set_lists/set_lists_<NAME>.json   {"train"|"val"|"test": [[sequence_name, frame_number,
                                                 image_path], ...]}                          (only for set_list=)
    ROOT/<category>/<sequence>/images/frameNNNNNN.jpg, depths/frameNNNNNN.jpg.geometric.png, masks/...png, ...

One frame annotation: ``{sequence_name, frame_number, frame_timestamp, image: {path, size: [H, W]}, depth: {path,
scale_adjustment, mask_path} | null, mask: {path, mass} | null, viewpoint: {R, T, focal_length, principal_point,
intrinsics_format}}``.

``vision prepare co3d ROOT --category apple [--sequences S1,S2 | --set-list NAME [--subset test]]
--out OUT [--frames N] [--scale 1|mean] [--depth [--depth-mask]] [--link]``

Output: ``OUT/<split>.json`` (default: the set list's subset, else ``test``) with one video per sequence (``name`` =
the sequence name, ``ordered: false``, ``source: "co3d"``), its frames in ``frame_number`` order as ``frame_index``
0, 1, ..., the images at ``OUT/<image.path>`` (copied, or hard-linked with ``link``), optionally
``OUT/depth/<image.path>.npz``; one category (the CO3D category) and one track per sequence (caption = the category
name) with an RLE mask annotation on every frame whose foreground mask is not empty.

Conventions (what is converted, and how):

* Cameras: CO3D stores PyTorch3D cameras, row vectors ``X_cam = X_world @ R + T`` with the camera's +X left, +Y up,
  +Z forward. OpenCV (x right, y down, z forward, column vectors) is ``R_cv = diag(-1, -1, 1) R^T``,
  ``t_cv = diag(-1, -1, 1) T`` (PyTorch3D's ``_opencv_from_cameras_projection``). Each sequence has its own world;
  view 0 of the sequence (after frame selection) becomes the video's world frame: every extrinsic is re-expressed
  as ``E_i @ E_0^-1`` (view 0 is ``[I | 0]``), and a CO3D world point ``X`` becomes ``scale * (R_0 X + t_0)`` with
  ``(R_0, t_0)`` view 0's OpenCV extrinsics.
* Intrinsics: ``focal_length`` ``(fx, fy)`` and ``principal_point`` ``(px, py)`` are in NDC (+X left, +Y up,
  the image's top-left corner at positive coordinates). ``intrinsics_format`` ``"ndc_norm_image_bounds"``
  (CO3Dv2's default): the image's edges are at +-1 on both axes, so the NDC-to-pixel factor is ``(W / 2, H / 2)``;
  ``"ndc_isotropic"``: the shorter side spans [-1, 1], factor ``min(W, H) / 2`` on both axes. In PyTorch3D's screen
  space (origin at the top-left *corner*, the top-left pixel's centre at (0.5, 0.5); see its rasterizer's
  ``pix_to_non_square_ndc``) ``f_px = f_ndc * factor`` and ``p_px = (W / 2, H / 2) - p_ndc * factor``; this package
  (OpenCV) puts that pixel centre at (0, 0), so ``K = [[fx_px, 0, px_px - 0.5], [0, fy_px, py_px - 0.5], [0, 0, 1]]``
  (PyTorch3D's own ``_opencv_from_cameras_projection`` omits the 0.5: its K is half a pixel off in this convention).
  Images are used at their stored size, uncropped (no implicitron box crop / resize).
* Scale: CO3D reconstructions have an arbitrary scale per sequence (not metres). ``scale=1.0`` (default) keeps it;
  a number multiplies every translation and depth; ``scale="mean"`` normalises each sequence so that the mean
  distance of its other views' camera centres from view 0's centre is 1. The factors used are written to
  ``info.co3d.scale`` (``{sequence: factor}``).
* Depth (``depth=True``): ``depth.path`` is a 16-bit PNG whose 16 bits are an IEEE float16 (PyTorch3D's
  ``_load_16big_png_depth``); z-depth = that float16 * ``scale_adjustment``, then times the scale; non-finite or
  <= 0 = invalid (0). ``depth_mask=True`` also zeroes pixels outside ``depth.mask_path`` (CO3D's mask of depths
  consistent across views, any non-zero pixel = valid). A depth map whose size differs from its image is resized
  with nearest neighbour when the aspect ratios agree (within a pixel), else refused. Written as float16 ``.npz``
  (key ``depth``) named by ``depth_file``; frames without a depth annotation get none.
* Masks: ``mask.path`` is a PNG holding foreground probability * 255 (8-bit grey, or 1-bit); foreground =
  probability > 0.5 (pixel value >= 128). A mask must have its image's size (as upstream). Frames whose mask is
  empty after thresholding get no annotation (the object is not visible there); frames with ``mask: null`` get
  none either and carry ``annotated: false`` (nothing known).
* ``ordered: false``: the split is meant as a multi-view set (view 0 = world frame, as
  :mod:`vision.prepare.colmap`); with ``frames=N`` or a set list the kept frames are seconds apart around the
  object, not a continuous video. ``frame_index`` still follows ``frame_number`` (capture order), and every image
  keeps ``co3d_frame_number`` and ``frame_timestamp``.
* Frame selection: all sequences of the category (name order), or ``sequences=``, or the frames a set list's
  ``subset`` names; ``frames=N`` then keeps N frames per sequence evenly spread over its frames in
  ``frame_number`` order (``round(linspace(0, n - 1, N))``; all when N >= n).

Malformed input is a :class:`~vision.errors.DataError` naming the file and the field (``[i].viewpoint.R`` is the
i-th entry of ``frame_annotations.jgz``). Every image, depth map and mask is size-checked from its header; the
decompressed annotation files are bounded by :data:`MAX_ANNOTATION_BYTES`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import posixpath
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from pycocotools import mask as mask_utils

from vision.data.coco import read_json, write_depth_npz
from vision.data.io import MAX_INPUT_PIXELS, check_pixels, image_size, resolve_inside
from vision.data.resize import resize_nearest
from vision.errors import DataError, InputError
from vision.prepare.cameras import first_view_world, parse_scale
from vision.prepare.converter import add_link, add_out, converter_parser, run
from vision.prepare.files import decode_mask_png, output_folder, place_file, staged_output, write_named_split

__all__ = ["INTRINSICS_FORMATS", "MAX_ANNOTATION_BYTES", "Co3dFrame", "read_jgz", "read_frame_annotations",
           "viewpoint_to_opencv", "read_depth_png", "read_mask_png", "convert_co3d", "main"]

INTRINSICS_FORMATS: tuple[str, ...] = ("ndc_norm_image_bounds", "ndc_isotropic")
#: Largest decompressed ``*.jgz`` read (the biggest CO3Dv2 categories' frame annotations are far smaller).
MAX_ANNOTATION_BYTES = 1 << 30
#: Foreground threshold on a CO3D mask's probability (the PNG holds ``Prob(fg) * 255``).
MASK_THRESHOLD = 0.5
SUBSETS: tuple[str, ...] = ("train", "val", "test")
_FLIP = np.diag([-1.0, -1.0, 1.0])  # PyTorch3D camera axes (+X left, +Y up) <-> OpenCV (x right, y down)


@dataclass(frozen=True)
class Co3dFrame:
    """One entry of ``frame_annotations.jgz``, checked. ``K`` ``[3, 3]`` in OpenCV pixels, ``extrinsics``
    ``[3, 4]`` OpenCV camera-from-world in the sequence's CO3D world; paths relative to ROOT (posix)."""

    entry: int
    sequence: str
    frame_number: int
    timestamp: float | None
    image_path: str
    size_hw: tuple[int, int]
    K: np.ndarray
    extrinsics: np.ndarray
    depth_path: str | None
    depth_scale: float | None
    depth_mask_path: str | None
    mask_path: str | None


def read_jgz(path: str | Path, max_bytes: int = MAX_ANNOTATION_BYTES) -> object:
    """Parse a gzip-compressed JSON file (CO3D's ``*.jgz``); refuses more than ``max_bytes`` decompressed.

    Raises:
        DataError: missing, not gzip, too large, not UTF-8 JSON (names the file).
    """
    path = Path(path)
    if not path.is_file():
        raise DataError("file not found (expected CO3D's gzip JSON annotations)", file=path)
    chunks, total = [], 0
    try:
        with gzip.open(path, "rb") as f:
            while True:
                chunk = f.read(1 << 20)
                if not chunk:
                    break
                total += len(chunk)
                if total > max_bytes:
                    raise DataError(f"decompresses to more than {max_bytes} bytes", file=path)
                chunks.append(chunk)
    except (OSError, EOFError, zlib.error) as exc:
        raise DataError(f"cannot read as gzip ({exc})", file=path) from None
    try:
        return json.loads(b"".join(chunks).decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text (byte {exc.start}: {exc.reason})", file=path) from None
    except json.JSONDecodeError as exc:
        raise DataError(f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", file=path) from None
    except RecursionError:
        raise DataError("not usable JSON: nested too deeply", file=path) from None


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _numbers(value: object, shape: tuple[int, ...], file: Path, field: str) -> np.ndarray:
    """A nested list of finite numbers of exactly ``shape`` -> float64 array, else a DataError."""
    what = "x".join(map(str, shape))
    try:
        array = np.asarray(value, dtype=np.float64)
        ok = array.shape == shape and all(_number(v) for v in np.asarray(value, dtype=object).reshape(-1))
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise DataError(f"expected {what} finite numbers", file=file, field=field, value=value)
    return array


def viewpoint_to_opencv(R: np.ndarray, T: np.ndarray, focal_length: np.ndarray, principal_point: np.ndarray,
                        intrinsics_format: str, size_hw: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """A CO3D / PyTorch3D viewpoint -> ``(K [3, 3], extrinsics [3, 4])`` in this package's OpenCV convention
    (see the module docstring): ``R`` ``[3, 3]`` and ``T`` ``[3]`` with ``X_cam = X_world @ R + T``, NDC
    ``focal_length`` / ``principal_point`` ``[2]`` in ``intrinsics_format``, ``size_hw`` the image's (H, W)."""
    if intrinsics_format not in INTRINSICS_FORMATS:
        raise InputError(f"intrinsics_format must be one of {INTRINSICS_FORMATS}, got {intrinsics_format!r}")
    height, width = size_hw
    half = np.array([width, height], dtype=np.float64) / 2.0
    factor = half if intrinsics_format == "ndc_norm_image_bounds" else np.full(2, half.min())
    focal_px = np.asarray(focal_length, np.float64) * factor
    centre_px = half - np.asarray(principal_point, np.float64) * factor - 0.5  # corner -> pixel-centre origin
    K = np.array([[focal_px[0], 0.0, centre_px[0]], [0.0, focal_px[1], centre_px[1]], [0.0, 0.0, 1.0]])
    rotation = _FLIP @ np.asarray(R, np.float64).T
    translation = _FLIP @ np.asarray(T, np.float64)
    return K, np.concatenate([rotation, translation[:, None]], axis=1)


def _rel_path(value: object, file: Path, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise DataError("expected a non-empty path relative to the dataset root", file=file, field=field, value=value)
    return posixpath.normpath(value.replace("\\", "/"))


def _frame(entry: object, i: int, file: Path) -> Co3dFrame:
    where = f"[{i}]"
    if not isinstance(entry, dict):
        raise DataError("expected a frame annotation object", file=file, field=where, value=entry)

    def get(obj: dict, key: str, field: str, kind: type | tuple[type, ...], optional: bool = False):
        if key not in obj or obj[key] is None:
            if optional:
                return None
            raise DataError(f"missing {key!r}", file=file, field=field)
        value = obj[key]
        if not isinstance(value, kind) or isinstance(value, bool):
            raise DataError(f"{key!r} has the wrong type ({type(value).__name__})", file=file,
                            field=f"{field}.{key}", value=value)
        return value

    sequence = get(entry, "sequence_name", where, str)
    frame_number = get(entry, "frame_number", where, int)
    timestamp = get(entry, "frame_timestamp", where, (int, float), optional=True)
    image = get(entry, "image", where, dict)
    image_path = _rel_path(image.get("path"), file, f"{where}.image.path")
    size = _numbers(image.get("size"), (2,), file, f"{where}.image.size")
    if not all(float(s).is_integer() and s > 0 for s in size):
        raise DataError("image.size must be two positive integers [H, W]", file=file, field=f"{where}.image.size",
                        value=image.get("size"))
    size_hw = (int(size[0]), int(size[1]))

    view = get(entry, "viewpoint", where, dict)
    vfield = f"{where}.viewpoint"
    R = _numbers(view.get("R"), (3, 3), file, f"{vfield}.R")
    if np.abs(R @ R.T - np.eye(3)).max() > 1e-3 or np.linalg.det(R) <= 0:
        raise DataError("R is not a rotation (orthonormal, determinant +1, within 1e-3)", file=file,
                        field=f"{vfield}.R", value=view.get("R"))
    T = _numbers(view.get("T"), (3,), file, f"{vfield}.T")
    focal = _numbers(view.get("focal_length"), (2,), file, f"{vfield}.focal_length")
    if not (focal > 0).all():
        raise DataError("focal_length must be positive", file=file, field=f"{vfield}.focal_length",
                        value=view.get("focal_length"))
    principal = _numbers(view.get("principal_point"), (2,), file, f"{vfield}.principal_point")
    fmt = view.get("intrinsics_format", "ndc_norm_image_bounds")  # upstream's default when the key is absent
    if fmt not in INTRINSICS_FORMATS:
        raise DataError(f"unknown intrinsics_format; expected one of {', '.join(INTRINSICS_FORMATS)}", file=file,
                        field=f"{vfield}.intrinsics_format", value=fmt)
    K, extrinsics = viewpoint_to_opencv(R, T, focal, principal, fmt, size_hw)

    depth_path = depth_scale = depth_mask_path = None
    depth = get(entry, "depth", where, dict, optional=True)
    if depth is not None:
        depth_path = _rel_path(depth.get("path"), file, f"{where}.depth.path")
        depth_scale = depth.get("scale_adjustment")
        if not _number(depth_scale) or depth_scale <= 0:
            raise DataError("scale_adjustment must be a positive number", file=file,
                            field=f"{where}.depth.scale_adjustment", value=depth_scale)
        if depth.get("mask_path") is not None:
            depth_mask_path = _rel_path(depth["mask_path"], file, f"{where}.depth.mask_path")
    mask = get(entry, "mask", where, dict, optional=True)
    mask_path = _rel_path(mask.get("path"), file, f"{where}.mask.path") if mask is not None else None
    return Co3dFrame(i, sequence, frame_number, None if timestamp is None else float(timestamp), image_path,
                     size_hw, K, extrinsics, depth_path, None if depth_scale is None else float(depth_scale),
                     depth_mask_path, mask_path)


def read_frame_annotations(path: str | Path, max_bytes: int = MAX_ANNOTATION_BYTES) -> list[Co3dFrame]:
    """Parse and check ``frame_annotations.jgz`` (file order). Two entries with the same ``(sequence_name,
    frame_number)`` or image path are refused."""
    path = Path(path)
    doc = read_jgz(path, max_bytes)
    if not isinstance(doc, list):
        raise DataError("expected a JSON list of frame annotations", file=path, value=type(doc).__name__)
    frames = [_frame(entry, i, path) for i, entry in enumerate(doc)]
    seen: dict[tuple[str, int], int] = {}
    paths: dict[str, int] = {}
    for f in frames:
        key = (f.sequence, f.frame_number)
        if key in seen:
            raise DataError(f"sequence {f.sequence!r} frame_number {f.frame_number} listed twice (first at "
                            f"[{seen[key]}])", file=path, field=f"[{f.entry}].frame_number", value=f.frame_number)
        if f.image_path in paths:
            raise DataError(f"image path listed twice (first at [{paths[f.image_path]}])", file=path,
                            field=f"[{f.entry}].image.path", value=f.image_path)
        seen[key], paths[f.image_path] = f.entry, f.entry
    return frames


def read_depth_png(path: str | Path, scale_adjustment: float,
                   max_pixels: int | None = MAX_INPUT_PIXELS) -> np.ndarray:
    """A CO3D depth PNG (16-bit, the bits of a float16) -> z-depth float32 ``[H, W]`` = value * ``scale_adjustment``;
    non-finite or <= 0 -> 0 (invalid)."""
    path = Path(path)
    check_pixels(*image_size(path), path, max_pixels)
    raw = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
    if raw is None or raw.dtype != np.uint16 or raw.ndim != 2:
        got = "undecodable" if raw is None else f"{raw.dtype} with shape {list(raw.shape)}"
        raise DataError(f"CO3D depth must be a single-channel 16-bit PNG (float16 bits), got {got}", file=path)
    depth = np.ascontiguousarray(raw).view(np.float16).astype(np.float32) * np.float32(scale_adjustment)
    return np.where(np.isfinite(depth) & (depth > 0), depth, 0.0).astype(np.float32)


def read_mask_png(path: str | Path, size_hw: tuple[int, int] | None = None,
                  max_pixels: int | None = MAX_INPUT_PIXELS) -> np.ndarray:
    """A CO3D mask PNG (``Prob(fg) * 255``, 8-bit grey or 1-bit) -> the probability as float32 ``[H, W]`` in
    [0, 1]; ``size_hw`` (H, W), when given, must match."""
    path = Path(path)
    width, height = image_size(path)
    check_pixels(width, height, path, max_pixels)
    if size_hw is not None and (height, width) != tuple(size_hw):
        raise DataError(f"mask is {width}x{height} but its image is {size_hw[1]}x{size_hw[0]}", file=path)
    values = decode_mask_png(path, ("L", "1"), "a single-channel 8-bit (mode 'L') or 1-bit PNG")
    return values.astype(np.float32) / 255.0


def _fit(array: np.ndarray, size_hw: tuple[int, int], path: Path, what: str) -> np.ndarray:
    """Nearest-neighbour resize (pixel centres, :func:`vision.data.resize.resize_nearest`) of a depth map / mask to its image's size when the aspect ratios agree."""
    h, w = array.shape
    H, W = size_hw
    if (h, w) == (H, W):
        return array
    if abs(w * H / h - W) > 1.0 or abs(h * W / w - H) > 1.0:
        raise DataError(f"{what} is {w}x{h} but its image is {W}x{H} (another aspect ratio)", file=path)
    return resize_nearest(array, (H, W))


def _inside(root: Path, relative: str, file: Path, field: str, what: str) -> Path:
    path = resolve_inside(root, relative, file=file, field=field)
    if not path.is_file():
        raise DataError(f"{what} listed but not found on disk at {path}", file=file, field=field, value=relative)
    return path


def _set_list_frames(category_dir: Path, name: str, subset: str,
                     by_key: dict[tuple[str, int], Co3dFrame]) -> tuple[Path, list[Co3dFrame]]:
    stem = name[:-5] if name.endswith(".json") else name
    stem = stem if stem.startswith("set_lists_") else f"set_lists_{stem}"
    path = resolve_inside(category_dir / "set_lists", f"{stem}.json", field="set_list")
    if not path.is_file():
        raise DataError("set list not found", file=path, field="set_list", value=name)
    doc = read_json(path)
    if not isinstance(doc, dict):
        raise DataError("expected an object {subset: [[sequence_name, frame_number, image_path], ...]}", file=path)
    if subset not in doc:
        raise DataError(f"set list has no subset {subset!r} (it has {sorted(doc)})", file=path, field=subset)
    entries = doc[subset]
    if not isinstance(entries, list):
        raise DataError("expected a list of [sequence_name, frame_number, image_path]", file=path, field=subset)
    frames = []
    for j, item in enumerate(entries):
        field = f"{subset}[{j}]"
        if (not isinstance(item, list) or len(item) not in (2, 3) or not isinstance(item[0], str)
                or not isinstance(item[1], int) or isinstance(item[1], bool)):
            raise DataError("expected [sequence_name, frame_number, image_path]", file=path, field=field, value=item)
        frame = by_key.get((item[0], item[1]))
        if frame is None:
            raise DataError("frame is not in frame_annotations.jgz", file=path, field=field, value=item)
        if len(item) == 3 and _rel_path(item[2], path, f"{field}[2]") != frame.image_path:
            raise DataError(f"image path differs from frame_annotations.jgz's {frame.image_path!r}", file=path,
                            field=f"{field}[2]", value=item[2])
        frames.append(frame)
    return path, frames


def _sequence_categories(path: Path) -> dict[str, str] | None:
    if not path.is_file():
        return None
    doc = read_jgz(path)
    if not isinstance(doc, list):
        raise DataError("expected a JSON list of sequence annotations", file=path)
    out = {}
    for i, entry in enumerate(doc):
        if (not isinstance(entry, dict) or not isinstance(entry.get("sequence_name"), str)
                or not isinstance(entry.get("category"), str)):
            raise DataError("expected {sequence_name: str, category: str, ...}", file=path, field=f"[{i}]",
                            value=entry)
        out[entry["sequence_name"]] = entry["category"]
    return out


def _even(frames: list[Co3dFrame], n: int | None) -> list[Co3dFrame]:
    if n is None or n >= len(frames):
        return frames
    keep = np.unique(np.round(np.linspace(0, len(frames) - 1, n)).astype(int))
    return [frames[k] for k in keep]


def convert_co3d(root: str | Path, category: str, out: str | Path, *, sequences: Sequence[str] | None = None,
                 set_list: str | None = None, subset: str = "test", split: str | None = None,
                 frames: int | None = None, scale: float | str = 1.0, depth: bool = False,
                 depth_mask: bool = False, link: bool = False, max_pixels: int | None = MAX_INPUT_PIXELS) -> Path:
    """Convert ``root/category`` (CO3Dv2 layout, see the module docstring) to ``out/<split>.json``.

    Args:
        root: the CO3Dv2 root (the folder holding ``<category>/``; annotation paths are relative to it).
        category: the category folder, e.g. ``"apple"``; also the split's one category and every track's caption.
        out: output folder (created); images go to ``out/<image.path>``.
        sequences: convert only these sequences (default: all of the category). Not with ``set_list``.
        set_list: a set list name (``manyview_dev_0`` = ``set_lists/set_lists_manyview_dev_0.json``); only the
            frames its ``subset`` (``train`` / ``val`` / ``test``) lists are converted.
        split: the JSON's stem (default: ``subset`` with a set list, else ``test``).
        frames: keep N frames per sequence, evenly spread (default: all).
        scale: a positive factor, or ``"mean"`` (per sequence; see the module docstring).
        depth: write the depth maps. depth_mask: zero depths outside CO3D's depth masks (needs ``depth``).
        link: hard-link the images (copy when that fails) instead of copying.
        max_pixels: images, depth maps and masks with more pixels are refused from their header.

    Returns:
        the written split JSON's path.

    Raises:
        DataError: malformed annotations, a missing or mis-sized image / depth / mask (names the file and field).
        InputError: bad arguments (an unknown sequence, both ``sequences`` and ``set_list``, ...).
    """
    scale = parse_scale(scale)
    if frames is not None and (isinstance(frames, bool) or not isinstance(frames, int) or frames < 1):
        raise InputError(f"frames must be an integer >= 1, got {frames!r}")
    if sequences is not None and set_list is not None:
        raise InputError("give sequences or set_list, not both")
    if depth_mask and not depth:
        raise InputError("depth_mask needs depth=True")
    if set_list is not None and subset not in SUBSETS:
        raise InputError(f"subset must be one of {SUBSETS}, got {subset!r}")
    split = split or (subset if set_list is not None else "test")
    if not split or "/" in split or "\\" in split or split.startswith("."):
        raise InputError(f"split must be a plain file stem, got {split!r}")
    root, out = Path(root), output_folder(out)
    if not root.is_dir():
        raise DataError("CO3D root folder not found", file=root)
    category_dir = resolve_inside(root, category, field="category")
    if not category_dir.is_dir():
        raise DataError("category folder not found", file=category_dir, field="category", value=category)
    frames_file = category_dir / "frame_annotations.jgz"
    annotations = read_frame_annotations(frames_file)
    if not annotations:
        raise DataError("no frame annotations", file=frames_file)
    seq_categories = _sequence_categories(category_dir / "sequence_annotations.jgz")

    set_list_file = None
    if set_list is not None:
        by_key = {(f.sequence, f.frame_number): f for f in annotations}
        set_list_file, chosen = _set_list_frames(category_dir, set_list, subset, by_key)
        if not chosen:
            raise DataError(f"subset {subset!r} lists no frames", file=set_list_file, field=subset)
    elif sequences is not None:
        known = {f.sequence for f in annotations}
        missing = [s for s in sequences if s not in known]
        if missing:
            raise InputError(f"sequence {missing[0]!r} is not in {frames_file}")
        wanted = set(sequences)
        chosen = [f for f in annotations if f.sequence in wanted]
    else:
        chosen = annotations
    by_sequence: dict[str, list[Co3dFrame]] = {}
    for f in chosen:
        by_sequence.setdefault(f.sequence, []).append(f)
    for name in by_sequence:
        if seq_categories is not None and seq_categories.get(name, category) != category:
            raise DataError(f"sequence {name!r} has category {seq_categories[name]!r}, not {category!r}",
                            file=category_dir / "sequence_annotations.jgz", value=name)
        by_sequence[name] = _even(sorted({f.entry: f for f in by_sequence[name]}.values(),
                                         key=lambda f: f.frame_number), frames)

    # every folder is merged into OUT's: the frames and depth maps of other subsets or categories there stay
    with staged_output(out, merge=True, inputs=[root]) as stage:
        factors: dict[str, float] = {}
        videos, images, tracks, anns = [], [], [], []
        for name in sorted(by_sequence):
            seq = by_sequence[name]
            video_id = len(videos) + 1
            rel, factor = first_view_world(np.stack([f.extrinsics for f in seq]), scale, frames_file,
                                           f"; sequence {name!r} has {len(seq)} view(s)", name)
            factors[name] = factor
            track_id = len(tracks) + 1
            tracks.append({"id": track_id, "video_id": video_id, "category_id": 1, "caption": category,
                           "co3d_sequence": name})
            sizes = set()
            for index, f in enumerate(seq):
                where = f"[{f.entry}]"
                src = _inside(root, f.image_path, frames_file, f"{where}.image.path", "image")
                width, height = image_size(src)
                check_pixels(width, height, src, max_pixels)
                if (height, width) != f.size_hw:
                    raise DataError(f"image is {width}x{height} but image.size says [H, W] = {list(f.size_hw)}",
                                    file=frames_file, field=f"{where}.image.size", value=list(f.size_hw))
                sizes.add((width, height))
                target = f.image_path
                place_file(src, resolve_inside(stage, target, file=frames_file, field=f"{where}.image.path"), link)
                image_id = len(images) + 1
                entry: dict = {"id": image_id, "file_name": target, "width": width, "height": height,
                               "video_id": video_id, "frame_index": index, "annotated": f.mask_path is not None,
                               "camera": {"K": f.K.tolist(), "extrinsics": rel[index].tolist()},
                               "co3d_frame_number": f.frame_number}
                if f.timestamp is not None:
                    entry["frame_timestamp"] = f.timestamp
                if depth and f.depth_path is not None:
                    depth_src = _inside(root, f.depth_path, frames_file, f"{where}.depth.path", "depth map")
                    values = _fit(read_depth_png(depth_src, f.depth_scale, max_pixels), f.size_hw, depth_src,
                                  "depth map")
                    if depth_mask and f.depth_mask_path is not None:
                        mask_src = _inside(root, f.depth_mask_path, frames_file, f"{where}.depth.mask_path",
                                           "depth mask")
                        valid = _fit(read_mask_png(mask_src, None, max_pixels), f.size_hw, mask_src, "depth mask")
                        values = np.where(valid > 0, values, 0.0)
                    depth_name = f"depth/{f.image_path}.npz"
                    depth_dst = resolve_inside(stage, depth_name, file=frames_file, field=f"{where}.depth.path")
                    write_depth_npz(depth_dst, values * factor)
                    entry["depth_file"] = depth_name
                images.append(entry)
                if f.mask_path is None:
                    continue
                mask_src = _inside(root, f.mask_path, frames_file, f"{where}.mask.path", "mask")
                foreground = read_mask_png(mask_src, f.size_hw, max_pixels) > MASK_THRESHOLD
                if not foreground.any():
                    continue
                rle = mask_utils.encode(np.asfortranarray(foreground, dtype=np.uint8))
                anns.append({"id": len(anns) + 1, "image_id": image_id, "track_id": track_id, "category_id": 1,
                             "segmentation": rle, "bbox": [float(v) for v in mask_utils.toBbox(rle)],
                             "area": float(mask_utils.area(rle)), "iscrowd": 0})
            video: dict = {"id": video_id, "name": name, "ordered": False, "source": "co3d"}
            if len(sizes) == 1:
                video["width"], video["height"] = sizes.pop()
            videos.append(video)

        info = {"description": f"CO3Dv2 {category} -> one multi-view set per sequence",
                "co3d": {"root": str(root), "category": category, "scale": factors,
                         "world": "camera-from-world (OpenCV) relative to each video's frame_index 0",
                         "set_list": None if set_list_file is None else set_list_file.name,
                         "subset": subset if set_list is not None else None, "frames": frames}}
        dataset = {"info": info, "videos": videos, "images": images, "tracks": tracks, "annotations": anns,
                   "categories": [{"id": 1, "name": category}]}
        written = write_named_split(stage, split, dataset)
    return out / written.name


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and convert; 0 on success, 2 with one ``error:`` line on bad input
    or arguments."""
    parser = converter_parser(__doc__)
    parser.add_argument("root", help="CO3Dv2 root (holds <category>/frame_annotations.jgz)")
    parser.add_argument("--category", required=True, help="category folder, e.g. apple")
    add_out(parser, help="output folder")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--sequences", default=None, help="comma-separated sequence names (default: all)")
    which.add_argument("--set-list", default=None, help="set list name, e.g. manyview_dev_0")
    parser.add_argument("--subset", default="test", choices=SUBSETS, help="the set list's subset (default: test)")
    parser.add_argument("--split", default=None, help="JSON file stem (default: the subset, or test)")
    parser.add_argument("--frames", type=int, default=None, help="keep N frames per sequence, evenly spread")
    parser.add_argument("--scale", default="1.0", help="factor on translations / depth, or 'mean' (default: 1.0)")
    parser.add_argument("--depth", action="store_true", help="write the depth maps")
    parser.add_argument("--depth-mask", action="store_true", help="zero depths outside CO3D's depth masks")
    add_link(parser, "images")
    return run(parser, argv, _convert)


def _convert(args: argparse.Namespace) -> list[Path]:
    sequences = None
    if args.sequences is not None:
        sequences = [s.strip() for s in args.sequences.split(",") if s.strip()]
    return [convert_co3d(args.root, args.category, args.out, sequences=sequences, set_list=args.set_list,
                         subset=args.subset, split=args.split, frames=args.frames, scale=args.scale,
                         depth=args.depth, depth_mask=args.depth_mask, link=args.link)]
