"""vision-predict (vision.cli.predict, tools/predict.py): clear one-line errors for bad paths and prompts (exit
status 2, no stack trace), input limits, and end-to-end runs."""

import re
from pathlib import Path

import numpy as np
import pytest

from tests.data.conftest import png_claiming
from vision.cli import predict as predict_cli
from vision.errors import InputError
from vision.tasks import get_task, task_names


def test_missing_checkpoint_and_input(tmp_path, capsys):
    assert predict_cli.main([str(tmp_path / "v.mp4"), "--task", "forensics", "--ckpt", str(tmp_path / "no.ckpt")]) == 2
    assert "checkpoint not found" in capsys.readouterr().err
    ckpt = tmp_path / "x.ckpt"
    ckpt.write_bytes(b"0")
    assert predict_cli.main([str(tmp_path / "v.mp4"), "--task", "tracking", "--ckpt", str(ckpt),
                             "--points", "1,2"]) == 2
    assert "input not found" in capsys.readouterr().err


def test_prompts_are_parsed_or_refused(tmp_path, capsys):
    np.testing.assert_array_equal(predict_cli.parse_points("10,20; 30,40"), [[10, 20], [30, 40]])
    for bad in ("10", "a,b", "1,2,3", ""):
        with pytest.raises(InputError, match="--points"):
            predict_cli.parse_points(bad)
    ckpt = tmp_path / "x.ckpt"
    ckpt.write_bytes(b"0")
    empty = tmp_path / "frames"
    empty.mkdir()
    assert predict_cli.main([str(empty), "--task", "tracking", "--ckpt", str(ckpt)]) == 2
    assert "needs a prompt" in capsys.readouterr().err
    assert predict_cli.main([str(empty), "--task", "detection", "--ckpt", str(ckpt)]) == 2
    assert "--vocabulary" in capsys.readouterr().err


@pytest.mark.slow
def test_tracking_end_to_end_with_prompt_lines(tmp_path, capsys):
    """``--task tracking`` with ``--prompt`` lines for two objects on a video: COCO-video results, annotated video,
    masks, one .ply per found object and the scene reconstruction; a malformed line is one clear error."""
    import json
    import zipfile

    import open3d as o3d
    import torch

    from tests.tracking.conftest import train_tiny_checkpoint
    from vision.synthetic.scenes import generate_scene
    from vision.data.video import read_video, write_video

    torch.set_num_threads(1)
    ckpt = train_tiny_checkpoint(tmp_path / "ckpt")
    scene = generate_scene(1, views=5, size=48, mode="video", min_objects=2, max_objects=2, threads=1)
    video = write_video(tmp_path / "clip.mp4", scene.rgb, fps=5)
    out = tmp_path / "out"
    assert predict_cli.main([str(video), "--task", "tracking", "--ckpt", str(ckpt), "--out", str(out),
                             "--presence-threshold", "0",  # a barely trained tracker: keep every mask
                             "--prompt", "object 1 frame 0 positive 20,30", "--prompt", "object 1 frame 0 - 2,2",
                             "--prompt", "object 4 frame 2 box 5,5,30,40"]) == 0
    assert "wrote" in capsys.readouterr().out
    results = json.loads((out / "results.json").read_text())
    assert {r["track_id"] for r in results} == {1, 4} and {r["image_id"] for r in results} == {1, 2, 3, 4, 5}
    assert read_video(out / "annotated.mp4").shape == (5, 48, 48, 3)
    with zipfile.ZipFile(out / "masks.zip") as zf:
        assert sorted(zf.namelist())[:2] == ["object_1/frame_00000.png", "object_1/frame_00001.png"]
    plys = sorted(out.glob("object_*.ply"))
    assert plys and all(len(o3d.io.read_point_cloud(str(p)).points) > 0 for p in plys)
    assert len(o3d.io.read_point_cloud(str(out / "scene.ply")).points) > 0 and (out / "scene.glb").stat().st_size
    assert predict_cli.main([str(video), "--task", "tracking", "--ckpt", str(ckpt), "--out", str(out),
                             "--prompt", "object 1 frame 9 positive 1,1"]) == 2
    assert "out of range" in capsys.readouterr().err
    assert predict_cli.main([str(video), "--task", "tracking", "--ckpt", str(ckpt), "--prompt", "object 1 frame 0",
                             "--points", "1,1"]) == 2
    assert "not both" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------------------------
# input limits: one video reader policy for every task, and a bounded decoded size


def _untrained_checkpoint(task: str, path: Path) -> Path:
    """A checkpoint of ``task`` with random weights, in the layout tools/train.py writes (``hyper_parameters`` +
    ``state_dict``): enough for the input checks and the bounded-size runs below, which test no accuracy."""
    import torch

    torch.manual_seed(0)
    small = {"detection": {"config": {"channels": 32}, "queue_size": 64, "samples_per_class": 64},
             "tracking": {"config": {"image_size": 32, "dim": 32, "text_encoder": None}, "max_objects": 2},
             "forensics": {"config": {"tools": ["spectrum", "residual", "temporal", "codec"], "hidden": 8,
                                      "image_size": 32, "max_frames": 4}}}
    module = get_task(task).resolve("lightning")(**small[task])
    torch.save({"hyper_parameters": dict(module.hparams), "state_dict": module.state_dict()}, path)
    return path


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("untrained")
    return {task: _untrained_checkpoint(task, root / f"{task}.ckpt") for task in task_names(predictor=True)}


