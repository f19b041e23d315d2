"""The pretrained MobileNetV2 patch embedding (``patch_embed="mobilenetv2"``, the ``tiny_mobilenet`` backbone): token
grids, the slicing against torchvision's own feature extractor on the registered ImageNet weights, freezing, the
global generator, the configs that name its weights, a training step and a checkpoint that loads without the file.

The tests that read the registered file take the ``pretrained_weights`` fixture (skipped without
``../shared/weights``); the others build the stem randomly initialised (``weights=None``)."""

from __future__ import annotations

import pytest
import torch

from vision.data.coco import load_split
from vision.data.datasets import MultiViewClipDataset, collate_clips
from vision.data.transforms import build_multiview_transform
from vision.errors import InputError
from vision.geometry.losses import geometry_losses
from vision.geometry.model import BACKBONE_CONFIGS, create_backbone
from vision.geometry.patch_embed import MobileNetV2PatchEmbed, build_patch_embed, embed_patches, patch_size_of
from vision.geometry.task import GeometryConfig, build_model, load
from vision.synthetic.scenes import write_split
from vision.task_config import ConfigError
from vision.weights.store import ENV, WeightsError

REGISTERED = "mobilenetv2-imagenet"


def _features_of_torchvision(state: dict[str, torch.Tensor], images: torch.Tensor) -> dict[str, torch.Tensor]:
    """Stride-8 and stride-16 maps of torchvision's whole ``mobilenet_v2`` loaded with ``state`` (its ``features.*``
    tensors), read by torchvision's own feature extractor (not by slicing ``features``)."""
    from torchvision.models import mobilenet_v2
    from torchvision.models.feature_extraction import create_feature_extractor

    net = mobilenet_v2(weights=None).eval()
    missing, unexpected = net.load_state_dict(state, strict=False)
    assert not unexpected and all(k.startswith("classifier.") for k in missing)
    extractor = create_feature_extractor(net, return_nodes={"features.6": "8", "features.13": "16"})
    with torch.no_grad():
        return extractor(images)


