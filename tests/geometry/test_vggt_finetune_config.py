"""configs/geometry/vggt_1b.yaml, fine-tuning from VGGT: it parses, the module it names builds on the meta device
with the patch embedding frozen, and ``vggt_weights`` really loads a VGGT checkpoint (the small parity fixture,
whose outputs then equal VGGT's own)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from vision.errors import InputError
from vision.geometry import model as geometry_model
from vision.geometry.lightning import GeometryModule
from vision.training.compose import compose

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "geometry" / "vggt_1b.yaml"
DATA = Path(__file__).parent / "data" / "vggt_small"


def test_the_config_parses():
    from vision.training.cli import VisionCLI

    with pytest.raises(SystemExit) as info:
        VisionCLI(args=["fit", "--config", str(CONFIG), "--print_config"], run=True)
    assert info.value.code in (0, None)


def test_the_module_builds_on_the_meta_device_with_the_patch_embedding_frozen():
    init = compose(CONFIG)["model"]["init_args"]
    assert init["config"]["size"] == "vggt_1b" and init["freeze"] == ["aggregator.patch_embed"]
    with torch.device("meta"):
        module = GeometryModule(**{k: v for k, v in init.items() if k != "vggt_weights"})
    backbone = module.model.backbone
    assert sum(p.numel() for p in backbone.parameters()) > 9e8  # the VGGT-1B shapes
    assert not any(p.requires_grad for p in backbone.aggregator.patch_embed.parameters())
    assert all(p.requires_grad for p in backbone.aggregator.frame_blocks.parameters())
    trained = {id(p) for group in module.param_groups() for p in group["params"]}
    assert not any(id(p) in trained for p in backbone.aggregator.patch_embed.parameters())


def test_an_unknown_module_to_freeze_is_refused():
    with pytest.raises(InputError, match="not a submodule"):
        GeometryModule(config={"size": "tiny", "image_size": 32}, freeze=["aggregator.no_such_block"])


def test_vggt_weights_loads_a_vggt_checkpoint(monkeypatch):
    # the small configuration of the parity fixture, registered as a size for this test
    ours = json.loads((DATA / "config.json").read_text())["ours"]
    size = {**geometry_model.BACKBONE_CONFIGS[ours["create_backbone"]], **ours["overrides"]}
    monkeypatch.setitem(geometry_model.BACKBONE_CONFIGS, "vggt_small", size)
    module = GeometryModule(config={"size": "vggt_small", "image_size": size["img_size"]},
                            vggt_weights=str(DATA / "state_dict.safetensors"))
    io = load_file(str(DATA / "io.safetensors"))
    with torch.no_grad():
        out = module.model.backbone.eval()(io["images"])
    for name in ("pose_enc", "depth", "world_points"):
        assert float((out[name] - io[name]).abs().max()) <= 1e-4, name
