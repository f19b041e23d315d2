"""The Gradio demo: three tabs, Track, Detect and Forensics, over the trained tiny checkpoints. Each tab is built by
its task's ``demo.py`` (``tab(models, examples)``, the registry's ``demo`` part, :mod:`vision.tasks`); this module
puts the registered tabs together and serves them.

    vision-demo [--host 127.0.0.1] [--port 7860] [--tab track|detect|forensics] [--share]
                [--tracking-ckpt P] [--detection-ckpt P] [--forensics-ckpt P] [--concept-ckpt P]
                [--real-detection-ckpt P] [--max-upload-mb 200]
                [--max-frames 64] [--max-pixels 16777216]

(``python demo/app.py`` and ``make demo`` run the same.)

It binds 127.0.0.1 (this machine only) unless ``--host`` says otherwise, and makes no public link unless
``--share`` is given. Paths are relative to the working directory (``make demo`` runs in the repository): the
checkpoints default to the ``make train`` runs under ``runs/``, and the example inputs are prepared on first
launch into ``demo/examples/`` (``--examples-dir``).

Real footage: the synthetic checkpoints have learned 64-px renders. When the detector trained on real frames exists
(``--real-detection-ckpt``, default ``runs/detection/real/checkpoints/last.ckpt``: OOVDet on the pretrained
YOLOX-nano body, ``make train-real-detection``; used only when the file is there), the Detect tab runs it, and the Track tab
answers phrases ("every instance of") with it alone, its boxes for masks
(:class:`vision.concept.detector_only.DetectorConceptPredictor`); point and box prompts stay with the tracker. Every
answer ends with the model that gave it and what that model was trained on. The page opens on
the tab named by ``--tab`` or by the URL query ``?tab=detect``; ``?tab=detect&example=1`` also runs that tab's
first example as the page opens. Named API endpoints (for ``gradio_client``):
``/track`` (files, prompts), ``/track_concept`` (files, phrases, exemplar boxes), ``/detect`` (file, vocabulary,
min_score) and ``/forensics`` (video).

Limits: ``--max-upload-mb`` bounds an upload's bytes; its decoded size is bounded separately (vision/demo/uploads.py):
frames over ``--max-pixels`` (default MAX_INPUT_PIXELS, 4096x4096) are refused before decoding, frames over
MAX_WORKING_PIXELS (1280x720) are downscaled, and a run uses at most ``--max-frames`` frames (tracking; 300 for
detection), never more than MAX_INPUT_FRAMES (vision/data/io.py).
"""

from __future__ import annotations

import argparse
import atexit
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the text encoder's weights are installed as a package
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

try:
    import gradio as gr  # noqa: E402
except ImportError as exc:  # the demo extra is not installed
    raise ImportError("the demo needs Gradio, from the 'demo' extra: pip install -e '.[demo]' (or make demo)") from exc

from vision.demo import handlers  # noqa: E402
from vision.demo.examples import Examples, prepare_examples  # noqa: E402
from vision.demo.ui import user_errors  # noqa: E402
from vision.device import PRECISION_CHOICES  # noqa: E402
from vision.errors import VisionError  # noqa: E402
from vision.tasks import TASKS  # noqa: E402

__all__ = ["build_app", "parse_args", "launch", "main", "tabs"]


def tabs() -> tuple[str, ...]:
    """The demo's tabs, in registry order: the ``demo_tab`` of every registered task that builds one (its
    ``demo.py``, ``tab(models, examples)``)."""
    return tuple(task.demo_tab for task in TASKS if task.has("demo"))


def build_app(config: handlers.DemoConfig, examples: Examples | None, tab: str = "track") -> gr.Blocks:
    """The demo's Blocks (not launched). ``tab`` is the tab shown first unless the URL has ``?tab=...``."""
    if tab not in tabs():
        raise ValueError(f"tab must be one of {tabs()}, got {tab!r}")
    models = handlers.Models(config)
    with gr.Blocks(title="vision: track, detect, forensics") as app:
        gr.Markdown("# vision demo\nG2TAM tracking with 3D, open-vocabulary detection (OOVDet) and AI-generated "
                    "video forensics, on the tiny checkpoints.")
        missing = [t.name for t in TASKS if t.has("demo") and not config.checkpoint(t.name).exists()]
        notes = list(examples.notes if examples else [])
        notes += [f"no {t} checkpoint at `{config.checkpoint(t)}`: run `make train-{t}` or `make demo`"
                  for t in missing]
        if config.real_detection is not None and config.real_detector() is None:
            notes.append(f"no detector trained on real frames at `{config.real_detection}` (python tools/train.py "
                         f"--config configs/detection/real.yaml): Detect and the phrases of Track use the "
                         f"models of synthetic renders")
        elif config.real_detector() is not None:
            notes.append(f"Detect and the phrases of Track run the detector trained on real frames "
                         f"(`{config.real_detection}`); the phrases' masks are its boxes")
        if config.real_tracking is not None and config.real_tracker() is None:
            notes.append(f"no real-video tracker at `{config.real_tracking}` (make train-real-tracking): Track runs "
                         f"the tracker of synthetic renders")
        if notes:
            gr.Markdown("\n".join(f"> {n}" for n in notes))
        preloads = {}
        with gr.Tabs(selected=tab) as shown:
            for task in TASKS:
                if task.has("demo"):
                    with gr.Tab(task.demo_tab.capitalize(), id=task.demo_tab):
                        preloads[task.demo_tab] = task.resolve("demo")(models, examples)

        def shown_tab(request: gr.Request | None) -> str:
            wanted = request.query_params.get("tab", tab) if request is not None else tab
            return wanted if wanted in tabs() else tab

        def select_tab(request: gr.Request) -> Any:
            return gr.Tabs(selected=shown_tab(request))

        app.load(select_tab, None, shown, api_visibility="private")
        for tab_id, (preload, outputs) in preloads.items():
            if preload is not None:
                app.load(_example_on_open(tab_id, preload, shown_tab, len(outputs)), None, outputs,
                         api_visibility="private")
    return app


