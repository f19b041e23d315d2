"""vision.prepare.real_depth (vision-prepare-real-depth): real frames with TCMonoDepth's relative disparity, one
.npz and its manifest.

The file is built once from a small clip panning across scikit-image's coffee photograph (landscape frames: the
square crop matters) and the astronaut photograph, with the real teacher (skipped without ``../shared/weights``),
at 32 px frames and a 64 px teacher input to stay fast."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.datasets.staging import add_user_file, assert_left_as_it_was, fail_late, snapshot
from vision.data.real_depth import RealDepthFrames
from vision.errors import DataError, InputError
from vision.prepare import real_depth as prep
from vision.prepare.aigv import skimage_data_dir
from vision.prepare.teacher import PHOTOS, Source, default_sources

CLIP_FRAMES = 12
OPTIONS = {"size": 32, "teacher_size": 64, "max_frames": 4}


def _clip(path: Path) -> Path:
    from vision.data.io import read_image
    from vision.data.video import write_video

    coffee = read_image(skimage_data_dir() / "coffee.png")  # 600 x 400
    frames = [coffee[40:280, 20 * i:20 * i + 320] for i in range(CLIP_FRAMES)]  # 320 x 240, panning
    return write_video(path, np.stack(frames), fps=10.0, crf=18)


def _sources(clip: Path) -> list[Source]:
    return [Source("clip", clip, "video", "test clip", "train"),
            Source("astronaut", skimage_data_dir() / "astronaut.png", "photo", "scikit-image astronaut.png", "train")]


@pytest.fixture(scope="module")
def built(pretrained_weights, tmp_path_factory):
    root = tmp_path_factory.mktemp("real_depth")
    clip = _clip(root / "src" / "clip.mp4")
    logged: list[str] = []
    npz, manifest = prep.prepare(root / "out" / "depth.npz", _sources(clip), **OPTIONS, log=logged.append)
    return npz, manifest, clip, logged


def test_the_file_holds_frames_and_disparity_and_the_manifest_its_provenance(built):
    from vision.weights.registry import entry

    npz, manifest_path, _, logged = built
    assert manifest_path == npz.with_suffix(".json")
    with np.load(npz, allow_pickle=False) as data:
        assert sorted(data.files) == ["disparity", "frames"]
        frames, disparity = data["frames"], data["disparity"]
    assert frames.dtype == np.uint8 and disparity.dtype == np.float16
    # the clip: stride ceil(12 / 4) = 3, four panning frames; the photograph: one
    assert frames.shape == (5, 32, 32, 3) and disparity.shape == (5, 32, 32)
    assert np.isfinite(disparity).all() and float(disparity.astype(np.float32).std()) > 0
    manifest = json.loads(manifest_path.read_text())
    teacher = manifest["teacher"]
    assert teacher["name"] == "tcmonodepth-small" and teacher["sha256"] == entry("tcmonodepth-small").sha256
    assert teacher["file"] == "tcmonodepth_small_ckpt.pt.tar" and teacher["input_size"] == [64, 64]
    assert (manifest["size"], manifest["teacher_size"], manifest["frames"]) == (32, 64, 5)
    assert manifest["sampling"]["max_frames"] == 4 and manifest["file"] == "depth.npz"
    assert manifest["arrays"]["frames"] == {"dtype": "uint8", "shape": [5, 32, 32, 3]}
    sources = {s["name"]: s for s in manifest["sources"]}
    assert [s["name"] for s in manifest["sources"]] == ["astronaut", "clip"]  # name order
    assert (sources["astronaut"]["first"], sources["astronaut"]["frames_kept"]) == (0, 1)
    assert (sources["clip"]["first"], sources["clip"]["frames_kept"]) == (1, 4)
    assert sources["clip"]["frame_indices"] == [0, 3, 6, 9] and sources["clip"]["frames_declared"] == CLIP_FRAMES
    assert all(s["role"] == "train" for s in manifest["sources"])
    import hashlib

    assert manifest["sha256"] == hashlib.sha256(npz.read_bytes()).hexdigest()
    assert any(line.startswith("wrote 5 frames") for line in logged)
    assert len(RealDepthFrames(npz)) == 5  # the training reader takes it


def test_frames_are_the_centre_crop_and_the_disparity_the_teachers(built):
    """Row 0 is the astronaut: the stored frame is its square crop resized, and the disparity the teacher's on the
    crop at the teacher's size, resized to the frame."""
    from vision.data.io import read_image, resize_frame
    from vision.data.resize import resize_image
    from vision.weights.nets.tcmonodepth import load_tcmonodepth, predict_depth

    photo = read_image(skimage_data_dir() / "astronaut.png")
    crop = prep.square_crop(photo)
    with np.load(built[0], allow_pickle=False) as data:
        frame, disparity = data["frames"][0], data["disparity"][0]
    np.testing.assert_array_equal(frame, resize_frame(crop, (32, 32)))
    teacher = predict_depth(load_tcmonodepth(), resize_frame(crop, (64, 64))[None], size=64)[0]
    np.testing.assert_array_equal(disparity, resize_image(teacher, (32, 32)).astype(np.float16))
    wide = np.zeros((10, 30, 3), np.uint8)
    wide[:, 10:20] = 255
    assert prep.square_crop(wide).shape == (10, 10, 3) and (prep.square_crop(wide) == 255).all()


