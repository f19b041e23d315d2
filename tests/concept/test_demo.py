"""The Track tab's concept prompts (vision/concept/demo_handlers.py: phrases, exemplar boxes, run_concept;
vision/tracking/demo.py: the phrase box with and without a concept checkpoint)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vision.concept.demo_handlers import EXEMPLAR_COLOURS, click_exemplar, draw_exemplars, parse_phrases, run_concept
from vision.data.video import write_video
from vision.demo.handlers import DemoConfig, Models
from vision.errors import InputError


def _video(path: Path, t: int = 3) -> Path:
    frames = (np.random.default_rng(0).random((t, 48, 64, 3)) * 255).astype(np.uint8)
    return write_video(path, frames, fps=5)


def test_phrases_are_split_like_a_vocabulary():
    assert parse_phrases(" mug, red chair;lamp\n") == ["mug", "red chair", "lamp"]
    assert parse_phrases(" ") == [] and parse_phrases(None) == []
    with pytest.raises(InputError, match=r"phrases 'mug, , chair': name 2 of 3 is empty"):
        parse_phrases("mug, , chair")
    with pytest.raises(InputError, match="name 2 'Mug' repeats name 1 'mug'"):
        parse_phrases("mug; Mug")


def test_exemplar_boxes_take_two_clicks_and_are_drawn_on_their_frame():
    lines, pending = click_exemplar("", True, 1, 30.4, 20, None)
    assert lines == "" and pending == [30.4, 20.0]
    lines, pending = click_exemplar(lines, True, 1, 10, 5.6, pending)
    assert lines == "1,10,6,30,20" and pending is None
    lines, _ = click_exemplar(lines, False, 1, 40, 30, [50, 44])
    assert lines.splitlines() == ["1,10,6,30,20", "1,40,30,50,44,neg"]
    assert click_exemplar(lines, True, 1, 3, 3, [3.2, 9]) == (lines, None)  # a box under a pixel wide: dropped
    frame = np.zeros((48, 64, 3), np.uint8)
    drawn = draw_exemplars(frame, lines + "\nnot a box", view=1)
    assert tuple(drawn[6, 20]) == EXEMPLAR_COLOURS[True]  # the positive box's top edge
    assert tuple(drawn[30, 45]) == EXEMPLAR_COLOURS[False] and tuple(drawn[37, 45]) == EXEMPLAR_COLOURS[False]
    assert not draw_exemplars(frame, lines, view=0).any()  # both boxes are on frame 1


def test_bad_concept_prompts_are_refused_before_any_model(tmp_path):
    """No concept checkpoint is needed to refuse them; with good prompts, the missing checkpoint is named."""
    video = _video(tmp_path / "v.mp4")
    models = Models(DemoConfig(checkpoints={"concept": tmp_path / "none.ckpt"}, work_dir=tmp_path))
    with pytest.raises(InputError, match="type a phrase for 'every instance of'"):
        run_concept(models, [str(video)], " ", "")
    with pytest.raises(InputError, match="exemplar box '0,1,2,3' must be VIEW,x0,y0,x1,y1"):
        run_concept(models, [str(video)], "mug", "0,1,2,3")
    with pytest.raises(InputError, match=r"exemplar box '5,1,2,10,20' is on view 5, but the input has views 0\.\.2"):
        run_concept(models, [str(video)], "mug", "5,1,2,10,20")
    with pytest.raises(InputError, match="'0,1,2,70,20' box .* is off the image"):
        run_concept(models, [str(video)], "", "0,1,2,70,20")
    with pytest.raises(InputError, match="no concept checkpoint at .*none.ckpt.*--concept-ckpt"):
        run_concept(models, [str(video)], "mug", "")


@pytest.mark.slow
def test_the_track_tab_starts_without_a_concept_checkpoint_and_says_what_to_train(tmp_path):
    from gradio import Button, Textbox

    from vision.demo.app import build_app

    config = DemoConfig(checkpoints={"concept": tmp_path / "none.ckpt"}, work_dir=tmp_path)
    app = build_app(config, None)
    blocks = list(app.blocks.values())
    phrases = next(b for b in blocks if isinstance(b, Textbox) and b.elem_id == "track-phrases")
    assert "no concept checkpoint at" in phrases.info and "configs/concept/tiny.yaml" in phrases.info
    button = next(b for b in blocks if isinstance(b, Button) and b.value == "Track all instances")
    assert button.interactive is False
    assert "/track_concept" in app.get_api_info()["named_endpoints"]


@pytest.mark.slow
def test_run_concept_shows_instances_in_colour_in_the_video_and_the_3d_view(tmp_path):
    """A tiny untrained concept model: a positive exemplar box is an instance of the phrase (the user says so)."""
    from tests.concept.test_cli import write_tiny_concept_model
    from vision.data.video import read_video

    model = write_tiny_concept_model(tmp_path / "concept", presence_threshold=0.0)
    models = Models(DemoConfig(checkpoints={"concept": model}, work_dir=tmp_path / "runs", device="cpu"))
    seen = []
    result = run_concept(models, [str(_video(tmp_path / "v.mp4"))], "mug, chair", "1,8,8,40,30",
                         progress=lambda fraction, text: seen.append(fraction))
    assert len(read_video(result.video)) == 3
    assert result.scene is not None and result.scene.suffix == ".glb"
    assert [p.name for p in result.downloads[:2]] == ["results.json", "scene.ply"]
    assert any(p.name.startswith("instance_") for p in result.downloads)
    assert "mug: present on 3 of 3 views" in result.summary and "chair: present on" in result.summary
    assert seen == sorted(seen) and seen[-1] == 0.95