def _example_on_open(tab_id: str, preload: Callable[..., tuple], shown_tab: Callable[[Any], str],
                     count: int) -> Callable[..., tuple]:
    """A page-load handler that runs the tab's first example when the URL has ``?example=1`` and shows that tab
    (so a link, or a screenshot, can open with results); otherwise it changes nothing."""

    @user_errors
    def on_open(request: gr.Request, progress: gr.Progress = gr.Progress()) -> tuple:
        if request is None or request.query_params.get("example") != "1" or shown_tab(request) != tab_id:
            return tuple(gr.skip() for _ in range(count))
        return preload(progress)

    return on_open


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line of ``vision-demo`` (None: ``sys.argv[1:]``)."""
    defaults = handlers.DemoConfig()
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=7860)
    parser.add_argument("--share", action="store_true", help="also make a public gradio.live link (off by default)")
    parser.add_argument("--tab", choices=tabs(), default="track", help="the tab shown first")
    for task in TASKS:
        if task.demo_tab is not None:
            optional = "" if task.has("demo") else " (optional)"
            parser.add_argument(f"--{task.name}-ckpt", type=Path, default=defaults.checkpoint(task.name),
                                help=f"the {task.name} checkpoint or model folder (vision-export) the "
                                     f"{task.demo_tab.capitalize()} tab runs{optional}")
    parser.add_argument("--real-tracking-ckpt", type=Path, default=handlers.REAL_TRACKING_CKPT,
                        help="G2TAM on real video (make train-real-tracking): the Track tab's default tracker when it "
                             "exists")
    parser.add_argument("--real-detection-ckpt", type=Path, default=handlers.REAL_DETECTION_CKPT,
                        help="a detection checkpoint trained on real frames: when the file exists, the Detect tab "
                             "runs it and the Track tab answers phrases with it alone (boxes for masks); default "
                             "%(default)s")
    parser.add_argument("--examples-dir", type=Path, default=defaults.examples_dir,
                        help="cache folder of the example inputs (made on first launch)")
    parser.add_argument("--no-examples", action="store_true", help="do not prepare or show the examples")
    parser.add_argument("--max-upload-mb", type=float, default=defaults.max_upload_mb)
    parser.add_argument("--max-frames", type=int, default=defaults.max_track_frames,
                        help="frames of a video used for tracking (the first ones; at most MAX_INPUT_FRAMES)")
    parser.add_argument("--max-pixels", type=int, default=defaults.max_pixels,
                        help="frames with more pixels are refused before decoding (default 4096x4096)")
    parser.add_argument("--presence-threshold", type=float, default=defaults.presence_threshold,
                        help="tracking: an object's mask is emptied in frames where its presence probability is lower")
    parser.add_argument("--device", default=defaults.device,
                        help="where the models run: auto (CUDA, then MPS, then the CPU), cpu, cuda, cuda:N or mps")
    parser.add_argument("--precision", default=defaults.precision, choices=PRECISION_CHOICES,
                        help="the networks' compute precision (mixed: weights stay float32)")
    return parser.parse_args(argv)


def launch(args: argparse.Namespace, block: bool = True) -> gr.Blocks:
    """Prepare the examples, build the app and serve it (``block=False`` returns once it is listening)."""
    work_dir = Path(tempfile.mkdtemp(prefix="vision-demo-"))
    atexit.register(shutil.rmtree, work_dir, ignore_errors=True)
    checkpoints = {t.name: getattr(args, f"{t.name}_ckpt") for t in TASKS if t.demo_tab is not None}
    config = handlers.DemoConfig(checkpoints=checkpoints, max_upload_mb=args.max_upload_mb,
                                 max_track_frames=args.max_frames, max_pixels=args.max_pixels,
                                 presence_threshold=args.presence_threshold,
                                 work_dir=work_dir, examples_dir=args.examples_dir, device=args.device,
                                 precision=args.precision, real_detection=args.real_detection_ckpt,
                                 real_tracking=args.real_tracking_ckpt)
    examples = None
    if not args.no_examples:
        print(f"preparing the example inputs in {args.examples_dir} (first launch only) ...", flush=True)
        examples = prepare_examples(args.examples_dir)
        for note in examples.notes:
            print(f"note: {note}", flush=True)
    app = build_app(config, examples, tab=args.tab)
    app.queue(default_concurrency_limit=1)
    allowed = [str(work_dir)] + ([str(Path(args.examples_dir).resolve())] if examples else [])
    app.launch(server_name=args.host, server_port=args.port, share=args.share, allowed_paths=allowed,
               max_file_size=f"{args.max_upload_mb:g}mb", prevent_thread_lock=not block, quiet=not block)
    return app


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and serve the demo until interrupted; 0 when it stops, 2 with one ``error:`` line when an
    option names what this machine lacks (a device, a precision)."""
    from vision.device import describe_device, resolve_device

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    try:
        handlers.DemoConfig(device=args.device, precision=args.precision)  # checked before anything is prepared
    except VisionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{describe_device(resolve_device(args.device))}, precision {args.precision}", flush=True)
    launch(args)
    return 0
