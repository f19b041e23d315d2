"""Demo helpers without a model: upload checks, click-to-prompt, prompt drawing, the evidence graph picture."""

import cv2
import numpy as np
import pytest

from demo.graph import draw_evidence_graph
from demo.handlers import click_prompt, draw_prompts, parse_vocabulary
from demo.uploads import check_file, load_media
from vision.data.video import write_video
from vision.errors import InputError, VideoError
from vision.tracking.export import object_colour


def _frames(t=5, h=24, w=32):
    return (np.random.default_rng(0).random((t, h, w, 3)) * 255).astype(np.uint8)


def test_upload_checks_name_the_problem(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(InputError, match="'notes.txt' is a .txt file; this input takes .mp4"):
        check_file(text, (".mp4",), 10)
    big = tmp_path / "big.mp4"
    big.write_bytes(b"0" * 3_000_000)
    with pytest.raises(InputError, match="'big.mp4' is 3 MB, over the 2 MB upload limit"):
        check_file(big, (".mp4",), 2)
    with pytest.raises(InputError, match="no file given"):
        load_media([], 10, 10)
    with pytest.raises(VideoError):  # a file named .mp4 that is not a video
        load_media([big], 10, 10)
    video = write_video(tmp_path / "v.mp4", _frames())
    with pytest.raises(InputError, match="either one video or a set of images"):
        load_media([video, video], 10, 10)


def test_frame_caps_are_reported(tmp_path):
    video = write_video(tmp_path / "v.mp4", _frames(t=5), fps=5)
    media = load_media([str(video)], max_frames=3, max_mb=10)
    assert media.frames.shape[0] == 3 and media.is_video and media.fps == 5
    assert "first 3 are used" in media.note
    images = []
    for i, frame in enumerate(_frames(t=4)):
        images.append(tmp_path / f"{3 - i}.png")
        cv2.imwrite(str(images[-1]), frame)
    media = load_media(images, max_frames=2, max_mb=10)
    assert media.frames.shape == (2, 24, 32, 3) and not media.is_video and media.name == "0.png"
    assert "4 images were given; the first 2 by name are used" == media.note


def test_clicks_make_prompt_lines_and_boxes_take_two_clicks():
    lines, pending = click_prompt("", "positive", 1, 2, 10.4, 5.6, None)
    assert lines == "object 1 frame 2 positive 10,6" and pending is None
    lines, pending = click_prompt(lines, "negative", 1, 2, 3, 4, None)
    lines, pending = click_prompt(lines, "box", 2, 2, 20, 18, None)
    assert pending == [20, 18] and lines.count("\n") == 1  # first corner only
    lines, pending = click_prompt(lines, "box", 2, 2, 4, 6, pending)
    assert pending is None and lines.splitlines()[-1] == "object 2 frame 2 box 4,6,20,18"
    with pytest.raises(InputError, match="click mode"):
        click_prompt(lines, "lasso", 1, 0, 1, 1, None)


def test_prompts_are_drawn_on_their_frame_in_the_object_colour():
    frame = np.zeros((40, 60, 3), np.uint8)
    lines = "object 1 frame 0 positive 10,10\nobject 2 frame 0 box 30,5,50,30\nobject 3 frame 1 positive 5,5"
    drawn = draw_prompts(frame, lines, view=0)
    assert tuple(drawn[10, 10]) == object_colour(1)
    assert tuple(drawn[5, 40]) == object_colour(2)  # the box's top edge
    assert not drawn[5, 5].any()  # object 3 is prompted on frame 1, not drawn here
    assert (draw_prompts(frame, "object 1 frame 0 positive nonsense", 0) == frame).all()  # bad text: no drawing
    assert parse_vocabulary(" mug, chair;lamp\n") == ["mug", "chair", "lamp"]
    with pytest.raises(InputError, match="vocabulary is empty"):
        parse_vocabulary(" , ")


def test_evidence_graph_picture():
    node = {"tool": "spectrum", "statistic": "spectrum.hf_ratio", "direction": "generated", "weight": 0.8}
    report = {"verdict": {"verdict": "generated", "probability": 0.9},
              "graph": {"nodes": [node, dict(node, tool="codec", direction="real", weight=0.3)],
                        "edges": [{"source": 0, "target": 1, "kind": "contradict"}]}}
    image = draw_evidence_graph(report)
    assert image.shape == (480, 720, 3) and image.dtype == np.uint8
    reds = (image[..., 0] > 180) & (image[..., 1] < 80) & (image[..., 2] < 80)
    assert reds.sum() > 50  # the generated node and its legend disc are drawn
    empty = draw_evidence_graph({"verdict": {"verdict": "insufficient evidence", "probability": None},
                                 "graph": {"nodes": [], "edges": []}})
    assert (empty < 250).any()


def test_a_missing_checkpoint_names_the_make_target(tmp_path):
    from demo.handlers import DemoConfig, Models

    models = Models(DemoConfig(tracking_ckpt=tmp_path / "none.ckpt", work_dir=tmp_path))
    with pytest.raises(InputError, match="run `make train-tracking`"):
        models.get("tracking")
