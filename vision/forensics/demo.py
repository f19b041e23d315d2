"""The demo's Forensics tab (``tab``, built by :func:`vision.demo.app.build_app`): whether an uploaded video is
AI-generated, with the evidence graph, the calibrated probability and the report. Its logic is
:mod:`vision.forensics.demo_handlers`. Named API endpoint: ``/forensics`` (video).
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Callable

import gradio as gr

from vision.demo.examples import Examples
from vision.demo.handlers import Models
from vision.demo.ui import reporter, user_errors
from vision.forensics.demo_handlers import run_forensics

__all__ = ["tab", "FORENSICS_HELP"]

FORENSICS_HELP = """**Is this video AI-generated?** Upload a video: the forensic tools measure it, the evidence graph shows
the strongest measurements pointing to *generated* (red) or *real* (green) and the strongest links where they
agree or contradict, and the verdict comes with a calibrated probability (or *insufficient evidence*) and its reasons.
The report below says, per measurement, what real and generated clips typically show, and states the conflicts."""


def _report_frame(html_path: Path) -> str:
    """The report page inside an iframe (its styles stay out of the demo's page)."""
    return (f"<iframe title='forensic report' style='width:100%;height:560px;border:1px solid #ccc' "
            f"srcdoc=\"{html.escape(html_path.read_text(encoding='utf-8'), quote=True)}\"></iframe>")


def tab(models: Models, examples: Examples | None) -> tuple[Callable[..., tuple] | None, list]:
    """Build the Forensics tab inside the current ``gr.Tab``: ``(preload, outputs)``, ``preload`` analysing the
    real example clip when there is one, else the synthetic one (None without examples), into ``outputs``."""
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

    @user_errors
    def analyse(path: str | None, progress: gr.Progress = gr.Progress()) -> tuple:
        result = run_forensics(models, path, reporter(progress))
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
