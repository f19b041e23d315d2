"""Convert a COLMAP text model into one unordered multi-view split (``vision prepare colmap``).

Input (COLMAP's text model, e.g. ``sparse/0`` after ``colmap model_converter --output_type TXT``)::

    MODEL/cameras.txt     CAMERA_ID MODEL WIDTH HEIGHT PARAMS[]          one line per camera
    MODEL/images.txt      IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME   then one line of 2D points (X Y POINT3D_ID)*
    MODEL/points3D.txt    POINT3D_ID X Y Z R G B ERROR (IMAGE_ID POINT2D_IDX)*   (optional)
    IMAGES/NAME           the image files, NAME relative to IMAGES

``vision prepare colmap MODEL --images IMAGES --out OUT [--scale 1|mean] [--depth DIR] [--link]``

Output: ``OUT/<split>.json`` (default ``OUT/test.json``) with one video ``{ordered: false}`` holding every
registered image as a view, ``OUT/images/NAME`` (copied, or hard-linked with ``--link``), optionally
``OUT/depth/NAME.npz`` and ``OUT/points3D.npz``.

Conventions (what is converted, and how):

* Poses: COLMAP stores world-to-camera ``x_cam = R(q) x_world + t`` with a Hamilton unit quaternion ``(qw, qx, qy,
  qz)`` (scalar first) and the camera looking down +z, x right, y down: already OpenCV camera-from-world. The
  views are sorted by ``NAME``; view 0 (or the view named by ``reference``) becomes the world frame: every
  extrinsic is re-expressed as ``E_i @ E_0^-1`` (so view 0 is ``[I | 0]``) and a COLMAP world point ``X`` becomes
  ``scale * (R_0 X + t_0)``.
* Scale: SfM units are arbitrary. ``scale=1.0`` (default) keeps COLMAP's units; a number multiplies every
  translation, depth and 3D point by it (e.g. a known metres-per-unit factor); ``scale="mean"`` normalises so that
  the mean distance of the other views' camera centres from view 0's centre is 1. The factor used is written to
  ``info.colmap.scale``. ``depth_file`` values are in the same units (metres only if the factor makes them so).
* Intrinsics: PINHOLE ``fx fy cx cy``, SIMPLE_PINHOLE ``f cx cy`` (fx = fy = f), and the distorted models
  SIMPLE_RADIAL ``f cx cy k``, RADIAL ``f cx cy k1 k2`` and OPENCV ``fx fy cx cy k1 k2 p1 p2`` (COLMAP's radial /
  OpenCV models are OpenCV's ``(k1, k2, p1, p2)`` distortion). COLMAP puts the centre of the top-left pixel at
  (0.5, 0.5), OpenCV and this package at (0, 0): ``K = [[fx, 0, cx - 0.5], [0, fy, cy - 0.5], [0, 0, 1]]``, so a
  point projecting to COLMAP pixel ``(u, v)`` projects with the split's camera to ``(u - 0.5, v - 0.5)``.
  Other models (fisheye, FULL_OPENCV, ...) are refused: run ``colmap image_undistorter`` first.
* Distortion (``distortion=``): ``"undistort"`` (default) resamples each image of a camera with non-zero
  distortion with OpenCV (``cv2.undistort`` with the same K, bilinear, pixels with no source black) so the split's
  pinhole K is exact; ``"ignore"`` copies the image unchanged, keeps K, records the coefficients as
  ``camera.distortion = {"model": "opencv", "coeffs": [k1, k2, p1, p2]}`` and warns (the pinhole K is then only
  approximate); ``"error"`` refuses such cameras. Depth maps are refused for distorted cameras (COLMAP's dense
  depth maps belong to the undistorted images of ``colmap image_undistorter``; use its ``dense/sparse`` model).
* Depth (optional, ``depth_dir=``): for image NAME, ``DIR/NAME.geometric.bin`` or ``DIR/NAME.photometric.bin``
  (COLMAP's dense format ``dense/stereo/depth_maps``: ASCII header ``W&H&C&`` then float32 little-endian, row
  major) or ``DIR/NAME.npy`` (float ``[H, W]``), z-depth in COLMAP units, 0 or non-finite = invalid, the size of the
  image. Written as ``OUT/depth/NAME.npz`` (float16, key ``depth``) times the scale. Images without a depth file
  get none; ``require_depth=True`` makes that an error.
* 3D points: ``points3D.txt`` (when present) is checked and written as ``OUT/points3D.npz`` with ``xyz`` (float64
  ``[N, 3]``, the split's world frame and scale), ``rgb`` (uint8 ``[N, 3]``) and ``ids`` (int64 ``[N]``), named by
  ``info.colmap.points3d_file``.

Malformed input is a :class:`~vision.errors.DataError` naming the file and line (``field="line N"``).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import torch

from vision.data.coco import write_depth_npz
from vision.data.io import MAX_INPUT_PIXELS, atomic_write_bytes, check_pixels, image_size, resolve_inside
from vision.errors import DataError, InputError
from vision.geometry.camera import quat_to_matrix
from vision.prepare.cameras import first_view_world, parse_scale
from vision.prepare.converter import add_link, add_out, converter_parser, run
from vision.prepare.files import output_folder, place_file, staged_output, write_named_split

__all__ = ["ColmapCamera", "ColmapImage", "read_cameras", "read_images", "read_points3d", "read_colmap_depth",
           "convert_colmap", "main", "CAMERA_MODELS"]

#: Supported COLMAP camera models -> number of parameters.
CAMERA_MODELS: dict[str, int] = {"SIMPLE_PINHOLE": 3, "PINHOLE": 4, "SIMPLE_RADIAL": 4, "RADIAL": 5, "OPENCV": 8}
DISTORTION_MODES = ("undistort", "ignore", "error")


@dataclass(frozen=True)
class ColmapCamera:
    """One line of ``cameras.txt``. ``K`` is ``[3, 3]`` in OpenCV pixels (top-left pixel centre at (0, 0)),
    ``dist`` OpenCV's ``(k1, k2, p1, p2)`` (zeros for the pinhole models)."""

    camera_id: int
    model: str
    width: int
    height: int
    K: np.ndarray
    dist: np.ndarray
    line: int

    @property
    def distorted(self) -> bool:
        return bool(np.any(self.dist != 0))


