"""YOLOX-nano in PyTorch (vision.weights.nets.yolox) with the registered ``yolox-nano`` ONNX file: parity with
onnxruntime running that file (vision.weights.nets.onnx_models.YOLOXNano) on real images, gradients, and the
graph check of the loader."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from vision.weights.nets.onnx_models import COCO_CLASSES, yolox_letterbox
from vision.weights.nets.onnx_models import YOLOXNano as OrtYOLOXNano
from vision.weights.nets.yolox import YOLOXNano, load_yolox_nano
from vision.weights.store import WeightsError, weights_path

skimage_data = pytest.importorskip("skimage.data")


@pytest.fixture(scope="module")
def images(shared_footage: Path) -> dict[str, np.ndarray]:
    """scikit-image's astronaut, chelsea, coffee and the first frame of the basketball clip, uint8 RGB."""
    capture = cv2.VideoCapture(str(shared_footage / "mmaction2_basketball.mp4"))
    ok, frame = capture.read()
    capture.release()
    assert ok, "cannot read mmaction2_basketball.mp4"
    return {"astronaut": skimage_data.astronaut(), "chelsea": skimage_data.chelsea(),
            "coffee": skimage_data.coffee(), "basketball": np.ascontiguousarray(frame[:, :, ::-1])}


@pytest.fixture(scope="module")
def nets(pretrained_weights: Path) -> tuple[YOLOXNano, OrtYOLOXNano]:
    return load_yolox_nano(), OrtYOLOXNano(threads=2)


def test_raw_outputs_match_onnxruntime(nets, images) -> None:
    """The torch module's ``raw`` is the graph's output on the same letterboxed input: the objectness and class
    probabilities within 1e-4, the box terms within 1e-3 (x, y, log w, log h in grid units: 0.03 px of a centre at
    stride 32, 0.1% of a size). Both are float32 computations of the same network summed in different orders, so the box terms differ at
    float32's level for a network this deep: onnxruntime's optimised and unoptimised sessions differ from each other
    by the same order, and so does each backend from a float64 run of this module (docs/weights.md gives the
    figures)."""
    net, ort_net = nets
    for name, image in images.items():
        blob, _ = yolox_letterbox(image, *net.input_size)
        expected = ort_net.session.run(None, {ort_net.input_name: blob})[0]
        with torch.no_grad():
            out = net(torch.from_numpy(blob))
        raw = out["raw"].numpy()
        assert raw.shape == expected.shape == (1, 3549, 85), name
        np.testing.assert_allclose(raw[..., 4:], expected[..., 4:], rtol=0, atol=1e-4, err_msg=name)
        np.testing.assert_allclose(raw[..., :4], expected[..., :4], rtol=0, atol=1e-3, err_msg=name)
        assert [tuple(f.shape) for f in out["features"]] == [(1, 64, 52, 52), (1, 128, 26, 26), (1, 256, 13, 13)]
        torch.testing.assert_close(out["logits"][..., 4:].sigmoid(), out["raw"][..., 4:], rtol=0, atol=0)


def test_detections_match_onnxruntime(nets, images) -> None:
    """``detect`` keeps the same boxes as the onnxruntime class after NMS: same count, classes and order, boxes
    within 0.01 px, scores within 1e-4, at a low score threshold (more boxes through NMS) and on astronaut at the
    default one."""
    net, ort_net = nets
    runs = [(name, image, 0.05) for name, image in images.items()] + [("astronaut", images["astronaut"], 0.3)]
    for name, image, threshold in runs:
        found, expected = net.detect(image, threshold), ort_net.detect(image, threshold)
        assert len(expected["boxes"]) >= 1, name
        assert {k: v.dtype for k, v in found.items()} == {k: v.dtype for k, v in expected.items()}
        np.testing.assert_array_equal(found["classes"], expected["classes"], err_msg=name)
        np.testing.assert_allclose(found["boxes"], expected["boxes"], rtol=0, atol=1e-2, err_msg=name)
        np.testing.assert_allclose(found["scores"], expected["scores"], rtol=0, atol=1e-4, err_msg=name)
    assert COCO_CLASSES[found["classes"][0]] == "person" and found["scores"][0] == pytest.approx(0.93, abs=0.03)


def test_trainable(nets) -> None:
    """Every parameter gets a gradient (the backbone's first convolution included); train() and eval() switch
    every submodule and compute the same outputs (no BatchNorm, no dropout)."""
    net = YOLOXNano()
    net.load_state_dict(nets[0].state_dict())
    images = torch.rand(2, 3, 64, 96) * 255
    net.train()
    assert all(module.training for module in net.modules())
    out = net(images)
    assert out["raw"].shape == (2, 8 * 12 + 4 * 6 + 2 * 3, 85)
    (out["logits"].square().mean() + sum(f.mean() for f in out["features"])).backward()
    stem = net.backbone.backbone.stem.conv.conv.weight
    assert stem.grad is not None and torch.isfinite(stem.grad).all() and stem.grad.abs().sum() > 0
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in net.parameters())
    net.eval()
    assert not any(module.training for module in net.modules())
    with torch.no_grad():
        torch.testing.assert_close(net(images)["raw"], out["raw"].detach(), rtol=0, atol=0)


def test_a_wrong_file_is_refused(pretrained_weights: Path, tmp_path: Path) -> None:
    """Another network's ONNX file, a file that is not ONNX, and YOLOX's graph with two tensors swapped are each a
    WeightsError naming the file."""
    deeplab = weights_path("deeplabv3-voc")
    with pytest.raises(WeightsError, match=f"{deeplab}.*not a YOLOX graph"):
        YOLOXNano.from_onnx(deeplab)
    alike = weights_path("alike-t")
    with pytest.raises(WeightsError, match=f"{alike} is not a readable ONNX file"):
        YOLOXNano.from_onnx(alike)

    import onnx

    model = onnx.load(str(weights_path("yolox-nano")))
    focus = next(node for node in model.graph.node if node.op_type == "Concat")  # the stem's space-to-depth
    focus.input[1], focus.input[2] = focus.input[2], focus.input[1]
    swapped = tmp_path / "swapped.onnx"
    onnx.save(model, str(swapped))
    with pytest.raises(WeightsError, match=f"{swapped} is not a YOLOX graph.*stem.*slice"):
        YOLOXNano.from_onnx(swapped)
