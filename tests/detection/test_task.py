"""vision.detection.task: the config is the one definition of the detector; load() rebuilds it from a checkpoint
read with weights_only=True, and refuses files that are not detection checkpoints with a DataError naming them."""

from __future__ import annotations

import pytest
import torch

from vision.detection.lightning import OOVDetModule
from vision.detection.task import DetectionConfig, build_model, load
from vision.errors import DataError, InputError
from vision.text import TEXT_DIM

torch.set_num_threads(1)

SMALL = {"image_size": 32, "channels": 16, "num_oov_prompts": 2, "score_threshold": 0.2, "max_detections": 7}


def _save(module: OOVDetModule, path) -> None:
    """The layout tools/train.py writes: hyper-parameters + state dict."""
    torch.save({"hyper_parameters": dict(module.hparams), "state_dict": module.state_dict()}, path)


def test_config_defaults_and_round_trip():
    config = DetectionConfig()
    assert config.embed_dim == TEXT_DIM and config.feature_layers == [1, -1]
    assert DetectionConfig.from_value(config.to_dict()) == config
    with pytest.raises(InputError, match="unknown DetectionConfig field"):
        DetectionConfig.from_value({"chanels": 8})
    closed = build_model(DetectionConfig(oov_class=False, **SMALL))
    assert not closed.classifier.use_oov


def test_module_stores_the_config_and_load_rebuilds_the_detector(tmp_path, fake_encoder):
    torch.manual_seed(0)
    module = OOVDetModule(config=SMALL, queue_size=8)
    module.set_vocabulary(["cube", "mug"], [1, 13], text_embeddings=fake_encoder(["a cube", "a mug"]))
    assert module.hparams["config"] == DetectionConfig(**SMALL).to_dict()
    path = tmp_path / "det.ckpt"
    _save(module, path)
    model, config, vocabulary = load(path, with_vocabulary=True)
    assert config == DetectionConfig(**SMALL) and not model.training
    assert vocabulary.class_names == ["cube", "mug"] and vocabulary.category_ids == [1, 13]
    assert model.classifier.num_oov_prompts == 2 and model.max_detections == 7 and model.score_threshold == 0.2
    images = torch.rand(1, 3, 32, 32)
    with torch.no_grad():
        expected = module.model.eval()(images)["embeddings"]
        assert torch.equal(load(path)[0](images)["embeddings"], expected)


def test_load_refuses_what_is_not_a_detection_checkpoint(tmp_path):
    garbage = tmp_path / "garbage.ckpt"
    garbage.write_bytes(b"not a checkpoint")
    with pytest.raises(DataError, match="garbage.ckpt"):
        load(garbage)
    with pytest.raises(DataError, match="missing.ckpt"):
        load(tmp_path / "missing.ckpt")
    old = tmp_path / "old.ckpt"  # the layout before the config: flat hyper-parameters
    torch.save({"hyper_parameters": {"image_size": 32, "channels": 16}, "state_dict": {}}, old)
    with pytest.raises(DataError, match="hyper_parameters.config"):
        load(old)
    other = tmp_path / "other.ckpt"  # the weights of another detector
    module = OOVDetModule(config={**SMALL, "channels": 8}, queue_size=8)
    checkpoint = {"hyper_parameters": {**dict(module.hparams), "config": DetectionConfig(**SMALL).to_dict()},
                  "state_dict": module.state_dict()}
    torch.save(checkpoint, other)
    with pytest.raises(DataError, match="other.ckpt.*do not fit"):
        load(other)
