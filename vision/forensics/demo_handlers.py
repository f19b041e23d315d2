"""The Forensics tab's logic, independent of Gradio (:mod:`vision.forensics.demo` wraps it; tests call it
directly): the analysis of an uploaded video, its report and evidence graph. The conventions are those of
:mod:`vision.demo.handlers`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2

from vision.data.io import VIDEO_SUFFIXES
from vision.demo.handlers import Models, Progress, no_progress, one_run_at_a_time
from vision.demo.uploads import check_file

__all__ = ["ForensicsResult", "run_forensics"]


@dataclass
class ForensicsResult:
    """One forensic analysis: ``verdict`` (generated, real or insufficient evidence), ``probability`` of
    generated (None when the clip cannot be scored), ``reasons``, ``graph`` (PNG of the evidence graph),
    ``report_html`` / ``report_json`` (the full report)."""

    verdict: str
    probability: float | None
    reasons: list[str]
    graph: Path
    report_html: Path
    report_json: Path


@one_run_at_a_time("forensics")
def run_forensics(models: Models, video: Any, progress: Progress = no_progress) -> ForensicsResult:
    """Analyse one uploaded video and write its report and evidence graph."""
    from vision.demo.graph import draw_evidence_graph
    from vision.forensics.predictor import public_report
    from vision.forensics.report import write_report

    from vision.data.video import check_video

    config = models.config
    path = check_file(video, VIDEO_SUFFIXES, config.max_upload_mb)
    check_video(path, max_pixels=config.max_pixels)  # truncated, corrupt or oversized: refused before any model
    progress(0.05, "loading the detector")
    predictor = models.get("forensics")
    progress(0.2, "measuring the forensic evidence")
    report = predictor.analyze(path, max_pixels=config.max_pixels)
    progress(0.8, "writing the report")
    public = public_report(report)
    out = config.run_dir("forensics")
    paths = write_report(public, report["_clip"], report["_extras"], out)
    cv2.imwrite(str(out / "evidence_graph.png"), cv2.cvtColor(draw_evidence_graph(public), cv2.COLOR_RGB2BGR))
    verdict = public["verdict"]
    return ForensicsResult(verdict=verdict["verdict"], probability=verdict["probability"],
                           reasons=list(verdict["reasons"]) + list(public.get("statistics", {}).get("sentences", [])),
                           graph=out / "evidence_graph.png",
                           report_html=paths["html"], report_json=paths["json"])
