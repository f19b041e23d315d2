"""Small file helpers (atomic writes, checked paths) and the input-size limits with the image reader.

Input-size limits, one definition for every task, the command line tools and the demo:

* :data:`MAX_INPUT_PIXELS`: a frame (an image, or one frame of a video) with more pixels is refused before it is
  decoded, from its header, with an error that names the file, its size, the limit and how to raise it. Decoding
  a frame takes ``3 * width * height`` bytes, so this bounds what one upload can make us allocate.
* :data:`MAX_WORKING_PIXELS`: frames with more pixels are downscaled (aspect ratio kept, :func:`fit_within`) when
  they are read for drawing: annotated videos, overlays and the demo's frames are at most this size. The command
  line tools still report results (boxes, masks) in the input's pixels.
* :data:`MAX_INPUT_FRAMES`: frames used per request by ``vision predict`` (its ``--max-frames``) and the upper
  bound of the demo's frame limits; longer inputs are cut to their first frames, and the output says so.

Peak memory of a prediction is then bounded by these constants (and the model's own working size), not by the
input: at most ``MAX_INPUT_FRAMES`` frames of at most ``MAX_WORKING_PIXELS`` are held, plus one frame at the input
size while it is being decoded.
"""

from __future__ import annotations

import json
import os
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from vision.data.files import regular_file
from vision.errors import DataError, InputError, VideoError

__all__ = ["atomic_write_bytes", "atomic_write_json", "resolve_inside", "MAX_INPUT_PIXELS", "MAX_WORKING_PIXELS",
           "MAX_INPUT_FRAMES", "IMAGE_SUFFIXES", "VIDEO_SUFFIXES", "check_pixels", "fit_within", "image_size",
           "read_image", "resize_frame"]

#: A frame with more pixels (4096 x 4096 = 16.8 MP) is refused from its header, before decoding.
MAX_INPUT_PIXELS = 4096 * 4096
#: Frames with more pixels (1280 x 720) are downscaled for drawing: annotated videos, overlays, demo frames.
MAX_WORKING_PIXELS = 1280 * 720
#: Frames used per request (the first ones) by vision predict and, at most, by the demo.
MAX_INPUT_FRAMES = 1000

#: Image files accepted as input (lower-case suffixes) by vision predict, the demo and :func:`read_image` (Pillow
#: reads their headers, OpenCV decodes them; TIFF included).
IMAGE_SUFFIXES: tuple[str, ...] = (".png", ".jpg", ".jpeg", ".bmp", ".webp", ".tif", ".tiff")
#: Video files accepted as input (lower-case suffixes) by vision predict, the demo and the dataset converters.
VIDEO_SUFFIXES: tuple[str, ...] = (".mp4", ".mov", ".m4v", ".avi", ".mkv", ".webm")


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and an atomic rename. The file gets
    the permissions of any new file (``0o666`` less the umask), not the temporary file's private ``0o600``. On any
    failure the temporary file is removed and ``path`` is untouched; an ``OSError`` (a full disk) names ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    umask = os.umask(0)
    os.umask(umask)
    try:
        os.fchmod(fd, 0o666 & ~umask)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        if os.path.exists(tmp):
            os.unlink(tmp)
        if isinstance(exc, OSError) and exc.filename is None:  # name the target (a full disk says no file)
            raise OSError(exc.errno, exc.strerror, str(path)) from exc
        raise


def atomic_write_json(path: str | Path, obj: Any, indent: int | None = None) -> None:
    """Deterministic JSON (sorted keys) written atomically."""
    text = json.dumps(obj, indent=indent, sort_keys=True, separators=(",", ": ") if indent else (",", ":"))
    atomic_write_bytes(path, text.encode("utf-8"))


def resolve_inside(root: str | Path, relative: str, *, file: str | Path | None = None, field: str | None = None) -> Path:
    """Resolve ``relative`` against ``root`` and refuse absolute paths or ``..`` escapes out of ``root``.

    Split files name their images, depth maps and videos relative to the JSON's folder; a name that points
    outside that folder is refused with a :class:`DataError` naming the file and field.
    """
    if not isinstance(relative, str) or not relative:
        raise DataError("expected a non-empty relative path", file=file, field=field, value=relative)
    if os.path.isabs(relative):
        raise DataError("absolute paths are not allowed in a split; name files relative to the JSON's folder",
                        file=file, field=field, value=relative)
    try:
        root = Path(root).resolve()
        target = (root / relative).resolve()
    except RuntimeError as exc:  # Python < 3.13 raises RuntimeError on a symbolic-link loop
        raise DataError(f"path cannot be resolved: a symbolic-link loop ({exc})", file=file, field=field,
                        value=relative) from None
    except OSError as exc:
        raise DataError(f"path cannot be resolved ({exc.strerror or exc})", file=file, field=field,
                        value=relative) from None
    if target != root and root not in target.parents:
        raise DataError("path escapes the split's folder", file=file, field=field, value=relative)
    return target


