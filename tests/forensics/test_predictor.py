"""End to end: training with Lightning, the checkpoint, the predictor, bad videos, and the report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.forensics.conftest import FRAMES, SIZE
from vision.data.video import read_video, write_video
from vision.errors import DataError, InputError, VideoError
from vision.forensics.lightning import ForensicFeatureDataModule, ForensicsModule
from vision.forensics.model import ForensicDetector
from vision.forensics.predictor import ForensicsPredictor, analyze_to_report, self_tests
from vision.forensics.statistics import VERDICT_ALPHA, detector_p_value, verdict_of
from vision.forensics.task import DEFAULT_TOOLS, ForensicsConfig, load
from vision.training.checkpoint_io import load_checkpoint

VERDICTS = {"generated", "real", "insufficient evidence"}


def test_training_loss_falls(tiny_split: dict[str, Path], tmp_path: Path) -> None:
    torch.manual_seed(0)
    config = ForensicsConfig(tools=["spectrum", "npr", "temporal"], hidden=16, image_size=SIZE, max_frames=FRAMES)
    dm = ForensicFeatureDataModule(str(tiny_split["train"]), str(tiny_split["val"]), tools=config.tools,
                                   image_size=SIZE, max_frames=FRAMES, cache_dir=str(tmp_path))
    model = ForensicsModule(config=config, lr=1e-2)
    x, y = dm.train_features()
    model.model.set_normalisation(x)
    batch = {"features": torch.as_tensor(x), "label": torch.as_tensor(y, dtype=torch.float32)}
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    first = float(model.training_step(batch, 0))
    for _ in range(30):
        loss = model.training_step(batch, 0)
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert float(model.training_step(batch, 0)) < 0.7 * first
    # each tool's features are cached: a second datamodule, and one over a subset of the tools, read the same rows
    dm2 = ForensicFeatureDataModule(str(tiny_split["train"]), str(tiny_split["val"]), tools=config.tools,
                                    image_size=SIZE, max_frames=FRAMES, cache_dir=str(tmp_path))
    np.testing.assert_array_equal(dm2.train_features()[0], x)
    one = ForensicFeatureDataModule(str(tiny_split["train"]), str(tiny_split["val"]), tools=["npr"],
                                    image_size=SIZE, max_frames=FRAMES, cache_dir=str(tmp_path))
    columns = [dm.names.index(name) for name in one.names]
    np.testing.assert_array_equal(one.train_features()[0], x[:, columns])
    assert len(list(tmp_path.glob("train_*.json"))) == 3  # one cache file per tool


@pytest.mark.slow
def test_checkpoint_holds_calibration_and_reliability(trained_checkpoint: Path) -> None:
    ckpt = load_checkpoint(trained_checkpoint)
    state = ckpt["state_dict"]
    assert float(state["model.platt_a"]) > 0 and 0 < float(state["model.threshold"]) <= 1.0 + 1e-6
    assert state["model.reliability"].shape == (len(DEFAULT_TOOLS),) and float(state["model.reliability"].min()) >= 0.5
    assert float(state["model.pass_rate"]) == pytest.approx(0.95)
    known = torch.isfinite(state["model.gen_mean"])  # the generated side's reference, for the evidence rows
    assert known.any() and bool((state["model.gen_std"][known] > 0).all())
    detector, config = load(trained_checkpoint)
    assert config.image_size == SIZE and config.max_frames == FRAMES and config.hidden == 16
    predictor = ForensicsPredictor.from_checkpoint(trained_checkpoint)
    assert predictor.reliability == detector.tool_reliability() and set(predictor.reliability) == set(config.tools)
    assert float(predictor.detector.threshold) == float(state["model.threshold"])


@pytest.mark.slow
def test_predictor_on_files_and_frames(trained_checkpoint: Path, tiny_split: dict[str, Path]) -> None:
    predictor = ForensicsPredictor.from_checkpoint(trained_checkpoint)
    root = tiny_split["root"]
    videos = json.loads(tiny_split["val"].read_text())["videos"]
    scores = {}
    for video in videos:
        report = predictor.analyze(root / video["file_name"])
        v = report["verdict"]
        assert v["verdict"] in VERDICTS and 0.0 <= v["probability"] <= 1.0
        assert {p["tool"] for p in report["plan"]} == set(predictor.tool_names)
        scores[video["name"]] = (video["label"], v["probability"])
    real = [p for label, p in scores.values() if label == "real"]
    fake = [p for label, p in scores.values() if label == "generated"]
    assert np.mean(fake) > np.mean(real)  # simulated fakes are easy: plumbing check only
    frames = read_video(root / videos[0]["file_name"])
    from_frames = predictor.analyze(frames)
    assert from_frames["tools"]["codec"]["applicable"] is False
    assert from_frames["verdict"]["verdict"] in VERDICTS
    as_float = predictor.analyze(frames.astype(np.float32) / 255.0)
    assert as_float["verdict"]["probability"] == pytest.approx(from_frames["verdict"]["probability"], abs=0.05)


@pytest.mark.slow
def test_bad_videos_never_crash(trained_checkpoint: Path, tmp_path: Path) -> None:
    predictor = ForensicsPredictor.from_checkpoint(trained_checkpoint)
    rng = np.random.default_rng(0)
    frame = rng.integers(0, 255, (1, SIZE, SIZE, 3), dtype=np.uint8)
    one = write_video(tmp_path / "one.mp4", frame, preset="ultrafast")
    report = predictor.analyze(one)
    assert report["verdict"]["verdict"] == "insufficient evidence"
    assert any("frame" in r for r in report["verdict"]["reasons"])
    frozen = write_video(tmp_path / "frozen.mp4", np.repeat(frame, 10, axis=0), crf=0, preset="ultrafast")
    report = predictor.analyze(frozen)
    assert report["verdict"]["verdict"] == "insufficient evidence"
    corrupt = tmp_path / "corrupt.mp4"
    corrupt.write_bytes(b"\x00\x00\x00\x18ftypmp42" + bytes(rng.integers(0, 255, 500, dtype=np.uint8)))
    with pytest.raises(VideoError, match="corrupt.mp4"):
        predictor.analyze(corrupt)
    truncated = tmp_path / "truncated.mp4"
    good = write_video(tmp_path / "good.mp4", rng.integers(0, 255, (12, SIZE, SIZE, 3), dtype=np.uint8))
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with pytest.raises(VideoError, match="truncated.mp4"):
        predictor.analyze(truncated)
    with pytest.raises(VideoError):
        predictor.analyze(tmp_path / "missing.mp4")
    with pytest.raises(DataError, match="checkpoint"):
        ForensicsPredictor.from_checkpoint(tmp_path / "nope.ckpt")


@pytest.mark.slow
def test_analyze_to_report_writes_json_and_html(trained_checkpoint: Path, tiny_split: dict[str, Path],
                                                tmp_path: Path) -> None:
    video = tiny_split["root"] / json.loads(tiny_split["val"].read_text())["videos"][-1]["file_name"]
    out = analyze_to_report(trained_checkpoint, video, tmp_path / "report")
    assert out["verdict"] in VERDICTS
    report = json.loads(Path(out["json"]).read_text())
    assert report["verdict"]["verdict"] == out["verdict"]
    assert {"clip", "plan", "properties", "tools", "graph"} <= set(report)
    for item in report["verdict"]["ranked_evidence"]:
        assert {"statistic", "value", "frames", "z", "ref_mean", "direction"} <= set(item)
    html = Path(out["html"]).read_text()
    assert "data:image/png;base64," in html and "<h1>Verdict:" in html and "http" not in html
    # the fixture's real clips come from one video: no footage null, so no self-referential test, and it says so
    assert report["statistics"]["verdict"] == "insufficient evidence" and report["statistics"]["tests"] == []
    assert "fewer than two camera videos" in report["statistics"]["sentences"][0]
    assert "What drove it" in html and "fewer than two camera videos" in html
    # where the time went: decoding, each tool (ran or not), the whole pass against the clip's duration
    timing = report["timing"]
    assert set(timing["tools"]) == set(report["tools"]) and min(timing["tools"].values()) >= 0.0
    assert timing["total"] >= timing["decode"] + sum(timing["tools"].values()) - 1e-6
    assert timing["real_time"] == pytest.approx(timing["total"] / timing["clip_seconds"])
    assert all(report["tools"][name]["seconds"] == pytest.approx(s) for name, s in timing["tools"].items())
    assert "<h2>Timing</h2>" in html


def test_self_tests_name_the_statistics_that_drove_the_verdict() -> None:
    names = ["periodicity.sharp_p2", "noise.corr_gain", "spectrum.slope"]
    detector = ForensicDetector(names, hidden=4, dropout=0.0)
    real = np.array([[1.0, 0.1, 0.0], [1.2, 0.0, 0.0], [0.9, 0.2, 0.0], [1.1, 0.1, 0.0]])
    detector.set_footage_null(real, np.zeros(4), ["a", "a", "b", "b"])
    out = self_tests(detector, {"periodicity.sharp_p2": 400.0, "noise.corr_gain": 0.1, "spectrum.slope": 0.0})
    assert [t["feature"] for t in out["tests"]] == names[:2]  # spectrum.slope is no self-referential statistic
    assert out["drivers"][0]["feature"] == "periodicity.sharp_p2" and out["footage"] == 2
    assert out["sentences"][1].startswith("The alternation of sharpness between odd and even frames measures 400;")
    assert out["verdict"] == verdict_of(out["p_combined"]) and out["p_combined"] < 0.2
    # the verdict's level: the same p is "generated" at a looser level, not at a stricter one
    clip, p = {"periodicity.sharp_p2": 400.0, "noise.corr_gain": 0.1}, out["p_combined"]
    assert self_tests(detector, clip, alpha=min(0.99, 2 * p))["verdict"] == "generated"
    assert self_tests(detector, clip, alpha=p / 2)["verdict"] != "generated"


def test_the_config_sets_the_verdict_level() -> None:
    assert ForensicsConfig().verdict_alpha == VERDICT_ALPHA
    assert ForensicsConfig(verdict_alpha=0.0026).verdict_alpha == 0.0026
    for bad in (0.0, 1.0, -0.1, True, "0.01"):
        with pytest.raises(InputError, match="verdict_alpha"):
            ForensicsConfig(verdict_alpha=bad)


@pytest.mark.slow
def test_a_long_video_cut_short_is_refused_though_only_its_first_frames_are_analysed(trained_checkpoint: Path,
                                                                                    tmp_path: Path) -> None:
    predictor = ForensicsPredictor.from_checkpoint(trained_checkpoint)
    frames = np.random.default_rng(1).integers(0, 255, (20 * FRAMES, SIZE, SIZE, 3), dtype=np.uint8)
    good = write_video(tmp_path / "long.mp4", frames, preset="ultrafast")
    cut = tmp_path / "first_tenth.mp4"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 10])
    with pytest.raises(VideoError, match=rf"first_tenth\.mp4: .*declares {20 * FRAMES} frames but only \d+"):
        predictor.analyze(cut)


def test_self_tests_count_the_detector_score_once_the_checkpoint_has_its_null() -> None:
    names = ["periodicity.sharp_p2", "noise.corr_gain"]
    detector = ForensicDetector(names, hidden=4, dropout=0.0).eval()
    real = np.array([[1.0, 0.1], [1.2, 0.0], [0.9, 0.2], [1.1, 0.1], [1.0, 0.15], [1.05, 0.12]])
    groups = ["a", "a", "b", "b", "c", "c"]
    detector.set_footage_null(real, np.zeros(6), groups)
    clip = {"periodicity.sharp_p2": 1.0, "noise.corr_gain": 0.1}
    without = self_tests(detector, clip)
    assert [t["feature"] for t in without["tests"]] == names and without["footage"] == 3
    with torch.no_grad():
        real_scores = detector.decision_score(torch.as_tensor(real, dtype=torch.float32)).numpy()
    detector.set_score_null(real_scores, groups)
    assert detector.score_null_moments()[2:] == (2.0, 3)
    out = self_tests(detector, clip)
    assert [t["feature"] for t in out["tests"]] == names + ["detector"]
    z, p = detector_p_value(real_scores[:1], real_scores, groups)
    assert out["tests"][-1]["z"] == pytest.approx(float(z[0]), rel=1e-5)
    assert out["tests"][-1]["p"] == pytest.approx(float(p[0]), rel=1e-5)
    assert out["p_combined"] == pytest.approx(min(1.0, 3 * min(t["p"] for t in out["tests"])), rel=1e-6)
    assert any(line.startswith("The learned detector scores this clip") for line in out["sentences"])
    assert set(out["contributions"]) == {"periodicity", "noise"}
    assert any(line.startswith("The detector's score rests most on") for line in out["sentences"])
    assert "and the detector's score" in out["sentences"][0]
    state = {k: v for k, v in detector.state_dict().items() if k != "score_null"}  # an older checkpoint
    fresh = ForensicDetector(names, hidden=4, dropout=0.0)
    fresh.load_state_dict(state)
    assert fresh.score_null_moments() is None


def test_with_two_keys_the_tests_alone_do_not_call_a_clip_generated() -> None:
    from vision.forensics.predictor import _tests_decide

    tests = {"verdict": "generated", "footage": 4, "p_combined": 0.01}
    quiet = {"verdict": "real", "probability": 0.2, "threshold": 0.6, "reasons": ["detector: real"]}
    loud = dict(quiet, probability=0.9)
    assert _tests_decide(quiet, tests, 0.05)["verdict"] == "generated"  # the tests decide alone by default
    out = _tests_decide(quiet, tests, 0.05, two_keys=True)
    assert out["verdict"] == "insufficient evidence" and out["decided_by"] == "tests"
    assert any("does not call it generated" in r for r in out["reasons"])
    assert _tests_decide(loud, tests, 0.05, two_keys=True)["verdict"] == "generated"
    for said in ("real", "insufficient evidence"):  # only a "generated" needs the second key
        assert _tests_decide(quiet, dict(tests, verdict=said), 0.05, two_keys=True)["verdict"] == said


def test_tool_contributions_name_the_tool_the_score_rests_on() -> None:
    """A detector whose network reads only the noise tool's inputs: the noise tool's contribution is the whole
    change of the score, the other tool's is none, and the larger one comes first."""
    from vision.forensics.predictor import tool_contributions

    names = ["periodicity.sharp_p2", "periodicity.noise_p2", "noise.corr_gain"]
    detector = ForensicDetector(names, hidden=4, dropout=0.0).eval()
    with torch.no_grad():
        first = detector.net[0].weight
        first[:, [0, 1, 3, 4]] = 0.0  # the periodicity z-scores and their missing-value flags
        detector.anom_std.fill_(1e9)  # the anomaly term out of the way
        detector.feat_mean.copy_(torch.tensor([1.0, 2.0, 0.5]))
    x = np.array([[5.0, -3.0, 4.0]], np.float32)
    out = tool_contributions(detector, x)
    assert list(out) == ["noise", "periodicity"] and out["periodicity"] == pytest.approx(0.0, abs=1e-6)
    with torch.no_grad():
        score = detector.decision_score(torch.as_tensor(x))
        average = detector.decision_score(torch.tensor([[5.0, -3.0, 0.5]]))
    assert out["noise"] == pytest.approx(float(score - average), rel=1e-5) and out["noise"] != 0.0