@dataclass(frozen=True)
class ColmapImage:
    """One image of ``images.txt``: world-to-camera (OpenCV) ``extrinsics`` ``[3, 4]`` in COLMAP's world."""

    image_id: int
    camera_id: int
    name: str
    extrinsics: np.ndarray
    line: int


def _data_lines(path: Path) -> list[tuple[int, str]]:
    """``(1-based line number, text without the newline)`` of every line; a missing / unreadable file is a
    DataError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise DataError("file not found (expected a COLMAP text model: cameras.txt, images.txt, points3D.txt)",
                        file=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"cannot read the file as UTF-8 text ({exc})", file=path) from None
    return [(i + 1, line.rstrip("\r\n")) for i, line in enumerate(text.split("\n"))]


def _is_data(text: str) -> bool:
    stripped = text.strip()
    return bool(stripped) and not stripped.startswith("#")


def _numbers(tokens: Sequence[str], kind: type, path: Path, line: int, what: str) -> list:
    try:
        values = [kind(t) for t in tokens]
    except ValueError:
        raise DataError(f"expected {what}", file=path, field=f"line {line}", value=" ".join(tokens)) from None
    if kind is float and not all(math.isfinite(v) for v in values):
        raise DataError(f"non-finite number in {what}", file=path, field=f"line {line}", value=" ".join(tokens))
    return values


def read_cameras(path: str | Path) -> dict[int, ColmapCamera]:
    """Parse ``cameras.txt``: ``{camera_id: ColmapCamera}`` (see :data:`CAMERA_MODELS` for the models read)."""
    path = Path(path)
    cameras: dict[int, ColmapCamera] = {}
    for line, text in _data_lines(path):
        if not _is_data(text):
            continue
        tokens = text.split()
        if len(tokens) < 4:
            raise DataError("expected 'CAMERA_ID MODEL WIDTH HEIGHT PARAMS[]'", file=path, field=f"line {line}",
                            value=text)
        (camera_id, width, height) = _numbers([tokens[0], tokens[2], tokens[3]], int, path, line,
                                              "integer CAMERA_ID, WIDTH and HEIGHT")
        model = tokens[1]
        if model not in CAMERA_MODELS:
            raise DataError(f"unsupported camera model {model!r}; supported: {', '.join(CAMERA_MODELS)} (run "
                            "'colmap image_undistorter' to get PINHOLE cameras)", file=path, field=f"line {line}",
                            value=model)
        params = _numbers(tokens[4:], float, path, line, f"{CAMERA_MODELS[model]} numeric parameters for {model}")
        if len(params) != CAMERA_MODELS[model]:
            raise DataError(f"camera model {model} takes {CAMERA_MODELS[model]} parameters, got {len(params)}",
                            file=path, field=f"line {line}", value=text)
        if width <= 0 or height <= 0:
            raise DataError("WIDTH and HEIGHT must be positive", file=path, field=f"line {line}", value=text)
        if camera_id in cameras:
            raise DataError(f"camera id {camera_id} defined twice (first on line {cameras[camera_id].line})",
                            file=path, field=f"line {line}", value=camera_id)
        if model in ("SIMPLE_PINHOLE", "SIMPLE_RADIAL", "RADIAL"):
            fx = fy = params[0]
            cx, cy = params[1], params[2]
            radial = params[3:]  # SIMPLE_PINHOLE: none, SIMPLE_RADIAL: k1, RADIAL: k1 k2
            dist = radial + [0.0] * (4 - len(radial))
        else:
            fx, fy, cx, cy = params[:4]
            dist = params[4:8] if model == "OPENCV" else [0, 0, 0, 0]
        if fx <= 0 or fy <= 0:
            raise DataError("focal lengths must be positive", file=path, field=f"line {line}", value=text)
        K = np.array([[fx, 0.0, cx - 0.5], [0.0, fy, cy - 0.5], [0.0, 0.0, 1.0]])
        cameras[camera_id] = ColmapCamera(camera_id, model, width, height, K, np.asarray(dist, float), line)
    if not cameras:
        raise DataError("no cameras", file=path)
    return cameras


def read_images(path: str | Path) -> list[ColmapImage]:
    """Parse ``images.txt`` (two lines per image; the second, the 2D points, may be empty) in file order."""
    path = Path(path)
    lines = _data_lines(path)
    images: list[ColmapImage] = []
    seen: dict[int, int] = {}
    i = 0
    while i < len(lines):
        line, text = lines[i]
        i += 1
        if not _is_data(text):
            continue
        tokens = text.split()
        if len(tokens) < 10:
            raise DataError("expected 'IMAGE_ID QW QX QY QZ TX TY TZ CAMERA_ID NAME'", file=path,
                            field=f"line {line}", value=text)
        image_id, camera_id = _numbers([tokens[0], tokens[8]], int, path, line, "integer IMAGE_ID and CAMERA_ID")
        qw, qx, qy, qz, tx, ty, tz = _numbers(tokens[1:8], float, path, line, "numbers QW QX QY QZ TX TY TZ")
        name = " ".join(tokens[9:])  # COLMAP writes NAME last; keep names with spaces whole
        norm = math.sqrt(qw * qw + qx * qx + qy * qy + qz * qz)
        if abs(norm - 1.0) > 1e-3:
            raise DataError(f"quaternion (QW QX QY QZ) is not unit length (norm {norm:.6g})", file=path,
                            field=f"line {line}", value=text)
        if image_id in seen:
            raise DataError(f"image id {image_id} listed twice (first on line {seen[image_id]})", file=path,
                            field=f"line {line}", value=image_id)
        seen[image_id] = line
        if i >= len(lines):
            raise DataError("image line has no following 2D-points line", file=path, field=f"line {line}")
        p_line, p_text = lines[i]
        i += 1
        tokens_2d = p_text.split()
        if len(tokens_2d) % 3 or p_text.lstrip().startswith("#"):
            raise DataError("expected the 2D-points line 'X Y POINT3D_ID ...' (triples) after the image line",
                            file=path, field=f"line {p_line}", value=p_text)
        _numbers(tokens_2d, float, path, p_line, "numbers X Y POINT3D_ID in the 2D-points line")
        rot = quat_to_matrix(torch.tensor([qx, qy, qz, qw], dtype=torch.float64)).numpy()  # xyzw, Hamilton
        extrinsics = np.concatenate([rot, np.array([[tx], [ty], [tz]])], axis=1)
        images.append(ColmapImage(image_id, camera_id, name, extrinsics, line))
    if not images:
        raise DataError("no images", file=path)
    return images


def read_points3d(path: str | Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parse ``points3D.txt`` -> ``(ids int64 [N], xyz float64 [N, 3], rgb uint8 [N, 3])`` in COLMAP's world."""
    path = Path(path)
    ids, xyz, rgb = [], [], []
    for line, text in _data_lines(path):
        if not _is_data(text):
            continue
        tokens = text.split()
        if len(tokens) < 8 or (len(tokens) - 8) % 2:
            raise DataError("expected 'POINT3D_ID X Y Z R G B ERROR (IMAGE_ID POINT2D_IDX)*'", file=path,
                            field=f"line {line}", value=text)
        ids.append(_numbers(tokens[:1], int, path, line, "integer POINT3D_ID")[0])
        xyz.append(_numbers(tokens[1:4], float, path, line, "numbers X Y Z"))
        colour = _numbers(tokens[4:7], int, path, line, "integer R G B")
        if not all(0 <= c <= 255 for c in colour):
            raise DataError("R G B must be in [0, 255]", file=path, field=f"line {line}", value=text)
        rgb.append(colour)
        _numbers(tokens[7:8], float, path, line, "a number ERROR")
        _numbers(tokens[8:], int, path, line, "integer IMAGE_ID POINT2D_IDX pairs")
    return (np.asarray(ids, np.int64), np.asarray(xyz, np.float64).reshape(-1, 3),
            np.asarray(rgb, np.uint8).reshape(-1, 3))


