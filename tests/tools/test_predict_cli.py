"""tools/predict.py: clear one-line errors for bad paths and prompts (exit status 2, no stack trace)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from vision.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("predict_cli", ROOT / "tools" / "predict.py")
predict_cli = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(predict_cli)


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


def test_tracking_end_to_end_with_prompt_lines(tmp_path, capsys):
    """``--task tracking`` with ``--prompt`` lines for two objects on a video: COCO-video results, annotated video,
    masks, one .ply per found object and the scene reconstruction; a malformed line is one clear error."""
    import json
    import zipfile

    import open3d as o3d
    import torch

    from tests.tracking.conftest import train_tiny_checkpoint
    from vision.data.synthetic import generate_scene
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
