"""The one resize rule: every image, mask and depth map that changes size goes through this module.

Pixel-centre convention (as :mod:`vision.data.transforms`): integer pixel coordinates are pixel centres, an image
``W`` wide covers ``[-0.5, W - 0.5]``, and resizing it to ``W'`` maps ``u -> (u + 0.5) * W' / W - 0.5``.

* :func:`resize_image` (colour images, grey images, any continuous map that may be blended): OpenCV's
  ``INTER_AREA`` when the output has fewer pixels than the input (``H' * W' < H * W``), ``INTER_LINEAR`` otherwise
  (the same number of pixels in another shape, or more); both follow the convention above. The rule compares pixel
  counts, so a resize that shrinks one axis and enlarges the other is an area resize exactly when it loses pixels.
  A frame of the requested size is copied.
* :func:`resize_nearest` (masks, instance ids, depth: values that must not be blended, any dtype): output pixel
  ``i`` takes source pixel ``floor((i + 0.5) * H / H')``, the source pixel whose cell holds the output pixel's
  centre (a centre on the edge between two cells takes the later one), in exact integer arithmetic. OpenCV's
  ``INTER_NEAREST_EXACT`` aims at the same index but computes it in 16-bit fixed point, which takes the earlier
  cell on some edges; plain ``INTER_NEAREST`` (``floor(i * H / H')``) shifts by half a pixel. Neither is used.

Sizes are ``(height, width)``, the order of ``array.shape``.
"""

from __future__ import annotations

import cv2
import numpy as np

from vision.errors import InputError

__all__ = ["crop_resize_intrinsics", "image_interpolation", "nearest_indices", "resize_image", "resize_nearest"]

#: dtypes OpenCV's area and linear resizes accept.
_IMAGE_DTYPES = (np.uint8, np.uint16, np.int16, np.float32, np.float64)


def _check_size(size: tuple[int, int]) -> tuple[int, int]:
    """``size`` as a ``(height, width)`` pair of positive ints, else :class:`InputError`."""
    try:
        height, width = size
    except (TypeError, ValueError):
        raise InputError(f"size must be a (height, width) pair of positive ints; got {size!r}") from None
    if isinstance(height, bool) or isinstance(width, bool) or not all(
            isinstance(v, (int, np.integer)) and v >= 1 for v in (height, width)):
        raise InputError(f"size must be a (height, width) pair of positive ints; got {size!r}")
    return int(height), int(width)


def image_interpolation(source: tuple[int, int], size: tuple[int, int]) -> int:
    """The OpenCV interpolation that resizes an image of ``source`` ``(H, W)`` to ``size`` ``(H', W')``:
    ``INTER_AREA`` when ``H' * W' < H * W`` (shrinking), ``INTER_LINEAR`` otherwise."""
    shrinking = size[0] * size[1] < source[0] * source[1]
    return cv2.INTER_AREA if shrinking else cv2.INTER_LINEAR


def resize_image(image: np.ndarray, size: tuple[int, int], dst: np.ndarray | None = None) -> np.ndarray:
    """``image`` (``[H, W]`` or ``[H, W, C]``; uint8, uint16, int16, float32 or float64) resized to ``size``
    ``(H', W')`` under the rule of the module docstring; a new array (a copy when the size is already ``size``).

    ``dst``: a C-contiguous array of the output's shape and dtype to write the result into; it is then returned.

    Raises:
        InputError: a bad ``size``, an image that is not 2D or 3D, a dtype OpenCV cannot blend (use
            :func:`resize_nearest` for masks and ids), or a ``dst`` of the wrong shape, dtype or layout.
    """
    height, width = _check_size(size)
    if image.ndim not in (2, 3):
        raise InputError(f"resize_image needs an [H, W] or [H, W, C] image; got shape {tuple(image.shape)}")
    if image.dtype not in _IMAGE_DTYPES:
        raise InputError(f"resize_image cannot blend dtype {image.dtype} (masks and ids: resize_nearest)")
    shape = (height, width, *image.shape[2:])
    if dst is not None and (dst.shape != shape or dst.dtype != image.dtype or not dst.flags.c_contiguous):
        raise InputError(f"dst must be a C-contiguous {image.dtype} array of shape {shape}; got {dst.dtype} "
                         f"{tuple(dst.shape)}")
    if shape == image.shape:
        if dst is None:
            return image.copy()
        np.copyto(dst, image)
        return dst
    interpolation = image_interpolation(image.shape[:2], (height, width))
    if image.ndim == 3 and image.shape[2] == 1:  # OpenCV drops a single channel axis: resize the plane
        out = dst if dst is not None else np.empty(shape, image.dtype)
        cv2.resize(image[..., 0], (width, height), dst=out[..., 0], interpolation=interpolation)
        return out
    out = cv2.resize(image, (width, height), dst=dst, interpolation=interpolation)
    return out


def nearest_indices(source: int, size: int) -> np.ndarray:
    """Source indices ``floor((i + 0.5) * source / size)`` for ``i < size`` (int64), in exact integer arithmetic."""
    i = np.arange(size, dtype=np.int64)
    return ((2 * i + 1) * source) // (2 * size)


def resize_nearest(array: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """``array`` (``[H, W, ...]``, any dtype: masks, instance ids, depth) resized to ``size`` ``(H', W')`` by
    pixel-centre nearest neighbour (:func:`nearest_indices` on each axis); a new array of the same dtype."""
    height, width = _check_size(size)
    if array.ndim < 2:
        raise InputError(f"resize_nearest needs an array of at least [H, W]; got shape {tuple(array.shape)}")
    rows = nearest_indices(array.shape[0], height)
    cols = nearest_indices(array.shape[1], width)
    return array[rows[:, None], cols[None, :]]


def crop_resize_intrinsics(K: np.ndarray, crop: tuple[float, float, float, float], out_size: tuple[int, int]) -> np.ndarray:
    """Intrinsics ``[3, 3]`` after cropping ``crop = (x0, y0, x1, y1)`` and resizing it to ``out_size = (W', H')``.

    Pixel-centre convention (the module docstring): ``u' = (u - x0 + 0.5) * sx - 0.5`` with ``sx = W' / (x1 - x0)``.
    """
    x0, y0, x1, y1 = crop
    sx = out_size[0] / float(x1 - x0)
    sy = out_size[1] / float(y1 - y0)
    A_ = np.array([[sx, 0.0, sx * (0.5 - x0) - 0.5],
                   [0.0, sy, sy * (0.5 - y0) - 0.5],
                   [0.0, 0.0, 1.0]], dtype=np.float64)
    return (A_ @ np.asarray(K, np.float64)).astype(np.float32)
