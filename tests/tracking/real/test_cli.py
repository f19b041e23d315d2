"""``vision-predict --task tracking`` with a real tracker's checkpoint: it names the model that answered, writes
results with boxes, presence and masks at the input's size, and refuses bad input in one line with nothing left."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from skimage import data

from vision.cli.predict import main
from vision.data.video import write_video


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    photo = data.astronaut()
    frames = [np.ascontiguousarray(photo[50:290, 40 + 4 * t:360 + 4 * t]) for t in range(8)]
    path = tmp_path_factory.mktemp("video") / "pan.mp4"
    write_video(path, iter(frames), fps=10)
    return path


def test_box_prompt_writes_every_file(video: Path, real_checkpoint: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    assert main([str(video), "--task", "tracking", "--ckpt", str(real_checkpoint), "--box", "140,10,250,160",
                 "--out", str(out), "--device", "cpu"]) == 0
    printed = capsys.readouterr().out
    assert "answered by G2TAM-real (3d memory, nanotrack-v2)" in printed and "object 1: present in" in printed
    results = json.loads((out / "results.json").read_text())
    assert [r["image_id"] for r in results] == list(range(1, 9))
    first = results[0]
    assert first["present"] and first["score"] == 1.0 and first["segmentation"]["size"] == [240, 320]
    assert np.allclose(first["bbox"], [140, 10, 110, 150])
    with zipfile.ZipFile(out / "masks.zip") as zf:
        assert len(zf.namelist()) == 8
    assert (out / "annotated.mp4").stat().st_size > 0


@pytest.mark.parametrize("flags, message", [
    (["--box", "400,10,450,60"], "outside the 320x240 frame"),
    (["--box", "10,10,10,60"], "positive width"),
    (["--text", "quantum chromodynamics"], "names nothing the detector knows"),
    (["--box", "10,10,60,60", "--solve-cameras"], "--solve-cameras is an option of the synthetic tracker"),
])
def test_bad_input_is_one_line_and_nothing_written(video: Path, real_checkpoint: Path, tmp_path: Path, capsys,
                                                   flags: list[str], message: str) -> None:
    out = tmp_path / "out"
    assert main([str(video), "--task", "tracking", "--ckpt", str(real_checkpoint), *flags, "--out", str(out),
                 "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert not out.exists() or not any(out.iterdir())


def test_too_many_objects(video: Path, real_checkpoint: Path, tmp_path: Path, capsys) -> None:
    prompts = [x for k in range(1, 10) for x in ("--prompt", f"object {k} frame 0 box 10,10,60,60")]
    assert main([str(video), "--task", "tracking", "--ckpt", str(real_checkpoint), *prompts, "--out",
                 str(tmp_path / "out"), "--device", "cpu"]) == 2
    assert "more than the configured maximum 8" in capsys.readouterr().err


def test_without_ckpt_the_real_tracker_of_make_train_real_tracking_answers(video: Path, real_checkpoint: Path,
                                                                          tmp_path: Path, capsys,
                                                                          monkeypatch) -> None:
    import shutil

    from vision.tracking.cli import DEFAULT_CKPT

    monkeypatch.chdir(tmp_path)
    args = [str(video), "--task", "tracking", "--box", "140,10,250,160", "--out", str(tmp_path / "out"),
            "--device", "cpu"]
    assert main(args) == 2  # not trained here yet: one line saying what writes it
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and DEFAULT_CKPT[0] in err[0] and "make train-real-tracking" in err[0]
    (tmp_path / DEFAULT_CKPT[0]).parent.mkdir(parents=True)
    shutil.copy(real_checkpoint, tmp_path / DEFAULT_CKPT[0])
    assert main(args) == 0
    captured = capsys.readouterr()
    assert f"no --ckpt: running {DEFAULT_CKPT[0]}" in captured.err
    assert "answered by G2TAM-real (3d memory, nanotrack-v2)" in captured.out
    assert main([str(video), "--task", "detection", "--vocabulary", "cup", "--out", str(tmp_path / "d")]) == 2
    assert "--task detection needs --ckpt" in capsys.readouterr().err


def test_a_model_folder_of_the_real_tracker_answers(video: Path, real_module, tmp_path: Path, capsys) -> None:
    from vision.tracking.task import save

    folder = save(real_module.model, None, tmp_path / "folder")
    assert main([str(video), "--task", "tracking", "--ckpt", str(folder), "--box", "140,10,250,160", "--out",
                 str(tmp_path / "out"), "--device", "cpu"]) == 0
    assert "answered by G2TAM-real (3d memory, nanotrack-v2)" in capsys.readouterr().out


def test_a_mask_prompt_starts_from_its_tight_box(video: Path, real_checkpoint: Path, tmp_path: Path,
                                                 capsys) -> None:
    import cv2

    mask = np.zeros((240, 320), np.uint8)
    mask[10:160, 140:250] = 255
    mask[10:40, 140:170] = 0  # not a box: its tight box is still 140,10 .. 250,160
    cv2.imwrite(str(tmp_path / "mask.png"), mask)
    out = tmp_path / "out"
    assert main([str(video), "--task", "tracking", "--ckpt", str(real_checkpoint), "--mask",
                 str(tmp_path / "mask.png"), "--out", str(out), "--device", "cpu"]) == 0
    first = json.loads((out / "results.json").read_text())[0]
    assert np.allclose(first["bbox"], [140, 10, 110, 150])
    capsys.readouterr()
    cv2.imwrite(str(tmp_path / "small.png"), mask[:100])
    assert main([str(video), "--task", "tracking", "--ckpt", str(real_checkpoint), "--mask",
                 str(tmp_path / "small.png"), "--out", str(tmp_path / "bad"), "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is 320x100, the input 320x240" in err[0] and not (tmp_path / "bad").exists()
