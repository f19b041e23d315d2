"""The Gradio demo: three tabs, Track, Detect and Forensics, over the trained tiny checkpoints.

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
(``--real-detection-ckpt``, default ``runs/detection/real_coco/checkpoints/last.ckpt``: real frames labelled by a
teacher, the 80 COCO classes known; used only when the file is there), the Detect tab runs it, and the Track tab
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
import html
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from functools import wraps
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the text encoder's weights are installed as a package
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

try:
    import gradio as gr  # noqa: E402
except ImportError as exc:  # the demo extra is not installed
    raise ImportError("the demo needs Gradio, from the 'demo' extra: pip install -e '.[demo]' (or make demo)") from exc

from vision.data.io import IMAGE_SUFFIXES, VIDEO_SUFFIXES  # noqa: E402
from vision.demo import handlers  # noqa: E402
from vision.demo.examples import Examples, prepare_examples  # noqa: E402
from vision.device import PRECISION_CHOICES  # noqa: E402
from vision.errors import VisionError  # noqa: E402
from vision.tasks import TASKS  # noqa: E402

__all__ = ["build_app", "main", "tabs", "track_tab", "detect_tab", "forensics_tab"]

log = logging.getLogger("vision.demo")


def tabs() -> tuple[str, ...]:
    """The demo's tabs, in registry order: the ``demo_tab`` of every registered task that builds one
    (``Task.demo``)."""
    return tuple(task.demo_tab for task in TASKS if task.demo is not None)

TRACK_HELP = """**Track objects through a video or a set of images.** Upload a video (or several images), pick a frame
with the slider and click on the frame: each click adds a *positive* or *negative* point, or (mode *box*) two
clicks draw a box, for the object number shown. *New object* starts the next object; a text prompt can describe
an object instead. The prompt lines below can also be typed or edited. *Track* shows the annotated video, the 3D
reconstruction with each tracked object in its colour, and the masks and point clouds to download.
**Every instance of a phrase:** type phrases (comma-separated; each gets its own ids) and press *Track all
instances*; exemplar boxes (modes *exemplar +* "more like this" and *exemplar -* "not this", two clicks each) refine
the first phrase, or stand alone without one."""
DETECT_HELP = """**Detect an open vocabulary.** Upload a video or an image and type the classes to find. Objects of the
vocabulary get solid boxes with a filled tag in their class colour; objects the detector rejects as *unknown*
(outside the vocabulary) get dashed white boxes."""
FORENSICS_HELP = """**Is this video AI-generated?** Upload a video: the forensic tools measure it, the evidence graph shows
the strongest measurements pointing to *generated* (red) or *real* (green) and the strongest links where they
agree or contradict, and the verdict comes with a calibrated probability (or *insufficient evidence*) and its reasons.
The report below says, per measurement, what real and generated clips typically show, and states the conflicts."""


def _user_errors(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Turn a VisionError into a gr.Error (its message shown to the user); other errors get a short message and
    their traceback goes to the server log only."""

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except gr.Error:
            raise
        except VisionError as exc:  # messages may quote file names: shown as text, not HTML
            raise gr.Error(html.escape(str(exc), quote=False), print_exception=False) from None
        except Exception as exc:  # a bug, not the user's fault: keep the trace in the server log
            log.exception("unexpected error in %s", fn.__name__)
            raise gr.Error(f"unexpected error ({type(exc).__name__}); the server log has the details",
                           print_exception=False) from None

    return wrapper


def _reporter(progress: gr.Progress) -> Callable[[float, str], None]:
    return lambda fraction, description: progress(fraction, desc=description)


