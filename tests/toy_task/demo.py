"""The toy task's demo tab (``tab``, built by :func:`vision.demo.app.build_app` when the toy is registered with a
``demo_tab``): upload an image, see its predicted brightness. :func:`run_toy` is the tab's logic, callable without
Gradio; its conventions are those of :mod:`vision.demo.handlers`. Named API endpoint: ``/toy`` (image).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import gradio as gr
import numpy as np

from vision.data.io import IMAGE_SUFFIXES
from vision.demo.examples import Examples
from vision.demo.handlers import Models, Progress, no_progress, one_run_at_a_time
from vision.demo.ui import reporter, user_errors
from vision.demo.uploads import check_file, load_media

__all__ = ["ToyResult", "run_toy", "tab", "TOY_HELP"]

TOY_HELP = """**Brightness of an image.** Upload an image: the toy model predicts each pixel's brightness (the mean of
its red, green and blue, from 0 to 1), shown as a grey picture, and the image's brightness, their mean."""


@dataclass
class ToyResult:
    """One toy run: ``brightness`` (the image's, the mean of its map), ``map`` (the predicted brightness per pixel,
    float32 ``[H, W]``) and a ``summary``."""

    brightness: float
    map: np.ndarray
    summary: str


@one_run_at_a_time("toy")
def run_toy(models: Models, file: Any, progress: Progress = no_progress) -> ToyResult:
    """The predicted brightness of one uploaded image."""
    config = models.config
    progress(0.0, "reading the image")
    path = check_file(file, IMAGE_SUFFIXES, config.max_upload_mb)
    media = load_media(path, 1, config.max_upload_mb, max_pixels=config.max_pixels)
    progress(0.3, "loading the model")
    predictor = models.get("toy")
    progress(0.6, "predicting")
    brightness = predictor.predict(media.frames[0])
    value = float(brightness.mean())
    lines = [f"{media.name}: brightness {value:.4f}"] + ([media.note] if media.note else [])
    lines.append(f"model: {models.answered_by('toy')}")
    return ToyResult(brightness=value, map=brightness, summary="\n".join(lines))


def tab(models: Models, examples: Examples | None) -> tuple[Callable[..., tuple] | None, list]:
    """Build the toy tab inside the current ``gr.Tab``: ``(preload, outputs)``, ``preload`` running the synthetic
    example image (None without examples) into ``outputs``."""
    gr.Markdown(TOY_HELP)
    with gr.Row():
        with gr.Column():
            file = gr.File(label="Image", file_count="single", file_types=list(IMAGE_SUFFIXES))
            run = gr.Button("Predict the brightness", variant="primary")
        with gr.Column():
            picture = gr.Image(label="Predicted brightness per pixel", interactive=False, type="numpy")
            status = gr.Textbox(label="Status", lines=2, interactive=False, elem_id="toy-status")

    @user_errors
    def predict(path: str | None, progress: gr.Progress = gr.Progress()) -> tuple:
        result = run_toy(models, path, reporter(progress))
        return (np.clip(result.map * 255.0, 0, 255).astype(np.uint8), result.summary)

    run.click(predict, [file], [picture, status], api_name="toy")
    if examples is not None:
        gr.Examples([[str(examples.synthetic_image)]], [file], [picture, status], fn=predict, run_on_click=True,
                    cache_examples=False, example_labels=["synthetic scene (image)"], api_visibility="private")

    def preload(progress: gr.Progress = gr.Progress()) -> tuple:
        row = [str(examples.synthetic_image)]
        return (*row, *predict(*row, progress))

    return (preload if examples is not None else None), [file, picture, status]
