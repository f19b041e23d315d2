"""The demo's per-tab logic, independent of Gradio (the app wraps these functions; tests call them directly).

Conventions: coordinates are pixels of the uploaded frames, frames count from 0; prompts are the text lines of
:mod:`vision.tracking.prompt_text`. Every function raises :class:`~vision.errors.VisionError` (with a message
for the user) on bad input; ``progress(fraction, description)`` is called on long work. Each run writes its
files into a fresh folder under :attr:`DemoConfig.work_dir`.
"""

from __future__ import annotations

import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from functools import wraps
from pathlib import Path
from typing import Any, Callable

import cv2
import numpy as np

from vision.data.io import MAX_INPUT_FRAMES, MAX_INPUT_PIXELS, VIDEO_SUFFIXES
from vision.demo.uploads import Media, check_file, load_media
from vision.errors import InputError
from vision.tasks import TASKS, get_task
from vision.text.vocabulary import parse_vocabulary
from vision.tracking.export import object_colour
from vision.tracking.prompt_text import format_prompt_line, parse_prompt_lines

__all__ = ["DemoConfig", "REAL_DETECTION_CKPT", "preferred_checkpoint", "Models", "TrackResult", "DetectResult",
           "ForensicsResult", "draw_prompts", "click_prompt", "run_tracking", "parse_phrases", "click_exemplar",
           "draw_exemplars", "run_concept", "run_detection", "run_forensics"]

#: Where the OOV detector trained on real frames is written (``configs/detection/real_coco.yaml``: real frames
#: labelled by a teacher, the 80 COCO classes known); the demo's default ``--real-detection-ckpt``.
REAL_DETECTION_CKPT = Path("runs/detection/real_coco/checkpoints/last.ckpt")

Progress = Callable[[float, str], None]


def _no_progress(fraction: float, description: str) -> None:
    return None


def preferred_checkpoint(task: str, runs: Path = Path("runs")) -> Path:
    """The checkpoint the demo uses for ``task`` by default: ``make train-long``'s
    (``runs/<task>/long/checkpoints/last.ckpt``) when it exists, else ``make train``'s
    (``runs/<task>/tiny/checkpoints/last.ckpt``)."""
    long = runs / task / "long" / "checkpoints" / "last.ckpt"
    return long if long.is_file() else runs / task / "tiny" / "checkpoints" / "last.ckpt"


