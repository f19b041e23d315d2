"""Single-video forensic analysis from a trained checkpoint.

``ForensicsPredictor.from_checkpoint(path).analyze(video)`` -> report dict with ``verdict`` (``generated | real |
insufficient evidence``, calibrated probability, threshold, reasons, ranked evidence, conflicts, agents),
``plan`` (which tools ran and why), ``tools`` (per-tool features and evidence), ``properties`` and ``clip``.
``analyze_to_report(ckpt, video, out_dir)`` also writes ``report.json`` and ``report.html``.

A missing, corrupt or truncated file raises :class:`~vision.errors.VideoError` naming the file and, for a truncated
one, the frame counts the container declares and the file holds (checked although only the first ``max_frames``
frames are analysed); so do frames over ``max_pixels`` (default :data:`vision.data.io.MAX_INPUT_PIXELS`), refused
before decoding. A one-frame or frozen video gives the verdict ``insufficient evidence``.

A detector whose config names a geometry backbone (``ForensicsConfig.geometry``) measures the ``geometry`` and
``planar`` tools' backbone cues with the backbone its checkpoint holds
(``vision.forensics.task.load(..., with_backbone=True)``): the forensic checkpoint is the only file needed.
"""

from __future__ import annotations

import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vision.data.io import MAX_INPUT_PIXELS
from vision.device import autocast, load_for_inference, placement
from vision.errors import InputError
from vision.forensics.evidence import EvidenceGraph, clip_properties, deliberate, plan_tools
from vision.forensics.features import ToolBackbone, clip_features, frames_to_clip, load_clip
from vision.forensics.model import ForensicDetector, feature_matrix
from vision.forensics.report import write_report
from vision.forensics.statistics import (VERDICT_ALPHA, combine, explain, p_values, score_p_value, verdict_of,
                                         z_scores)
from vision.forensics.task import ForensicsConfig, load
from vision.forensics.tools import build_tools, feature_names
from vision.forensics.tools.base import Clip

__all__ = ["Predictor", "ForensicsPredictor", "MIN_TEST_FOOTAGE", "analyze_to_report", "public_report", "self_tests",
           "timing_of", "tool_contributions"]


#: Camera videos a checkpoint's real nulls must span before the tests' verdict becomes the headline verdict (with
#: two, the tests have one degree of freedom: too few to call a clip real or generated on their own).
MIN_TEST_FOOTAGE = 3


def tool_contributions(detector: ForensicDetector, x: np.ndarray) -> dict[str, float]:
    """How much each tool's features move the detector's decision score on one clip's feature row ``x [1, F]``:
    ``{tool: s(x) - s(x with the tool's features at their training mean)}``, largest magnitude first (positive:
    the tool pushes towards generated). The tool's features set to the training mean give the input the detector
    sees for an average training clip in them, with no missing-value flag."""
    rows = [np.asarray(x, np.float32).reshape(1, -1)]
    mean = detector.feat_mean.detach().cpu().numpy()
    for tool in detector.tools:
        row = rows[0].copy()
        columns = [j for j, name in enumerate(detector.feature_names) if name.split(".")[0] == tool]
        row[0, columns] = mean[columns]
        rows.append(row)
    with torch.no_grad():
        scores = detector.decision_score(torch.as_tensor(np.concatenate(rows),
                                                         device=detector.threshold.device)).float().cpu().numpy()
    out = {tool: float(scores[0] - scores[k + 1]) for k, tool in enumerate(detector.tools)}
    return dict(sorted(out.items(), key=lambda item: -abs(item[1])))