def read_colmap_depth(path: str | Path, max_pixels: int | None = MAX_INPUT_PIXELS) -> np.ndarray:
    """Read a COLMAP dense map (``*.geometric.bin`` / ``*.photometric.bin``: ASCII ``W&H&C&`` then float32
    little-endian, row major ``[C, H, W]``) -> float32 ``[H, W]`` (channel 0). The size is checked against the file
    length and ``max_pixels`` before reading the data."""
    path = Path(path)
    with open(path, "rb") as f:
        header = b""
        while header.count(b"&") < 3 and len(header) < 64:
            ch = f.read(1)
            if not ch:
                break
            header += ch
        parts = header.split(b"&")[:3]
        try:
            width, height, channels = (int(p) for p in parts)
        except ValueError:
            raise DataError("not a COLMAP dense map (header 'W&H&C&')", file=path, value=header[:32]) from None
        if width <= 0 or height <= 0 or channels <= 0:
            raise DataError("bad COLMAP dense-map size", file=path, value=header.decode("ascii", "replace"))
        check_pixels(width, height, path, max_pixels)
        expected = width * height * channels * 4
        remaining = os.fstat(f.fileno()).st_size - f.tell()
        if remaining != expected:
            raise DataError(f"COLMAP dense map of {width}x{height}x{channels} needs {expected} data bytes, the file "
                            f"has {remaining}", file=path)
        data = np.frombuffer(f.read(expected), dtype="<f4")
    return data.reshape(channels, height, width)[0].astype(np.float32)


