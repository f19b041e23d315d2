"""ALIKE (vision.weights.nets.alike) with the real ``alike-t`` / ``alike-n`` weights: parity with upstream's code, and
a known homography recovered from mutual matches on a real image.

The fixtures ``fixtures/alike_{t,n}_astronaut.npz`` were made by running upstream's own code (Shiaoming/ALIKE@4e61fc7
``alike.py``, ``alnet.py``, ``soft_detect.py``, copied unchanged to /tmp, outside this repository; the state dict
loaded with ``torch.load(weights_only=True)``) as its demo does -- ``ALike(**configs[name], top_k=-1,
scores_th=0.2, n_limit=5000)``, ``forward(img, sub_pixel=True, sort=True)`` -- on scikit-image's ``astronaut()``
(512x512) and on its crop ``[100:400, 150:350]`` (300x200, sides not multiples of 32) with ``n_limit=100``. Saved:
the keypoint count, the 64 best keypoints and scores, the 8 best descriptors, the score map at every 16th pixel;
for the crop its count and 32 best keypoints and scores.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest
import torch
from skimage import data

from vision.errors import InputError
from vision.weights.nets import alike
from vision.weights.nets.alike import ALIKE_CONFIGS, ALike, load_alike, mutual_matches
from vision.weights.store import WeightsError

FIXTURES = Path(__file__).parent / "fixtures"
NAMES = ["alike-t", "alike-n"]


@pytest.fixture(scope="module")
def nets(pretrained_weights: Path) -> dict[str, ALike]:
    return {name: load_alike(name) for name in NAMES}


@pytest.fixture(scope="module")
def astronaut() -> np.ndarray:
    return data.astronaut()


@pytest.mark.parametrize("name", NAMES)
def test_matches_upstream_output(nets: dict[str, ALike], astronaut: np.ndarray, name: str) -> None:
    """Score map, keypoints, scores and descriptors against upstream's on the same real image (see the module doc)."""
    net, reference = nets[name], np.load(FIXTURES / f"alike_{name[-1]}_astronaut.npz")
    with torch.no_grad():
        scores_map, _ = net.dense_maps(torch.from_numpy(astronaut).float().permute(2, 0, 1)[None] / 255.0)
    np.testing.assert_allclose(scores_map[0, 0, ::16, ::16].numpy(), reference["scores_map"], atol=1e-5)

    found = net.detect(astronaut, top_k=5000, score_threshold=0.2)
    assert len(found["keypoints"]) == int(reference["count"])
    np.testing.assert_allclose(found["keypoints"][:64], reference["keypoints"], atol=1e-3)
    np.testing.assert_allclose(found["scores"][:64], reference["scores"], atol=1e-5)
    np.testing.assert_allclose(found["descriptors"][:8], reference["descriptors"], atol=1e-5)

    crop = np.ascontiguousarray(astronaut[100:400, 150:350])
    found = net.detect(crop, top_k=100, score_threshold=0.2)
    assert len(found["keypoints"]) == int(reference["crop_count"])
    np.testing.assert_allclose(found["keypoints"][:32], reference["crop_keypoints"], atol=1e-3)
    np.testing.assert_allclose(found["scores"][:32], reference["crop_scores"], atol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_detect_output_conventions(nets: dict[str, ALike], astronaut: np.ndarray, name: str) -> None:
    found = nets[name].detect(astronaut[:200, :300].copy(), top_k=64)
    keypoints, descriptors, scores = found["keypoints"], found["descriptors"], found["scores"]
    assert keypoints.dtype == descriptors.dtype == scores.dtype == np.float32
    assert keypoints.shape == (64, 2) and descriptors.shape == (64, ALIKE_CONFIGS[name]["dim"])
    assert scores.shape == (64,) and (np.diff(scores) <= 0).all()
    np.testing.assert_allclose(np.linalg.norm(descriptors, axis=1), 1.0, atol=1e-5)
    assert (keypoints[:, 0] >= 2).all() and (keypoints[:, 0] <= 297).all()  # x spans the 300 columns
    assert (keypoints[:, 1] >= 2).all() and (keypoints[:, 1] <= 197).all()  # y spans the 200 rows


def _project(homography: np.ndarray, points: np.ndarray) -> np.ndarray:
    projected = np.c_[points, np.ones(len(points))] @ homography.T
    return projected[:, :2] / projected[:, 2:]


@pytest.mark.parametrize("name", NAMES)
def test_recovers_known_homography(nets: dict[str, ALike], astronaut: np.ndarray, name: str) -> None:
    """astronaut at 320x320 warped by a known homography (15 degree rotation, scale 0.9, perspective; corners move
    52-112 px); mutual matches of the two images' keypoints and OpenCV's RANSAC homography put the corners within
    1 px of the truth. Measured: 0.59 px (t) / 0.39 px (n); the same networks with random weights: 5.5 / 5.3 px."""
    image = cv2.resize(astronaut, (320, 320), interpolation=cv2.INTER_AREA)
    side = image.shape[0]
    rotation = np.vstack([cv2.getRotationMatrix2D((side / 2, side / 2), 15, 0.9), [0, 0, 1]])
    truth = rotation @ np.array([[1, 0, 0], [0, 1, 0], [0.15 / side, 0.1 / side, 1]])
    truth /= truth[2, 2]
    warped = cv2.warpPerspective(image, truth, (side, side), flags=cv2.INTER_LINEAR)

    net = nets[name]
    first, second = net.detect(image), net.detect(warped)
    matches = mutual_matches(first["descriptors"], second["descriptors"])
    assert len(matches) >= 100
    estimate, inliers = cv2.findHomography(first["keypoints"][matches[:, 0]].astype(np.float64),
                                           second["keypoints"][matches[:, 1]].astype(np.float64), cv2.RANSAC, 3.0)
    assert estimate is not None and inliers.sum() >= 0.6 * len(matches)
    corners = np.array([[0, 0], [side - 1, 0], [side - 1, side - 1], [0, side - 1]], np.float64)
    error = np.linalg.norm(_project(estimate, corners) - _project(truth, corners), axis=1).mean()
    assert error < 1.0


def test_mutual_matches() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(6, 8)).astype(np.float32)
    order = np.array([3, 0, 5, 1])
    b = np.concatenate([a[order] * 2.5 + 0.01 * rng.normal(size=(4, 8)), -a[2:3]]).astype(np.float32)
    matches = mutual_matches(a, b)
    assert matches.dtype == np.int64 and matches.shape[1] == 2
    assert {tuple(m) for m in matches} >= {(3, 0), (0, 1), (5, 2), (1, 3)}
    assert (np.diff(matches[:, 0]) > 0).all()
    strict = mutual_matches(a, b, min_similarity=0.99)
    assert {tuple(m) for m in strict} == {(3, 0), (0, 1), (5, 2), (1, 3)}
    assert mutual_matches(a[:0], b).shape == (0, 2)
    with pytest.raises(InputError, match="same D"):
        mutual_matches(a, b[:, :4])


