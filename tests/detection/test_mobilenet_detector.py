"""The detector (and the tracker and concept configs that share the backbone) on ``tiny_mobilenet``: the configs take
the size and the ImageNet MobileNetV2 weights, the first build reads them, and a checkpoint or model folder loads
with no weights file present (the checkpoint holds the tensors)."""

from __future__ import annotations

import pytest
import torch

from vision.detection.lightning import OOVDetModule
from vision.detection.task import DetectionConfig, build_model, load, save
from vision.task_config import ConfigError
from vision.weights.store import ENV

torch.set_num_threads(1)

REGISTERED = "mobilenetv2-imagenet"
CONFIG = {"size": "tiny_mobilenet", "image_size": 160, "patch_embed_weights": REGISTERED, "channels": 16,
          "pixel_stem": True}


def test_configs_take_tiny_mobilenet_and_refuse_weights_for_a_conv_stem():
    from vision.concept.task import ConceptConfig
    from vision.tracking.task import TrackingConfig

    config = DetectionConfig(**CONFIG)
    assert DetectionConfig.from_value(config.to_dict()) == config and config.pixel_stem  # patch 16: a power of two
    assert DetectionConfig().patch_embed_weights is None
    with pytest.raises(ConfigError, match="patch_embed_weights.*'conv'"):
        DetectionConfig(size="tiny", patch_embed_weights=REGISTERED)
    with pytest.raises(ConfigError, match="patch size 16"):
        DetectionConfig(size="tiny_mobilenet", image_size=120)
    tracker = TrackingConfig(backbone="tiny_mobilenet", image_size=160, patch_embed_weights=REGISTERED)
    with pytest.raises(ConfigError, match="patch_embed_weights.*'conv'"):
        TrackingConfig(backbone="tiny", patch_embed_weights=REGISTERED)
    concept = ConceptConfig(image_size=160, detector=config.to_dict(), tracker=tracker.to_dict())
    assert concept.detector["patch_embed_weights"] == concept.tracker["patch_embed_weights"] == REGISTERED


def test_detector_reads_the_weights_once_and_its_checkpoint_loads_without_them(pretrained_weights, tmp_path,
                                                                                monkeypatch, fake_encoder):
    from vision.weights.nets.mobilenet import load_mobilenetv2

    torch.manual_seed(0)
    module = OOVDetModule(config=CONFIG, queue_size=8)
    module.set_vocabulary(["cube", "mug"], [1, 13], text_embeddings=fake_encoder(["a cube", "a mug"]))
    stem = module.model.backbone.aggregator.patch_embed
    pretrained = load_mobilenetv2().features[:14].state_dict()
    assert all(torch.equal(v, stem.features.state_dict()[k]) for k, v in pretrained.items())
    images = torch.rand(2, 3, 160, 160)
    with torch.no_grad():
        expected = module.model.eval()(images)
    assert expected["embeddings"].shape[:2] == expected["boxes"].shape[:2]
    assert expected["boxes"].shape[1] == 20 * 20 + 10 * 10 + 5 * 5  # levels at strides 8, 16, 32 of 160 px

    lightning = tmp_path / "det.ckpt"
    torch.save({"hyper_parameters": dict(module.hparams), "state_dict": module.state_dict()}, lightning)
    folder = save(module.model, module.hparams["config"], tmp_path / "folder")
    monkeypatch.setenv(ENV, str(tmp_path / "empty"))  # no weights file from here on
    with pytest.raises(Exception, match="vision-fetch-weights mobilenetv2-imagenet"):
        build_model(CONFIG)  # a first build needs the file ...
    for path in (lightning, folder):  # ... a checkpoint does not
        model, config = load(path)
        assert config.patch_embed_weights == REGISTERED and not model.backbone.aggregator.patch_embed.features.training
        with torch.no_grad():
            got = model(images)
        for key in ("boxes", "embeddings", "objectness"):
            torch.testing.assert_close(got[key], expected[key])


def test_tracker_and_concept_load_without_the_weights_file(pretrained_weights, tmp_path, monkeypatch):
    from vision.concept.task import ConceptConfig
    from vision.concept.task import build_model as build_concept
    from vision.concept.task import load as load_concept
    from vision.concept.task import save as save_concept
    from vision.tracking.task import TrackingConfig
    from vision.tracking.task import build_model as build_tracker
    from vision.tracking.task import load as load_tracker
    from vision.tracking.task import save as save_tracker
    from vision.weights.nets.mobilenet import load_mobilenetv2

    torch.manual_seed(0)
    tracking = TrackingConfig(backbone="tiny_mobilenet", image_size=160, text_encoder=None,
                              patch_embed_weights=REGISTERED)
    tracker = build_tracker(tracking)
    pretrained = load_mobilenetv2().features[:14].state_dict()
    stem = tracker.backbone.aggregator.patch_embed.features.state_dict()
    assert all(torch.equal(v, stem[k]) for k, v in pretrained.items())
    concept = ConceptConfig(image_size=160, detector=DetectionConfig(**CONFIG).to_dict(), tracker=tracking.to_dict())
    model = build_concept(concept)
    tracker_folder = save_tracker(tracker, tracking, tmp_path / "tracker")
    concept_folder = save_concept(model, concept, tmp_path / "concept")
    monkeypatch.setenv(ENV, str(tmp_path / "empty"))
    loaded, config = load_tracker(tracker_folder)
    assert config.patch_embed_weights == REGISTERED
    assert torch.equal(loaded.backbone.aggregator.patch_embed.features[0][0].weight, pretrained["0.0.weight"])
    loaded, config = load_concept(concept_folder)
    assert config.detector["patch_embed_weights"] == REGISTERED
    assert torch.equal(loaded.detector.backbone.aggregator.patch_embed.features[0][0].weight,
                       pretrained["0.0.weight"])