def track_tab(models: handlers.Models, examples: Examples | None) -> tuple[Callable[..., tuple] | None, list]:
    config = models.config
    media = gr.State(None)
    pending = gr.State(None)
    gr.Markdown(TRACK_HELP)
    with gr.Row():
        with gr.Column():
            files = gr.File(label="Video, or a set of images", file_count="multiple",
                            file_types=list(VIDEO_SUFFIXES + IMAGE_SUFFIXES))
            frame = gr.Slider(0, 1, value=0, step=1, label="Frame to prompt on")
            image = gr.Image(label="Click to add a prompt", interactive=False, type="numpy", elem_id="track-frame")
            frames_info = gr.Markdown()
            with gr.Row():
                mode = gr.Radio(["positive", "negative", "box", "exemplar +", "exemplar -"], value="positive",
                                label="A click adds")
                obj = gr.Number(value=1, precision=0, minimum=1, label="Object")
                new_obj = gr.Button("New object")
            with gr.Row():
                text = gr.Textbox(label="Text prompt for this object", placeholder="the red mug", scale=3)
                add_text = gr.Button("Add text prompt", scale=1)
            prompts = gr.Textbox(label="Prompts (one per line; editable)", lines=4,
                                 placeholder="object 1 frame 0 positive 120,80", elem_id="track-prompts")
            with gr.Row():
                clear = gr.Button("Clear prompts")
                run = gr.Button("Track", variant="primary")
            real = config.real_detector()
            concept_ready = real is not None or Path(config.checkpoint('concept')).exists()
            if real is not None:
                concept_info = (f"answered by the detector trained on real frames ({real}) alone: the masks are its "
                                f"boxes (the tracker has not learned real images)")
            elif concept_ready:
                concept_info = None
            else:
                concept_info = (f"no concept checkpoint at {config.checkpoint('concept')}: train one with "
                                f"`vision-train --config configs/concept/tiny.yaml` (after make train), or start the "
                                f"demo with --concept-ckpt PATH")
            phrases = gr.Textbox(
                label="Every instance of (phrases, comma-separated)", placeholder="mug, chair",
                elem_id="track-phrases", info=concept_info)
            exemplars = gr.Textbox(label="Exemplar boxes (frame,x0,y0,x1,y1 or ...,neg per line; editable)", lines=2,
                                   placeholder="0,12,20,40,52", elem_id="track-exemplars")
            run_concept = gr.Button("Track all instances", variant="primary", interactive=concept_ready)
        with gr.Column():
            video = gr.Video(label="Annotated video", interactive=False)
            scene = gr.Model3D(label="3D reconstruction, tracked objects coloured")
            downloads = gr.File(label="Downloads: results (COCO), masks, point clouds (.ply)", file_count="multiple",
                                interactive=False)
            status = gr.Textbox(label="Status", lines=4, interactive=False, elem_id="track-status")

    @_user_errors
    def load(paths: list[str] | None, lines: str, boxes: str) -> tuple:
        if not paths:
            return None, gr.Slider(0, 1, value=0), None, ""
        loaded = handlers.media_preview(paths, config)
        last = len(loaded.frames) - 1
        info = f"{loaded.name}: {len(loaded.frames)} frame(s)" + (f"; {loaded.note}" if loaded.note else "")
        return (loaded.frames, gr.Slider(0, max(last, 1), value=0, step=1, interactive=last > 0),
                show(loaded.frames, 0, lines, None, boxes), info)

    def show(frames: Any, view: float, lines: str, corner: list[float] | None, boxes: str) -> Any:
        if frames is None:
            return None
        view = min(int(view), len(frames) - 1)
        drawn = handlers.draw_prompts(frames[view], lines or "", view, corner)
        return handlers.draw_exemplars(drawn, boxes or "", view)

    @_user_errors
    def click(frames: Any, view: float, lines: str, boxes: str, kind: str, obj_id: float,
              corner: list[float] | None, evt: gr.SelectData) -> tuple:
        if frames is None:
            raise gr.Error("upload a video or images first")
        x, y = evt.index
        if kind.startswith("exemplar"):
            boxes, corner = handlers.click_exemplar(boxes or "", kind.endswith("+"), int(view), x, y, corner)
        else:
            lines, corner = handlers.click_prompt(lines or "", kind, int(obj_id or 1), int(view), x, y, corner)
        return lines, boxes, corner, show(frames, view, lines, corner, boxes)

    @_user_errors
    def add_text_prompt(lines: str, obj_id: float, words: str) -> tuple:
        from vision.tracking.prompt_text import format_prompt_line

        if not (words or "").strip():
            raise gr.Error("type a description first, e.g. 'the red mug'")
        line = format_prompt_line(int(obj_id or 1), "text", text=words.strip())
        lines = (lines or "").rstrip("\n")
        return (f"{lines}\n{line}" if lines else line), ""

    def shown(result: handlers.TrackResult) -> tuple:
        return (str(result.video), str(result.scene) if result.scene else None,
                [str(p) for p in result.downloads], result.summary)

    @_user_errors
    def track(paths: list[str] | None, lines: str, progress: gr.Progress = gr.Progress()) -> tuple:
        return shown(handlers.run_tracking(models, paths, lines or "", _reporter(progress)))

    @_user_errors
    def track_concept(paths: list[str] | None, words: str, boxes: str, progress: gr.Progress = gr.Progress()
                      ) -> tuple:
        return shown(handlers.run_concept(models, paths, words or "", boxes or "", _reporter(progress)))

    drawn = [media, frame, prompts, pending, exemplars]
    files.change(load, [files, prompts, exemplars], [media, frame, image, frames_info], api_visibility="private")
    frame.change(show, drawn, image, api_visibility="private")
    prompts.input(show, drawn, image, api_visibility="private")
    exemplars.input(show, drawn, image, api_visibility="private")
    image.select(click, [media, frame, prompts, exemplars, mode, obj, pending], [prompts, exemplars, pending, image],
                 api_visibility="private")
    new_obj.click(lambda o: int(o or 0) + 1, obj, obj, api_visibility="private")
    add_text.click(add_text_prompt, [prompts, obj, text], [prompts, text], api_visibility="private")
    clear.click(lambda: ("", "", None), None, [prompts, exemplars, pending], api_visibility="private").then(
        show, drawn, image, api_visibility="private")
    run.click(track, [files, prompts], [video, scene, downloads, status], api_name="track")
    run_concept.click(track_concept, [files, phrases, exemplars], [video, scene, downloads, status],
                      api_name="track_concept")
    if examples is not None:
        rows = [[[str(examples.synthetic_video)], examples.synthetic_prompts]]
        labels = ["synthetic scene: a point, a box and a text prompt"]
        if examples.street_video is not None:
            rows.append([[str(examples.street_video)], examples.street_prompts])
            labels.append("real street clip: the taxi and the cyclist")
        gr.Examples(rows, [files, prompts], [video, scene, downloads, status], fn=track, run_on_click=True,
                    cache_examples=False, example_labels=labels, api_visibility="private")
        if examples.cup_video is not None and concept_ready:
            gr.Examples([[[str(examples.cup_video)], examples.cup_phrases, ""]], [files, phrases, exemplars],
                        [video, scene, downloads, status], fn=track_concept, run_on_click=True, cache_examples=False,
                        example_labels=[f"real clip, never trained on: {examples.cup_phrases}"],
                        api_visibility="private")

    def preload(progress: gr.Progress = gr.Progress()) -> tuple:
        first, lines = rows[0]
        return (first, lines, *track(first, lines, progress))

    return (preload if examples is not None else None), [files, prompts, video, scene, downloads, status]


