"""The predictor under bf16 autocast (what a GPU user runs): tensors leave the model as bf16, and every conversion
to numpy must go through float32 (this failed with "unsupported ScalarType BFloat16" before). Checked with CPU
autocast, so it runs everywhere; tests/test_gpu_smoke.py runs the same on a GPU."""

from __future__ import annotations

import numpy as np
import torch

from vision.tracking.predictor import TrackerPredictor
from vision.tracking.task import TrackingConfig, build_model


def test_propagate_under_bf16_autocast_gives_masks_and_cameras():
    torch.manual_seed(0)
    predictor = TrackerPredictor(build_model(TrackingConfig(image_size=32, dim=32, text_encoder=None)),
                                 text_encoder=None, device="cpu")
    frames = np.random.default_rng(0).integers(0, 256, size=(5, 40, 48, 3), dtype=np.uint8)
    state = predictor.init_state(frames)
    predictor.add_prompt(state, view=0, obj_id=1, points=[[20, 20]], labels=[1])
    predictor.add_prompt(state, view=2, obj_id=2, box=[4, 6, 30, 34])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        views = list(predictor.propagate(state))
    assert sorted(v for v, *_ in views) == list(range(5))
    for _, obj_ids, masks, scores in views:
        assert masks.shape == (len(obj_ids), 40, 48) and masks.dtype == bool
        assert scores.dtype == np.float32 and np.isfinite(scores).all()
    assert all(np.isfinite(state.extrinsics[v]).all() and state.depth[v].dtype == np.float32 for v in range(5))
