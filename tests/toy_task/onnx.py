"""The toy model's ONNX graph (the registry's ``export_graphs`` of the toy task, :data:`vision.tasks.PARTS`):
``images [B, 3, H, W]`` float in [0, 1] -> ``brightness [B, H, W]``; dynamic ``B``, ``H``, ``W`` (the model is
per pixel)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from vision.export.graphs import Graph

__all__ = ["ToyGraph", "graphs"]


class ToyGraph(nn.Module):
    """The toy model with the graph's output convention: a tuple with one tensor, ``brightness [B, H, W]``."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor]:
        return (self.model(images),)


def graphs(model: nn.Module, config: Any, folder: Any = None, seed: int = 0) -> list[Graph]:
    """The toy graph; its example is two random 12 x 16 images."""
    images = torch.rand(2, 3, 12, 16, generator=torch.Generator().manual_seed(seed))
    return [Graph("toy", ToyGraph(model), (images,), ("images",), ("brightness",),
                  {"images": {0: "batch", 2: "height", 3: "width"}})]
