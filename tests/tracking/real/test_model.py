"""The real tracker (vision.tracking.real.model) and its checkpoint (vision.tracking.real.checkpoint): prompts from
any frame, several objects, bad boxes and too many objects refused, and a checkpoint that reads back the same
tracker with weights_only=True."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from skimage import data

from vision.errors import DataError, InputError
from vision.tracking.real.checkpoint import is_real_tracker, load_real_tracker
from vision.tracking.real.cues import CUES
from vision.tracking.real.model import RealG2TAM, RealTrackerConfig, check_box


def _frames(count: int = 6) -> np.ndarray:
    photo = data.astronaut()
    return np.stack([np.ascontiguousarray(photo[50:290, 40 + 4 * t:360 + 4 * t]) for t in range(count)])


def test_objects_start_at_their_prompt_frames(real_module) -> None:
    model = real_module.model
    frames = _frames()
    prompts = {1: (0, [140, 10, 110, 150]), 2: (2, [0, 150, 120, 90])}
    seen = {1: [], 2: []}
    for t, geometry, answers in model.track(frames, prompts):
        assert geometry.frame_size == (320, 240)
        for obj_id, answer in answers.items():
            seen[obj_id].append(t)
            assert answer.box.shape == (4,) and 0.0 <= answer.presence <= 1.0
            assert answer.source == "prompt" or len(answer.cues) == len(CUES)
    assert seen == {1: [0, 1, 2, 3, 4, 5], 2: [2, 3, 4, 5]}


def test_bad_prompts_are_refused(real_module) -> None:
    model = real_module.model
    frames = _frames(2)
    with pytest.raises(InputError, match="outside the 320x240 frame"):
        list(model.track(frames, {1: (0, [400, 10, 20, 20])}))
    with pytest.raises(InputError, match="positive width and height"):
        list(model.track(frames, {1: (0, [10, 10, 0, 20])}))
    with pytest.raises(InputError, match="more than the configured maximum 8"):
        list(model.track(frames, {k: (0, [10, 10, 20, 20]) for k in range(1, 10)}))
    assert np.array_equal(check_box([-10, -10, 30, 40], (100, 100)), [0, 0, 20, 30])
    with pytest.raises(InputError, match="memory"):
        RealTrackerConfig(memory="4d")
    with pytest.raises(InputError, match="use_memory"):
        RealTrackerConfig(target={"use_memory": False})


def test_checkpoint_reads_back_the_same_tracker(real_module, real_checkpoint: Path) -> None:
    loaded = load_real_tracker(real_checkpoint)
    assert isinstance(loaded, RealG2TAM) and loaded.name == real_module.model.name
    cues = torch.randn(7, len(CUES))
    assert torch.equal(loaded.head(cues), real_module.model.head(cues))
    for key, value in real_module.model.state_dict().items():
        assert torch.equal(loaded.state_dict()[key], value), key
    assert is_real_tracker(torch.load(real_checkpoint, weights_only=True))


def test_other_checkpoints_are_refused(tmp_path: Path, real_module) -> None:
    path = tmp_path / "other.ckpt"
    torch.save({"hyper_parameters": {"config": {}}, "state_dict": {}}, path)
    with pytest.raises(DataError, match="not a real tracker"):
        load_real_tracker(path)
    broken = tmp_path / "broken.ckpt"
    state = {k: v for k, v in real_module.state_dict().items() if not k.startswith("model.head.")}
    torch.save({"hyper_parameters": dict(real_module.hparams), "state_dict": state}, broken)
    with pytest.raises(DataError, match="do not fit"):
        load_real_tracker(broken)


def test_a_model_folder_holds_the_tracker_and_records_its_backbone(real_module, real_checkpoint: Path,
                                                                   tmp_path: Path, capsys) -> None:
    """``vision-export`` of ``make train-real-tracking``'s checkpoint, and the tracking task's ``save`` / ``load``:
    the same weights, the backbone's every setting written in config.json, and a folder whose config the real
    tracker's own config refuses is an error naming the field."""
    import json

    from vision.cli.export import main as export
    from vision.errors import DataError
    from vision.tracking.task import load, save

    assert export(["--ckpt", str(real_checkpoint), "--out", str(tmp_path / "exported")]) == 0
    assert "wrote the tracking model folder" in capsys.readouterr().out
    saved = save(real_module.model, None, tmp_path / "saved")
    config = json.loads((saved / "config.json").read_text())
    assert config["hyper_parameters"] == {"real_tracker": True}
    assert config["config"]["perception"]["depth"] == "tcmonodepth-small"
    assert config["config"]["perception"]["features"] == "nanotrack-v2"
    for folder in (tmp_path / "exported", saved):
        model, read = load(folder)
        assert isinstance(model, RealG2TAM) and read == real_module.model.config
        for key, value in real_module.model.state_dict().items():
            assert torch.equal(model.state_dict()[key], value), key
    config["config"]["memory"] = "4d"
    (saved / "config.json").write_text(json.dumps(config))
    with pytest.raises(DataError, match="config.json.*config.*memory must be one of"):
        load(saved)
