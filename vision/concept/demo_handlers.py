"""The concept prompts of the Track tab, independent of Gradio (:mod:`vision.tracking.demo` wraps them; tests call
them directly): the phrases of "every instance of", exemplar boxes drawn by two clicks, and a run of the concept
model. The concept task has no tab of its own. The conventions are those of :mod:`vision.demo.handlers`.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from vision.demo.handlers import Models, Progress, no_progress, one_run_at_a_time
from vision.demo.uploads import load_media
from vision.errors import InputError
from vision.text.user_text import check_text_field
from vision.text.vocabulary import parse_vocabulary
from vision.tracking.demo_handlers import TrackResult

__all__ = ["EXEMPLAR_COLOURS", "parse_phrases", "click_exemplar", "draw_exemplars", "run_concept"]

#: the colours of positive ("more like this") and negative ("not this") exemplar boxes on the prompt frame
EXEMPLAR_COLOURS = {True: (40, 230, 40), False: (255, 40, 40)}


def parse_phrases(text: str | None) -> list[str]:
    """The phrases of the Track tab's "every instance of" box: ``"mug, chair"`` -> ``["mug", "chair"]``; nothing
    typed: ``[]``. Otherwise the rule of a vocabulary text (:func:`vision.text.vocabulary.parse_vocabulary`: commas,
    semicolons and line breaks separate; an empty or repeated phrase is an :class:`InputError`)."""
    return parse_vocabulary(text, field="phrases") if text is not None and text.strip() else []


def _exemplar_lines(text: str | None) -> list[str]:
    return [line.strip() for line in check_text_field(text or "", "the exemplar boxes").splitlines() if line.strip()]


def click_exemplar(lines: str, positive: bool, view: int, x: float, y: float,
                   pending: list[float] | None) -> tuple[str, list[float] | None]:
    """One click of an exemplar box on frame ``view``: the first stores the corner (the new ``pending``), the
    second adds the line ``frame,x0,y0,x1,y1`` (``,neg`` for a negative box; the syntax of ``vision-predict
    --exemplar``). Returns ``(lines, pending)``."""
    if pending is None:
        return lines, [float(x), float(y)]
    (x0, x1), (y0, y1) = sorted((pending[0], x)), sorted((pending[1], y))
    if x1 - x0 < 1 or y1 - y0 < 1:
        return lines, None
    line = ",".join(str(int(round(v))) for v in (view, x0, y0, x1, y1)) + ("" if positive else ",neg")
    text = (lines or "").rstrip("\n")
    return (f"{text}\n{line}" if text else line), None


def draw_exemplars(frame: np.ndarray, lines: str, view: int) -> np.ndarray:
    """``frame`` with the exemplar boxes of ``view`` drawn: positive ones in green, negative ones in red with a
    cross. Malformed lines draw nothing (they are reported when the user runs)."""
    from vision.concept.exemplars import parse_exemplar

    canvas = np.ascontiguousarray(frame.copy())
    for line in _exemplar_lines(lines):
        try:
            box_view, box, positive = parse_exemplar(line)
        except InputError:
            continue
        if box_view != view:
            continue
        x0, y0, x1, y1 = (int(round(v)) for v in box)
        colour = EXEMPLAR_COLOURS[positive]
        cv2.rectangle(canvas, (x0, y0), (x1, y1), colour, 1)
        if not positive:
            cv2.line(canvas, (x0, y0), (x1, y1), colour, 1)
            cv2.line(canvas, (x0, y1), (x1, y0), colour, 1)
    return canvas


@one_run_at_a_time("tracking")  # the Track tab runs one thing at a time
def run_concept(models: Models, files: Any, phrases: str, exemplars: str = "",
                progress: Progress = no_progress) -> TrackResult:
    """Track every instance of ``phrases`` (comma-separated; each its own ids) through the uploaded video or images
    with the concept tracker, or with the real-frame detector alone when there is one (:class:`Models`; its masks
    are its boxes, and the summary says so). ``exemplars``: lines ``frame,x0,y0,x1,y1[,neg]`` that belong to the
    first phrase (with no phrase, they are a concept of their own, found by its boxes alone)."""
    from vision.concept.detector_only import DetectorConceptPredictor, export_box_concepts
    from vision.concept.exemplars import ConceptPrompt, check_concept_count, check_exemplars, parse_exemplar
    from vision.concept.export import export_concepts

    config = models.config
    names = parse_phrases(phrases)
    boxes = [parse_exemplar(line, "exemplar box") for line in _exemplar_lines(exemplars)]
    if not names and not boxes:
        raise InputError("type a phrase for 'every instance of' (e.g. 'mug, chair') or draw an exemplar box first")
    prompts = [ConceptPrompt(names[0] if names else None, boxes)] + [ConceptPrompt(n) for n in names[1:]]
    progress(0.0, "reading the input")
    media = load_media(files, config.max_track_frames, config.max_upload_mb, max_pixels=config.max_pixels)
    frames, height, width = len(media.frames), media.frames.shape[1], media.frames.shape[2]
    check_exemplars(prompts, width, height, frames, "exemplar box")
    progress(0.05, "loading the model")
    predictor = models.get("concept")
    alone = isinstance(predictor, DetectorConceptPredictor)
    check_concept_count(predictor, prompts)
    state = predictor.init_state(media.frames, ordered=media.is_video)
    for prompt in prompts:
        predictor.add_concept(state, prompt.phrase, exemplars=prompt.exemplars)
    out = config.run_dir("concept")
    progress(0.1, "finding, associating and decoding the instances")
    export = (export_box_concepts if alone else export_concepts)(
        predictor, state, media.frames, out, fps=media.fps,
        progress=lambda done, total: progress(0.1 + 0.8 * done / total, f"drawing frame {done}/{total}"))
    progress(0.95, "writing the files")
    downloads = [export.results] + ([export.scene_ply] if export.scene_ply else []) + list(export.plys.values())
    lines = [f"{media.name}: {frames} frames, {len(prompts)} concept(s)."] + export.summary(frames)
    lines += [f"instance {o}: no 3D point, so no .ply" for o in export.empty]
    if media.note:
        lines.append(media.note)
    if alone:
        lines += [f"model: the detector alone {models.answered_by('concept')}",
                  f"masks: {state.masks_line or 'boxes from the detector'}; no 3D view"]
    else:
        lines += [f"model: the concept model (detector + G2TAM tracker) {models.answered_by('concept')}",
                  "masks: the concept model's tracker"]
    return TrackResult(video=export.video, scene=export.scene_glb, downloads=downloads, summary="\n".join(lines))
