"""Scene tool (the shared real-perception backbone's cameras and depth): a real panning clip is one rigid scene;
per-frame flicker, frames out of order and cuts each break that in the features the tool names; a frozen clip is not
applicable."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.forensics.test_tools_periodicity import bikes_clip
from tests.forensics.test_tools_twoview import flicker
from vision.forensics.tools.base import Clip
from vision.forensics.tools.scene import FEATURES, SceneTool


@pytest.fixture(scope="module")
def measured(pretrained_weights) -> dict[str, dict[str, float]]:
    real = bikes_clip(60, 16, size=128)  # a camera panning past near bikes: parallax, one rigid scene
    cuts = np.concatenate([bikes_clip(start, 2, size=128) for start in range(0, 240, 30)])  # a cut every 2 frames
    clips = {"real": real, "flicker": flicker(real), "shuffled": real[np.random.default_rng(0).permutation(16)],
             "cuts": cuts}
    return {name: {k.split(".")[1]: v for k, v in SceneTool()(Clip(frames)).features.items()}
            for name, frames in clips.items()}


def test_a_real_pan_is_one_scene(measured: dict[str, dict[str, float]]) -> None:
    real = measured["real"]
    assert real["camera_solved"] == 1.0 and all(math.isfinite(real[k]) for k in FEATURES)
    assert 0.0 < real["pnp_inlier_share"] <= 1.0


def test_flicker_order_and_cuts_break_the_scene(measured: dict[str, dict[str, float]]) -> None:
    real = measured["real"]
    assert measured["flicker"]["depth_reprojection"] > 1.2 * real["depth_reprojection"]
    assert measured["shuffled"]["depth_reprojection"] > 1.4 * real["depth_reprojection"]
    assert measured["shuffled"]["cam_jerk"] > 1.5 * real["cam_jerk"]
    assert measured["cuts"]["camera_solved"] < real["camera_solved"]
    assert measured["cuts"]["cam_jerk"] > 2.0 * real["cam_jerk"]


def test_a_frozen_clip_is_not_applicable(pretrained_weights) -> None:
    frozen = SceneTool()(Clip(np.repeat(bikes_clip(0, 1, size=64), 5, axis=0)))
    assert not frozen.applicable and "frozen" in frozen.reason
