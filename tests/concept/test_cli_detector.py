"""Concept prompts answered by a detection checkpoint on the command line (vision/concept/cli.py): ``vision-predict
--task concept --ckpt DETECTION_CKPT`` and ``vision-concept --detector``: the files, and the lines that say which
model answered and what its masks are. The text encoder is the tests' hashed stand-in (no MiniLM to load)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.concept.conftest import hashed_text
from tests.concept.test_detector_only import write_detection_checkpoint
from vision.concept.cli import main as concept_main
from vision.cli.predict import main as predict_main
from vision.data.video import read_video, write_video


@pytest.fixture(autouse=True)
def hashed_encoder(monkeypatch):
    from vision.detection import vocabulary

    monkeypatch.setitem(vocabulary._ENCODERS, "minilm", hashed_text)


@pytest.fixture()
def video(tmp_path):
    frames = (np.random.default_rng(0).random((4, 48, 64, 3)) * 255).astype(np.uint8)
    return write_video(tmp_path / "clip.mp4", frames, fps=5)


@pytest.fixture()
def detector(tmp_path):
    split = tmp_path / "real_coco_train.json"
    split.write_text(json.dumps({"info": {"teacher": {"name": "yolox-nano"}}}))
    return write_detection_checkpoint(tmp_path / "last.ckpt", train_split=str(split))


def test_a_detection_checkpoint_answers_with_its_boxes_and_says_so(tmp_path, capsys, video, detector):
    out = tmp_path / "out"
    code = predict_main([str(video), "--task", "concept", "--ckpt", str(detector), "--concept", "cup",
                         "--exemplar", "1,8,8,40,30", "--concept", "person", "--out", str(out), "--device", "cpu"])
    printed = capsys.readouterr().out
    assert code == 0
    assert ("model: the detector alone: last.ckpt (trained on real frames, teacher-labelled (yolox-nano), 3 known "
            "classes)") in printed
    assert "masks: boxes from the detector (the tracker has not learned real images" in printed
    records = json.loads((out / "results.json").read_text())
    assert sorted((r["image_id"], r["category_id"]) for r in records if "presence" in r) == [
        (i, c) for i in range(1, 5) for c in (1, 2)]
    exemplar = [r for r in records if "track_id" in r and r["image_id"] == 2 and r["phrase"] == "cup"]
    # the user's box is an instance; its mask is the box (input pixels, through the detector's 32 px)
    assert any(np.allclose(r["bbox"], [8, 8, 32, 22], atol=1.5) for r in exemplar), exemplar
    assert len(read_video(out / "annotated.mp4")) == 4
    assert not list(out.glob("*.ply"))  # no 3D points: the detector has no geometry
    assert "cup: present on" in printed and "person: present on" in printed


def test_vision_concept_takes_the_detector_as_its_checkpoint(tmp_path, capsys, video, detector):
    code = concept_main([str(video), "--detector", str(detector), "--concept", "cup", "--out", str(tmp_path / "o"),
                         "--device", "cpu"])
    assert code == 0 and "model: the detector alone" in capsys.readouterr().out
    assert (tmp_path / "o" / "results.json").is_file()


@pytest.mark.parametrize("argv, message", [
    (["--detector", "d.ckpt", "--ckpt", "c.ckpt"], "give --detector or --ckpt, not both"),
    (["--detector", "d.ckpt", "--task", "tracking"], "vision-concept runs --task concept"),
])
def test_vision_concept_refuses_a_second_checkpoint_or_task(capsys, argv, message):
    assert concept_main(["in.mp4", "--concept", "cup", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_a_checkpoint_of_another_task_names_both_that_answer(tmp_path, capsys, video):
    from vision.tracking.task import TrackingConfig, build_model, save

    config = TrackingConfig(image_size=32, dim=32, text_encoder=None)
    tracker = save(build_model(config), config, tmp_path / "tracker")
    code = predict_main([str(video), "--task", "concept", "--ckpt", str(tracker), "--concept", "cup",
                         "--out", str(tmp_path / "out"), "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 2 and "holds a tracking model" in err and "or a detection checkpoint" in err


@pytest.mark.parametrize("task", ["concept", "tracking"])
def test_solve_cameras_with_a_detection_checkpoint_is_refused_by_name(tmp_path, capsys, video, detector, task):
    code = predict_main([str(video), "--task", task, "--ckpt", str(detector), "--concept", "cup", "--solve-cameras",
                         "--out", str(tmp_path / "out"), "--device", "cpu"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "--solve-cameras needs a concept checkpoint" in err and "holds a detection model" in err
    assert not (tmp_path / "out").exists()
