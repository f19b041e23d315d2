"""A geometry checkpoint initialises the other tasks' backbones through one reader,
:func:`vision.geometry.weights.load_backbone`: G2TAM takes the whole backbone, the memory-bank control and
OOVDet the aggregator."""

from __future__ import annotations

import pytest
import torch

from vision.errors import DataError
from vision.geometry.task import GeometryConfig, build_model


@pytest.fixture(scope="module")
def geometry_checkpoint(tmp_path_factory):
    torch.manual_seed(3)
    config = GeometryConfig(size="tiny", image_size=32)
    model = build_model(config)
    path = tmp_path_factory.mktemp("geometry") / "geometry.ckpt"
    torch.save({"state_dict": {f"model.{k}": v for k, v in model.state_dict().items()},
                "hyper_parameters": {"config": config.to_dict(), "lr": 1e-3}}, path)
    return path, model.backbone.state_dict()


def _same(module: torch.nn.Module, reference: dict, prefix: str = "") -> int:
    own = module.state_dict()
    keys = [k for k in reference if k.startswith(prefix) and k in own]
    for key in keys:
        assert torch.equal(own[key], reference[key]), key
    return len(keys)


@pytest.mark.parametrize("architecture", ["g2tam", "memory_bank"])
def test_tracking_backbone_from_a_geometry_checkpoint(geometry_checkpoint, architecture):
    from vision.tracking.lightning import TrackingModule

    path, reference = geometry_checkpoint
    module = TrackingModule(config={"architecture": architecture, "image_size": 32, "dim": 32, "text_encoder": None},
                            geometry_checkpoint=str(path))
    loaded = _same(module.model.backbone, reference)
    expected = len(reference) if architecture == "g2tam" else sum(k.startswith("aggregator.") for k in reference)
    assert loaded == expected > 0


def test_detection_aggregator_from_a_geometry_checkpoint(geometry_checkpoint):
    from vision.detection.lightning import OOVDetModule

    path, reference = geometry_checkpoint
    module = OOVDetModule(config={"image_size": 32, "channels": 16}, class_names=["cube", "ball"],
                          geometry_checkpoint=str(path))
    assert _same(module.model.backbone, reference, "aggregator.") == sum(k.startswith("aggregator.") for k in reference)


def test_a_file_that_is_not_a_geometry_checkpoint_is_named(tmp_path):
    from vision.tracking.lightning import TrackingModule

    path = tmp_path / "detector.ckpt"
    torch.save({"state_dict": {"model.head.weight": torch.zeros(2)}, "hyper_parameters": {"config": {}}}, path)
    with pytest.raises(DataError, match="detector.ckpt"):
        TrackingModule(config={"image_size": 32, "dim": 32, "text_encoder": None}, geometry_checkpoint=str(path))
