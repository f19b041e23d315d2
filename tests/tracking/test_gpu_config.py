"""configs/tracking/vggt1b_sam2.yaml, the GPU user's configuration: it parses, and the module it names builds on the
meta device (VGGT-1B backbone frozen, SAM 2.1-shaped heads whose every SAM key maps with equal shapes); the weight
options load real files through the key maps (tested with the small parity fixtures elsewhere)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from vision.errors import InputError
from vision.tracking.lightning import TrackingModule
from vision.tracking.sam2_keys import SAM2_1_HEADS
from vision.training.compose import compose

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "tracking" / "vggt1b_sam2.yaml"


def test_the_config_parses():
    from vision.training.cli import VisionCLI

    # parsing only (no instantiation): --print_config exits after printing the resolved config
    with pytest.raises(SystemExit) as info:
        VisionCLI(args=["fit", "--config", str(CONFIG), "--print_config"], run=True)
    assert info.value.code in (0, None)


def test_the_module_builds_on_the_meta_device_with_sam_heads_and_a_frozen_backbone():
    init = compose(CONFIG)["model"]["init_args"]
    config = {**init["config"], "text_encoder": None}
    assert {k: config[k] for k in SAM2_1_HEADS} == SAM2_1_HEADS
    args = {k: v for k, v in init.items() if k not in ("config", "vggt_weights", "sam2_weights")}
    with torch.device("meta"):
        module = TrackingModule(config=config, **args)
    backbone = sum(p.numel() for p in module.model.backbone.parameters())
    assert backbone > 9e8  # the VGGT-1B shapes
    assert not any(p.requires_grad for p in module.model.backbone.parameters())
    assert all(p.requires_grad for p in module.model.decoder.parameters())
    assert module.model.decoder_style == "sam2"


def test_a_frozen_backbone_with_geometry_losses_is_refused():
    with pytest.raises(InputError, match="geometry_weight"):
        TrackingModule(config={"image_size": 32, "dim": 32, "text_encoder": None}, freeze_backbone=True)


def test_sam2_weights_option_loads_the_heads_through_the_key_map():
    from tests.tracking.test_sam2_parity import DATA, SMALL
    from vision.tracking.sam2_keys import load_sam2_heads
    from vision.tracking.task import TrackingConfig, build_model

    module = TrackingModule(config={**SMALL, "text_encoder": None}, geometry_weight=0.0, freeze_backbone=True,
                            sam2_weights=str(DATA / "state_dict.safetensors"))
    reference = build_model(TrackingConfig(**{**SMALL, "text_encoder": None}))
    load_sam2_heads(reference, DATA / "state_dict.safetensors")
    ours, theirs = module.model.decoder.state_dict(), reference.decoder.state_dict()
    assert all(torch.equal(ours[k], theirs[k]) for k in theirs if k.startswith(("transformer.", "iou_head.")))
