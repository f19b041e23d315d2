"""The geometry backbone under bf16 autocast (:func:`vision.device.autocast`, what every predictor that holds it
uses) against float32: depth, point maps and the pose encoding within the tolerances of docs/precision.md,
relative to each output's largest magnitude. A fresh tiny backbone (seeded), 4 random 32-px views."""

from __future__ import annotations

import pytest
import torch

from tests.marks import GPU
from vision.device import autocast
from vision.geometry.task import GeometryConfig, build_model

#: bf16 vs float32 on this fixture (docs/precision.md), the largest difference over the largest magnitude
TOLERANCES = {"depth": 0.02, "world_points": 0.03, "pose_enc": 0.05}


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=GPU)])
def test_bf16_backbone_matches_float32(device):
    torch.manual_seed(0)
    backbone = build_model(GeometryConfig(size="tiny", image_size=32)).backbone.to(device).eval()
    images = torch.rand(1, 4, 3, 32, 32, generator=torch.Generator().manual_seed(0)).to(device)
    with torch.no_grad():
        full = backbone(images)
        with autocast(device, torch.bfloat16):
            half = backbone(images)
    assert half["depth"].dtype is torch.bfloat16
    gaps = {k: float((full[k] - half[k].float()).abs().max() / full[k].abs().max()) for k in TOLERANCES}
    print(f"\ngeometry bf16 vs 32 on {device}: " + ", ".join(f"{k} {v:.2g}" for k, v in gaps.items()))
    assert all(gaps[k] <= TOLERANCES[k] for k in TOLERANCES), gaps
