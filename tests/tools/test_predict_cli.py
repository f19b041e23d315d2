"""vision predict (vision.cli.predict): clear one-line errors for bad paths and prompts (exit
status 2, no stack trace), input limits, and end-to-end runs."""

import re
from pathlib import Path

import numpy as np
import pytest

from tests.data.conftest import png_claiming
from vision.cli import predict as predict_cli
from vision.errors import InputError
from vision.tracking.prompt_text import parse_points
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
    np.testing.assert_array_equal(parse_points("10,20; 30,40"), [[10, 20], [30, 40]])
    for bad in ("10", "a,b", "1,2,3", ""):
        with pytest.raises(InputError, match="--points"):
            parse_points(bad)
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
                                      "image_size": 32, "max_frames": 4}},
             "concept": {"config": {"detector": {"channels": 32}, "tracker": {"dim": 32, "text_encoder": None}}}}
    module = get_task(task).resolve("lightning")(**small[task])
    torch.save({"hyper_parameters": dict(module.hparams), "state_dict": module.state_dict()}, path)
    return path


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("untrained")
    return {task: _untrained_checkpoint(task, root / f"{task}.ckpt") for task in task_names(predictor=True)}


def _task_args(task: str, checkpoints: dict[str, Path]) -> list[str]:
    extra = {"detection": ["--vocabulary", "mug,chair"], "tracking": ["--points", "20,20", "--presence-threshold", "0"],
             "forensics": [], "concept": ["--concept", "mug"]}[task]
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


# ---------------------------------------------------------------------------------------------------------------
# careless and hostile uses: each one error line, exit status 2, nothing written (tests/data/test_files.py checks the
# output places themselves; these check that vision-predict uses them)


def _one_error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


@pytest.fixture()
def image_and_ckpt(tmp_path) -> tuple[Path, Path]:
    """A small PNG and a placeholder checkpoint (the checks below all run before a model is read)."""
    import cv2

    image = tmp_path / "in" / "frame.png"
    image.parent.mkdir()
    cv2.imwrite(str(image), np.zeros((16, 16, 3), np.uint8))
    ckpt = tmp_path / "x.ckpt"
    ckpt.write_bytes(b"0")
    return image, ckpt


@pytest.mark.parametrize("out", ["", "loop", "under_a_file", "/proc/vision-test", "input_folder"])
def test_an_unusable_out_is_one_line_and_writes_nothing(image_and_ckpt, tmp_path, capsys, monkeypatch, out):
    """``--out ""`` wrote into the current folder; an unwritable folder raised a raw OSError."""
    import os

    image, ckpt = image_and_ckpt
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    value = {"": "", "loop": str(tmp_path / "loop" / "o"), "under_a_file": str(ckpt / "o"),
             "/proc/vision-test": "/proc/vision-test", "input_folder": str(image.parent)}[out]
    source = image.parent if out == "input_folder" else image
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert predict_cli.main([str(source), "--task", "detection", "--ckpt", str(ckpt), "--vocabulary", "mug",
                             "--out", value]) == 2
    line = _one_error(capsys)
    assert "--out" in line
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


@pytest.mark.parametrize("threshold", ["nan", "-0.1", "1.5", "inf"])
def test_a_presence_threshold_that_is_no_probability_is_refused(image_and_ckpt, tmp_path, capsys, threshold):
    """``nan`` exited 0 with every mask empty."""
    image, ckpt = image_and_ckpt
    assert predict_cli.main([str(image), "--task", "tracking", "--ckpt", str(ckpt), "--points", "1,1",
                             "--presence-threshold", threshold, "--out", str(tmp_path / "o")]) == 2
    assert "--presence-threshold must be a probability in [0, 1]" in _one_error(capsys)
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("labels", ["0.5", "2", "1,-1", "1,0.999"])
def test_labels_other_than_0_or_1_are_refused_not_rounded(image_and_ckpt, tmp_path, capsys, labels):
    """``--labels 0.5`` became a negative click."""
    image, ckpt = image_and_ckpt
    points = ";".join(["1,1"] * len(labels.split(",")))
    assert predict_cli.main([str(image), "--task", "tracking", "--ckpt", str(ckpt), "--points", points,
                             "--labels", labels, "--out", str(tmp_path / "o")]) == 2
    assert "--labels must be 1 (positive) or 0 (negative)" in _one_error(capsys)
    assert not (tmp_path / "o").exists()


def _clip(folder: Path, suffix: str, frames: int = 40) -> Path:
    """A PyAV-written clip of ``frames`` random 32 x 32 frames in the container of ``suffix``."""
    import av

    rng = np.random.default_rng(0)
    path = folder / f"clip{suffix}"
    with av.open(str(path), "w", options={"movflags": "+faststart"} if suffix == ".mp4" else {}) as container:
        stream = container.add_stream("libx264", rate=10)
        stream.width = stream.height = 32
        stream.pix_fmt = "yuv420p"
        stream.options = {"preset": "ultrafast"}
        for _ in range(frames):
            frame = av.VideoFrame.from_ndarray((rng.random((32, 32, 3)) * 255).astype(np.uint8), format="rgb24")
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return path


