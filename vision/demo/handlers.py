"""What every demo tab's logic shares, independent of Gradio: the demo's configuration, the models it loads and the
rule that runs of one task take turns. Each task's own logic is in its folder (``vision/<task>/demo_handlers.py``;
the app's tabs wrap those functions, tests call them directly).

Conventions of every handler: coordinates are pixels of the uploaded frames, frames count from 0; prompts are the
text lines of :mod:`vision.tracking.prompt_text`. Every handler raises :class:`~vision.errors.VisionError` (with a
message for the user) on bad input; ``progress(fraction, description)`` (:data:`Progress`) is called on long work.
Each run writes its files into a fresh folder under :attr:`DemoConfig.work_dir` (:meth:`DemoConfig.run_dir`).
"""

from __future__ import annotations

import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from functools import wraps
from pathlib import Path
from typing import Any, Callable

from vision.data.io import MAX_INPUT_FRAMES, MAX_INPUT_PIXELS
from vision.demo.uploads import Media, load_media
from vision.errors import InputError
from vision.tasks import TASKS, get_task

__all__ = ["DemoConfig", "REAL_DETECTION_CKPT", "preferred_checkpoint", "Models", "Progress", "no_progress",
           "one_run_at_a_time", "media_preview"]

#: Where the default real-frame detector is written (``configs/detection/real.yaml``, ``make train-real-detection``:
#: OOVDet on the pretrained YOLOX-nano body, any vocabulary by text); the demo's default ``--real-detection-ckpt``.
REAL_DETECTION_CKPT = Path("runs/detection/real/checkpoints/last.ckpt")
#: G2TAM on real video (``make train-real-tracking``): the Track tab's default tracker when it exists
REAL_TRACKING_CKPT = Path(get_task("tracking").resolve("default_ckpt")[0])

#: ``progress(fraction, description)``: a handler's report of its long work (fraction in [0, 1]).
Progress = Callable[[float, str], None]


def no_progress(fraction: float, description: str) -> None:
    """The :data:`Progress` of a run nobody watches."""
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
    the concept model, which has learned synthetic renders only. None: the synthetic models answer.
    ``real_tracking``: G2TAM on real video (:data:`REAL_TRACKING_CKPT`), used only when it exists: the Track tab's
    default tracker for box, point and text prompts, the ``tracking`` checkpoint (synthetic renders) still
    selectable."""

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
    real_tracking: Path | None = None

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
        self.real_tracking = Path(self.real_tracking) if self.real_tracking else None

    def real_tracker(self) -> Path | None:
        """The real-video tracker's checkpoint when it is configured and exists."""
        return self.real_tracking if self.real_tracking is not None and self.real_tracking.is_file() else None

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
        if real is not None and get_task(task).has("real_frames_predictor"):
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
                real = entry.has("real_frames_predictor") and path == self.config.real_detector()
                predictor = entry.resolve("real_frames_predictor" if real else "predictor")
                self._loaded[task] = predictor.from_checkpoint(path, device=self.config.device,
                                                               precision=self.config.precision, **options)
            return self._loaded[task]

    def real_tracker(self) -> Any:
        """The :class:`~vision.tracking.real.predictor.RealTrackerPredictor` of :meth:`DemoConfig.real_tracker`,
        loaded once (an :class:`InputError` naming ``make train-real-tracking`` when there is none)."""
        path = self.config.real_tracker()
        if path is None:
            raise InputError(f"no real-video tracker at {self.config.real_tracking}: run make train-real-tracking")
        with self._lock:
            if "real-tracking" not in self._loaded:
                from vision.tracking.real.predictor import RealTrackerPredictor

                self._loaded["real-tracking"] = RealTrackerPredictor.from_checkpoint(path)
            return self._loaded["real-tracking"]

    def answered_by(self, task: str) -> str:
        """Which model answers ``task``, in words: its checkpoint and what it was trained on
        (:func:`vision.provenance.read_provenance`), e.g. ``real_coco/checkpoints/last.ckpt (trained on real
        frames, teacher-labelled (yolox-nano), 80 COCO classes)``."""
        from vision.provenance import read_provenance

        with self._lock:
            if task not in self._answers:
                self._answers[task] = str(read_provenance(self.checkpoint(task)))
            return self._answers[task]


def one_run_at_a_time(task: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorate a handler ``fn(models, ...)`` so that it holds :meth:`Models.run_lock` of ``task`` while it runs."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @wraps(fn)
        def wrapper(models: Models, *args: Any, **kwargs: Any) -> Any:
            with models.run_lock(task):
                return fn(models, *args, **kwargs)

        return wrapper

    return decorate


def media_preview(files: Any, config: DemoConfig) -> Media:
    """The frames the tracking tab shows for picking prompts (same limits as a run)."""
    return load_media(files, config.max_track_frames, config.max_upload_mb, max_pixels=config.max_pixels)
