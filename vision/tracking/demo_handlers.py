"""The Track tab's logic, independent of Gradio (:mod:`vision.tracking.demo` wraps it; tests call it directly):
click-to-prompt, the prompts drawn on a frame, and a tracking run. The conventions are those of
:mod:`vision.demo.handlers`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from vision.demo.handlers import Models, Progress, no_progress, one_run_at_a_time
from vision.demo.uploads import load_media
from vision.errors import InputError
from vision.tracking.export import object_colour
from vision.tracking.prompt_text import format_prompt_line, parse_prompt_lines

__all__ = ["TRACKERS", "TrackResult", "draw_prompts", "click_prompt", "run_tracking", "default_tracker"]

#: the Track tab's tracker choices: G2TAM on real video (``make train-real-tracking``), and the tracker of the
#: ``tracking`` checkpoint (synthetic renders)
TRACKERS = ("real video: G2TAM-real", "synthetic renders: G2TAM")


def default_tracker(models: Models) -> str:
    """The real-video tracker when its checkpoint exists, else the synthetic one."""
    return TRACKERS[0] if models.config.real_tracker() is not None else TRACKERS[1]


def draw_prompts(frame: np.ndarray, prompts: str, view: int, pending: list[float] | None = None) -> np.ndarray:
    """``frame`` with the prompts of ``view`` drawn in their object's colour: a filled dot for a positive point,
    a ring with a cross for a negative one, a rectangle for a box, and a cross at ``pending`` (the first corner of
    a box being drawn). Malformed prompt text draws nothing (it is reported when the user runs)."""
    canvas = np.ascontiguousarray(frame.copy())
    try:
        specs = parse_prompt_lines(prompts) if prompts.strip() else []
    except InputError:
        specs = []
    for spec in specs:
        if spec.frame != view:
            continue
        colour = object_colour(spec.obj_id)
        for (x, y), label in zip(spec.points, spec.labels):
            centre = (int(round(x)), int(round(y)))
            if label == 1:
                cv2.circle(canvas, centre, 4, colour, -1, cv2.LINE_AA)
                cv2.circle(canvas, centre, 4, (255, 255, 255), 1, cv2.LINE_AA)
            else:
                cv2.circle(canvas, centre, 4, colour, 1, cv2.LINE_AA)
                cv2.drawMarker(canvas, centre, (255, 255, 255), cv2.MARKER_TILTED_CROSS, 6, 1)
        if spec.box is not None:
            x0, y0, x1, y1 = (int(round(v)) for v in spec.box)
            cv2.rectangle(canvas, (x0, y0), (x1, y1), colour, 1)
    if pending is not None:
        cv2.drawMarker(canvas, (int(round(pending[0])), int(round(pending[1]))), (255, 255, 0), cv2.MARKER_CROSS, 9, 1)
    return canvas


def click_prompt(prompts: str, mode: str, obj_id: int, view: int, x: float, y: float,
                 pending: list[float] | None) -> tuple[str, list[float] | None]:
    """Apply one click at ``(x, y)`` on frame ``view``: ``mode`` ``positive`` or ``negative`` adds a point line;
    ``box`` stores the first corner (returned as the new ``pending``) and on the second click adds the box line.
    Returns ``(prompts, pending)``."""
    obj_id = int(obj_id)
    if obj_id < 1:
        raise InputError(f"object ids start at 1, got {obj_id}")
    if mode == "box":
        if pending is None:
            return prompts, [float(x), float(y)]
        (x0, x1), (y0, y1) = sorted((pending[0], x)), sorted((pending[1], y))
        if x1 - x0 < 1 or y1 - y0 < 1:
            return prompts, None
        line = format_prompt_line(obj_id, "box", view, [x0, y0, x1, y1])
    elif mode in ("positive", "negative"):
        line = format_prompt_line(obj_id, mode, view, [x, y])
    else:
        raise InputError(f"unknown click mode {mode!r}; expected positive, negative or box")
    text = prompts.rstrip("\n")
    return (f"{text}\n{line}" if text else line), None


@dataclass
class TrackResult:
    """Files of one tracking run: ``video`` (annotated mp4), ``scene`` (.glb for the 3D view, or None without
    geometry), ``downloads`` (results.json, masks.zip, scene.ply and one .ply per object), and a ``summary``."""

    video: Path
    scene: Path | None
    downloads: list[Path]
    summary: str


@one_run_at_a_time("tracking")
def run_tracking(models: Models, files: Any, prompts: str, progress: Progress = no_progress,
                 tracker: str | None = None) -> TrackResult:
    """Track the objects of ``prompts`` through the uploaded video or images (see the module docstring) with
    ``tracker`` (one of :data:`TRACKERS`; None: :func:`default_tracker`)."""
    from vision.tracking.export import track_and_export

    config = models.config
    tracker = tracker or default_tracker(models)
    if tracker not in TRACKERS:
        raise InputError(f"tracker must be one of {', '.join(TRACKERS)}, got {tracker!r}")
    specs = parse_prompt_lines(prompts or "")
    progress(0.0, "reading the input")
    media = load_media(files, config.max_track_frames, config.max_upload_mb, max_pixels=config.max_pixels)
    for spec in specs:
        if spec.frame is not None and spec.frame >= len(media.frames):
            raise InputError(f"object {spec.obj_id} is prompted on frame {spec.frame}, but the input has "
                             f"{len(media.frames)} frames (0 to {len(media.frames) - 1})")
    if tracker == TRACKERS[0]:
        return _run_real(models, media, specs, progress)
    progress(0.05, "loading the tracker")
    predictor = models.get("tracking")
    state = predictor.init_state(media.frames, ordered=media.is_video)
    for spec in specs:
        predictor.add_prompt(state, obj_id=spec.obj_id, mask=None, **spec.arrays())
    out = config.run_dir("track")
    export = track_and_export(predictor, state, media.frames, out, fps=media.fps,
                              progress=lambda done, total: progress(0.1 + 0.8 * done / total,
                                                                    f"tracking frame {done}/{total}"))
    progress(0.95, "writing the files")
    downloads = [export.results, export.masks] + ([export.scene_ply] if export.scene_ply else [])
    downloads += list(export.plys.values())
    lines = [f"{media.name}: {len(media.frames)} frames, {len(specs)} object(s)."]
    lines += [f"object {o}: found in {n} of {len(media.frames)} frames" for o, n in export.frames_with_object.items()]
    lines += [f"object {o}: no 3D point (not found in any frame), so no .ply" for o in export.empty]
    if export.scene_glb is None:
        lines.append("this tracker predicts no geometry: no 3D view")
    if media.note:
        lines.append(media.note)
    lines.append(f"model: the tracker {models.answered_by('tracking')}")
    return TrackResult(video=export.video, scene=export.scene_glb, downloads=downloads, summary="\n".join(lines))


def _run_real(models: Models, media: Any, specs: list, progress: Progress) -> TrackResult:
    """The real-video tracker on the uploaded frames (boxes, points and texts; no 3D view: its geometry is the
    tracker's memory, not a reconstruction to show)."""
    from vision.tracking.real.predictor import export_real

    progress(0.05, "loading the tracker")
    predictor = models.real_tracker()
    out = models.config.run_dir("track")
    height, width = media.frames.shape[1:3]
    counts = export_real(predictor, media.frames, specs, out, (width, height), fps=media.fps,
                         progress=lambda done, total: progress(0.1 + 0.8 * done / total,
                                                               f"tracking frame {done}/{total}"))
    lines = [f"{media.name}: {len(media.frames)} frames, {len(specs)} object(s)."]
    lines += [f"object {o}: present in {n} of {len(media.frames)} frames" for o, n in counts.items()]
    if media.note:
        lines.append(media.note)
    lines.append(f"model: {predictor.name}, {models.config.real_tracker()}")
    return TrackResult(video=out / "annotated.mp4", scene=None, downloads=[out / "results.json", out / "masks.zip"],
                       summary="\n".join(lines))
