"""The Detect tab's logic, independent of Gradio (:mod:`vision.detection.demo` wraps it; tests call it directly):
a detection run over an uploaded video or image. The conventions are those of :mod:`vision.demo.handlers`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from vision.demo.handlers import Models, Progress, no_progress, one_run_at_a_time
from vision.demo.uploads import load_media
from vision.text.vocabulary import parse_vocabulary

__all__ = ["DetectResult", "run_detection"]


@dataclass
class DetectResult:
    """Files and figures of one detection run: ``video`` (annotated mp4), ``preview`` (annotated frame with the
    most drawn detections, PNG), ``results`` (COCO results JSON), ``table`` rows ``[label, count, best score]``
    (label ``unknown`` for rejected objects) and a ``summary``."""

    video: Path
    preview: Path
    results: Path
    table: list[list[Any]]
    summary: str


@one_run_at_a_time("detection")
def run_detection(models: Models, file: Any, vocabulary: str, min_score: float = 0.3,
                  progress: Progress = no_progress) -> DetectResult:
    """Detect ``vocabulary`` classes (and reject unknown objects) in an uploaded video or image."""
    from vision.data.io import atomic_write_json
    from vision.data.video import write_video
    from vision.detection.results import UNKNOWN_NAME

    config = models.config
    names = parse_vocabulary(vocabulary)
    progress(0.0, "reading the input")
    media = load_media(file, config.max_detect_frames, config.max_upload_mb, max_pixels=config.max_pixels)
    progress(0.05, "loading the detector")
    predictor = models.get("detection")
    predictor.set_vocabulary(names)
    total = len(media.frames)
    results = predictor.predict(list(media.frames), progress=lambda done: progress(0.1 + 0.7 * done / total,
                                                                                  f"detecting {done}/{total}"))
    out = config.run_dir("detect")
    progress(0.85, "drawing")
    atomic_write_json(out / "results.json", predictor.to_coco(results, list(range(1, total + 1))))
    # frames are drawn as the encoder takes them: one drawn copy at a time, not one per frame
    drawn = (predictor.draw(frame, result, min_score=min_score) for frame, result in zip(media.frames, results))
    write_video(out / "annotated.mp4", drawn, fps=media.fps, crf=20, preset="veryfast")
    shown = [int((r["scores"] >= min_score).sum()) for r in results]
    best = int(np.argmax(shown))
    preview = predictor.draw(media.frames[best], results[best], min_score=min_score)
    cv2.imwrite(str(out / "preview.png"), cv2.cvtColor(preview, cv2.COLOR_RGB2BGR))
    table = []
    for label in names + [UNKNOWN_NAME]:
        scores = [float(s) for r in results for s, lab in zip(r["scores"], r["labels"])
                  if lab == label and s >= min_score]
        if scores:
            table.append([label, len(scores), round(max(scores), 3)])
    summary = (f"{media.name}: {total} frame(s), {sum(shown)} detection(s) at score >= {min_score:g} "
               f"({sum(row[1] for row in table if row[0] == UNKNOWN_NAME)} rejected as unknown).")
    if media.note:
        summary += "\n" + media.note
    summary += f"\nmodel: the detector {models.answered_by('detection')}"
    return DetectResult(video=out / "annotated.mp4", preview=out / "preview.png", results=out / "results.json",
                        table=table, summary=summary)
