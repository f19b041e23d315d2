"""The demo's Detect tab (``tab``, built by :func:`vision.demo.app.build_app`): an open vocabulary detected in an
uploaded video or image, objects outside it rejected as unknown. Its logic is :mod:`vision.detection.demo_handlers`.
Named API endpoint: ``/detect`` (file, vocabulary, min_score).
"""

from __future__ import annotations

from typing import Callable

import gradio as gr

from vision.data.io import IMAGE_SUFFIXES, VIDEO_SUFFIXES
from vision.demo.examples import Examples
from vision.demo.handlers import Models
from vision.demo.ui import reporter, user_errors
from vision.detection.demo_handlers import run_detection

__all__ = ["tab", "DETECT_HELP"]

DETECT_HELP = """**Detect an open vocabulary.** Upload a video or an image and type the classes to find. Objects of the
vocabulary get solid boxes with a filled tag in their class colour; objects the detector rejects as *unknown*
(outside the vocabulary) get dashed white boxes."""


def tab(models: Models, examples: Examples | None) -> tuple[Callable[..., tuple] | None, list]:
    """Build the Detect tab inside the current ``gr.Tab``: ``(preload, outputs)``, ``preload`` running the first
    example of the detector's training domain (None without examples) into ``outputs``."""
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

    @user_errors
    def detect(path: str | None, words: str, score: float, progress: gr.Progress = gr.Progress()) -> tuple:
        result = run_detection(models, path, words, float(score), reporter(progress))
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