def test_rejects_bad_input() -> None:
    net = ALike(**ALIKE_CONFIGS["alike-t"]).eval()  # type: ignore[arg-type]
    with pytest.raises(InputError, match="uint8"):
        net.detect(np.zeros((64, 64, 3), np.float32))
    with pytest.raises(InputError, match="uint8"):
        net.detect(np.zeros((64, 64), np.uint8))
    empty = net.detect(np.zeros((40, 50, 3), np.uint8), score_threshold=0.99)
    assert empty["keypoints"].shape == (0, 2) and empty["descriptors"].shape == (0, 64)
    with pytest.raises(InputError, match="unknown ALIKE"):
        load_alike("alike-l")


def test_checkpoint_structure_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file with another variant's shapes, or missing keys, is a WeightsError naming them."""
    path = tmp_path / "alike.pth"
    monkeypatch.setattr(alike, "weights_path", lambda name: path)
    torch.save(ALike(**ALIKE_CONFIGS["alike-n"]).state_dict(), path)  # type: ignore[arg-type]
    with pytest.raises(WeightsError, match="shapes do not match"):
        load_alike("alike-t")
    state = ALike(**ALIKE_CONFIGS["alike-t"]).state_dict()  # type: ignore[arg-type]
    del state["convhead2.weight"]
    torch.save(state, path)
    with pytest.raises(WeightsError, match="missing \\['convhead2.weight'\\]"):
        load_alike("alike-t")
    torch.save({"model": [1, 2]}, path)
    with pytest.raises(WeightsError, match="not a state dict"):
        load_alike("alike-t")