def detect_tab(models: handlers.Models, examples: Examples | None) -> tuple[Callable[..., tuple] | None, list]:
    # the detector trained on real frames, when there is one, is shown real footage first
    real_first = models.config.real_detector() is not None and examples is not None and \
        examples.street_video is not None
    gr.Markdown(DETECT_HELP)
    with gr.Row():
        with gr.Column():
            file = gr.File(label="Video or image", file_count="single",
                           file_types=list(VIDEO_SUFFIXES + IMAGE_SUFFIXES))
            vocabulary = gr.Textbox(label="Vocabulary (class names, comma-separated)",
                                    value=(examples.street_vocabulary if real_first else
                                           examples.synthetic_vocabulary) if examples else "",
                                    placeholder="mug, chair, lamp")
            min_score = gr.Slider(0.05, 0.95, value=0.3, step=0.05, label="Show detections with score at least")
            run = gr.Button("Detect", variant="primary")
        with gr.Column():
            video = gr.Video(label="Annotated video", interactive=False)
            preview = gr.Image(label="Frame with the most detections", interactive=False, type="filepath")
            table = gr.Dataframe(headers=["class", "detections", "best score"], label="Detections",
                                 interactive=False)
            results = gr.File(label="COCO results (JSON)", interactive=False)
            status = gr.Textbox(label="Status", lines=2, interactive=False, elem_id="detect-status")

    @_user_errors
    def detect(path: str | None, words: str, score: float, progress: gr.Progress = gr.Progress()) -> tuple:
        result = handlers.run_detection(models, path, words, float(score), _reporter(progress))
        return str(result.video), str(result.preview), result.table, str(result.results), result.summary

    run.click(detect, [file, vocabulary, min_score], [video, preview, table, results, status], api_name="detect")
    if examples is not None:
        rows = [[str(examples.synthetic_video), examples.synthetic_vocabulary, 0.3],
                [str(examples.synthetic_image), examples.synthetic_vocabulary, 0.3]]
        labels = ["synthetic scene (video)", "synthetic scene (image)"]
        if examples.street_video is not None:
            rows.append([str(examples.street_video), examples.street_vocabulary, 0.3])
            labels.append("real street clip")
        if examples.cup_video is not None:
            rows.append([str(examples.cup_video), examples.cup_vocabulary, 0.3])
            labels.append("real clip: a cup")
        gr.Examples(rows, [file, vocabulary, min_score], [video, preview, table, results, status], fn=detect,
                    run_on_click=True, cache_examples=False, example_labels=labels, api_visibility="private")

    def preload(progress: gr.Progress = gr.Progress()) -> tuple:
        row = rows[2] if real_first else rows[0]  # the detector's training domain: real footage or the renders
        return (*row, *detect(*row, progress))

    return (preload if examples is not None else None), [file, vocabulary, min_score, video, preview, table,
                                                          results, status]