def self_tests(detector: ForensicDetector, features: dict[str, float], top: int = 3,
               alpha: float = VERDICT_ALPHA, two_keys: bool = False) -> dict[str, Any]:
    """The self-referential statistics of one clip's ``features`` against the detector's footage null
    (:mod:`vision.forensics.statistics`), with the detector's own decision score as one more test against the real
    validation clips' scores (:meth:`ForensicDetector.score_null_moments`, where the checkpoint has it):
    ``{"tests": [{feature, z, p}] ("detector" for the detector's), "p_combined", "verdict", "drivers"
    (:func:`~vision.forensics.statistics.explain`'s top rows), "sentences", "footage", "generated_cut",
    "detector_speaks_real", "contributions"}`` (:func:`tool_contributions`: what each tool's features add to the
    detector's score). The verdict is :func:`~vision.forensics.statistics.verdict_of`'s; with ``two_keys`` (the
    config's ``verdict_rule`` ``two-keys``), a clip no test finds unusual after correction whose detector score lies
    under the detector's ``generated_cut`` (what ``pass_rate`` of the generated validation clips reach) is called
    ``real`` rather than left undecided: the tests alone call a clip real only when none is unusual even before
    correction, which most real clips miss by chance when there are many tests. With no null (a checkpoint trained
    on one footage, or without the buffers) the verdict is ``insufficient evidence`` and the sentence says why.
    ``alpha``: the verdict's level (:attr:`ForensicsConfig.verdict_alpha` in :meth:`ForensicsPredictor.analyze`)."""
    null = detector.footage_null()
    names = detector.feature_names
    x = feature_matrix([features], names)
    z, used = z_scores(x, names, null)
    p = p_values(z, used, null)
    score_null = detector.score_null_moments()
    det_z, det_p = np.full(1, np.nan), np.full(1, np.nan)
    if score_null is not None:
        with torch.no_grad():
            score = detector.decision_score(torch.as_tensor(x, device=detector.threshold.device))
        det_z, det_p = score_p_value(score.float().cpu().numpy(), score_null)
    p_comb, k = combine(np.concatenate([p, det_p[:, None]], axis=1))
    verdict = verdict_of(float(p_comb[0]), alpha=alpha)
    cut = float(detector.generated_cut)
    speaks_real = (two_keys and verdict == "insufficient evidence" and np.isfinite(det_p[0])
                   and float(p_comb[0]) > alpha and math.isfinite(cut) and float(score.item()) < cut)
    if speaks_real:  # no test is unusual, and the detector scores it under what generated clips reach
        verdict = "real"
    footage = max([m[3] for m in null.moments.values()] + [score_null[3] if score_null else 0])
    drivers = explain(features, z[0], p[0], used, null, top=top)
    tests = [{"feature": st.feature, "z": float(zz), "p": float(pp)} for st, zz, pp in zip(used, z[0], p[0])]
    sentences = []
    if np.isfinite(det_p[0]):
        tests.append({"feature": "detector", "z": float(det_z[0]), "p": float(det_p[0])})
        mean, sd, _, videos = score_null
        sentences.append(f"The learned detector scores this clip {float(score.item()):.3g}; real footage's validation "
                         f"clips ({videos} videos) give {mean:.3g} ± {sd:.3g} for a new video, so it lies "
                         f"{float(det_z[0]):+.1f} spreads from them (p = {float(det_p[0]):.2g}).")
    contributions = tool_contributions(detector, x)
    leading = [f"{tool} ({value:+.2g})" for tool, value in list(contributions.items())[:3] if abs(value) > 0]
    if leading and np.isfinite(det_p[0]):
        sentences.append("The detector's score rests most on " + ", ".join(leading) + ": each is how much higher "
                         "the score is than it would be were that tool's measurements those of an average training "
                         "clip (+: towards generated).")
    if speaks_real:
        sentences.append(f"The detector's score {float(score.item()):.3g} lies under {cut:.3g}, the score "
                         f"{float(detector.pass_rate):.0%} of the generated validation clips reach, and no test is "
                         f"unusual after correcting for their number: the detector speaks for real footage.")
    if not int(k[0]):
        lead = ("No self-referential test could be made: the detector's real reference covers fewer than two camera "
                "videos, so how far new footage may lie is unknown.")
    else:
        what = f"{len(used)} statistics" + (" and the detector's score" if np.isfinite(det_p[0]) else "")
        lead = (f"Self-referential tests: {what} compared with real camera footage ({footage} videos); the most "
                f"unusual, corrected for their number, has p = {float(p_comb[0]):.2g}, so these tests say: {verdict}.")
    return {"tests": tests, "p_combined": float(p_comb[0]), "verdict": verdict, "footage": int(footage),
            "generated_cut": cut if math.isfinite(cut) else None, "detector_speaks_real": bool(speaks_real),
            "contributions": contributions,
            "drivers": drivers, "sentences": [lead] + [d["sentence"] for d in drivers] + sentences}


