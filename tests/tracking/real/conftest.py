"""Shared by the real tracker's tests: a tracker whose presence head is untrained (the tests that need decisions
teacher-force them), and a checkpoint of it in the layout ``make train-real-tracking`` writes."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch


@pytest.fixture(scope="module")
def real_module(pretrained_weights: Path):
    from vision.tracking.real.lightning import RealTrackerModule

    torch.manual_seed(0)
    return RealTrackerModule()


@pytest.fixture(scope="module")
def real_checkpoint(real_module, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint as Lightning writes it for :class:`RealTrackerModule` (hyper-parameters and state dict)."""
    path = tmp_path_factory.mktemp("real") / "last.ckpt"
    torch.save({"hyper_parameters": dict(real_module.hparams), "state_dict": real_module.state_dict()}, path)
    return path
