"""Depth tool: TCMonoDepth depth of per-frame flickering frames changes more, and less in step with the motion, than
the depth of the real footage they were made from; frames re-made by interpolation enter the pair features; a frozen
clip is not applicable."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.forensics.test_tools_periodicity import bikes_clip
from tests.forensics.test_tools_twoview import flicker
from vision.forensics.tools.base import Clip
from vision.forensics.tools.depth import (
    DepthTool,
    normalise,
    sample_blocks,
    span_pairs_of,
)
from vision.prepare.aigv_families import interp_blend, interp_flow


@pytest.fixture(scope="module")
def clips(pretrained_weights) -> dict[str, np.ndarray]:
    return {f"real{s}": bikes_clip(s, 16, size=64) for s in (0, 120)}


@pytest.mark.parametrize("start", [0, 120])
def test_per_frame_flicker_raises_depth_flicker_and_warp_error(clips: dict[str, np.ndarray], start: int) -> None:
    real = DepthTool()(Clip(clips[f"real{start}"])).features
    flick = DepthTool()(Clip(flicker(clips[f"real{start}"], seed=start))).features
    assert flick["depth.flicker"] > 1.2 * real["depth.flicker"]
    assert flick["depth.warp_error"] > 1.5 * real["depth.warp_error"]
    assert all(math.isfinite(real[f"depth.{k}"]) for k in ("flicker", "warp_error"))


@pytest.mark.parametrize("interpolate", [interp_blend, interp_flow])
def test_interpolated_frames_move_the_pair_features(clips: dict[str, np.ndarray], interpolate) -> None:
    real = DepthTool()(Clip(clips["real120"]))
    interp = DepthTool()(Clip(interpolate(clips["real120"])))
    before = {tuple(p): v for p, v in zip(real.extras["span_pairs"], real.extras["h_depth_residual"])}
    after = {tuple(p): v for p, v in zip(interp.extras["span_pairs"], interp.extras["h_depth_residual"])}
    assert {b - a for a, b in before} == {1, 2, 3}
    # interpolation replaces the odd frames 1..13 and keeps the even ones and the last (15)
    replaced = set(range(1, 15, 2))
    kept = [p for p in before.keys() & after.keys() if not replaced & set(p)]
    made = [p for p in before.keys() & after.keys() if replaced & set(p)]
    assert kept and len(made) >= 10
    assert all(after[p] == pytest.approx(before[p], abs=1e-5) for p in kept)
    assert sum(after[p] != pytest.approx(before[p], abs=1e-4) for p in made) >= 0.8 * len(made)
    for key in ("h_depth_residual", "parallax_rank"):
        assert interp.features[f"depth.{key}"] != pytest.approx(real.features[f"depth.{key}"], abs=1e-3)


def test_frozen_clip_is_not_applicable_and_results_carry_curves(clips: dict[str, np.ndarray]) -> None:
    frozen = DepthTool()(Clip(np.repeat(clips["real0"][:1], 6, axis=0)))
    assert not frozen.applicable and "frozen" in frozen.reason
    result = DepthTool()(Clip(clips["real0"]))
    assert [e.statistic for e in result.evidence] == [f"depth.{n}" for n in DepthTool.feature_names]
    assert set(DepthTool.feature_names) == set(DepthTool.descriptions)
    assert len(result.extras["flicker"]) == len(result.extras["pairs"]) == 15
    assert len(result.extras["depth_scale"]) == 16
    region = next(e.region for e in result.evidence if e.statistic == "depth.warp_error")
    assert region is not None and 0 <= region[0] < region[2] <= 64 and 0 <= region[1] < region[3] <= 64


def test_normalise_is_scale_and_shift_invariant_and_blocks_cover_long_clips() -> None:
    x = np.random.default_rng(0).random((8, 8)).astype(np.float32)
    assert np.allclose(normalise(x), normalise(3.0 * x + 7.0), atol=1e-5)
    assert not normalise(np.ones((4, 4))).any()
    assert sample_blocks(10, 16, 4) == [list(range(10))]
    blocks = sample_blocks(250, 16, 4)
    assert len(blocks) == 4 and blocks[0] == [0, 1, 2, 3] and blocks[-1] == [246, 247, 248, 249]
    pairs = span_pairs_of(blocks, (1, 2, 3))
    assert len(pairs) == 4 * (3 + 2 + 1) and (0, 3) in pairs and (1, 2) in pairs and (246, 249) in pairs
    assert all(b - a in (1, 2, 3) and any(a in blk and b in blk for blk in blocks) for a, b in pairs)