def test_with_two_keys_a_clip_no_test_flags_is_called_real_once_the_detector_scores_it_under_the_cut() -> None:
    """Without the cut, a real-looking clip whose tests are not all quiet before correction stays undecided; with it,
    the detector's low score speaks for real footage and the sentence says so. A checkpoint without the cut loads
    with none."""
    names = ["periodicity.sharp_p2", "noise.corr_gain"]
    detector = ForensicDetector(names, hidden=4, dropout=0.0).eval()
    real = np.array([[1.0, 0.1], [1.2, 0.0], [0.9, 0.2], [1.1, 0.1], [1.0, 0.15], [1.05, 0.12]])
    groups = ["a", "a", "b", "b", "c", "c"]
    detector.set_footage_null(real, np.zeros(6), groups)
    with torch.no_grad():
        real_scores = detector.decision_score(torch.as_tensor(real, dtype=torch.float32)).numpy()
    detector.set_score_null(real_scores, groups)
    clip = {"periodicity.sharp_p2": 1.18, "noise.corr_gain": 0.01}  # a little unusual, far from significant
    before = self_tests(detector, clip)
    assert before["verdict"] == "insufficient evidence" and 0.05 < before["p_combined"] < 1.0
    assert not before["detector_speaks_real"] and before["generated_cut"] is None
    with torch.no_grad():
        clip_score = float(detector.decision_score(torch.tensor([[1.18, 0.01]])).item())
    detector.set_generated_cut(np.array([clip_score + 1.0, clip_score + 2.0, clip_score + 3.0]))
    assert float(detector.generated_cut) == pytest.approx(np.quantile([1.0, 2.0, 3.0], 0.05) + clip_score)
    assert self_tests(detector, clip)["verdict"] == "insufficient evidence"  # the rule "tests": no change
    after = self_tests(detector, clip, two_keys=True)
    assert after["verdict"] == "real" and after["detector_speaks_real"]
    assert any("the detector speaks for real footage" in line for line in after["sentences"])
    detector.set_generated_cut(np.array([clip_score - 2.0, clip_score - 1.0]))  # it scores like generated clips
    assert self_tests(detector, clip, two_keys=True)["verdict"] == "insufficient evidence"
    detector.set_generated_cut(np.array([1.0]))  # too few generated clips: no cut
    assert not np.isfinite(float(detector.generated_cut))
    state = {k: v for k, v in detector.state_dict().items() if k != "generated_cut"}  # an older checkpoint
    fresh = ForensicDetector(names, hidden=4, dropout=0.0)
    fresh.load_state_dict(state)
    assert not np.isfinite(float(fresh.generated_cut))


