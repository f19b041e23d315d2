"""Planar tool: a still animated by smooth homographies moves as one plane; real footage with depth layers and
independent motion does not."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
import skimage.data

from tests.forensics.test_tools_periodicity import bikes_clip
from vision.forensics.tools import Clip, build_tools
from vision.forensics.tools.planar import PlanarTool, homography_flow

SIZE = 96


def animate_still(image: np.ndarray, count: int = 32, size: int = SIZE) -> np.ndarray:
    """Image-to-video animation of one photograph: ``count`` frames ``uint8 [count, size, size, 3]``, each a
    perspective view (smooth pan, zoom and keystone tilt, one homography per frame) of ``image`` first area-resized
    to 1.5 x ``size`` (so that the warps do not alias)."""
    still = cv2.resize(image, (int(1.5 * size), int(1.5 * size)), interpolation=cv2.INTER_AREA)
    h, w = still.shape[:2]
    out = []
    for t in range(count):
        s = t / count
        m, dx, dy, zoom, tilt = 0.12 * w, 0.25 * w * s, 0.1 * h * s, 1 - 0.15 * s, 0.05 * w * s
        quad = np.float32([[m + dx + tilt, m + dy], [w - m + dx - tilt, m + dy], [w - m + dx, h - m + dy],
                           [m + dx, h - m + dy]])
        centre = quad.mean(axis=0)
        quad = (quad - centre) * zoom + centre
        hmat = cv2.getPerspectiveTransform(quad, np.float32([[0, 0], [size, 0], [size, size], [0, size]]))
        out.append(cv2.warpPerspective(still, hmat, (size, size), flags=cv2.INTER_LINEAR))
    return np.stack(out)


@pytest.fixture(scope="module")
def clips() -> dict[str, np.ndarray]:
    return {"still": animate_still(skimage.data.astronaut()), "real": bikes_clip(90, 32)}


def test_an_animated_still_is_one_plane_and_real_footage_is_not(clips: dict[str, np.ndarray]) -> None:
    still = PlanarTool()(Clip(clips["still"])).features
    real = PlanarTool()(Clip(clips["real"])).features
    assert still["planar.explained"] > 0.93 and still["planar.inlier_share"] > 0.98
    assert still["planar.outlier_share"] < 0.01 and still["planar.residual_px"] < 0.15
    assert real["planar.explained"] < still["planar.explained"] - 0.2
    assert real["planar.outlier_share"] > 0.05 and real["planar.residual_px"] > still["planar.residual_px"]
    assert all(math.isfinite(v) for v in {**still, **real}.values())


def test_homography_flow_of_a_translation_and_a_zoom() -> None:
    flow = homography_flow(np.array([[1.0, 0, 2.5], [0, 1, -1.0], [0, 0, 1]]), 6, 8)
    assert flow.shape == (6, 8, 2) and np.allclose(flow[..., 0], 2.5) and np.allclose(flow[..., 1], -1.0)
    zoom = homography_flow(np.diag([2.0, 2.0, 1.0]), 4, 4)
    assert zoom[3, 1].tolist() == [1.0, 3.0]  # (x, y) = (1, 3) -> (2, 6)


def test_no_motion_and_one_frame_are_not_applicable(clips: dict[str, np.ndarray]) -> None:
    frozen = PlanarTool()(Clip(np.repeat(clips["still"][:1], 6, axis=0)))
    assert not frozen.applicable and "no motion" in frozen.reason and "0.25 px" in frozen.reason
    one = PlanarTool()(Clip(clips["still"][:1]))
    assert not one.applicable and "frames" in one.reason


def test_names_descriptions_and_the_backbone_depth_cues(clips: dict[str, np.ndarray]) -> None:
    from vision.geometry.model import create_backbone

    (plain,) = build_tools(["planar"])
    assert plain.feature_names == ("inlier_share", "residual_px", "explained", "outlier_share")
    assert set(plain.feature_names) < set(plain.descriptions)
    (tool,) = build_tools(["planar"], backbone=create_backbone("tiny", img_size=32))
    assert set(tool.descriptions) == set(tool.feature_names) and "depth_cv" in tool.feature_names
    result = tool(Clip(clips["still"][:8]))
    f = result.features
    assert all(math.isfinite(v) for v in f.values()), f
    assert f["planar.depth_cv"] >= 0 and f["planar.planar_depth"] == pytest.approx(
        f["planar.explained"] * f["planar.depth_cv"])
    assert [e.statistic for e in result.evidence] == list(f)
