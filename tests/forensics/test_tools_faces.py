"""Faces tool: a face edited apart from its surroundings (blurred, noised or compressed on its own, as a face swap
pastes it) moves the face / background ratios; a clip without a face is not applicable with its reason."""

from __future__ import annotations

import math
from pathlib import Path

import cv2
import numpy as np
import pytest
import skimage.data

from tests.forensics.test_tools_periodicity import bikes_clip
from tests.forensics.test_tools_planar import animate_still
from vision.forensics.features import load_clip
from vision.forensics.tools.base import Clip
from vision.forensics.tools.faces import FaceTool, blockiness, face_regions


def edit_face(frames: np.ndarray, tool: FaceTool, kind: str) -> np.ndarray:
    """Each frame's detected face replaced, through a feathered ellipse, by an edited copy of itself: ``blur``
    (Gaussian, sigma = face width / 40), ``noise`` (Gaussian, sigma 8) or ``jpeg`` (the face crop alone through
    JPEG quality 15, on its own block grid): a face-swap-like paste whose pixels went through another process."""
    out = frames.copy()
    for t in range(len(out)):
        faces = tool.detect(out[t])
        if not len(faces):
            continue
        x0, y0, w, h = (max(0, round(float(v))) for v in faces[0][:4])
        region = out[t, y0:y0 + h, x0:x0 + w]
        h, w = region.shape[:2]
        if kind == "blur":
            new = cv2.GaussianBlur(region, (0, 0), max(1.0, w / 40))
        elif kind == "noise":
            noise = np.random.default_rng(t).normal(0, 8, region.shape)
            new = np.clip(region + noise, 0, 255).round().astype(np.uint8)
        else:
            _, buf = cv2.imencode(".jpg", region, [cv2.IMWRITE_JPEG_QUALITY, 15])
            new = cv2.imdecode(buf, cv2.IMREAD_UNCHANGED)
        mask = np.zeros((h, w), np.float32)
        cv2.ellipse(mask, (w // 2, h // 2), (int(w * 0.45), int(h * 0.5)), 0, 0, 360, 1.0, -1)
        mask = cv2.GaussianBlur(mask, (0, 0), max(1.0, w / 20))[..., None]
        out[t, y0:y0 + h, x0:x0 + w] = (mask * new + (1 - mask) * region).round().astype(np.uint8)
    return out


@pytest.fixture(scope="module")
def tool(pretrained_weights: Path) -> FaceTool:
    return FaceTool()


@pytest.fixture(scope="module")
def makeup(shared_footage: Path) -> np.ndarray:
    """24 frames of a real close-up of a face (320x240, MPEG-4 Part 2)."""
    return load_clip(shared_footage / "mmaction2_makeup.avi", size=None, max_frames=24).frames


def test_regions_and_blockiness() -> None:
    face, background, window = face_regions(np.array([40, 30, 20, 20]), 120, 160)
    assert window == (25, 15, 75, 65)  # the 2.5x box about the centre (50, 40)
    assert face.shape == background.shape == (50, 50) and face.sum() == 16 * 16 and not (face & background).any()
    # a face filling the frame leaves no ring: the background becomes the frame outside the 1.3x box (empty here)
    _, background, window = face_regions(np.array([0, 0, 64, 64]), 64, 64)
    assert window == (0, 0, 64, 64) and background.sum() == 0
    rng = np.random.default_rng(0)
    smooth = cv2.GaussianBlur(rng.uniform(0, 255, (64, 64)).astype(np.float32), (0, 0), 3)
    blocky = smooth.copy()
    for y in range(0, 64, 8):  # a per-block offset: steps on the grid lines only
        for x in range(0, 64, 8):
            blocky[y:y + 8, x:x + 8] += rng.uniform(-6, 6)
    everywhere = np.ones((64, 64), bool)
    assert blockiness(blocky, everywhere) > 2.0 > blockiness(smooth, everywhere) > 0.8
    assert math.isnan(blockiness(smooth, np.zeros((64, 64), bool)))


def test_a_face_edited_apart_from_its_surroundings_moves_the_ratios(tool: FaceTool, makeup: np.ndarray) -> None:
    real = tool(Clip(makeup))
    assert real.applicable and all(math.isfinite(v) for v in real.features.values())
    r = real.features
    blur = tool(Clip(edit_face(makeup, tool, "blur"))).features
    noise = tool(Clip(edit_face(makeup, tool, "noise"))).features
    jpeg = tool(Clip(edit_face(makeup, tool, "jpeg"))).features
    assert blur["faces.sharpness_ratio"] < r["faces.sharpness_ratio"] - 1.0
    assert blur["faces.noise_ratio"] < r["faces.noise_ratio"] - 0.15
    assert noise["faces.noise_ratio"] > r["faces.noise_ratio"] + 0.8
    assert jpeg["faces.block_ratio"] > r["faces.block_ratio"] + 0.2
    # the evidence names the face: its box overlaps the woman's face on the right of the frame
    item = {e.statistic: e for e in real.evidence}["faces.sharpness_ratio"]
    assert item.region is not None and item.region[0] > 160 and len(item.frames) >= 6


def test_motion_features_follow_the_face(tool: FaceTool) -> None:
    # a photograph under a smooth virtual camera: the face moves exactly with its pixels
    frames = animate_still(skimage.data.astronaut(), 16, 256)
    still = tool(Clip(frames)).features
    assert 0.0 <= still["faces.landmark_jitter"] < 0.1 and 0.0 <= still["faces.box_motion"] < 0.1
    # every odd frame's face mirrored inside its box (a face redrawn each frame without following the pixels'
    # motion): the box no longer moves as the pixels under it do
    redrawn = frames.copy()
    for t in range(1, len(frames), 2):
        faces = tool.detect(frames[t])
        if len(faces):
            x0, y0, w, h = (max(0, round(float(v))) for v in faces[0][:4])
            redrawn[t, y0:y0 + h, x0:x0 + w] = frames[t, y0:y0 + h, x0:x0 + w][:, ::-1]
    r = tool(Clip(redrawn)).features
    assert r["faces.box_motion"] > still["faces.box_motion"] + 0.02


def test_small_clip_and_no_face(tool: FaceTool) -> None:
    small = tool(Clip(animate_still(skimage.data.astronaut(), 8, 64)))  # a 11-px face, upsampled for the detector
    assert small.applicable and math.isfinite(small.features["faces.sharpness_ratio"])
    none = tool(Clip(bikes_clip(40, 8, size=96)))
    assert not none.applicable and none.reason == "no face found in 8 sampled frames"
    tiny = FaceTool(min_face=40)
    tiny._detector = tool._detector
    assert tiny(Clip(animate_still(skimage.data.astronaut(), 4, 64))).reason == "no face found in 4 sampled frames"
    assert set(tool.descriptions) == set(tool.feature_names)