@dataclass
class DemoConfig:
    """Checkpoints, limits and folders of the demo.

    ``checkpoints``: task name -> its checkpoint (written by ``tools/train.py``) or model folder, for every task the
    demo uses (``Task.demo_tab``); a task left out gets :func:`preferred_checkpoint`, the ``make train-long`` run
    where there is one, else the ``make train`` run, relative to the working directory like every path here (the
    concept tracker, which the Track tab runs for a phrase, may be missing);
    ``max_upload_mb``: largest accepted file (its bytes, not its decoded size); ``max_track_frames`` /
    ``max_detect_frames``: frames used of a video (the first ones), at most
    :data:`~vision.data.io.MAX_INPUT_FRAMES`; ``max_pixels``: frames with more pixels are refused before decoding
    (default :data:`~vision.data.io.MAX_INPUT_PIXELS`; frames over :data:`~vision.data.io.MAX_WORKING_PIXELS` are
    downscaled, see :mod:`vision.demo.uploads`); ``presence_threshold``: the tracker empties an object's mask in a frame
    where its presence probability is lower; ``work_dir``: where run outputs go; ``examples_dir``: the example
    cache; ``device`` / ``precision``: where and in what precision the models run (:mod:`vision.device`; ``auto``
    picks CUDA, then MPS, then the CPU; a device or precision this machine lacks is refused here);
    ``real_detection``: a detection checkpoint trained on real frames (:data:`REAL_DETECTION_CKPT`), used only when
    it exists: the Detect tab runs it instead of the ``detection`` checkpoint, and the Track tab answers phrases with
    it alone (:class:`~vision.concept.detector_only.DetectorConceptPredictor`: the masks are its boxes) instead of
    the concept model, which has learned synthetic renders only. None: the synthetic models answer."""

    checkpoints: dict[str, Path] = field(default_factory=dict)
    max_upload_mb: float = 200.0
    max_track_frames: int = 64
    max_detect_frames: int = 300
    max_pixels: int = MAX_INPUT_PIXELS
    presence_threshold: float = 0.5
    work_dir: Path = field(default_factory=lambda: Path(tempfile.gettempdir()) / "vision-demo")
    examples_dir: Path = Path("demo/examples")
    device: str = "auto"
    precision: str = "32"
    real_detection: Path | None = None

    def __post_init__(self) -> None:
        from vision.device import check_precision, parse_precision, resolve_device

        for name in self.checkpoints:
            get_task(name)  # an unknown task is an InputError naming the known ones
        self.checkpoints = {task.name: Path(self.checkpoints.get(task.name) or preferred_checkpoint(task.name))
                            for task in TASKS if task.demo_tab is not None}

        check_precision(resolve_device(self.device), parse_precision(self.precision))
        for name in ("max_track_frames", "max_detect_frames"):
            value = getattr(self, name)
            if not 1 <= value <= MAX_INPUT_FRAMES:
                raise InputError(f"{name} must be 1 to {MAX_INPUT_FRAMES} (MAX_INPUT_FRAMES), got {value}")
        if self.max_pixels < 1:
            raise InputError(f"max_pixels must be >= 1, got {self.max_pixels}")
        self.real_detection = Path(self.real_detection) if self.real_detection else None

    def real_detector(self) -> Path | None:
        """The real-frame detection checkpoint when it is configured and exists (a file or a model folder)."""
        return self.real_detection if self.real_detection is not None and self.real_detection.exists() else None

    def checkpoint(self, task: str) -> Path:
        """The checkpoint or model folder of ``task`` (a task the demo uses)."""
        if task not in self.checkpoints:
            raise InputError(f"the demo uses no {task} model; it uses {', '.join(self.checkpoints)}")
        return self.checkpoints[task]

    def run_dir(self, task: str) -> Path:
        """A new, empty output folder for one run of ``task``."""
        folder = Path(self.work_dir) / f"{task}-{uuid.uuid4().hex[:10]}"
        folder.mkdir(parents=True)
        return folder


class Models:
    """Predictors loaded on first use and kept (one per task). A predictor holds state during a run (the detector
    its vocabulary), so runs of one task take turns (:meth:`run_lock`); a missing checkpoint is an error that names
    the ``make`` target creating it. With a real-frame detector (:meth:`DemoConfig.real_detector`) the
    ``detection`` and ``concept`` predictors are built from it (:meth:`checkpoint`)."""

    def __init__(self, config: DemoConfig) -> None:
        self.config = config
        self._loaded: dict[str, Any] = {}
        self._answers: dict[str, str] = {}
        self._lock = threading.Lock()
        self._run_locks = {task.name: threading.Lock() for task in TASKS if task.demo_tab is not None}

    def run_lock(self, task: str) -> threading.Lock:
        """The lock a run of ``task`` holds (a button press and an example click may arrive together)."""
        return self._run_locks[task]

    def checkpoint(self, task: str) -> Path:
        """The checkpoint that answers ``task``: the real-frame detector for ``detection`` and ``concept`` when
        there is one, else the task's own (a missing one is an :class:`InputError` naming how to make it)."""
        real = self.config.real_detector()
        if real is not None and get_task(task).real_frames_predictor is not None:
            return real
        path = self.config.checkpoint(task)
        if not path.exists():  # a checkpoint file or a model folder
            raise InputError(f"no {task} checkpoint at {path}: run `make train-{task}` (or `make demo`), or start "
                             f"the demo with --{task}-ckpt PATH")
        return path

    def get(self, task: str) -> Any:
        """The predictor of ``task`` (tracking, detection, forensics or concept)."""
        with self._lock:
            if task not in self._loaded:
                path = self.checkpoint(task)
                options = {name: getattr(self.config, name) for name in get_task(task).demo_options}
                entry = get_task(task)
                real = entry.real_frames_predictor is not None and path == self.config.real_detector()
                predictor = entry.resolve("real_frames_predictor" if real else "predictor")
                self._loaded[task] = predictor.from_checkpoint(path, device=self.config.device,
                                                               precision=self.config.precision, **options)
            return self._loaded[task]

    def answered_by(self, task: str) -> str:
        """Which model answers ``task``, in words: its checkpoint and what it was trained on
        (:func:`vision.data.provenance.read_provenance`), e.g. ``real_coco/checkpoints/last.ckpt (trained on real
        frames, teacher-labelled (yolox-nano), 80 COCO classes)``."""
        from vision.data.provenance import read_provenance

        with self._lock:
            if task not in self._answers:
                self._answers[task] = str(read_provenance(self.checkpoint(task)))
            return self._answers[task]