def _tests_decide(verdict: dict[str, Any], tests: dict[str, Any], alpha: float,
                  two_keys: bool = False) -> dict[str, Any]:
    """The headline verdict taken from the tests (:func:`self_tests`); the detector-and-evidence call it replaces
    stays first among the reasons. ``decided_by``: ``"tests"``. With ``two_keys``, the tests' ``generated``
    stands only where the detector alone, at its threshold, calls the clip generated too; otherwise it is
    ``insufficient evidence`` and a reason says why."""
    said = verdict["verdict"]
    headline = tests["verdict"]
    probability = verdict.get("probability")
    detector_calls = probability is not None and probability >= verdict["threshold"]
    reasons = []
    if two_keys and headline == "generated" and not detector_calls:
        headline = "insufficient evidence"
        reasons.append("the tests find the clip unusual, but the detector alone does not call it generated "
                       "(probability under its threshold): one line of evidence only, so no verdict")
    lead = (f"verdict of the self-referential tests, the detector's score one of them, against real camera footage "
            f"({tests['footage']} videos): the Bonferroni-combined p is {tests['p_combined']:.2g}; generated at or "
            f"below {alpha:g}, real when no test is unusual even before correcting for their number or when none is "
            f"after correcting and the detector scores the clip under what generated clips reach, otherwise "
            f"insufficient evidence. The detector and the evidence graph alone say: {said}")
    return dict(verdict, verdict=headline, decided_by="tests", reasons=[lead] + reasons + list(verdict["reasons"]))


