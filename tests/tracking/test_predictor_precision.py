"""TrackerPredictor in bf16 against float32 (``precision=``, :func:`vision.device.autocast`): the same prompts on the
same frames give presence scores, masks and cameras within the tolerances of docs/precision.md. The model is a
fresh 32-px G2TAM (seeded), whose mask logits sit near the threshold, so masks are compared by IoU."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.marks import GPU
from vision.errors import InputError
from vision.tracking.predictor import TrackerPredictor
from vision.tracking.task import TrackingConfig, build_model

#: bf16 vs float32 on this fixture (docs/precision.md): presence probability, mask IoU per object, camera
#: translation / rotation entries, depth relative to its largest value
SCORE_TOL, MIN_IOU, CAMERA_TOL, DEPTH_TOL = 0.02, 0.6, 0.1, 0.05


def _track(device: str, precision: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    torch.manual_seed(0)
    model = build_model(TrackingConfig(image_size=32, dim=32, text_encoder=None))
    predictor = TrackerPredictor(model, text_encoder=None, device=device, precision=precision, window_size=4,
                                 presence_threshold=0.0)
    frames = np.random.default_rng(0).integers(0, 256, size=(6, 40, 48, 3), dtype=np.uint8)
    state = predictor.init_state(frames)
    predictor.add_prompt(state, view=0, obj_id=1, points=[[20, 20]], labels=[1])
    predictor.add_prompt(state, view=0, obj_id=2, box=[4, 6, 30, 34])
    views = sorted(predictor.propagate(state), key=lambda item: item[0])
    masks = np.stack([m for _, _, m, _ in views])
    scores = np.stack([s for *_, s in views])
    assert scores.dtype == np.float32 and state.depth.dtype == np.float32
    return masks, scores, state.extrinsics.copy(), state.depth.copy()


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=GPU)])
def test_bf16_tracks_as_float32_does(device):
    masks32, scores32, cams32, depth32 = _track(device, "32")
    masks16, scores16, cams16, depth16 = _track(device, "bf16")
    score_diff = float(np.abs(scores32 - scores16).max())
    iou = (masks32 & masks16).sum((0, 2, 3)) / np.maximum((masks32 | masks16).sum((0, 2, 3)), 1)
    camera_diff = float(np.abs(cams32 - cams16).max())
    depth_diff = float(np.abs(depth32 - depth16).max() / np.abs(depth32).max())
    print(f"\ntracking bf16 vs 32 on {device}: presence {score_diff:.2g}, mask IoU {iou.min():.3f}, "
          f"camera {camera_diff:.2g}, depth (relative) {depth_diff:.2g}")
    assert score_diff <= SCORE_TOL and iou.min() >= MIN_IOU
    assert camera_diff <= CAMERA_TOL and depth_diff <= DEPTH_TOL


def test_device_and_precision_are_checked():
    model = build_model(TrackingConfig(image_size=32, dim=32, text_encoder=None))
    with pytest.raises(InputError, match="unknown device 'gpu'"):
        TrackerPredictor(model, text_encoder=None, device="gpu")
    with pytest.raises(InputError, match="unknown precision '8'"):
        TrackerPredictor(model, text_encoder=None, precision="8")
    predictor = TrackerPredictor(model, text_encoder=None, device="cpu", precision=torch.bfloat16)
    assert predictor.device == torch.device("cpu") and predictor.dtype is torch.bfloat16
