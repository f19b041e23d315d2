"""Shared by the converter tests: projection with a split's camera."""

from __future__ import annotations

import numpy as np


def project_with_split_camera(points: np.ndarray, camera: dict) -> np.ndarray:
    """World points ``[N, 3]`` -> pixels ``[N, 2]`` with a split's ``camera`` (``K`` 3x3, ``extrinsics`` 3x4 OpenCV
    camera-from-world; pixel centres at integer coordinates); every point must lie in front of the camera."""
    K, E = np.asarray(camera["K"]), np.asarray(camera["extrinsics"])
    cam = points @ E[:, :3].T + E[:, 3]
    assert (cam[:, 2] > 0).all()
    pix = cam @ K.T
    return pix[:, :2] / pix[:, 2:]


def mean_distance_from_first_camera(frames: list[dict]) -> float:
    """The mean distance of the other views' camera centres from view 0's (which is the origin): ``scale="mean"``
    makes it 1."""
    extr = np.asarray([f["camera"]["extrinsics"] for f in frames])
    centres = -np.einsum("nji,nj->ni", extr[:, :, :3], extr[:, :, 3])
    return float(np.linalg.norm(centres[1:], axis=1).mean())
