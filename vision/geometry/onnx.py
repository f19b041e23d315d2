"""The geometry backbone's ONNX graph (the registry's ``export_graphs`` of the geometry task; how graphs export:
:mod:`vision.export.graphs`).

- ``geometry`` (:class:`GeometryGraph`): ``views [B, S, 3, s, s]`` -> ``depth [B, S, s, s, 1]``, ``depth_conf``,
  ``world_points [B, S, s, s, 3]``, ``world_points_conf``, ``extrinsics [B, S, 3, 4]``, ``intrinsics [B, S, 3, 3]``
  (the heads the backbone has). Dynamic: ``B``, ``S``.

The geometry backbone's input range check reads the data, so it runs in eager mode only
(:func:`vision.geometry.model.validate_images`); callers of an exported graph pass views in [0, 1].
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from vision.export.graphs import Graph, example_views

__all__ = ["GeometryGraph", "geometry_graphs", "graphs"]


class GeometryGraph(nn.Module):
    """A :class:`~vision.geometry.model.GeometryBackbone`'s depth, points and cameras as one graph."""

    def __init__(self, backbone: nn.Module) -> None:
        super().__init__()
        self.backbone = backbone
        self.heads = tuple(h for h in backbone.heads if h in ("camera", "depth", "points"))
        names = {"depth": ("depth", "depth_conf"), "points": ("world_points", "world_points_conf"),
                 "camera": ("extrinsics", "intrinsics")}
        self.output_names = tuple(n for h in ("depth", "points", "camera") if h in self.heads for n in names[h])

    def forward(self, views: torch.Tensor) -> tuple[torch.Tensor, ...]:
        out = self.backbone(views, heads=self.heads)
        return tuple(out[name] for name in self.output_names)


def geometry_graphs(model: nn.Module, config: Any, folder: Any = None, seed: int = 0) -> list[Graph]:
    """The geometry backbone's graph."""
    graph = GeometryGraph(model.backbone)
    views = example_views(int(config.image_size), 2, seed)[None].expand(2, -1, -1, -1, -1).contiguous()
    return [Graph("geometry", graph, (views,), ("views",), graph.output_names, {"views": {0: "batch", 1: "views"}})]


#: the registry's fixed name (vision.tasks.PARTS)
graphs = geometry_graphs
