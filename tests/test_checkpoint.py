"""vision.checkpoint: task configs as plain data, and the one reader of a task's checkpoint."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from vision.checkpoint import TaskConfig, read_task_checkpoint
from vision.errors import DataError, InputError


@dataclasses.dataclass
class ToyConfig(TaskConfig):
    width: int = 4
    layers: tuple[int, ...] = (1, -1)
    name: str = "tiny"


def test_config_from_none_mapping_or_instance():
    assert ToyConfig.from_value(None) == ToyConfig()
    assert ToyConfig.from_value({"width": 8}) == ToyConfig(width=8)
    config = ToyConfig(name="base")
    assert ToyConfig.from_value(config) == config and ToyConfig.from_value(config) is not config
    assert config.replace(width=2) == ToyConfig(width=2, name="base")


def test_config_to_dict_is_plain_data():
    assert ToyConfig().to_dict() == {"width": 4, "layers": [1, -1], "name": "tiny"}


def test_unknown_config_field_is_named():
    with pytest.raises(InputError, match=r"unknown ToyConfig field\(s\) \['depth'\]"):
        ToyConfig.from_value({"depth": 3})
    with pytest.raises(InputError, match="must be a mapping"):
        ToyConfig.from_value(3)


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