def test_rerun_is_byte_identical(built, tmp_path):
    npz, manifest, clip, _ = built
    again = prep.prepare(tmp_path / "depth.npz", _sources(clip), **OPTIONS, log=lambda _: None)
    assert again[0].read_bytes() == npz.read_bytes()
    assert again[1].read_bytes() == manifest.read_bytes()


def test_a_late_failure_leaves_the_old_pair_whole(built, tmp_path, monkeypatch):
    """The manifest fails as it is written (the new .npz is written by then): the old pair stays, and the other
    files of the folder with it."""
    npz, manifest, clip, _ = built
    out = tmp_path / "real"
    add_user_file(out)
    shutil.copy2(npz, out / npz.name)
    shutil.copy2(manifest, out / manifest.name)
    before = snapshot(out)
    written = fail_late(monkeypatch, prep, "atomic_write_json")
    with pytest.raises(DataError, match="injected late failure"):
        prep.prepare(out / npz.name, _sources(clip), **{**OPTIONS, "max_frames": 3}, log=lambda _: None)
    assert written
    assert_left_as_it_was(out, before, {"real"})


def test_the_middlebury_photograph_is_never_a_training_source(tmp_path):
    """scikit-image's motorcycle_left is in the detection teacher's PHOTOS as a training photograph; it is the
    left view of the Middlebury pair bench_geometry_real.py tests on, so it is left out here, and refused."""
    assert "motorcycle_left.png" in PHOTOS  # the case this guards against
    sources = default_sources(tmp_path / "no_samples", [tmp_path / "no_footage"], if_present=True,
                              log=lambda _: None)
    motorcycle = next(s for s in sources if s.name == "motorcycle_left")
    assert motorcycle.role == "train" and prep.held_out(motorcycle)
    logged: list[str] = []
    kept, left_out = prep.training_sources(sources, log=logged.append)
    assert not any("motorcycle" in s.name or "motorcycle" in s.path.name for s in kept)
    assert {s.name for s in kept} == {"bikes", "carphone_pristine", "astronaut", "camera", "chelsea", "coffee",
                                      "rocket"}
    assert [d["name"] for d in left_out] == ["motorcycle_left"] and "Middlebury" in left_out[0]["reason"]
    assert logged == [f"note: motorcycle_left left out ({left_out[0]['reason']})"]
    renamed = Source("left_view", skimage_data_dir() / "motorcycle_left.png", "photo", "x", "train")
    assert prep.held_out(renamed)  # by the file's name too
    for source in (motorcycle, renamed):
        with pytest.raises(InputError, match="held out"):
            prep.prepare(tmp_path / "out" / "x.npz", [source], teacher=object())
    assert not (tmp_path / "out").exists()


def test_only_training_roles_are_used(tmp_path):
    held = Source("cup", tmp_path / "cup.mp4", "video", "OpenCV sample cup.mp4", "test")
    val = Source("pool", tmp_path / "pool.mp4", "video", "footage", "val")
    train = Source("coffee", skimage_data_dir() / "coffee.png", "photo", "scikit-image coffee.png", "train")
    kept, left_out = prep.training_sources([held, val, train], log=lambda _: None)
    assert kept == [train] and [(d["name"], d["reason"]) for d in left_out] == [("cup", "role test"),
                                                                                 ("pool", "role val")]
    with pytest.raises(InputError, match="only training sources"):
        prep.prepare(tmp_path / "x.npz", [train, held], teacher=object())
    assert not (tmp_path / "x.npz").exists()


def test_an_unreadable_video_is_refused_before_anything_is_written(tmp_path):
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\x00not a video" * 100)
    with pytest.raises(InputError, match="bad.mp4 cannot be read"):
        prep.prepare(tmp_path / "out" / "x.npz", [Source("bad", bad, "video", "x", "train")], teacher=object())
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv, words", [
    (["--size", "0"], "--size"), (["--teacher-size", "100"], "--teacher-size"),
    (["--max-frames", "0"], "--max-frames"), (["--threads", "0"], "--threads"),
    (["--duplicate-threshold", "nan"], "--duplicate-threshold"), (["--out", "{tmp}/x.txt"], ".npz"),
    (["--out", "{tmp}"], "is a folder"), (["--footage", "{tmp}/missing"], "is not a folder"),
])
def test_cli_bad_input_is_one_error_line(argv, words, tmp_path, capsys):
    argv = [a.format(tmp=tmp_path) for a in argv]  # a later --out replaces the first
    assert prep.main(["--out", str(tmp_path / "out" / "x.npz"), *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and words in err[0], err
    assert not (tmp_path / "out").exists() and not (tmp_path / "x.txt").exists()