# ----------------------------------------------------------------------------------------------------------------
# input-size limits and the image reader


def check_pixels(width: int, height: int, file: str | Path, max_pixels: int | None = MAX_INPUT_PIXELS) -> None:
    """Refuse a frame of ``width x height`` read from ``file`` when it has more than ``max_pixels`` pixels (None:
    no limit), with a :class:`VideoError` that names the file, the size, the limit and how to raise it."""
    if max_pixels is None or width * height <= max_pixels:
        return
    side = int(max_pixels ** 0.5)
    limit = f"{side}x{side}" if side * side == max_pixels else f"{max_pixels} pixels"
    raise VideoError(f"frames of {width}x{height} ({width * height / 1e6:.1f} MP) are over the limit of {limit} "
                     f"({max_pixels / 1e6:.1f} MP) per frame; downscale the file, or raise the limit with "
                     f"--max-pixels (max_pixels= in Python)", file=file)


def fit_within(width: int, height: int, max_pixels: int) -> tuple[int, int]:
    """The size to downscale a ``width x height`` frame to so that it has at most ``max_pixels`` pixels: the size
    itself when it fits (never upscaled), else the aspect ratio kept with both sides rounded down to even numbers
    (H.264's yuv420p needs even sides, so an annotated video of such frames is not padded past the limit)."""
    if width * height <= max_pixels:
        return int(width), int(height)
    scale = (max_pixels / (width * height)) ** 0.5
    out_w, out_h = int(width * scale), int(height * scale)
    return max(1, out_w - out_w % 2), max(1, out_h - out_h % 2)


def image_size(path: str | Path) -> tuple[int, int]:
    """``(width, height)`` of an image file, read from its header without decoding the pixels (Pillow).

    Raises:
        VideoError: the file is missing or not an image Pillow can identify; or its header claims more pixels
            than Pillow's decompression-bomb guard allows (about 179 MP, whatever ``max_pixels`` the caller uses;
            the message then gives that bound, not the size).
    """
    from PIL import Image

    path = regular_file(path, what="image file", error=VideoError)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # we apply our own, lower limit
            with Image.open(path) as image:
                return int(image.width), int(image.height)
    except Image.DecompressionBombError:
        bound = 2 * (Image.MAX_IMAGE_PIXELS or 0)
        raise VideoError(f"the image header claims more than {bound} pixels (Pillow's decompression-bomb limit, "
                         f"which --max-pixels does not raise); downscale the file", file=path) from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise VideoError(f"cannot read image (corrupt or unsupported format): {exc}", file=path) from None


def read_image(path: str | Path, size: tuple[int, int] | None = None,
               max_pixels: int | None = MAX_INPUT_PIXELS) -> np.ndarray:
    """Read an image file as ``uint8 [H, W, 3]`` RGB, refusing it from its header above ``max_pixels``.

    The header is read first (:func:`image_size`) and checked with :func:`check_pixels`, so an oversized file is
    refused before any pixel is decoded; only then OpenCV decodes it (``IMREAD_COLOR``: grey expanded to three
    channels, 16 bits reduced to 8). ``size`` ``(W, H)`` resizes it (area interpolation when shrinking).

    Raises:
        VideoError: missing, unreadable or oversized file (names the file). InputError: a bad ``size``.
    """
    import cv2

    path = Path(path)
    width, height = image_size(path)
    check_pixels(width, height, path, max_pixels)
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise VideoError("cannot read image (corrupt or unsupported format)", file=path)
    return resize_frame(cv2.cvtColor(image, cv2.COLOR_BGR2RGB, dst=image), size)  # in place: no second copy


def resize_frame(frame: np.ndarray, size: tuple[int, int] | None, dst: np.ndarray | None = None) -> np.ndarray:
    """``frame`` resized to ``size`` ``(W, H)`` by :func:`vision.data.resize.resize_image` (area when shrinking,
    bilinear when enlarging, pixel-centre aligned); None or its own size: returned as is. Every reader resizes
    with this.

    ``dst``: a C-contiguous array of the output's shape and dtype to write the result into (it is then returned;
    a frame that needs no resizing is copied into it)."""
    from vision.data.resize import resize_image

    if size is None or tuple(size) == (frame.shape[1], frame.shape[0]):
        if dst is None:
            return frame
        np.copyto(dst, frame)
        return dst
    if len(size) != 2 or min(size) < 1:
        raise InputError(f"size must be a (W, H) pair of positive ints; got {size!r}")
    return resize_image(frame, (int(size[1]), int(size[0])), dst=dst)
