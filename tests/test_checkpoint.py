"""vision.checkpoint: the one reader of a task's checkpoint, and its config checked by the task's schema."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from vision.checkpoint import read_task_checkpoint
from vision.errors import DataError
from vision.task_config import TaskConfig


@dataclasses.dataclass
class ToyConfig(TaskConfig):
    width: int = 4
    layers: tuple[int, ...] = (1, -1)
    name: str = "tiny"


def test_read_task_checkpoint(tmp_path):
    path = tmp_path / "toy.ckpt"
    weights = {"model.linear.weight": torch.ones(2, 2), "other.bias": torch.zeros(2)}
    torch.save({"state_dict": weights, "hyper_parameters": {"config": {"width": 6}, "lr": 0.1}}, path)
    config, state, checkpoint = read_task_checkpoint(path, ToyConfig)
    assert config == ToyConfig(width=6)
    assert list(state) == ["linear.weight"] and checkpoint["hyper_parameters"]["lr"] == 0.1


@pytest.mark.parametrize("content, message", [
    ({"state_dict": {"model.w": torch.ones(1)}, "hyper_parameters": {"width": 6}}, "no hyper_parameters.config"),
    ({"state_dict": {"w": torch.ones(1)}, "hyper_parameters": {"config": {}}}, "no weights under 'model.'"),
    ({"state_dict": {"model.w": torch.ones(1)}, "hyper_parameters": {"config": {"depth": 1}}}, "unknown ToyConfig"),
])
def test_checkpoint_of_another_layout_is_an_error_naming_the_file(tmp_path, content, message):
    path = tmp_path / "other.ckpt"
    torch.save(content, path)
    with pytest.raises(DataError, match=message) as info:
        read_task_checkpoint(path, ToyConfig)
    assert "other.ckpt" in str(info.value)


def test_a_checkpoint_that_is_not_a_regular_file_is_refused_without_blocking(tmp_path):
    import os

    from vision.checkpoint import load_checkpoint

    os.mkfifo(tmp_path / "pipe.ckpt")
    os.symlink(tmp_path / "loop.ckpt", tmp_path / "loop.ckpt")
    for path, reason in ((tmp_path / "pipe.ckpt", "FIFO"), (tmp_path / "loop.ckpt", "symbolic-link loop"),
                         (tmp_path, "a folder"), (tmp_path / "none.ckpt", "not found")):
        with pytest.raises(DataError, match=f"checkpoint file .*{reason}") as info:
            load_checkpoint(path)
        assert str(path) in str(info.value)


@pytest.mark.parametrize("config, named", [
    ({"num_heads": 3}, "hyper_parameters.config.num_heads=3: must divide dim / 2 = 32"),
    ({"click_maps": "false"}, "hyper_parameters.config.click_maps='false': must be true or false"),
    ({"dim": 10 ** 30}, f"hyper_parameters.config.dim={10 ** 30}: must be an integer in [8, 512]"),
    ({"detector": {"image_size": 64}}, "hyper_parameters.config: unknown TrackingConfig field(s) ['detector']"),
])
def test_a_checkpoints_config_is_checked_by_the_same_schema(tmp_path, config, named):
    from vision.tracking.task import load

    path = tmp_path / "tracker.ckpt"
    torch.save({"state_dict": {"model.w": torch.ones(1)}, "hyper_parameters": {"config": config}}, path)
    with pytest.raises(DataError) as info:
        load(path)
    assert str(info.value).startswith(f"{path}: {named}") and "\n" not in str(info.value), str(info.value)
