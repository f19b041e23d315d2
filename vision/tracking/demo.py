"""The demo's Track tab (``tab``, built by :func:`vision.demo.app.build_app`): click-to-prompt on a frame of an
uploaded video or image set, tracking, the 3D view; and the concept prompts ("every instance of" phrases and
exemplar boxes, :mod:`vision.concept.demo_handlers`). Its logic is :mod:`vision.tracking.demo_handlers`. Named API
endpoints: ``/track`` (files, prompts) and ``/track_concept`` (files, phrases, exemplar boxes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import gradio as gr

from vision.concept import demo_handlers as concept
from vision.data.io import IMAGE_SUFFIXES, VIDEO_SUFFIXES
from vision.demo.examples import Examples
from vision.demo.handlers import Models, media_preview
from vision.demo.ui import reporter, user_errors
from vision.tracking.demo_handlers import TRACKERS, TrackResult, click_prompt, default_tracker, draw_prompts, run_tracking

__all__ = ["tab", "TRACK_HELP"]

TRACK_HELP = """**Track objects through a video or a set of images.** Upload a video (or several images), pick a frame
with the slider and click on the frame: each click adds a *positive* or *negative* point, or (mode *box*) two
clicks draw a box, for the object number shown. *New object* starts the next object; a text prompt can describe
an object instead. The prompt lines below can also be typed or edited. *Track* shows the annotated video, the 3D
reconstruction with each tracked object in its colour, and the masks and point clouds to download.
**Every instance of a phrase:** type phrases (comma-separated; each gets its own ids) and press *Track all
instances*; exemplar boxes (modes *exemplar +* "more like this" and *exemplar -* "not this", two clicks each) refine
the first phrase, or stand alone without one."""


def tab(models: Models, examples: Examples | None) -> tuple[Callable[..., tuple] | None, list]:
    """Build the Track tab inside the current ``gr.Tab``: ``(preload, outputs)``, ``preload`` running the first
    example (None without examples) into ``outputs``."""
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
            tracker = gr.Radio(list(TRACKERS), value=default_tracker(models), label="Tracker",
                               info=None if models.config.real_tracker() is not None else
                               "no real-video tracker yet: make train-real-tracking")
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

    @user_errors
    def load(paths: list[str] | None, lines: str, boxes: str) -> tuple:
        if not paths:
            return None, gr.Slider(0, 1, value=0), None, ""
        loaded = media_preview(paths, config)
        last = len(loaded.frames) - 1
        info = f"{loaded.name}: {len(loaded.frames)} frame(s)" + (f"; {loaded.note}" if loaded.note else "")
        return (loaded.frames, gr.Slider(0, max(last, 1), value=0, step=1, interactive=last > 0),
                show(loaded.frames, 0, lines, None, boxes), info)

    def show(frames: Any, view: float, lines: str, corner: list[float] | None, boxes: str) -> Any:
        if frames is None:
            return None
        view = min(int(view), len(frames) - 1)
        drawn = draw_prompts(frames[view], lines or "", view, corner)
        return concept.draw_exemplars(drawn, boxes or "", view)

    @user_errors
    def click(frames: Any, view: float, lines: str, boxes: str, kind: str, obj_id: float,
              corner: list[float] | None, evt: gr.SelectData) -> tuple:
        if frames is None:
            raise gr.Error("upload a video or images first")
        x, y = evt.index
        if kind.startswith("exemplar"):
            boxes, corner = concept.click_exemplar(boxes or "", kind.endswith("+"), int(view), x, y, corner)
        else:
            lines, corner = click_prompt(lines or "", kind, int(obj_id or 1), int(view), x, y, corner)
        return lines, boxes, corner, show(frames, view, lines, corner, boxes)

    @user_errors
    def add_text_prompt(lines: str, obj_id: float, words: str) -> tuple:
        from vision.tracking.prompt_text import format_prompt_line

        if not (words or "").strip():
            raise gr.Error("type a description first, e.g. 'the red mug'")
        line = format_prompt_line(int(obj_id or 1), "text", text=words.strip())
        lines = (lines or "").rstrip("\n")
        return (f"{lines}\n{line}" if lines else line), ""

    def shown(result: TrackResult) -> tuple:
        return (str(result.video), str(result.scene) if result.scene else None,
                [str(p) for p in result.downloads], result.summary)

    @user_errors
    def track(paths: list[str] | None, lines: str, which: str | None = None,
              progress: gr.Progress = gr.Progress()) -> tuple:
        return shown(run_tracking(models, paths, lines or "", reporter(progress), tracker=which))

    @user_errors
    def track_concept(paths: list[str] | None, words: str, boxes: str, progress: gr.Progress = gr.Progress()
                      ) -> tuple:
        return shown(concept.run_concept(models, paths, words or "", boxes or "", reporter(progress)))

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
    run.click(track, [files, prompts, tracker], [video, scene, downloads, status], api_name="track")
    run_concept.click(track_concept, [files, phrases, exemplars], [video, scene, downloads, status],
                      api_name="track_concept")
    if examples is not None:
        # the synthetic scene runs the tracker of synthetic renders; the real clip the default one
        rows = [[[str(examples.synthetic_video)], examples.synthetic_prompts, TRACKERS[1]]]
        labels = ["synthetic scene: a point, a box and a text prompt"]
        if examples.street_video is not None:
            rows.append([[str(examples.street_video)], examples.street_prompts, default_tracker(models)])
            labels.append("real street clip: the taxi and the cyclist")
        gr.Examples(rows, [files, prompts, tracker], [video, scene, downloads, status], fn=track, run_on_click=True,
                    cache_examples=False, example_labels=labels, api_visibility="private")
        if examples.cup_video is not None and concept_ready:
            gr.Examples([[[str(examples.cup_video)], examples.cup_phrases, ""]], [files, phrases, exemplars],
                        [video, scene, downloads, status], fn=track_concept, run_on_click=True, cache_examples=False,
                        example_labels=[f"real clip, never trained on: {examples.cup_phrases}"],
                        api_visibility="private")

    def preload(progress: gr.Progress = gr.Progress()) -> tuple:
        first, lines, which = rows[0]
        return (first, lines, *track(first, lines, which, progress))

    return (preload if examples is not None else None), [files, prompts, video, scene, downloads, status]
