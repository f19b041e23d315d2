"""Two-view tool: ALIKE matches of a still animated by homographies are explained by one homography, those of real
footage with parallax need a fundamental matrix; per-frame flicker breaks match chains and the epipolar fit; a
frozen clip is not applicable."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
import skimage.data

from tests.forensics.test_tools_periodicity import bikes_clip
from vision.forensics.tools.base import Clip
from vision.forensics.tools.twoview import TwoViewTool, block_starts
from vision.prepare.aigv_families import animate_still


def flicker(frames: np.ndarray, seed: int = 0) -> np.ndarray:
    """Per-frame generation with independent noise, simulated: every frame blurred by its own random amount, its
    gain jittered by up to 15 % and independent Gaussian noise (sd 6 grey levels) added."""
    rng = np.random.default_rng(seed)
    out = []
    for f in frames:
        g = cv2.GaussianBlur(f, (0, 0), rng.uniform(0.3, 1.5)).astype(np.float32)
        out.append(np.clip(g * rng.uniform(0.85, 1.15) + rng.normal(0, 6, g.shape), 0, 255).astype(np.uint8))
    return np.stack(out)


@pytest.fixture(scope="module")
def clips(pretrained_weights) -> dict[str, np.ndarray]:
    real = bikes_clip(60, 16, size=64)  # a panning camera past near bikes and a far background: parallax
    return {"real": real, "flicker": flicker(real),
            "still": animate_still(skimage.data.astronaut(), 16, 64, np.random.default_rng(0))}


def test_an_animated_still_is_one_homography_and_real_parallax_is_not(clips: dict[str, np.ndarray]) -> None:
    real = TwoViewTool()(Clip(clips["real"])).features
    still = TwoViewTool()(Clip(clips["still"])).features
    assert still["twoview.h_inliers"] > 0.8 and still["twoview.h_inliers"] > real["twoview.h_inliers"] + 0.2
    assert real["twoview.f_gain"] > still["twoview.f_gain"] + 0.1
    # real parallax ranks with the predicted depth (near bikes move more); a flat picture's does not
    assert real["twoview.depth_parallax"] > 0.4
    assert real["twoview.depth_parallax"] > still["twoview.depth_parallax"] + 0.3
    assert all(math.isfinite(v) for v in {**real, **still}.values())


def test_flicker_breaks_match_chains_and_the_epipolar_fit(clips: dict[str, np.ndarray]) -> None:
    real = TwoViewTool()(Clip(clips["real"])).features
    flick = TwoViewTool()(Clip(clips["flicker"])).features
    assert flick["twoview.dropout"] > real["twoview.dropout"] + 0.15
    assert flick["twoview.epi_median"] > real["twoview.epi_median"]
    assert flick["twoview.epi_tail"] > real["twoview.epi_tail"]


def test_frozen_clip_is_not_applicable_and_results_name_their_frames(clips: dict[str, np.ndarray]) -> None:
    frozen = TwoViewTool()(Clip(np.repeat(clips["real"][:1], 8, axis=0)))
    assert not frozen.applicable and "frozen" in frozen.reason
    tool = TwoViewTool(use_depth=False)
    assert "depth_parallax" not in tool.feature_names and set(tool.feature_names) < set(tool.descriptions)
    result = TwoViewTool()(Clip(clips["real"]))
    assert [e.statistic for e in result.evidence] == [f"twoview.{n}" for n in TwoViewTool().feature_names]
    assert all(e.frames and max(e.frames) < 16 for e in result.evidence)
    assert len(result.extras["h_inliers"]) == len(result.extras["pairs"]) >= 1


def test_block_starts_spread_runs_without_overlap() -> None:
    assert block_starts(16, 2, 4) == [0, 12]
    assert block_starts(3, 2, 4) == [0]
    starts = block_starts(250, 3, 4)
    assert starts[0] == 0 and starts[-1] == 246 and all(b - a >= 4 for a, b in zip(starts, starts[1:]))
