"""The real-perception backbone (vision.geometry.real_backbone) on a real photograph seen by a virtual camera that pans:
its solved cameras carry a lifted point to where the point really goes, a still camera stays the identity, and the
clip encoding has the geometry backbone's shapes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from skimage import data

from vision.errors import InputError
from vision.geometry.real_backbone import RealPerception, RealPerceptionConfig

SHIFT = 3  # pixels the view moves right per frame


def _panning(frames: int) -> np.ndarray:
    photo = data.astronaut()  # 512 x 512
    return np.stack([np.ascontiguousarray(photo[100:340, 20 + SHIFT * t:340 + SHIFT * t]) for t in range(frames)])


@pytest.fixture(scope="module")
def perception(pretrained_weights: Path) -> RealPerception:
    return RealPerception()


def test_panning_camera_moves_lifted_points_with_the_image(perception: RealPerception) -> None:
    frames = _panning(6)
    perception.reset()
    geometry = [perception.step(f) for f in frames]
    assert all(g.tracked for g in geometry[1:])
    assert geometry[0].correspondences == 0 and all(0 < g.inliers <= g.correspondences for g in geometry[1:])
    ys, xs = np.mgrid[60:200:20, 60:260:20]
    uv = np.stack([xs.ravel(), ys.ravel()], 1).astype(np.float64)
    world = geometry[0].lift(uv)
    projected, z = geometry[-1].project(world)
    assert (z > 0).all()
    error = np.abs(projected - (uv - [SHIFT * 5, 0]))
    assert np.median(error[:, 0]) < 1.5 and np.median(error[:, 1]) < 1.5
    # the frame-0 camera is the world; a still frame would not have moved it
    np.testing.assert_allclose(geometry[0].extrinsics, np.eye(3, 4))
    assert not np.allclose(geometry[-1].extrinsics, np.eye(3, 4), atol=1e-3)


def test_still_camera_stays_the_identity(perception: RealPerception) -> None:
    frame = _panning(1)[0]
    perception.reset()
    perception.step(frame)
    second = perception.step(frame.copy())
    np.testing.assert_allclose(second.extrinsics, np.eye(3, 4), atol=2e-3)


def test_clip_encoding_has_the_backbone_outputs(perception: RealPerception) -> None:
    frames = _panning(3)
    out = perception(frames)
    s = len(frames)
    h, w = perception.grid_size(*frames.shape[1:3])
    assert out["depth"].shape == (s, h, w, 1) and out["world_points"].shape == (s, h, w, 3)
    assert out["extrinsics"].shape == (s, 3, 4) and out["intrinsics"].shape == (s, 3, 3)
    assert out["feats"].shape[0] == s and out["feats"].shape[2:] == (2 * h // 16, 2 * w // 16)
    assert (out["depth"] > 0).all() and set(out["depth_conf"].unique().tolist()) <= {0.0, 1.0}


def test_bad_settings_and_frames_are_refused(perception: RealPerception) -> None:
    with pytest.raises(InputError, match="features"):
        RealPerceptionConfig(features="resnet")
    with pytest.raises(InputError, match="depth_size"):
        RealPerceptionConfig(depth_size=0)
    perception.reset()
    with pytest.raises(InputError, match="uint8"):
        perception.step(np.zeros((10, 10), np.uint8))
    perception.step(np.zeros((64, 64, 3), np.uint8))
    with pytest.raises(InputError, match="frame size changed"):
        perception.step(np.zeros((96, 64, 3), np.uint8))


def test_the_backbone_holds_the_detector_the_real_frame_detector_is_built_on(perception: RealPerception) -> None:
    """The backbone's YOLOX-nano finds what the registered ONNX graph finds, and a real-frame detector body built on
    it shares its weights (one network in the process)."""
    from vision.detection.yolox_body import YOLOXBody
    from vision.weights.nets.onnx_models import YOLOXNano as OnnxYOLOX

    photo = data.astronaut()
    ours, reference = perception.detect(photo), OnnxYOLOX().detect(photo)
    assert list(ours["classes"]) == list(reference["classes"]) and len(ours["classes"]) >= 1
    np.testing.assert_allclose(ours["boxes"], reference["boxes"], atol=1e-2)
    body = YOLOXBody(384, net=perception.detector)
    assert body.net is perception.detector and not any(p.requires_grad for p in body.net.parameters())
    bare = RealPerception(RealPerceptionConfig(detector=None), depth_net=perception.depth_net,
                          feature_net=perception.feature_net)
    assert bare.detector is None
    with pytest.raises(InputError, match="holds no detector"):
        bare.detect(photo)
    with pytest.raises(InputError, match="detector must be 'yolox-nano' or None"):
        RealPerceptionConfig(detector="yolov8")