# ------------------------------------------------------------------------------------------------------- tracking


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


def _one_run_at_a_time(task: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(fn)
        def wrapper(models: Models, *args: Any, **kwargs: Any) -> Any:
            with models.run_lock(task):
                return fn(models, *args, **kwargs)

        return wrapper

    return decorate


@_one_run_at_a_time("tracking")
def run_tracking(models: Models, files: Any, prompts: str, progress: Progress = _no_progress) -> TrackResult:
    """Track the objects of ``prompts`` through the uploaded video or images (see the module docstring)."""
    from vision.tracking.export import track_and_export

    config = models.config
    specs = parse_prompt_lines(prompts or "")
    progress(0.0, "reading the input")
    media = load_media(files, config.max_track_frames, config.max_upload_mb, max_pixels=config.max_pixels)
    for spec in specs:
        if spec.frame is not None and spec.frame >= len(media.frames):
            raise InputError(f"object {spec.obj_id} is prompted on frame {spec.frame}, but the input has "
                             f"{len(media.frames)} frames (0 to {len(media.frames) - 1})")
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


# ------------------------------------------------------------------------------------- tracking: concept prompts

#: the colours of positive ("more like this") and negative ("not this") exemplar boxes on the prompt frame
EXEMPLAR_COLOURS = {True: (40, 230, 40), False: (255, 40, 40)}


def parse_phrases(text: str | None) -> list[str]:
    """The phrases of the Track tab's "every instance of" box: ``"mug, chair"`` -> ``["mug", "chair"]``; nothing
    typed: ``[]``. Otherwise the rule of a vocabulary text (:func:`vision.text.vocabulary.parse_vocabulary`: commas,
    semicolons and line breaks separate; an empty or repeated phrase is an :class:`InputError`)."""
    return parse_vocabulary(text, field="phrases") if text is not None and text.strip() else []


def _exemplar_lines(text: str | None) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


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


@_one_run_at_a_time("tracking")  # the Track tab runs one thing at a time
def run_concept(models: Models, files: Any, phrases: str, exemplars: str = "",
                progress: Progress = _no_progress) -> TrackResult:
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
                  f"masks: boxes from the detector ({predictor.mask_note}); no 3D view"]
    else:
        lines += [f"model: the concept model (detector + G2TAM tracker) {models.answered_by('concept')}",
                  "masks: the concept model's tracker"]
    return TrackResult(video=export.video, scene=export.scene_glb, downloads=downloads, summary="\n".join(lines))


# ------------------------------------------------------------------------------------------------------ detection


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


@_one_run_at_a_time("detection")
def run_detection(models: Models, file: Any, vocabulary: str, min_score: float = 0.3,
                  progress: Progress = _no_progress) -> DetectResult:
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


# ------------------------------------------------------------------------------------------------------ forensics


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


@_one_run_at_a_time("forensics")
def run_forensics(models: Models, video: Any, progress: Progress = _no_progress) -> ForensicsResult:
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


def media_preview(files: Any, config: DemoConfig) -> Media:
    """The frames the tracking tab shows for picking prompts (same limits as a run)."""
    return load_media(files, config.max_track_frames, config.max_upload_mb, max_pixels=config.max_pixels)
