"""One pass per input (vision/cli/inputs.py, vision.data.video.FrameSource): ``vision predict`` checks an input once
and decodes it once, its predictor and its drawing reading the frames of that one pass, which equal those of two
separate reads; a vocabulary is parsed once per command."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from tests.tools.test_predict_cli import _task_args, _untrained_checkpoint
from vision.cli import predict as predict_cli
from vision.cli.inputs import load_input
from vision.data import video as video_module
from vision.data.video import read_frames, read_frames_from_paths, read_video, write_video


def _video(folder: Path, frames: int = 6, width: int = 40, height: int = 30) -> Path:
    rng = np.random.default_rng(0)
    return write_video(folder / "clip.mp4", (rng.random((frames, height, width, 3)) * 255).astype(np.uint8), fps=5,
                       preset="ultrafast")


def _images(folder: Path, count: int = 3) -> Path:
    rng = np.random.default_rng(1)
    folder.mkdir()
    for i in range(count):
        cv2.imwrite(str(folder / f"{i}.png"), (rng.random((30, 40, 3)) * 255).astype(np.uint8))
    return folder


@pytest.mark.parametrize("kind", ["video", "images"])
def test_the_one_pass_gives_the_frames_of_two_reads(kind, tmp_path, monkeypatch):
    """The model's frames and the working frames come from one decoding pass and equal, to the bit, what the two
    separate reads of before gave (read_video / read_frames_from_paths at each size)."""
    path = _video(tmp_path) if kind == "video" else _images(tmp_path / "images")
    monkeypatch.setattr("vision.cli.inputs.MAX_WORKING_PIXELS", 20 * 15)  # a working size below the input's
    source = load_input(path, max_frames=4)
    work = source.working_size
    assert work[0] * work[1] <= 20 * 15
    frames, (height, width) = read_frames(source.source, (16, 16))
    working = source.working_frames()
    assert (height, width) == (30, 40) and frames.shape == (len(working), 16, 16, 3)
    assert working.shape[1:3] == (work[1], work[0])
    if kind == "video":
        np.testing.assert_array_equal(frames, read_video(path, max_frames=4, size=(16, 16)))
        np.testing.assert_array_equal(working, read_video(path, max_frames=4, size=work))
        assert len(frames) == 4
    else:
        images = sorted(path.iterdir())
        np.testing.assert_array_equal(frames, read_frames_from_paths(images, size=(16, 16)))
        np.testing.assert_array_equal(working, read_frames_from_paths(images, size=work))


def test_a_frame_source_is_read_whole():
    source = video_module.FrameSource(None, [], 4, 4, 1, None)
    with pytest.raises(video_module.InputError, match="stride must be 1"):
        read_frames(source, (8, 8), stride=2)


@pytest.mark.slow
@pytest.mark.parametrize("task", ["tracking", "concept"])
def test_vision_predict_opens_a_video_twice_and_decodes_it_once(task, tmp_path, monkeypatch):
    """A tracking or concept run on a video: one check (header and packets, no decoding) and one decoding pass,
    whose frames feed both the model and annotated.mp4 (before: a second header probe and a second decode)."""
    checkpoint = _untrained_checkpoint(task, tmp_path / f"{task}.ckpt")
    video = _video(tmp_path, frames=4, width=32, height=32)
    opened, decoded = [], []
    real_open, real_decode = video_module._open_for_reading, video_module._decode_frames
    monkeypatch.setattr(video_module, "_open_for_reading", lambda path: (opened.append(Path(path)),
                                                                         real_open(path))[1])
    monkeypatch.setattr(video_module, "_decode_frames", lambda path, *a, **k: (decoded.append(Path(path)),
                                                                               real_decode(path, *a, **k))[1])
    args = _task_args(task, {task: checkpoint})
    assert predict_cli.main([str(video), *args, "--out", str(tmp_path / "out")]) == 0
    assert opened.count(video) == 2 and decoded.count(video) == 1, (opened, decoded)


@pytest.mark.slow
def test_a_vocabulary_is_parsed_once_for_every_input(tmp_path, monkeypatch):
    """``--task detection`` on two images with two vocabularies: each ``--vocabulary`` text is parsed once (the
    flags' check), not again for each input."""
    import vision.text.vocabulary as vocabulary_module

    checkpoint = _untrained_checkpoint("detection", tmp_path / "detection.ckpt")
    images = _images(tmp_path / "images", count=2)
    calls = []
    real = vocabulary_module.parse_vocabulary
    monkeypatch.setattr(vocabulary_module, "parse_vocabulary", lambda text, **k: (calls.append(text),
                                                                                  real(text, **k))[1])
    argv = [str(p) for p in sorted(images.iterdir())] + ["--task", "detection", "--ckpt", str(checkpoint),
                                                          "--vocabulary", "mug,chair", "--vocabulary", "cat"]
    assert predict_cli.main([*argv, "--out", str(tmp_path / "out")]) == 0
    assert sorted(calls) == ["cat", "mug,chair"]
