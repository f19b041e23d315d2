"""vision.weights.nets.onnx_models on real images: the behaviour ../shared/weights/README.md records for each network
(YuNet faces, YOLOX-nano classes, DeepLabV3 VOC shares, XFeat matching under a known homography)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from vision.errors import InputError
from vision.weights.nets.onnx_models import (
    COCO_CLASSES,
    VOC_CLASSES,
    DeepLabV3VOC,
    XFeat,
    YOLOXNano,
    YuNet,
    nms_xyxy,
)

skimage_data = pytest.importorskip("skimage.data")


@pytest.fixture(scope="module")
def images() -> dict[str, np.ndarray]:
    return {"astronaut": skimage_data.astronaut(), "chelsea": skimage_data.chelsea(), "coffee": skimage_data.coffee(),
            "motorcycle": skimage_data.stereo_motorcycle()[0]}


def test_class_lists():
    assert len(COCO_CLASSES) == 80 and COCO_CLASSES[0] == "person" and COCO_CLASSES[15] == "cat"
    assert COCO_CLASSES[41] == "cup" and COCO_CLASSES[79] == "toothbrush"
    assert len(VOC_CLASSES) == 21 and VOC_CLASSES[0] == "background"
    assert (VOC_CLASSES[8], VOC_CLASSES[14], VOC_CLASSES[15]) == ("cat", "motorbike", "person")


def test_nms_xyxy():
    """The higher-scoring of two overlapping boxes is kept; a box overlapping by less than the threshold stays."""
    boxes = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30], [0, 0, 10, 5]], dtype=np.float32)
    scores = np.array([0.5, 0.9, 0.7, 0.6], dtype=np.float32)
    # IoU(0, 1) = 81 / 119 = 0.68; IoU(1, 3) = 36 / 114 = 0.32; IoU(0, 3) = 0.5
    assert nms_xyxy(boxes, scores, 0.45).tolist() == [1, 2, 3]
    assert nms_xyxy(boxes, scores, 0.3).tolist() == [1, 2]
    assert nms_xyxy(boxes[:0], scores[:0], 0.5).tolist() == []


def test_yunet_faces(pretrained_weights, images):
    """One face on astronaut (README: 0.99), its box and landmarks on her face; none on the cat or the coffee."""
    net = YuNet()
    faces = net.detect(images["astronaut"])
    assert faces.shape == (1, 15) and faces.dtype == np.float32
    x0, y0, w, h = faces[0, :4]
    assert faces[0, 14] > 0.9
    # her face lies around x 180-280, y 50-190 in the 512x512 image
    assert 160 < x0 < 220 and 30 < y0 < 90 and 60 < w < 110 and 100 < h < 160
    landmarks = faces[0, 4:14].reshape(5, 2)
    assert ((landmarks[:, 0] > x0) & (landmarks[:, 0] < x0 + w)).all()
    assert ((landmarks[:, 1] > y0) & (landmarks[:, 1] < y0 + h)).all()
    assert landmarks[0, 0] < landmarks[1, 0]  # the right eye is on the image's left
    assert net.detect(images["chelsea"]).shape == (0, 15)
    assert net.detect(images["coffee"]).shape == (0, 15)
    # results are mapped back to the input's pixels: an image already at the network's 160x120 and the same image
    # enlarged 4x by pixel replication (which the bilinear resize samples back exactly) give boxes 4x apart
    base = cv2.resize(images["astronaut"], (160, 120), interpolation=cv2.INTER_AREA)
    enlarged = np.repeat(np.repeat(base, 4, axis=0), 4, axis=1)
    at_base, at_enlarged = net.detect(base), net.detect(enlarged)
    assert at_base.shape == at_enlarged.shape == (1, 15)
    np.testing.assert_allclose(at_enlarged[0, :14], at_base[0, :14] * 4, rtol=1e-4, atol=1e-2)
    assert at_enlarged[0, 14] == pytest.approx(at_base[0, 14], abs=1e-5)


def test_yolox_top_classes(pretrained_weights, images):
    """The top detection is person 0.93 / cat 0.62 / cup 0.90 on astronaut / chelsea / coffee (README)."""
    net = YOLOXNano()
    expected = {"astronaut": ("person", 0.93), "chelsea": ("cat", 0.62), "coffee": ("cup", 0.90)}
    for name, (label, score) in expected.items():
        found = net.detect(images[name])
        assert found["boxes"].dtype == np.float32 and found["scores"].dtype == np.float32
        assert found["classes"].dtype == np.int64
        assert len(found["boxes"]) == len(found["scores"]) == len(found["classes"]) >= 1
        assert (np.diff(found["scores"]) <= 0).all() and (found["scores"] > 0.3).all()
        assert COCO_CLASSES[found["classes"][0]] == label, name
        assert found["scores"][0] == pytest.approx(score, abs=0.03), name
        height, width = images[name].shape[:2]
        boxes = found["boxes"]
        assert (boxes[:, 0] >= 0).all() and (boxes[:, 2] <= width).all() and (boxes[:, 3] <= height).all()
        assert (boxes[:, 2] > boxes[:, 0]).all() and (boxes[:, 3] > boxes[:, 1]).all()
    # the astronaut's person box covers most of her (left half of the image, most of its height)
    x0, y0, x1, y1 = net.detect(images["astronaut"])["boxes"][0]
    assert x0 < 60 and x1 > 300 and y1 - y0 > 400
    assert len(net.detect(images["astronaut"], score_threshold=0.99)["boxes"]) == 0


def test_deeplab_class_shares(pretrained_weights, images):
    """The share of person / cat / motorbike pixels is the README's 45% / 75% / 28%, at the input resolution."""
    net = DeepLabV3VOC()
    expected = {"astronaut": ("person", 0.45), "chelsea": ("cat", 0.75), "motorcycle": ("motorbike", 0.28)}
    for name, (label, share) in expected.items():
        mask = net.segment(images[name])
        assert mask.shape == images[name].shape[:2] and mask.dtype == np.int64
        assert mask.min() >= 0 and mask.max() < len(VOC_CLASSES)
        assert (mask == VOC_CLASSES.index(label)).mean() == pytest.approx(share, abs=0.03), name
    # the person is on the astronaut image's left, not its right edge
    person = net.segment(images["astronaut"]) == VOC_CLASSES.index("person")
    assert person[:, :256].mean() > 5 * person[:, 448:].mean()


