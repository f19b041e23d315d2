"""vision-fit-light-points (vision.tracking.fit_light_points): a G2TAM checkpoint becomes a model folder whose
tracking reads light point maps; bad input is one ``error:`` line and exit status 2, with nothing written."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from vision.tracking import fit_light_points as light_cli
from tests.cli.conftest import write_task_checkpoint
from vision.tasks import get_task
from vision.tracking.predictor import TrackerPredictor


def _checkpoint(tmp_path, architecture: str = "g2tam"):
    return write_task_checkpoint(tmp_path / f"{architecture}.ckpt", "tracking", architecture=architecture,
                                 image_size=32, dim=32, text_encoder=None)


@pytest.fixture(scope="module", autouse=True)
def _threads():
    torch.set_num_threads(1)


@pytest.fixture(scope="module")
def video_split(tmp_path_factory):
    """Two rendered 6-view videos at 32 px."""
    from vision.synthetic.scenes import write_split

    return write_split(tmp_path_factory.mktemp("light_data"), "video", scenes=2, views=6, size=32, mode="video",
                       seed=0, threads=1, min_objects=2, max_objects=3)


def test_the_folder_tracks_with_light_points(tmp_path, capsys, video_split):
    path, model = _checkpoint(tmp_path)
    out = tmp_path / "light"
    argv = ["--ckpt", str(path), "--split", str(video_split), "--val-split", str(video_split), "--out", str(out),
            "--window", "3"]
    assert light_cli.main(argv) == 0
    printed = capsys.readouterr().out
    assert "fitted on 4 windows" in printed and "mean relative point error" in printed
    assert f"wrote the tracking model folder {out}" in printed
    card = json.loads((out / "config.json").read_text())
    assert card["config"]["tracking_points"] == "light"
    assert "light point maps fitted after training" in (out / "README.md").read_text()
    loaded, config = get_task("tracking").load(out)
    assert config.tracking_points == "light"
    for key, value in model.state_dict().items():  # every other weight is the checkpoint's
        torch.testing.assert_close(loaded.state_dict()[key], value, rtol=0, atol=0)
    assert loaded.light_points.proj.weight.abs().sum() > 0
    predictor = TrackerPredictor(loaded, text_encoder=None, window_size=3, max_anchors=1)
    state = predictor.init_state((np.random.default_rng(0).random((4, 32, 32, 3)) * 255).astype(np.uint8))
    predictor.add_prompt(state, 0, 1, points=[[16, 16]])
    views = [view for view, *_ in predictor.propagate(state)]
    assert sorted(views) == [0, 1, 2, 3] and state.depth is not None and np.isfinite(state.depth).all()


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, video_split):
    path, _ = _checkpoint(tmp_path)
    control, _ = _checkpoint(tmp_path, architecture="memory_bank")
    trained, _ = write_task_checkpoint(tmp_path / "patch.ckpt", "tracking", image_size=32, dim=32, text_encoder=None,
                                       tracking_points="patch")
    out = tmp_path / "light"
    cases = [
        (["--ckpt", str(tmp_path / "missing.ckpt"), "--split", str(video_split)], "not found"),
        (["--ckpt", str(path), "--split", str(tmp_path / "missing.json")], "not found"),
        (["--ckpt", str(control), "--split", str(video_split)], "light point maps are G2TAM's"),
        (["--ckpt", str(trained), "--split", str(video_split)], "already reads 'patch' point maps"),
        (["--ckpt", str(path), "--split", str(video_split), "--window", "1"], "need --videos >= 1, --window >= 2"),
    ]
    for argv, message in cases:
        assert light_cli.main([*argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not out.exists()