class ForensicsPredictor:
    """A calibrated detector + the tool set it was trained on + per-tool reliability (the detector's buffer).

    Args:
        detector: a trained :class:`ForensicDetector` (its buffers hold normalisation, reference, calibration,
            threshold and reliability).
        config: its :class:`ForensicsConfig` (tools in training order, the clip policy ``image_size`` and
            ``max_frames``, the geometry backbone's size).
        backbone: the frozen geometry backbone the detector was trained with (required when ``config.geometry`` is
            set, refused otherwise); it may sit on any device (its images are moved there).
        device: where the detector and backbone run (``"auto"``, ``"cpu"``, ``"cuda[:N]"``, ``"mps"``, a
            ``torch.device``; default: where the detector is). precision: ``"32"``, ``"bf16"``, ``"16"`` or a
            ``torch.dtype``: the geometry backbone runs under :func:`vision.device.autocast` in it (the only
            network of the tool set; the tools' signal processing and the calibrated detector stay float32, so a
            detector without a backbone gives the same report in every precision).
    """

    def __init__(self, detector: ForensicDetector, config: ForensicsConfig,
                 backbone: torch.nn.Module | None = None, device: str | torch.device | None = None,
                 precision: str | torch.dtype = "32") -> None:
        self.device, self.dtype = placement(device, precision, detector)
        detector = detector.to(self.device)
        if backbone is not None:
            backbone = _Autocast(backbone.to(self.device), self.device, self.dtype)
        self.config = config
        if (backbone is None) != (config.geometry is None):
            raise InputError(f"config.geometry is {config.geometry!r} but "
                             f"{'no' if backbone is None else 'a'} geometry backbone was given; a detector uses "
                             "the backbone its config names (ForensicsPredictor.from_checkpoint loads it)")
        self.backbone = None if backbone is None else backbone.eval()
        self.tools = build_tools(config.tools, backbone=None if backbone is None else ToolBackbone(backbone))
        if feature_names(self.tools) != detector.feature_names:
            raise InputError("the detector's feature names do not match the config's tools")
        self.detector = detector.eval()
        self.tool_names = list(config.tools)
        self.reliability = detector.tool_reliability()
        self.size, self.max_frames = config.image_size, config.max_frames

    @classmethod
    def from_checkpoint(cls, path: str | Path, device: str | torch.device = "cpu",
                        precision: str | torch.dtype = "32") -> "ForensicsPredictor":
        """Load a checkpoint of :class:`vision.forensics.lightning.ForensicsModule`, its geometry backbone included,
        on ``device`` (``"auto"`` and the other names of :func:`vision.device.resolve_device`; through
        :func:`vision.forensics.task.load` with ``with_backbone=True`` and :func:`vision.device.load_for_inference`;
        a missing, unreadable or foreign file is a ``DataError`` naming it), run in ``precision``."""
        (detector, config, backbone), device, dtype = load_for_inference(load, path, device, precision,
                                                                        with_backbone=True)
        return cls(detector, config, backbone, device=device, precision=dtype)

    def make_clip(self, video: str | Path | np.ndarray, fps: float = 25.0,
                  max_pixels: int | None = MAX_INPUT_PIXELS) -> Clip:
        """A video path or frames ``[T, H, W, 3]`` (uint8, or float in [0, 1]) -> the analysed :class:`Clip`."""
        if isinstance(video, (str, Path)):
            return load_clip(video, size=self.size, max_frames=self.max_frames, max_pixels=max_pixels)
        if isinstance(video, torch.Tensor):
            video = video.detach().cpu().numpy()
            if video.ndim == 4 and video.shape[1] == 3 and video.shape[-1] != 3:  # [S, 3, H, W] tensors
                video = video.transpose(0, 2, 3, 1)
        if isinstance(video, np.ndarray):
            return frames_to_clip(video, size=self.size, max_frames=self.max_frames, fps=fps)
        raise InputError(f"video must be a path or a [T, H, W, 3] array; got {type(video).__name__}")

    @torch.no_grad()
    def analyze(self, video: str | Path | np.ndarray, fps: float = 25.0,
                max_pixels: int | None = MAX_INPUT_PIXELS) -> dict[str, Any]:
        """Analyse one video (see the module docstring); returns the JSON-ready report with ``extras`` (arrays
        for plots, not JSON) under the private key ``_extras`` and the clip under ``_clip``. ``max_pixels``: a
        video file with larger frames is refused before decoding (None: no limit)."""
        start = time.perf_counter()
        clip = self.make_clip(video, fps=fps, max_pixels=max_pixels)
        decoded = time.perf_counter() - start
        props = clip_properties(clip)
        plan = plan_tools(props, self.tool_names, self.reliability)
        reference = self.detector.reference()
        features, results = clip_features(clip, self.tools, reference)
        applicable = [name for name, r in results.items() if r.applicable]
        probability = None
        if applicable and not props["frozen"] and clip.num_frames >= 2:
            x = torch.as_tensor(feature_matrix([features], self.detector.feature_names),
                                device=self.detector.threshold.device)
            probability = float(self.detector.probability(x)[0])
        weighed = [p["tool"] for p in plan if p["weigh"] and results[p["tool"]].applicable]
        for p in plan:  # a tool may find out while measuring that it cannot apply
            if p["run"] and not results[p["tool"]].applicable:
                p["run"], p["weigh"], p["reason"] = False, False, results[p["tool"]].reason
        graph = EvidenceGraph.build(results, self.reliability, weighed, reference=reference)
        verdict = deliberate(graph, probability, float(self.detector.threshold), props, plan,
                             pass_rate=float(self.detector.pass_rate))
        report = {
            "clip": {"name": clip.name, "num_frames": clip.num_frames, "width": clip.width, "height": clip.height,
                     "fps": clip.fps, "path": None if clip.path is None else str(clip.path)},
            "verdict": verdict.to_dict(), "plan": plan, "properties": props,
            "tools": {name: r.to_dict() for name, r in results.items()},
            "graph": graph.to_dict(),
        }
        two_keys = self.config.verdict_rule == "two-keys"
        tests = self_tests(self.detector, features, alpha=self.config.verdict_alpha, two_keys=two_keys)
        report["statistics"] = tests
        # the tests decide where their nulls span enough footage and the clip could be scored at all (otherwise
        # the detector's call, or the reason it could not make one, stands)
        scored = probability is not None and not props["frozen"] and clip.num_frames >= 2
        report["verdict"] = (_tests_decide(report["verdict"], tests, self.config.verdict_alpha, two_keys)
                             if scored and tests["footage"] >= MIN_TEST_FOOTAGE
                             else dict(report["verdict"], decided_by="detector"))
        report["timing"] = timing_of(clip, decoded, results, time.perf_counter() - start)
        report["_extras"] = {name: r.extras for name, r in results.items()}
        report["_clip"] = clip
        return report

    def score(self, video: str | Path | np.ndarray) -> float:
        """Calibrated probability of generated (``nan`` when the clip cannot be scored)."""
        p = self.analyze(video)["verdict"]["probability"]
        return float("nan") if p is None else float(p)