def _report_frame(html_path: Path) -> str:
    """The report page inside an iframe (its styles stay out of the demo's page)."""
    return (f"<iframe title='forensic report' style='width:100%;height:560px;border:1px solid #ccc' "
            f"srcdoc=\"{html.escape(html_path.read_text(encoding='utf-8'), quote=True)}\"></iframe>")


def forensics_tab(models: handlers.Models, examples: Examples | None) -> tuple[Callable[..., tuple] | None, list]:
    gr.Markdown(FORENSICS_HELP)
    with gr.Row():
        with gr.Column():
            video = gr.Video(label="Video", sources=["upload"])
            run = gr.Button("Analyse", variant="primary")
            verdict = gr.Textbox(label="Verdict", interactive=False, elem_id="forensics-status")
            probability = gr.Label(label="Calibrated probability", num_top_classes=2)
            reasons = gr.Markdown()
        with gr.Column():
            graph = gr.Image(label="Evidence graph", show_label=False, interactive=False, type="filepath")
            downloads = gr.File(label="Report (HTML, JSON)", file_count="multiple", interactive=False)
    report = gr.HTML(label="Report")

    @_user_errors
    def analyse(path: str | None, progress: gr.Progress = gr.Progress()) -> tuple:
        result = handlers.run_forensics(models, path, _reporter(progress))
        p = result.probability
        label = None if p is None else {"generated": p, "real": 1.0 - p}
        why = "\n".join(f"- {r}" for r in result.reasons)
        return (result.verdict, label, why, str(result.graph), [str(result.report_html), str(result.report_json)],
                _report_frame(result.report_html))

    run.click(analyse, [video], [verdict, probability, reasons, graph, downloads, report], api_name="forensics")
    if examples is not None:
        rows, labels = [[str(examples.synthetic_video)]], ["synthetic (rendered) scene"]
        if examples.street_video is not None:
            rows.append([str(examples.street_video)])
            labels.append("real street clip")
        gr.Examples(rows, [video], [verdict, probability, reasons, graph, downloads, report], fn=analyse,
                    run_on_click=True, cache_examples=False, example_labels=labels, api_visibility="private")

    def preload(progress: gr.Progress = gr.Progress()) -> tuple:
        row = rows[-1]  # the real clip when there is one
        return (*row, *analyse(*row, progress))

    return (preload if examples is not None else None), [video, verdict, probability, reasons, graph, downloads,
                                                          report]


def build_app(config: handlers.DemoConfig, examples: Examples | None, tab: str = "track") -> gr.Blocks:
    """The demo's Blocks (not launched). ``tab`` is the tab shown first unless the URL has ``?tab=...``."""
    if tab not in tabs():
        raise ValueError(f"tab must be one of {tabs()}, got {tab!r}")
    models = handlers.Models(config)
    with gr.Blocks(title="vision: track, detect, forensics") as app:
        gr.Markdown("# vision demo\nG2TAM tracking with 3D, open-vocabulary detection (OOVDet) and AI-generated "
                    "video forensics, on the tiny checkpoints.")
        missing = [t.name for t in TASKS if t.demo is not None and not config.checkpoint(t.name).exists()]
        notes = list(examples.notes if examples else [])
        notes += [f"no {t} checkpoint at `{config.checkpoint(t)}`: run `make train-{t}` or `make demo`"
                  for t in missing]
        if config.real_detection is not None and config.real_detector() is None:
            notes.append(f"no detector trained on real frames at `{config.real_detection}` (python tools/train.py "
                         f"--config configs/detection/real_coco.yaml): Detect and the phrases of Track use the "
                         f"models of synthetic renders")
        elif config.real_detector() is not None:
            notes.append(f"Detect and the phrases of Track run the detector trained on real frames "
                         f"(`{config.real_detection}`); the phrases' masks are its boxes")
        if notes:
            gr.Markdown("\n".join(f"> {n}" for n in notes))
        preloads = {}
        with gr.Tabs(selected=tab) as shown:
            for task in TASKS:
                if task.demo is not None:
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

    @_user_errors
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
            optional = "" if task.demo is not None else " (optional)"
            parser.add_argument(f"--{task.name}-ckpt", type=Path, default=defaults.checkpoint(task.name),
                                help=f"the {task.name} checkpoint or model folder (vision-export) the "
                                     f"{task.demo_tab.capitalize()} tab runs{optional}")
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
                                 precision=args.precision, real_detection=args.real_detection_ckpt)
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
