"""GPU smoke tests (``pytest -m gpu``; skipped without CUDA): the geometry backbone's forward under bf16 autocast
and a TrackerPredictor propagation on the GPU, with the peak memory each takes printed (run with ``-s`` to see it).
They check the GPU path runs and gives finite, well-shaped outputs; they assert no speed or memory figure."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (pytest -m gpu on one)")]


def _peak_mib() -> float:
    return torch.cuda.max_memory_allocated() / 2**20


@pytest.mark.parametrize("size, image_size, views", [("tiny", 64, 4), ("base", 224, 8)])
def test_backbone_forward_under_bf16_autocast(size, image_size, views):
    from vision.geometry.task import GeometryConfig, build_model

    torch.manual_seed(0)
    model = build_model(GeometryConfig(size=size, image_size=image_size)).backbone.cuda().eval()
    images = torch.rand(1, views, 3, image_size, image_size, device="cuda")
    torch.cuda.reset_peak_memory_stats()
    with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
        out = model(images)
    assert out["depth"].shape[:2] == (1, views) and torch.isfinite(out["depth"].float()).all()
    assert out["extrinsics"].shape == (1, views, 3, 4) and torch.isfinite(out["extrinsics"].float()).all()
    print(f"\n{size} backbone, {views} views at {image_size} px, bf16 autocast: peak {_peak_mib():.0f} MiB")


def test_tracker_propagates_on_the_gpu_under_bf16_autocast():
    from vision.tracking.predictor import TrackerPredictor
    from vision.tracking.task import TrackingConfig, build_model

    torch.manual_seed(0)
    model = build_model(TrackingConfig(image_size=64, text_encoder=None))
    predictor = TrackerPredictor(model, text_encoder=None, device="cuda")
    frames = np.random.default_rng(0).integers(0, 256, size=(12, 96, 128, 3), dtype=np.uint8)
    state = predictor.init_state(frames)
    predictor.add_prompt(state, view=0, obj_id=1, points=[[60, 40]], labels=[1])
    predictor.add_prompt(state, view=3, obj_id=2, box=[10, 20, 70, 90])
    torch.cuda.reset_peak_memory_stats()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        views = list(predictor.propagate(state))
    assert sorted(v for v, *_ in views) == list(range(12))
    for _, obj_ids, masks, scores in views:
        assert masks.shape == (len(obj_ids), 96, 128) and masks.dtype == bool and np.isfinite(scores).all()
    print(f"\nTrackerPredictor, 12 frames, 2 objects, bf16 autocast: peak {_peak_mib():.0f} MiB")