@pytest.mark.parametrize("task", task_names(predictor=True))
@pytest.mark.parametrize("cut", ["mkv_half", "mp4_last_100_bytes"])
def test_truncated_videos_without_a_frame_count_or_with_a_damaged_end_are_refused(task, cut, checkpoints, tmp_path,
                                                                                   capsys):
    """An mkv (no declared frame count) cut at 50% was accepted by every task; an mp4 missing its last 100 bytes
    passed forensics and, under --max-frames, detection and tracking."""
    suffix, keep = {"mkv_half": (".mkv", 0.5), "mp4_last_100_bytes": (".mp4", -100)}[cut]
    full = _clip(tmp_path, suffix)
    data = full.read_bytes()
    cut_path = tmp_path / f"cut{suffix}"
    cut_path.write_bytes(data[: int(len(data) * keep)] if isinstance(keep, float) else data[:keep])
    assert predict_cli.main([str(cut_path), *_task_args(task, checkpoints), "--max-frames", "16",
                             "--out", str(tmp_path / "out")]) == 2
    line = _one_error(capsys)
    assert "cut" + suffix in line and "truncated or corrupt video" in line
    assert not (tmp_path / "out").exists()


def test_a_one_frame_shortfall_is_read_and_the_output_says_so(checkpoints, tmp_path, capsys):
    """Muxers round: a file holding one frame fewer than its container says is intact, and is read with a note."""
    full = _clip(tmp_path, ".mkv", frames=12)
    short = tmp_path / "short.mkv"
    short.write_bytes(full.read_bytes()[:-40])  # the last frame's block
    from vision.data.video import check_video

    assert "implies 12 frames and it holds 11" in check_video(short).note
    assert predict_cli.main([str(short), *_task_args("detection", checkpoints), "--out", str(tmp_path / "o")]) == 0
    assert "note: short.mkv: the container's duration implies 12 frames and it holds 11" in capsys.readouterr().out


@pytest.fixture()
def full_disk(tmp_path):
    """A 256 kB tmpfs mounted on a folder (root only; skipped where mounting is not allowed)."""
    import subprocess

    folder = tmp_path / "full"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(folder)],
                      capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    yield folder
    subprocess.run(["umount", str(folder)], capture_output=True)


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_leaves_no_partial_output(checkpoints, full_disk, tmp_path, capsys):
    """Detection on a full disk raised OSError and left a partial annotated.mp4."""
    video = _clip(tmp_path, ".mp4", frames=60)
    out = full_disk / "out"
    assert predict_cli.main([str(video), *_task_args("detection", checkpoints), "--out", str(out)]) == 2
    line = _one_error(capsys)
    assert "No space left on device" in line and str(out) in line
    assert list(full_disk.iterdir()) == []


@pytest.mark.parametrize("points", ["0", "-3"])
def test_memory_points_below_one_are_refused(image_and_ckpt, tmp_path, capsys, points):
    image, ckpt = image_and_ckpt
    assert predict_cli.main([str(image), "--task", "tracking", "--ckpt", str(ckpt), "--points", "1,1",
                             "--memory-points", points, "--out", str(tmp_path / "o")]) == 2
    assert "--memory-points must be an integer >= 1" in _one_error(capsys)
    assert not (tmp_path / "o").exists()


def test_memory_points_and_solved_cameras_reach_the_tracker(tmp_path, monkeypatch):
    """``--memory-points 16`` (the fast setting of docs/speed.md) and ``--solve-cameras`` build the predictor with
    them; without the options the predictor keeps its defaults."""
    import inspect

    import cv2
    import torch

    from tests.cli.conftest import write_task_checkpoint
    from vision.tracking.predictor import TrackerPredictor

    torch.set_num_threads(1)
    ckpt, _ = write_task_checkpoint(tmp_path / "g2tam.ckpt", "tracking", image_size=32, dim=32, text_encoder=None)
    image = tmp_path / "frame.png"
    cv2.imwrite(str(image), np.zeros((32, 32, 3), np.uint8))
    built = []
    original = TrackerPredictor.__init__

    def record(self, *args, **kwargs):
        original(self, *args, **kwargs)
        built.append((self.memory_points, self.solver is not None))

    monkeypatch.setattr(TrackerPredictor, "__init__", record)
    default = inspect.signature(original).parameters["memory_points"].default
    for extra, expected in ((["--memory-points", "16"], (16, False)), ([], (default, False)),
                            (["--solve-cameras"], (default, True))):
        built.clear()
        assert predict_cli.main([str(image), "--task", "tracking", "--ckpt", str(ckpt), "--points", "16,16",
                                 "--out", str(tmp_path / f"o{'-'.join(extra)}"), *extra]) == 0
        assert built == [expected]