def _find_depth(depth_dir: Path, name: str) -> Path | None:
    for suffix in (".geometric.bin", ".photometric.bin", ".npy"):
        candidate = resolve_inside(depth_dir, name + suffix, field="depth for image", file=depth_dir)
        if candidate.is_file():
            return candidate
    return None


def _load_depth(path: Path, width: int, height: int) -> np.ndarray:
    if path.suffix == ".npy":
        try:
            depth = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as exc:
            raise DataError(f"cannot read depth .npy ({exc})", file=path) from None
        depth = np.asarray(depth, np.float32)
        if depth.ndim == 3 and depth.shape[-1] == 1:
            depth = depth[..., 0]
    else:
        depth = read_colmap_depth(path)
    if depth.shape != (height, width):
        raise DataError(f"depth map is {list(depth.shape)} (H, W) but its image is [{height}, {width}]", file=path,
                        value=list(depth.shape))
    return np.where(np.isfinite(depth) & (depth > 0), depth, 0.0).astype(np.float32)


def _undistort(src: Path, dst: Path, camera: ColmapCamera) -> None:
    bgr = cv2.imread(str(src), cv2.IMREAD_UNCHANGED)
    if bgr is None:
        raise DataError("cannot decode the image", file=src)
    out = cv2.undistort(bgr, camera.K, camera.dist, newCameraMatrix=camera.K)
    dst.parent.mkdir(parents=True, exist_ok=True)
    ok, buf = cv2.imencode(dst.suffix or ".png", out)
    if not ok:
        raise DataError(f"cannot encode the undistorted image as {dst.suffix!r}", file=dst)
    atomic_write_bytes(dst, buf.tobytes())


