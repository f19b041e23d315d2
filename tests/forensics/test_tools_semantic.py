"""Semantic tool: the pretrained ImageNet embedding's trajectory responds to per-frame flicker of content (larger
steps) and to one region's content turning into another picture (region instability); sampling, regions and the
not-applicable cases."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
import pytest
import skimage.data

from tests.forensics.test_tools_periodicity import bikes_clip
from vision.forensics.features import load_clip
from vision.forensics.tools.base import Clip
from vision.forensics.tools.semantic import SemanticTool, grid_boxes, strided_indices


def crossfade_region(frames: np.ndarray, image: np.ndarray, cell: int = 3) -> np.ndarray:
    """``frames`` with the 2x2 grid cell ``cell`` (row-major) cross-faded linearly over the clip from its own
    content into ``image`` (area-resized to the cell): a morph confined to one region."""
    x0, y0, x1, y1 = grid_boxes(frames.shape[1], frames.shape[2])[cell]
    donor = cv2.resize(image, (x1 - x0, y1 - y0), interpolation=cv2.INTER_AREA).astype(np.float32)
    out = frames.astype(np.float32)
    for t in range(len(out)):
        a = t / (len(out) - 1)
        out[t, y0:y1, x0:x1] = (1 - a) * out[t, y0:y1, x0:x1] + a * donor
    return out.round().astype(np.uint8)


def flicker(frames: np.ndarray, seed: int = 0) -> np.ndarray:
    """Per-frame independent colour gains and strong noise: content that is redrawn differently every frame."""
    rng = np.random.default_rng(seed)
    out = frames.astype(np.float32)
    for t in range(len(out)):
        out[t] = out[t] * rng.uniform(0.6, 1.4, 3) + rng.normal(0, 25, out[t].shape)
    return np.clip(out, 0, 255).round().astype(np.uint8)


@pytest.fixture(scope="module")
def tool(pretrained_weights: Path) -> SemanticTool:
    return SemanticTool()


@pytest.fixture(scope="module")
def makeup(shared_footage: Path) -> np.ndarray:
    """32 frames of a real close-up (a face, little camera motion), 128 px."""
    return load_clip(shared_footage / "mmaction2_makeup.avi", size=128, max_frames=32).frames


def test_strided_indices_and_grid() -> None:
    assert strided_indices(16, 16).tolist() == list(range(16))
    assert strided_indices(300, 16).tolist() == list(range(0, 300, 20))  # ceil(299 / 15) = 20
    assert strided_indices(10, 16, min_stride=3).tolist() == [0, 3, 6, 9]
    assert strided_indices(0, 16).size == 0
    assert grid_boxes(64, 96) == [[0, 0, 48, 32], [48, 0, 96, 32], [0, 32, 48, 64], [48, 32, 96, 64]]


def test_flicker_raises_the_semantic_steps(tool: SemanticTool) -> None:
    real = bikes_clip(40, 16, size=128)
    base = tool(Clip(real)).features
    flick = tool(Clip(flicker(real))).features
    assert all(math.isfinite(v) for v in {**base, **flick}.values())
    assert flick["semantic.step_mean"] > 1.4 * base["semantic.step_mean"]
    assert flick["semantic.step_rel"] > base["semantic.step_rel"]


def test_a_region_morphing_into_another_picture_raises_region_instability(tool: SemanticTool,
                                                                          makeup: np.ndarray) -> None:
    base = tool(Clip(makeup))
    morph = tool(Clip(crossfade_region(makeup, skimage.data.chelsea(), cell=3)))
    b, m = base.features, morph.features
    assert m["semantic.region_drift_ratio"] > b["semantic.region_drift_ratio"] + 0.4
    assert m["semantic.region_step_ratio"] > b["semantic.region_step_ratio"] + 0.3
    # the evidence names the morphing cell (bottom-right of the 128 px frame) and the first and last sampled frames
    item = {e.statistic: e for e in morph.evidence}["semantic.region_drift_ratio"]
    assert item.region == [64, 64, 128, 128] and item.frames[0] == 0 and item.frames[-1] > 20
    # the whole frame ends up elsewhere too: the drift share of the path grows
    assert m["semantic.drift"] > b["semantic.drift"]


def test_small_clips_and_not_applicable(tool: SemanticTool, makeup: np.ndarray, shared_footage: Path) -> None:
    small = tool(load_clip(shared_footage / "mmaction2_makeup.avi", size=64, max_frames=16))
    assert small.applicable and set(small.features) == {f"semantic.{k}" for k in tool.feature_names}
    assert small.extras["sampled_frames"] == list(range(16))
    assert all(math.isfinite(v) for v in small.features.values())
    frozen = tool(Clip(np.repeat(makeup[:1], 6, axis=0)))
    assert not frozen.applicable and "frozen" in frozen.reason
    short = tool(Clip(makeup[:3]))
    assert not short.applicable and "at least 4 frames" in short.reason
    assert set(tool.descriptions) == set(tool.feature_names)
