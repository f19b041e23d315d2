"""The demo with a detector trained on real frames (vision/demo/handlers.py, app.py, examples.py, and the Detect
and concept handlers, vision/detection/demo_handlers.py and vision/concept/demo_handlers.py): which checkpoint
answers Detect and the phrases of Track, the lines that say which model answered and what the masks are, and the
real example clip. The detector is an untrained tiny one recorded as trained on teacher-labelled real frames; the
text encoder is the tests' hashed stand-in."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.concept.conftest import hashed_text
from tests.concept.test_detector_only import write_detection_checkpoint
from vision.data.video import read_video, write_video
from vision.concept.demo_handlers import run_concept
from vision.demo.handlers import REAL_DETECTION_CKPT, DemoConfig, Models
from vision.detection.demo_handlers import run_detection
from vision.errors import InputError


@pytest.fixture(autouse=True)
def hashed_encoder(monkeypatch):
    from vision.detection import vocabulary

    monkeypatch.setitem(vocabulary._ENCODERS, "minilm", hashed_text)


@pytest.fixture()
def real(tmp_path) -> Path:
    split = tmp_path / "real_coco_train.json"
    split.write_text(json.dumps({"info": {"teacher": {"name": "yolox-nano"}}}))
    folder = tmp_path / "real_coco" / "checkpoints"
    folder.mkdir(parents=True)
    return write_detection_checkpoint(folder / "last.ckpt", train_split=str(split))


def _video(path: Path, t: int = 3) -> Path:
    return write_video(path, (np.random.default_rng(0).random((t, 48, 64, 3)) * 255).astype(np.uint8), fps=5)


def test_the_real_detector_answers_detect_and_phrases_only_when_it_exists(tmp_path, real):
    absent = Models(DemoConfig(checkpoints={"detection": tmp_path / "synthetic.ckpt"}, work_dir=tmp_path,
                               real_detection=tmp_path / "none.ckpt"))
    with pytest.raises(InputError, match="no detection checkpoint at .*synthetic.ckpt"):
        absent.checkpoint("detection")
    models = Models(DemoConfig(checkpoints={"tracking": tmp_path / "tracker.ckpt"}, work_dir=tmp_path,
                               real_detection=real))
    assert models.checkpoint("detection") == models.checkpoint("concept") == real
    with pytest.raises(InputError, match="no tracking checkpoint"):  # point prompts stay with the tracker
        models.checkpoint("tracking")


def test_phrases_on_real_footage_are_answered_by_the_detector_alone(tmp_path, real):
    models = Models(DemoConfig(work_dir=tmp_path / "runs", device="cpu", real_detection=real))
    result = run_concept(models, [str(_video(tmp_path / "v.mp4"))], "cup, person", "1,8,8,40,30")
    assert len(read_video(result.video)) == 3 and result.scene is None
    assert [p.name for p in result.downloads] == ["results.json"]
    lines = result.summary.splitlines()
    assert lines[0] == "v.mp4: 3 frames, 2 concept(s)." and lines[1].startswith("cup: present on")
    assert ("model: the detector alone real_coco/checkpoints/last.ckpt (trained on real frames, teacher-labelled "
            "(yolox-nano), 3 known classes)") in lines
    assert lines[-1].startswith("masks: boxes from the detector (the tracker has not learned real images")


def test_detect_says_which_detector_answered(tmp_path, real):
    models = Models(DemoConfig(work_dir=tmp_path / "runs", device="cpu", real_detection=real))
    result = run_detection(models, str(_video(tmp_path / "v.mp4")), "cup, person", 0.3)
    assert result.summary.splitlines()[-1] == (
        "model: the detector real_coco/checkpoints/last.ckpt (trained on real frames, teacher-labelled (yolox-nano), "
        "3 known classes)")


def test_the_demo_looks_for_the_real_detector_at_its_training_run():
    from vision.demo.app import parse_args

    assert parse_args([]).real_detection_ckpt == REAL_DETECTION_CKPT == Path(
        "runs/detection/real/checkpoints/last.ckpt")
    assert parse_args(["--real-detection-ckpt", "x.ckpt"]).real_detection_ckpt == Path("x.ckpt")


def test_the_real_cup_clip_is_an_example_when_opencv_samples_are_there(tmp_path):
    from vision.demo import examples

    samples = Path(__file__).resolve().parents[2] / examples.OPENCV_SAMPLES
    if not (samples / "cup.mp4").is_file():
        pytest.skip("OpenCV's samples are not fetched (vision-fetch-opencv-samples)")
    made = examples.prepare_examples(tmp_path / "ex", opencv_samples=samples)
    assert made.cup_video == tmp_path / "ex" / "cup.mp4" and made.cup_phrases == "cup, person"
    assert read_video(made.cup_video).shape == (examples.CUP_FRAMES, 240, 320, 3)
    without = examples.prepare_examples(tmp_path / "none", opencv_samples=tmp_path / "absent")
    assert without.cup_video is None


@pytest.mark.slow
def test_the_track_tab_says_phrases_are_answered_by_the_real_detector(tmp_path, real):
    from gradio import Button, Textbox

    from vision.demo.app import build_app

    config = DemoConfig(checkpoints={"concept": tmp_path / "none.ckpt"}, work_dir=tmp_path, real_detection=real)
    blocks = list(build_app(config, None).blocks.values())
    phrases = next(b for b in blocks if isinstance(b, Textbox) and b.elem_id == "track-phrases")
    assert "answered by the detector trained on real frames" in phrases.info and "boxes" in phrases.info
    button = next(b for b in blocks if isinstance(b, Button) and b.value == "Track all instances")
    assert button.interactive is True