def convert_colmap(model_dir: str | Path, images_dir: str | Path, out: str | Path, *, split: str = "test",
                   name: str | None = None, reference: str | None = None, scale: float | str = 1.0,
                   distortion: str = "undistort", depth_dir: str | Path | None = None, require_depth: bool = False,
                   link: bool = False, max_pixels: int | None = MAX_INPUT_PIXELS) -> Path:
    """Convert the COLMAP text model in ``model_dir`` (images under ``images_dir``) to ``out/<split>.json``.

    Args:
        model_dir: folder with ``cameras.txt``, ``images.txt`` and (optional) ``points3D.txt``.
        images_dir: folder that the ``NAME`` column of ``images.txt`` is relative to.
        out: output folder (created); images go to ``out/images/NAME``.
        split: the JSON's stem. name: the video's name (default: ``images_dir``'s folder name).
        reference: ``NAME`` of the view that defines the world frame (default: the first by name); it becomes
            ``frame_index`` 0, the others follow in name order.
        scale: a positive factor, or ``"mean"`` (see the module docstring).
        distortion: ``"undistort"``, ``"ignore"`` or ``"error"`` (see the module docstring).
        depth_dir: optional folder of depth maps (see the module docstring). require_depth: every view needs one.
        link: hard-link the images (copy when that fails) instead of copying; undistorted images are always new.
        max_pixels: images with more pixels are refused from their header.

    Returns:
        the written split JSON's path.

    Raises:
        DataError: a malformed or inconsistent model, a missing image or depth file (names file and line).
        InputError: bad arguments.
    """
    if distortion not in DISTORTION_MODES:
        raise InputError(f"distortion must be one of {DISTORTION_MODES}, got {distortion!r}")
    scale = parse_scale(scale)
    if not split or "/" in split or "\\" in split or split.startswith("."):
        raise InputError(f"split must be a plain file stem, got {split!r}")
    model_dir, images_dir, out = Path(model_dir), Path(images_dir), output_folder(out)
    if not images_dir.is_dir():
        raise DataError("images folder not found", file=images_dir)
    cameras_file, images_file = model_dir / "cameras.txt", model_dir / "images.txt"
    cameras = read_cameras(cameras_file)
    images = sorted(read_images(images_file), key=lambda im: im.name)
    if reference is not None:
        found = [im for im in images if im.name == reference]
        if not found:
            raise InputError(f"reference view {reference!r} is not an image NAME in {images_file}")
        images = found + [im for im in images if im.name != reference]

    names_seen: dict[str, int] = {}
    sources: list[Path] = []
    for im in images:
        where = f"line {im.line}"
        if im.camera_id not in cameras:
            raise DataError(f"CAMERA_ID {im.camera_id} is not in {cameras_file}", file=images_file, field=where,
                            value=im.camera_id)
        if im.name in names_seen:
            raise DataError(f"NAME listed twice (first on line {names_seen[im.name]})", file=images_file,
                            field=where, value=im.name)
        names_seen[im.name] = im.line
        camera = cameras[im.camera_id]
        if camera.distorted and distortion == "error":
            raise DataError(f"camera {camera.camera_id} ({camera.model}) has non-zero distortion and "
                            "distortion='error'; use 'undistort' or 'ignore', or run 'colmap image_undistorter'",
                            file=cameras_file, field=f"line {camera.line}", value=camera.dist.tolist())
        src = resolve_inside(images_dir, im.name, file=images_file, field=f"{where} NAME")
        if not src.is_file():
            raise DataError(f"image listed but not found on disk at {src}", file=images_file, field=where,
                            value=im.name)
        width, height = image_size(src)
        check_pixels(width, height, src, max_pixels)
        if (width, height) != (camera.width, camera.height):
            raise DataError(f"image is {width}x{height} but camera {camera.camera_id} (cameras.txt line "
                            f"{camera.line}) is {camera.width}x{camera.height}", file=images_file, field=where,
                            value=im.name)
        sources.append(src)

    # world frame = view 0, then scale
    rel, factor = first_view_world(np.stack([im.extrinsics for im in images]), scale, images_file)

    depth_root = Path(depth_dir) if depth_dir is not None else None
    if depth_root is not None and not depth_root.is_dir():
        raise DataError("depth folder not found", file=depth_root)
    # images/ and depth/ are merged into OUT's: the files of other splits there stay
    with staged_output(out, merge={"images", "depth"}) as stage:
        entries: list[dict] = []
        warned: set[int] = set()
        for index, (im, src) in enumerate(zip(images, sources)):
            camera = cameras[im.camera_id]
            target = f"images/{Path(im.name).as_posix()}"
            dst = resolve_inside(stage, target, file=images_file, field=f"line {im.line} NAME")
            cam_entry: dict = {"K": camera.K.tolist(), "extrinsics": rel[index].tolist()}
            if camera.distorted and distortion == "undistort":
                _undistort(src, dst, camera)
            else:
                place_file(src, dst, link)
                if camera.distorted:  # distortion == "ignore"
                    cam_entry["distortion"] = {"model": "opencv", "coeffs": camera.dist.tolist()}
                    if camera.camera_id not in warned:
                        warned.add(camera.camera_id)
                        warnings.warn(f"{cameras_file}: camera {camera.camera_id} ({camera.model}) has distortion "
                                      f"{camera.dist.tolist()}; distortion='ignore' keeps the images as they are, so "
                                      "the pinhole K in the split is only approximate", stacklevel=2)
            entry = {"id": index + 1, "file_name": target, "width": camera.width, "height": camera.height,
                     "video_id": 1, "frame_index": index, "camera": cam_entry, "colmap_image_id": im.image_id}
            if depth_root is not None:
                depth_src = _find_depth(depth_root, im.name)
                if depth_src is None and require_depth:
                    raise DataError(f"no depth map for image {im.name!r} (looked for NAME.geometric.bin, "
                                    "NAME.photometric.bin, NAME.npy)", file=depth_root, value=im.name)
                if depth_src is not None:
                    if camera.distorted:
                        raise DataError(f"depth maps need undistorted cameras, camera {camera.camera_id} is "
                                        f"{camera.model} with distortion {camera.dist.tolist()}; use the model in "
                                        "'colmap image_undistorter''s dense/sparse folder", file=cameras_file,
                                        field=f"line {camera.line}")
                    depth = _load_depth(depth_src, camera.width, camera.height) * factor
                    depth_name = f"depth/{Path(im.name).as_posix()}.npz"
                    depth_dst = resolve_inside(stage, depth_name, file=images_file, field=f"line {im.line} NAME")
                    write_depth_npz(depth_dst, depth)
                    entry["depth_file"] = depth_name
            entries.append(entry)

        info: dict = {"description": f"COLMAP text model {model_dir} -> one unordered multi-view set",
                      "colmap": {"model": str(model_dir), "scale": factor, "reference": images[0].name,
                                 "world": "camera-from-world (OpenCV) relative to frame_index 0",
                                 "distortion": distortion}}
        points_file = model_dir / "points3D.txt"
        if points_file.is_file():
            ids, xyz, rgb = read_points3d(points_file)
            xyz_new = (xyz @ images[0].extrinsics[:, :3].T + images[0].extrinsics[:, 3]) * factor
            with open(stage / "points3D.npz", "wb") as f:
                np.savez_compressed(f, ids=ids, xyz=xyz_new, rgb=rgb)
            info["colmap"]["points3d_file"] = "points3D.npz"
        sizes = {(e["width"], e["height"]) for e in entries}
        video: dict = {"id": 1, "name": name or images_dir.resolve().name, "ordered": False}
        if len(sizes) == 1:
            video["width"], video["height"] = sizes.pop()
        dataset = {"info": info, "images": entries, "annotations": [], "categories": [], "videos": [video]}
        written = write_named_split(stage, split, dataset)
    return out / written.name


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and convert; 0 on success, 2 with one ``error:`` line on a bad model
    or arguments."""
    parser = converter_parser(__doc__)
    parser.add_argument("model", help="folder with cameras.txt, images.txt, points3D.txt (COLMAP text model)")
    parser.add_argument("--images", required=True, help="folder the NAME column of images.txt is relative to")
    add_out(parser, help="output folder")
    parser.add_argument("--split", default="test", help="JSON file stem (default: test)")
    parser.add_argument("--name", default=None, help="video name (default: the images folder's name)")
    parser.add_argument("--reference", default=None, help="NAME of the view that defines the world frame")
    parser.add_argument("--scale", default="1.0", help="factor on translations / depth, or 'mean' (default: 1.0)")
    parser.add_argument("--distortion", default="undistort", choices=DISTORTION_MODES)
    parser.add_argument("--depth", default=None, help="folder of depth maps (NAME.geometric.bin or NAME.npy)")
    parser.add_argument("--require-depth", action="store_true", help="every view must have a depth map")
    add_link(parser, "images")
    return run(parser, argv, _convert)


def _convert(args: argparse.Namespace) -> list[Path]:
    """The split's path; the conversion's warnings are printed once it has succeeded, one ``warning:`` line each."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        path = convert_colmap(args.model, args.images, args.out, split=args.split, name=args.name,
                              reference=args.reference, scale=args.scale, distortion=args.distortion,
                              depth_dir=args.depth, require_depth=args.require_depth, link=args.link)
    for w in caught:
        print(f"warning: {w.message}", file=sys.stderr)
    return [path]
