"""Appearance tool: MobileNetV2's last-block features of a few frames, the same as the network computes them by
hand, telling a photograph from a flat drawing and carrying no evidence of their own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import skimage.data
import torch

from vision.forensics.tools.appearance import BLOCKS, CHANNELS, AppearanceTool
from vision.forensics.tools.base import Clip


def _clip(image: np.ndarray, frames: int = 6) -> Clip:
    return Clip(np.stack([np.roll(image, 2 * t, axis=1) for t in range(frames)]), fps=25.0)


def test_features_are_the_networks_block_pooled_over_cells_and_frames(pretrained_weights: Path) -> None:
    from vision.weights.nets.mobilenet import IMAGENET_MEAN, IMAGENET_STD, load_mobilenetv2

    photo = skimage.data.astronaut()[::2, ::2]  # 256 x 256
    clip = _clip(photo, frames=7)
    tool = AppearanceTool(size=224, frames=4)
    result = tool(clip)
    assert result.applicable and len(result.features) == CHANNELS and result.evidence == []
    assert result.extras["sampled_frames"] == [0, 2, 4, 6]
    import cv2

    net = load_mobilenetv2().features[:BLOCKS]
    x = np.stack([cv2.resize(clip.frames[t], (224, 224), interpolation=cv2.INTER_AREA) for t in (0, 2, 4, 6)])
    x = torch.from_numpy(x).permute(0, 3, 1, 2).float() / 255.0
    x = (x - torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)) / torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    with torch.no_grad():
        expected = net(x).mean(dim=(2, 3)).mean(dim=0).numpy()
    got = np.array([result.features[f"appearance.c{k:03d}"] for k in range(CHANNELS)])
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_a_photograph_and_a_flat_drawing_look_different(pretrained_weights: Path) -> None:
    """The same frame size, one a camera photograph, one flat colour shapes: their features lie far apart, while two
    shifts of the photograph lie close."""
    photo = skimage.data.astronaut()[::2, ::2]
    drawing = np.full_like(photo, 240)
    drawing[40:200, 60:180] = (200, 40, 40)
    drawing[120:240, 20:120] = (30, 90, 200)
    tool = AppearanceTool(frames=2)

    def vector(image: np.ndarray) -> np.ndarray:
        return np.array(list(tool(_clip(image, 3)).features.values()))

    a, b, c = vector(photo), vector(np.roll(photo, 9, axis=0)), vector(drawing)
    assert np.linalg.norm(a - b) < 0.5 * np.linalg.norm(a - c)
