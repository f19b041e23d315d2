"""Noise tool: a noise field that moves with the content (an animated still) correlates from frame to frame after
motion compensation; fresh noise and real footage correlate less."""

from __future__ import annotations

import math

import numpy as np
import pytest
import skimage.data

from tests.forensics.test_tools_periodicity import bikes_clip
from tests.forensics.test_tools_planar import animate_still
from vision.forensics.tools import Clip, build_tools
from vision.forensics.tools.noise import NoiseTool, band_shares, noise_residual


@pytest.fixture(scope="module")
def clips() -> dict[str, np.ndarray]:
    return {"still": animate_still(skimage.data.astronaut()), "real": bikes_clip(90, 32)}


def test_an_animated_still_carries_its_noise_field_along(clips: dict[str, np.ndarray]) -> None:
    still = NoiseTool()(Clip(clips["still"])).features
    real = NoiseTool()(Clip(clips["real"])).features
    assert still["noise.corr_warped"] > 0.9 > real["noise.corr_warped"]
    assert still["noise.corr_gain"] > real["noise.corr_gain"] + 0.2
    assert still["noise.flat_corr_warped"] > real["noise.flat_corr_warped"]
    assert all(math.isfinite(v) for v in {**still, **real}.values())


def test_fresh_noise_does_not_follow_the_motion_but_a_pasted_field_does() -> None:
    rng = np.random.default_rng(0)
    yy, xx = np.mgrid[0:96, 0:128].astype(np.float32)
    smooth = 128 + 40 * np.sin(xx / 9.0) * np.cos(yy / 13.0)  # content without fine texture
    field = rng.normal(0, 4, smooth.shape)

    def frame(t: int, noise: np.ndarray) -> np.ndarray:
        g = np.roll(smooth + noise, 2 * t, axis=1)[:, 16:112]  # 2 px/frame pan
        return np.repeat(np.clip(g, 0, 255).round().astype(np.uint8)[..., None], 3, axis=2)

    pasted = np.stack([frame(t, field) for t in range(8)])
    fresh = np.stack([np.repeat(np.clip(frame(t, 0 * field)[..., 0] + rng.normal(0, 4, (96, 96)), 0, 255)
                                .round().astype(np.uint8)[..., None], 3, axis=2) for t in range(8)])
    p = NoiseTool()(Clip(pasted)).features
    f = NoiseTool()(Clip(fresh)).features
    assert p["noise.corr_warped"] > 0.8 and abs(f["noise.corr_warped"]) < 0.1
    assert p["noise.flat_corr_warped"] > 0.8 and abs(f["noise.corr_plain"]) < 0.1


def test_residual_and_band_shares() -> None:
    flat = np.full((16, 16), 7, np.uint8)
    assert np.abs(noise_residual(flat)).max() < 1e-5
    shares = band_shares(np.random.default_rng(1).normal(size=(32, 32)))
    assert shares.shape == (6,) and shares.sum() == pytest.approx(1.0) and (shares > 0).all()
    assert band_shares(np.zeros((8, 8))).tolist() == pytest.approx([1 / 6] * 6)


def test_frozen_not_applicable_names_and_descriptions(clips: dict[str, np.ndarray]) -> None:
    frozen = NoiseTool()(Clip(np.repeat(clips["real"][:1], 5, axis=0)))
    assert not frozen.applicable and "frozen" in frozen.reason and not frozen.features
    (tool,) = build_tools(["noise"])
    assert set(tool.descriptions) == set(tool.feature_names)
    result = tool(Clip(clips["real"][:6]))
    assert list(result.features) == [f"noise.{n}" for n in tool.feature_names]
    assert all(e.description and e.frames and max(e.frames) < 6 for e in result.evidence)