@pytest.mark.parametrize("patch", [8, 16])
@pytest.mark.parametrize("side", [160, 224])
def test_token_grid_at_160_and_224(patch, side):
    torch.manual_seed(0)
    stem = build_patch_embed("mobilenetv2", side, patch, 128).eval()
    assert isinstance(stem, MobileNetV2PatchEmbed) and patch_size_of(stem) == patch
    images = torch.randn(2, 3, side, side + 2 * patch)  # not square: W has two more patches
    with torch.no_grad():
        tokens = embed_patches(stem, images)
    assert tokens.shape == (2, (side // patch) * (side // patch + 2), 128)
    assert torch.isfinite(tokens).all()


def test_a_patch_size_other_than_8_or_16_is_one_error_naming_it():
    with pytest.raises(InputError, match=r"patch size 16 or 8 .*got 14"):
        build_patch_embed("mobilenetv2", 224, 14, 384)
    # the same check refuses the patch embedding on a size with another patch (built on the meta device)
    with pytest.raises(ConfigError, match="got 14"):
        GeometryConfig(size="base", image_size=224, patch_embed="mobilenetv2")


def test_missing_weights_file_is_one_error_naming_the_fetch_command(tmp_path, monkeypatch):
    monkeypatch.setenv(ENV, str(tmp_path))
    with pytest.raises(WeightsError, match="vision-fetch-weights mobilenetv2-imagenet"):
        build_patch_embed("mobilenetv2", 160, 16, 128, weights=REGISTERED)
    with pytest.raises(WeightsError, match="vision-fetch-weights mobilenetv2-imagenet"):
        build_model(GeometryConfig(size="tiny_mobilenet", image_size=160, patch_embed_weights=REGISTERED))
    with pytest.raises(InputError, match="neither the registered 'mobilenetv2-imagenet' nor an existing file"):
        build_patch_embed("mobilenetv2", 160, 16, 128, weights=str(tmp_path / "nowhere.pt"))


def test_the_truncated_network_is_torchvision_mobilenetv2_at_stride_8_and_16(pretrained_weights, tmp_path):
    from vision.weights.nets.mobilenet import load_mobilenetv2
    from vision.weights.store import weights_path

    torch.manual_seed(0)
    images = torch.randn(2, 3, 160, 192)
    reference = _features_of_torchvision(load_mobilenetv2().state_dict(), images)
    # the registry name, the registered file given as a local path (upstream keys) and a torchvision-format file
    torchvision_file = tmp_path / "mobilenet_v2.pt"
    torch.save({k: v.clone() for k, v in load_mobilenetv2().state_dict().items()}, torchvision_file)
    for weights in (REGISTERED, str(weights_path(REGISTERED)), str(torchvision_file)):
        for patch, channels in ((8, 32), (16, 96)):
            stem = build_patch_embed("mobilenetv2", 160, patch, 128, weights=weights).eval()
            with torch.no_grad():
                ours = stem.features(images)
            assert ours.shape == (2, channels, 160 // patch, 192 // patch)
            torch.testing.assert_close(ours, reference[str(patch)], rtol=0, atol=0)
    # the random stem is another network
    with torch.no_grad():
        assert not torch.allclose(build_patch_embed("mobilenetv2", 160, 16, 128).eval().features(images),
                                  reference["16"])


def test_loading_the_weights_draws_nothing_from_the_global_generator(pretrained_weights):
    draws = []
    for weights in (None, REGISTERED):
        torch.manual_seed(7)
        stem = build_patch_embed("mobilenetv2", 160, 16, 128, weights=weights)
        draws.append((stem.proj.weight.detach().clone(), torch.rand(4)))
    torch.testing.assert_close(draws[0][0], draws[1][0], rtol=0, atol=0)
    torch.testing.assert_close(draws[0][1], draws[1][1], rtol=0, atol=0)
    torch.manual_seed(7)
    torch.nn.Conv2d(96, 128, 1)  # the two projections alone: LayerNorm draws nothing
    torch.nn.Conv2d(1280, 128, 1)
    assert torch.equal(torch.rand(4), draws[0][1])


def test_the_stem_stays_frozen_and_in_eval_mode_while_the_projection_trains():
    torch.manual_seed(0)
    stem = build_patch_embed("mobilenetv2", 160, 16, 128).train()
    assert stem.training and stem.proj.training and not stem.features.training and not stem.context.training
    assert not any(m.training for m in (*stem.features.modules(), *stem.context.modules()))
    assert not any(p.requires_grad for p in (*stem.features.parameters(), *stem.context.parameters()))
    assert all(p.requires_grad for p in (*stem.proj.parameters(), *stem.context_proj.parameters(),
                                         *stem.norm.parameters()))
    before = {k: v.clone() for k, v in stem.state_dict().items()}
    optimiser = torch.optim.AdamW(stem.parameters(), lr=1e-2)
    for _ in range(2):
        stem(torch.randn(2, 3, 160, 160)).square().mean().backward()
        optimiser.step()
        optimiser.zero_grad()
    after = stem.state_dict()
    # weights, BatchNorm running statistics and num_batches_tracked of the MobileNetV2 are untouched
    assert all(torch.equal(before[k], after[k]) for k in before if k.startswith(("features.", "context.")))
    assert not torch.equal(before["proj.weight"], after["proj.weight"])
    assert not torch.equal(before["context_proj.weight"], after["context_proj.weight"])
    assert not stem.train().features.training and stem.eval().training is False


def test_configs_take_tiny_mobilenet_and_its_weights():
    assert BACKBONE_CONFIGS["tiny_mobilenet"]["patch_size"] == 16
    config = GeometryConfig(size="tiny_mobilenet", image_size=160, patch_embed_weights=REGISTERED)
    assert GeometryConfig.from_value(config.to_dict()) == config
    GeometryConfig(size="tiny", image_size=64, patch_embed="mobilenetv2", patch_embed_weights="stem.pt")  # patch 8
    with pytest.raises(ConfigError, match="multiple of the tiny_mobilenet backbone's patch size 16"):
        GeometryConfig(size="tiny_mobilenet", image_size=120)
    with pytest.raises(ConfigError, match="patch_embed_weights.*'conv'"):
        GeometryConfig(size="tiny", image_size=64, patch_embed_weights=REGISTERED)


def _clip_batch(tmp_path) -> dict:
    split = write_split(tmp_path, "stem", scenes=1, views=2, size=160, mode="unordered", seed=3, threads=1)
    dataset = MultiViewClipDataset(load_split(split), 2, transform=build_multiview_transform(160, train=False))
    return collate_clips([dataset[0]])


def test_tiny_mobilenet_trains_a_step_and_loads_without_the_weights_file(pretrained_weights, tmp_path, monkeypatch):
    from vision.geometry.lightning import GeometryModule
    from vision.weights.nets.mobilenet import load_mobilenetv2

    torch.manual_seed(0)
    batch = _clip_batch(tmp_path)
    config = {"size": "tiny_mobilenet", "image_size": 160, "patch_embed_weights": REGISTERED}
    module = GeometryModule(config=config)
    stem = module.model.backbone.aggregator.patch_embed
    pretrained = load_mobilenetv2().features[:14].state_dict()
    assert all(torch.equal(v, stem.features.state_dict()[k]) for k, v in pretrained.items())
    module.train()
    optimiser = torch.optim.AdamW(module.param_groups(), lr=1e-3)  # the module's groups (configure_optimizers)
    trained = {id(p) for group in optimiser.param_groups for p in group["params"]}
    assert not any(id(p) in trained for p in stem.features.parameters()) and id(stem.proj.weight) in trained
    proj = stem.proj.weight.detach().clone()
    losses, outputs = geometry_losses(module.model.backbone, batch)
    assert outputs["depth"].shape == (1, 2, 160, 160, 1) and torch.isfinite(losses["loss"])
    losses["loss"].backward()
    optimiser.step()
    assert not torch.equal(stem.proj.weight, proj)
    assert all(torch.equal(v, stem.features.state_dict()[k]) for k, v in pretrained.items())

    path = tmp_path / "stem.ckpt"
    torch.save({"state_dict": module.state_dict(), "hyper_parameters": dict(module.hparams), "task": "geometry"},
               path)
    monkeypatch.setenv(ENV, str(tmp_path / "empty"))  # no weights file: the checkpoint holds the tensors
    model, loaded = load(path)
    assert loaded.patch_embed_weights == REGISTERED and loaded.size == "tiny_mobilenet"
    module.eval()
    with torch.no_grad():
        expected, got = module.model(batch["images"]), model(batch["images"])
    torch.testing.assert_close(got["depth"], expected["depth"])
    torch.testing.assert_close(got["extrinsics"], expected["extrinsics"])


def test_a_random_stem_builds_the_backbone_for_tests():
    torch.manual_seed(0)
    backbone = create_backbone("tiny_mobilenet").eval()
    with torch.no_grad():
        out = backbone(torch.rand(1, 2, 3, 128, 160))
    assert out["tokens"][-1].shape == (1, 2, 5 + 8 * 10, 256) and out["depth"].shape == (1, 2, 128, 160, 1)
