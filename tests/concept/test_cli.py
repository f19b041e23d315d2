"""``vision-predict --concept / --exemplar`` (vision/concept/cli.py): prompt parsing and its errors, the checks
against the input and the checkpoint, the drawing, and (slow) a run of a tiny untrained concept model."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.concept.cli import concept_prompts
from vision.concept.exemplars import ConceptPrompt, parse_exemplar
from vision.cli.predict import build_parser, main


def _frames(t: int = 3, h: int = 48, w: int = 64) -> np.ndarray:
    return (np.random.default_rng(0).random((t, h, w, 3)) * 255).astype(np.uint8)


@pytest.fixture()
def images(tmp_path: Path) -> Path:
    """A folder of three 64x48 images (a view set)."""
    folder = tmp_path / "views"
    folder.mkdir()
    for i, frame in enumerate(_frames()):
        assert cv2.imwrite(str(folder / f"{i}.png"), frame)
    return folder


def write_tiny_concept_model(folder: Path, **fields) -> Path:
    """A tiny untrained concept model folder (the default detector and tracker; ``fields``: ConceptConfig's)."""
    import torch

    from vision.concept.task import ConceptConfig, ConceptModel, save
    from vision.detection.task import build_model as build_detector
    from vision.tracking.task import build_model as build_tracker

    torch.manual_seed(0)
    config = ConceptConfig(**fields)
    model = ConceptModel(build_detector(config.detector), build_tracker(config.tracker), hidden=config.hidden)
    return save(model, config, folder)


@pytest.fixture(scope="module")
def concept_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny untrained concept model that keeps every view (presence threshold 0) and takes 2 concepts."""
    return write_tiny_concept_model(tmp_path_factory.mktemp("concept") / "model", max_phrases=2,
                                    presence_threshold=0.0)


def _run(capsys, *argv: str) -> tuple[int, str]:
    code = main([str(a) for a in argv])
    return code, capsys.readouterr().err


def test_concepts_and_their_exemplars_follow_the_command_line_order():
    args = build_parser().parse_args(["in.mp4", "--task", "tracking", "--ckpt", "c", "--exemplar", "2,0,0,5,5",
                                      "--concept", " red  mug ", "--exemplar", "0,1,2,3,4,neg",
                                      "--concept", "chair", "--exemplar", "1,1,1,9,9,pos"])
    assert concept_prompts(args) == [ConceptPrompt(None, [(2, [0, 0, 5, 5], True)]),
                                     ConceptPrompt("red mug", [(0, [1, 2, 3, 4], False)]),
                                     ConceptPrompt("chair", [(1, [1, 1, 9, 9], True)])]
    assert parse_exemplar(" 3, 1.5,2,10,20 , NEG") == (3, [1.5, 2.0, 10.0, 20.0], False)


@pytest.mark.parametrize("argv, message", [
    (["--concept", "  "], "--concept '  ' is nothing visible"),
    (["--concept", "caf\udce9"], "--concept 'caf\\udce9' is not valid UTF-8 text: byte 0xE9 at character 4"),
    (["--concept", "\u200b"], "--concept '\\u200b' is nothing visible (only spaces, format or zero-width"),
    (["--concept", "mug", "--concept", "Mug"], "--concept 'Mug' is given twice"),
    (["--concept", "mug", "--exemplar", "0,1,2,3"], "must be VIEW,x0,y0,x1,y1 or VIEW,x0,y0,x1,y1,neg (4 values"),
    (["--concept", "mug", "--exemplar", "0,1,2,3,4,5,6"], "(7 values given)"),
    (["--concept", "mug", "--exemplar", "0,a,2,3,4"], "'0,a,2,3,4': x0,y0,x1,y1 must be numbers"),
    (["--concept", "mug", "--exemplar", "0,1,2,nan,4"], "must be finite numbers"),
    (["--concept", "mug", "--exemplar", "0.5,1,2,3,4"], "VIEW must be a whole number >= 0, got '0.5'"),
    (["--concept", "mug", "--exemplar=-1,1,2,3,4"], "VIEW must be a whole number >= 0, got -1"),
    (["--concept", "mug", "--exemplar", "0,5,2,3,4"], "the box must have x0 < x1 and y0 < y1"),
    (["--concept", "mug", "--exemplar", "0,1,2,3,4,not"], "the sixth value must be 'neg' (not this) or 'pos'"),
    (["--exemplar", "0,1,2,3,4,neg"], "need at least one positive box"),
    (["--concept", "mug", "--points", "3,4"], "give either --concept / --exemplar or --points, not both"),
    (["--concept", "mug", "--stream"], "--stream does not take --concept"),
    (["--concept", "mug", "--memory-points", "4"], "--memory-points does not apply to --concept / --exemplar"),
    (["--concept", "mug", "--view", "1", "--presence-threshold", "0.2"],
     "--view, --presence-threshold do not apply to --concept / --exemplar"),
    (["--task", "concept", "--concept", "mug", "--memory-points", "4"],
     "--memory-points is an option of --task tracking, not --task concept"),
    (["--concept", "mug", "--task", "detection"], "are options of --task concept or tracking, not --task detection"),
    (["--task", "concept"], "--task concept needs --concept PHRASE and/or --exemplar"),
])
def test_bad_concept_prompts_are_one_line_and_exit_2(tmp_path, capsys, argv, message):
    """Refused before any input is read or model loaded (the checkpoint is not even a checkpoint)."""
    ckpt = tmp_path / "c.ckpt"
    ckpt.write_bytes(b"not read")
    task = [] if "--task" in argv else ["--task", "tracking"]
    code, err = _run(capsys, "missing.mp4", "--ckpt", ckpt, "--out", tmp_path / "out", *task, *argv)
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("exemplar, message", [
    ("3,1,1,10,10", "'3,1,1,10,10' is on view 3, but the input has views 0..2"),
    ("0,1,1,65,10", "off the image or empty: it must satisfy 0 <= x0 < x1 <= 64 and 0 <= y0 < y1 <= 48"),
    ("1,-2,1,10,10,neg", "'1,-2,1,10,10,neg' box [-2.0, 1.0, 10.0, 10.0] is off the image"),
])
def test_exemplars_off_the_input_are_refused_before_the_model_loads(tmp_path, capsys, images, exemplar, message):
    ckpt = tmp_path / "c.ckpt"
    ckpt.write_bytes(b"not read")
    code, err = _run(capsys, images, "--task", "concept", "--ckpt", ckpt, "--out", tmp_path / "out",
                     "--concept", "mug", "--exemplar", exemplar, "--device", "cpu")
    assert code == 2 and err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()


def test_a_tracking_checkpoint_with_concept_prompts_says_which_checkpoint_is_needed(tmp_path, capsys, images):
    from vision.tracking.task import TrackingConfig, build_model, save

    config = TrackingConfig(image_size=32, dim=32, text_encoder=None)
    tracker = save(build_model(config), config, tmp_path / "tracker")
    code, err = _run(capsys, images, "--task", "tracking", "--ckpt", tracker, "--out", tmp_path / "out",
                     "--concept", "mug", "--device", "cpu")
    assert code == 2 and err.count("\n") == 1, err
    assert "holds a tracking model; concept prompts (--concept / --exemplar) need a concept checkpoint" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("task", [["--task", "concept"], ["--task", "tracking"]])
def test_solve_cameras_reaches_the_concept_predictor(tmp_path, monkeypatch, images, concept_model, task):
    """``--solve-cameras`` with concept prompts (either task name) builds the concept model's tracker on the camera
    solver's cameras; without it, on the point head."""
    import vision.concept.cli as cli

    built = []

    def load(*args, **kwargs):
        built.append(real_load(*args, **kwargs))
        raise SystemExit(0)  # the predictor is what is checked: stop before it runs

    real_load = cli.load_concept_predictor
    monkeypatch.setattr(cli, "load_concept_predictor", load)
    for flags, solving in (([], False), (["--solve-cameras"], True)):
        with pytest.raises(SystemExit):
            main([str(images), *task, "--ckpt", str(concept_model), "--out", str(tmp_path / "out"),
                  "--concept", "mug", "--device", "cpu", *flags])
        assert (built[-1].tracker.solver is not None) == solving


def test_more_concepts_than_the_checkpoint_takes_is_one_line(tmp_path, capsys, images, concept_model):
    code, err = _run(capsys, images, "--task", "concept", "--ckpt", concept_model, "--out", tmp_path / "out",
                     "--concept", "mug", "--concept", "cup", "--concept", "chair", "--device", "cpu")
    assert code == 2 and err.count("\n") == 1, err
    assert "3 concepts given (--concept, or exemplars alone); this checkpoint takes at most 2" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_concepts_on_a_video_write_results_annotation_and_point_clouds(tmp_path, capsys, concept_model):
    """A video, a phrase and a positive exemplar (the user says it is an instance, so one is found even by an
    untrained model), and a second phrase: instance and presence records for both, the drawn video, the clouds."""
    from vision.data.video import read_video, write_video

    video = write_video(tmp_path / "clip.mp4", _frames(t=4), fps=5)
    out = tmp_path / "out"
    code = main([str(video), "--task", "tracking", "--ckpt", str(concept_model), "--out", str(out),
                 "--concept", "mug", "--exemplar", "1,8,8,40,30", "--concept", "chair", "--device", "cpu"])
    printed = capsys.readouterr().out
    assert code == 0
    records = json.loads((out / "results.json").read_text())
    presence = [r for r in records if "presence" in r]
    assert sorted((r["image_id"], r["category_id"]) for r in presence) == [(i, c) for i in range(1, 5)
                                                                           for c in (1, 2)]
    instances = [r for r in records if "track_id" in r]
    mug = [r for r in instances if r["phrase"] == "mug"]
    assert any(r["image_id"] == 2 for r in mug)  # the exemplar's view
    assert all(r["category_id"] == {"mug": 1, "chair": 2}[r["phrase"]] and r["prompt_type"] == "concept"
               and r["segmentation"]["size"] == [48, 64] and 0 <= r["score"] <= 1 for r in instances)
    assert len(read_video(out / "annotated.mp4")) == 4
    for track_id in {r["track_id"] for r in instances}:
        assert (out / f"instance_{track_id}.ply").is_file()
    assert (out / "scene.glb").is_file()
    assert "mug: present on 4 of 4 views" in printed and "chair: present on" in printed