@pytest.mark.slow
def test_the_tests_decide_the_headline_once_their_nulls_span_three_videos(trained_checkpoint: Path,
                                                                         tiny_split: dict[str, Path]) -> None:
    predictor = ForensicsPredictor.from_checkpoint(trained_checkpoint)
    video = tiny_split["root"] / json.loads(tiny_split["val"].read_text())["videos"][0]["file_name"]
    before = predictor.analyze(video)
    assert before["verdict"]["decided_by"] == "detector"  # the tiny split is one video: no test can be made
    det = predictor.detector
    j = det.feature_names.index("periodicity.sharp_p2")
    value = before["tools"]["periodicity"]["features"]["periodicity.sharp_p2"]
    with torch.no_grad():  # a null over three videos that this clip's sharpness alternation lies far above
        det.null_mean[j], det.null_sd[j], det.null_df[j], det.null_footage[j] = value - 50.0, 1.0, 2.0, 3.0
        det.score_null.copy_(torch.tensor([0.0, 1e6, 2.0, 3.0]))
    after = predictor.analyze(video)
    assert after["verdict"]["decided_by"] == "tests" and after["statistics"]["footage"] == 3
    assert after["verdict"]["verdict"] == after["statistics"]["verdict"] == "generated"
    assert after["verdict"]["reasons"][0].startswith("verdict of the self-referential tests")
    assert f"alone say: {before['verdict']['verdict']}" in after["verdict"]["reasons"][0]
    assert after["verdict"]["probability"] == before["verdict"]["probability"]


@pytest.mark.slow
def test_training_fits_the_detector_score_null_by_validation_footage(tiny_split: dict[str, Path],
                                                                     tmp_path: Path) -> None:
    from tests.forensics.conftest import train_tiny_checkpoint

    val = json.loads(tiny_split["val"].read_text())
    for i, video in enumerate(v for v in val["videos"] if v["label"] == "real"):
        video["source"] = ("bikes", "second", "third")[i % 3]  # three camera videos among the real clips
    path = tiny_split["root"] / "val_three_videos.json"  # beside the clips it names
    path.write_text(json.dumps(val))
    split = dict(tiny_split, val=path)
    detector = ForensicsPredictor.from_checkpoint(train_tiny_checkpoint(split, tmp_path / "run")).detector
    mean, sd, df, videos = detector.score_null_moments()
    assert videos == 3 and df == 2.0 and sd > 0 and np.isfinite(mean)
    # one camera video among the validation clips: no null (the training checkpoint of the other tests)
    assert ForensicsPredictor.from_checkpoint(train_tiny_checkpoint(tiny_split, tmp_path / "one")).detector \
        .score_null_moments() is None