def test_xfeat_recovers_a_known_homography(pretrained_weights, images):
    """astronaut and its warp by a known homography: mutual nearest-neighbour matches of the descriptors and
    MAGSAC (3.5 px, as upstream's sample) give a homography whose image corners land within 2 px of the true
    ones (measured 0.89 px; README: 1.14 px for its warp)."""
    net = XFeat()
    image = images["astronaut"]
    height, width = image.shape[:2]
    truth = np.array([[0.9, 0.05, 30.0], [-0.04, 0.95, 20.0], [1e-4, -5e-5, 1.0]])
    warped = cv2.warpPerspective(image, truth, (width, height))
    first, second = net.detect(image), net.detect(warped)
    for found in (first, second):
        n = len(found["keypoints"])
        assert 200 < n <= 4096
        assert found["keypoints"].shape == (n, 2) and found["descriptors"].shape == (n, 64)
        assert found["scores"].shape == (n,) and (found["scores"] > 0).all()
        assert (np.diff(found["scores"]) <= 0).all()
        np.testing.assert_allclose(np.linalg.norm(found["descriptors"], axis=1), 1.0, atol=1e-5)
        assert (found["keypoints"] >= 0).all() and (found["keypoints"][:, 0] < width).all()
        assert (found["keypoints"][:, 1] < height).all()

    similarity = first["descriptors"] @ second["descriptors"].T
    forward, backward = similarity.argmax(axis=1), similarity.argmax(axis=0)
    mutual = np.flatnonzero(backward[forward] == np.arange(len(forward)))
    assert len(mutual) > 300
    estimate, inliers = cv2.findHomography(first["keypoints"][mutual], second["keypoints"][forward[mutual]],
                                           cv2.USAC_MAGSAC, 3.5, maxIters=1000, confidence=0.999)
    assert int(inliers.sum()) > 200
    corners = np.array([[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]],
                       dtype=np.float64).reshape(-1, 1, 2)
    error = np.linalg.norm(cv2.perspectiveTransform(corners, estimate) - cv2.perspectiveTransform(corners, truth),
                           axis=2).mean()
    assert error < 2.0
    assert len(net.detect(image, top_k=50)["keypoints"]) == 50
    # keypoints are mapped back by the width and height ratios (network pixel x -> x * W / 320): an image at the
    # network's 320x224 and the same image enlarged 2x by pixel replication give keypoints 2x apart
    base = cv2.resize(image, (320, 224), interpolation=cv2.INTER_AREA)
    at_base, at_enlarged = net.detect(base), net.detect(np.repeat(np.repeat(base, 2, axis=0), 2, axis=1))
    np.testing.assert_allclose(at_enlarged["keypoints"], at_base["keypoints"] * 2, atol=1e-3)
    np.testing.assert_allclose(at_enlarged["descriptors"], at_base["descriptors"], atol=1e-4)


def test_inputs_are_checked(pretrained_weights, images):
    """A float, grey or RGBA image is refused with an InputError; so is threads < 1."""
    net = DeepLabV3VOC()
    with pytest.raises(InputError):
        net.segment(images["chelsea"].astype(np.float32))
    with pytest.raises(InputError):
        net.segment(images["chelsea"][:, :, 0])
    with pytest.raises(InputError):
        YuNet().detect(np.zeros((10, 10, 4), np.uint8))
    with pytest.raises(InputError):
        XFeat(threads=0)
