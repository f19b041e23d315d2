"""DetectorPredictor in bf16 against float32 (``precision=``): every one of float32's five best detections per
image has a bf16 detection of the same label within the box and score tolerances of docs/precision.md. The model is
a fresh detector (seeded) on random 64-px images, with the deterministic fake text encoder."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.detection.conftest import FakeTextEncoder
from tests.marks import GPU
from vision.detection.predictor import DetectorPredictor
from vision.detection.task import DetectionConfig, build_model

#: bf16 vs float32 on this fixture (docs/precision.md): box corners in input pixels (64-px images), scores
BOX_TOL, SCORE_TOL = 0.25, 0.01


def _detect(device: str, precision: str) -> list[dict]:
    torch.manual_seed(0)
    model = build_model(DetectionConfig(channels=32))
    predictor = DetectorPredictor(model, ["cube", "mug", "lamp"], 64, encoder=FakeTextEncoder(), device=device,
                                  precision=precision)
    images = np.random.default_rng(0).integers(0, 256, size=(3, 64, 64, 3), dtype=np.uint8)
    results = predictor.predict(images)
    assert all(r["boxes"].dtype == np.float32 and r["scores"].dtype == np.float32 for r in results)
    return results


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=GPU)])
def test_bf16_detects_as_float32_does(device):
    worst_box = worst_score = 0.0
    for full, half in zip(_detect(device, "32"), _detect(device, "bf16")):
        for box, score, label in zip(full["boxes"][:5], full["scores"][:5], full["label_ids"][:5]):
            same = half["label_ids"] == label
            assert same.any()
            gaps = np.abs(half["boxes"][same] - box).max(1)
            best = int(gaps.argmin())
            worst_box = max(worst_box, float(gaps[best]))
            worst_score = max(worst_score, float(abs(half["scores"][same][best] - score)))
    print(f"\ndetection bf16 vs 32 on {device}: box {worst_box:.2g} px, score {worst_score:.2g}")
    assert worst_box <= BOX_TOL and worst_score <= SCORE_TOL