class _Autocast(torch.nn.Module):
    """A geometry backbone whose forward runs under :func:`vision.device.autocast` (what
    :class:`~vision.forensics.features.ToolBackbone` wraps: it reads ``aggregator`` and ``patch_size``)."""

    def __init__(self, backbone: torch.nn.Module, device: torch.device, dtype: torch.dtype) -> None:
        super().__init__()
        self.inner = backbone
        self.device, self.dtype = device, dtype

    @property
    def aggregator(self) -> torch.nn.Module:
        return self.inner.aggregator

    @property
    def patch_size(self) -> int:
        return int(self.inner.patch_size)

    def forward(self, images: torch.Tensor) -> Any:
        with autocast(self.device, self.dtype):
            return self.inner(images)


def timing_of(clip: Clip, decode: float, results: dict[str, Any], total: float) -> dict[str, Any]:
    """Where an analysis spent its time: ``{"decode", "tools": {tool: seconds}, "total", "clip_seconds" (the
    analysed frames' duration), "real_time" (total / clip_seconds: under 1 is faster than real time)}``."""
    clip_seconds = clip.num_frames / clip.fps
    return {"decode": decode, "tools": {name: float(r.seconds) for name, r in results.items()}, "total": total,
            "clip_seconds": clip_seconds, "real_time": total / clip_seconds}


def public_report(report: dict[str, Any]) -> dict[str, Any]:
    """The JSON part of an :meth:`ForensicsPredictor.analyze` report (private keys dropped, nan -> None)."""
    def clean(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if not str(k).startswith("_")}
        if isinstance(value, (list, tuple)):
            return [clean(v) for v in value]
        if isinstance(value, (float, np.floating)):
            return float(value) if math.isfinite(float(value)) else None
        if isinstance(value, (np.integer,)):
            return int(value)
        if isinstance(value, np.bool_):
            return bool(value)
        return value
    return clean(report)


def analyze_to_report(ckpt: str | Path | ForensicsPredictor, video: str | Path | np.ndarray, out_dir: str | Path,
                      max_pixels: int | None = MAX_INPUT_PIXELS, device: str | torch.device = "cpu",
                      precision: str | torch.dtype = "32") -> dict[str, Any]:
    """Analyse ``video`` with ``ckpt`` (a checkpoint, loaded onto ``device`` in ``precision``, or a loaded
    predictor) and write ``out_dir/report.json`` + ``out_dir/report.html``.

    Returns ``{"verdict": str, "probability": float | None, "json": Path, "html": Path}``."""
    predictor = ckpt if isinstance(ckpt, ForensicsPredictor) else ForensicsPredictor.from_checkpoint(
        ckpt, device=device, precision=precision)
    report = predictor.analyze(video, max_pixels=max_pixels)
    paths = write_report(public_report(report), report["_clip"], report["_extras"], out_dir)
    return {"verdict": report["verdict"]["verdict"], "probability": report["verdict"]["probability"], **paths}

#: the task's predictor (the registry's fixed name, vision.tasks.PARTS)
Predictor = ForensicsPredictor
