"""ForensicsPredictor in bf16 against float32 (``precision=``): the geometry backbone (the one network of the tool
set) runs in bf16, and the calibrated probability stays within the tolerance of docs/precision.md. A fresh tiny
backbone and detector (seeded) on a smooth panning 48-px clip."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
import torch

from tests.marks import GPU
from vision.forensics.model import ForensicDetector
from vision.forensics.predictor import ForensicsPredictor
from vision.forensics.task import ForensicsConfig, build_backbone

#: bf16 vs float32 on this fixture (docs/precision.md): the probability of "generated"
PROBABILITY_TOL = 0.02


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=GPU)])
def test_bf16_scores_as_float32_does(device):
    config = ForensicsConfig(tools=["geometry", "planar"], hidden=16, image_size=48, max_frames=5, geometry="tiny",
                             geometry_image_size=32)
    torch.manual_seed(0)
    backbone = build_backbone(config)
    detector = ForensicDetector(config.feature_names, hidden=16, dropout=0.0)
    texture = cv2.resize(np.random.default_rng(1).integers(0, 256, (12, 12, 3), dtype=np.uint8), (96, 96))
    video = np.stack([texture[i: i + 48, i: i + 48] for i in range(5)])
    full = ForensicsPredictor(detector, config, backbone, device=device).analyze(video)
    half = ForensicsPredictor(detector, config, backbone, device=device, precision="bf16").analyze(video)
    gap = abs(full["verdict"]["probability"] - half["verdict"]["probability"])
    print(f"\nforensics bf16 vs 32 on {device}: probability {gap:.2g}")
    assert gap <= PROBABILITY_TOL
    # the backbone did run in bf16: its cues moved, a little
    cue = "geometry.cam_jerk"
    assert full["tools"]["geometry"]["features"][cue] != half["tools"]["geometry"]["features"][cue]
