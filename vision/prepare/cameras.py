"""What the multi-view converters share: the ``scale`` option and the move of a set of cameras into the first view's
frame (:mod:`vision.prepare.colmap`, :mod:`vision.prepare.co3d`)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch

from vision.errors import DataError, InputError
from vision.geometry.camera import compose_extrinsics, invert_extrinsics

__all__ = ["parse_scale", "first_view_world"]


def parse_scale(scale: float | str) -> float | str:
    """The ``scale`` option: a positive number (a string is parsed) or ``"mean"``; anything else is an
    :class:`InputError`."""
    if isinstance(scale, str) and scale != "mean":
        try:
            scale = float(scale)
        except ValueError:
            raise InputError(f"scale must be a positive number or 'mean', got {scale!r}") from None
    if not isinstance(scale, str) and not (math.isfinite(scale) and scale > 0):
        raise InputError(f"scale must be a positive number or 'mean', got {scale!r}")
    return scale


def first_view_world(extrinsics: np.ndarray, scale: float | str, file: str | Path | None = None,
                     where: str = "", value: object = None) -> tuple[np.ndarray, float]:
    """OpenCV camera-from-world extrinsics ``[N, 3, 4]`` re-expressed with view 0 as the world frame (``E_i @
    E_0^-1``; view 0 exactly ``[I | 0]``) and their translations times the scale factor: ``scale`` itself, or for
    ``"mean"`` the factor that makes the mean distance of the other camera centres from view 0's equal 1.

    Returns ``(extrinsics float64 [N, 3, 4], factor)``. ``"mean"`` without two distinct camera centres is a
    :class:`DataError` naming ``file`` (``where``: what the views are, e.g. a sequence; ``value``: its name).
    """
    ext = torch.as_tensor(np.asarray(extrinsics), dtype=torch.float64)
    rel = compose_extrinsics(ext, invert_extrinsics(ext[0]).expand_as(ext)).numpy()
    rel[0] = np.eye(3, 4)  # exactly identity, not up to rounding
    if scale == "mean":
        centres = -np.einsum("nji,nj->ni", rel[:, :, :3], rel[:, :, 3])  # C = -R^T t
        dists = np.linalg.norm(centres[1:], axis=1)
        if len(dists) == 0 or dists.mean() <= 1e-12:
            raise DataError(f"scale='mean' needs at least two views with distinct camera centres{where}", file=file,
                            value=value)
        factor = float(1.0 / dists.mean())
    else:
        factor = float(scale)
    rel[:, :, 3] *= factor
    return rel, factor