def _task_args(task: str, checkpoints: dict[str, Path]) -> list[str]:
    extra = {"detection": ["--vocabulary", "mug,chair"], "tracking": ["--points", "20,20", "--presence-threshold", "0"],
             "forensics": []}[task]
    return ["--task", task, "--ckpt", str(checkpoints[task]), *extra]


@pytest.mark.parametrize("task", task_names(predictor=True))
def test_a_truncated_video_is_refused_by_every_task(task, checkpoints, tmp_path, capsys):
    """The first 10 % of a faststart mp4 opens and its first frames decode; every task refuses it with one line
    naming the file and the declared vs readable frame counts (forensics, which reads only its first frames, too)."""
    from vision.data.video import write_video

    frames = (np.random.default_rng(0).random((100, 32, 32, 3)) * 255).astype(np.uint8)
    full = write_video(tmp_path / "full.mp4", frames, fps=10, preset="ultrafast")  # its first 10 % hold 7 frames
    cut = tmp_path / "tenth.mp4"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 10])
    assert predict_cli.main([str(cut), *_task_args(task, checkpoints), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "tenth.mp4" in err[0] and re.search(r"declares 100 frames but only \d+ could be read", err[0]), err[0]


@pytest.mark.parametrize("task", task_names(predictor=True))
def test_an_image_over_the_pixel_cap_is_refused_from_its_header(task, checkpoints, tmp_path, capsys):
    """A 10000 x 10000 PNG is refused before anything is decoded: one line naming the file, its size, the cap
    and the flag that raises it."""
    huge = png_claiming(tmp_path / "huge.png", 10000, 10000)
    assert predict_cli.main([str(huge), *_task_args(task, checkpoints), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert all(s in err[0] for s in ("huge.png", "10000x10000", "4096x4096", "--max-pixels")), err[0]


def test_large_frames_are_processed_at_the_working_size_and_reported_at_the_input_size(checkpoints, tmp_path):
    """A 2400 x 1800 image (above the working size, under the cap): what is drawn (annotated.mp4) is at most
    MAX_WORKING_PIXELS, while results stay in the input's pixels (tracking masks at 2400 x 1800, boxes inside it)."""
    import json
    import zipfile

    import cv2

    from vision.data.io import MAX_WORKING_PIXELS
    from vision.data.video import probe_video

    image = tmp_path / "large.png"
    ys, xs = np.mgrid[0:1800, 0:2400]
    cv2.imwrite(str(image), np.stack([xs % 256, ys % 256, (xs + ys) % 256], axis=-1).astype(np.uint8))

    out = tmp_path / "tracking"
    assert predict_cli.main([str(image), *_task_args("tracking", checkpoints), "--points", "1200,900",
                             "--out", str(out)]) == 0
    info = probe_video(out / "annotated.mp4")
    assert info.width * info.height <= MAX_WORKING_PIXELS and abs(info.width / info.height - 4 / 3) < 0.01
    results = json.loads((out / "results.json").read_text())
    assert results and all(r["segmentation"]["size"] == [1800, 2400] for r in results)
    with zipfile.ZipFile(out / "masks.zip") as zf:
        mask = cv2.imdecode(np.frombuffer(zf.read(zf.namelist()[0]), np.uint8), cv2.IMREAD_GRAYSCALE)
    assert mask.shape == (1800, 2400)

    out = tmp_path / "detection"
    assert predict_cli.main([str(image), *_task_args("detection", checkpoints), "--out", str(out)]) == 0
    info = probe_video(out / "annotated.mp4")
    assert info.width * info.height <= MAX_WORKING_PIXELS
    for result in json.loads((out / "results.json").read_text()):
        x, y, w, h = result["bbox"]
        assert -1 <= x and x + w <= 2401 and -1 <= y and y + h <= 1801

    assert predict_cli.main([str(image), *_task_args("forensics", checkpoints), "--out", str(tmp_path / "f")]) == 0


def test_frames_beyond_max_frames_are_left_out_and_said_so(checkpoints, tmp_path, capsys):
    import json

    from vision.data.video import write_video

    frames = (np.random.default_rng(0).random((5, 32, 32, 3)) * 255).astype(np.uint8)
    video = write_video(tmp_path / "five.mp4", frames, fps=5, preset="ultrafast")
    out = tmp_path / "out"
    assert predict_cli.main([str(video), *_task_args("tracking", checkpoints), "--max-frames", "3",
                             "--out", str(out)]) == 0
    assert "the first 3 of its 5 frames are used" in capsys.readouterr().out
    assert {r["image_id"] for r in json.loads((out / "results.json").read_text())} == {1, 2, 3}
