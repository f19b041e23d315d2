"""Appearance tool: what a clip's frames look like to a pretrained ImageNet network, as a learned detector's input.

Generated video carries the look of its image model (rendering of skin, hair, light and texture; painterly or
over-clean surfaces) that no single hand-made statistic names. Universal detectors of generated images read it off a
pretrained network's features with a linear probe; this tool gives the probe its input. It is not a statistic a
person can read: its channels carry no evidence of their own, and the report weighs the tool through the detector.

Features: MobileNetV2 1.0 (ImageNet, registry name ``mobilenetv2-imagenet``, :mod:`vision.weights.nets.mobilenet`)
read at its last inverted-residual block (``features[:18]``: 320 channels at stride 32, before the 1x1 expansion to
1280 that the embedding of :func:`~vision.weights.nets.mobilenet.embed_images` pools), averaged over the cells of
each frame and over ``frames`` frames spread over the clip (:func:`~vision.forensics.tools.base.sample_indices`),
each frame resized to ``size x size`` (area when shrinking, cubic when enlarging) and normalised with the ImageNet
mean and std (:func:`~vision.weights.nets.mobilenet.imagenet_batch`): ``c000`` .. ``c319``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vision.forensics.tools.base import Clip, ForensicTool, ToolResult, sample_indices

__all__ = ["AppearanceTool", "CHANNELS"]

#: MobileNetV2 1.0's channels after its last inverted-residual block
CHANNELS = 320
#: the blocks of ``features`` read (0 .. 17)
BLOCKS = 18


class AppearanceTool(ForensicTool):
    """Mean MobileNetV2 block-17 features of a few frames (see the module docstring).

    Args:
        size: the side each sampled frame is resized to (the network's ImageNet size by default).
        frames: how many frames are sampled over the clip.
        device: torch device of the network.
    """

    name = "appearance"
    feature_names = tuple(f"c{k:03d}" for k in range(CHANNELS))
    descriptions = {f"c{k:03d}": f"channel {k} of MobileNetV2's last block, averaged over cells and sampled frames"
                    for k in range(CHANNELS)}
    min_frames = 1
    version = 1

    def __init__(self, size: int = 224, frames: int = 4, device: str = "cpu") -> None:
        self.size, self.frames, self.device = int(size), int(frames), device
        self._net: torch.nn.Module | None = None

    def _network(self) -> torch.nn.Module:
        if self._net is None:
            from vision.weights.nets.mobilenet import load_mobilenetv2

            self._net = load_mobilenetv2(self.device).features[:BLOCKS]
        return self._net

    def measure(self, clip: Clip) -> tuple[dict[str, float], dict, dict[str, Any]]:
        import cv2

        from vision.weights.nets.mobilenet import imagenet_batch

        idx = sample_indices(clip.num_frames, self.frames)
        side = min(clip.height, clip.width)
        interpolation = cv2.INTER_AREA if side >= self.size else cv2.INTER_CUBIC
        x = imagenet_batch(np.stack([cv2.resize(np.ascontiguousarray(clip.frames[int(i)]), (self.size, self.size),
                                                interpolation=interpolation) for i in idx]))
        net = self._network()
        with torch.no_grad():
            pooled = net(x.to(next(net.parameters()).device)).float().mean(dim=(2, 3)).mean(dim=0).cpu().numpy()
        values = {f"c{k:03d}": float(v) for k, v in enumerate(pooled)}
        sampled = [int(i) for i in idx]
        return values, {name: (sampled, None) for name in self.feature_names}, {"sampled_frames": sampled}

    def __call__(self, clip: Clip, reference: dict[str, dict[str, float]] | None = None) -> ToolResult:
        """The features, without per-channel evidence (a channel alone says nothing a reader can weigh)."""
        result = super().__call__(clip, reference)
        result.evidence = []
        return result
