"""G2TAM's ONNX graphs (the registry's ``export_graphs`` of the tracking task; how graphs export:
:mod:`vision.export.graphs`).

- ``tracker_encoder`` (:class:`TrackerEncoderGraph`): G2TAM's per-window image encoder,
  :meth:`G2TAM.tracking_encoding` of ``views [1, S, 3, s, s]`` -> ``feats``, ``hires``, ``world_points``,
  ``extrinsics``, ``intrinsics``, ``depth``. Dynamic: ``S``.
- ``mask_decoder`` (:class:`MaskDecoderGraph`): the tracker's :class:`~vision.tracking.decoder.MaskDecoder` on
  ``L`` (view, object) pairs -> ``masks [L, M, 4gh, 4gw]``, ``iou [L, M]``, ``presence [L]``. Dynamic: ``L`` and
  the prompt tokens ``T``; with the multiplexed decoder (:class:`~vision.tracking.multiplex.MultiplexDecoder`) one
  window's views ``[V, ...]``, the objects' maps ``[V, N, ...]`` and prompt tokens ``[1, N, T, D]`` -> ``masks [V,
  N, M, 4gh, 4gw]``, ``iou [V, N, M]``, ``presence [V, N]``, dynamic ``V``, ``N``, ``T``. The prompt and spatial
  encoders that build its inputs (clicks, boxes, text, 3D memory: Python structures of varying size per object)
  stay in PyTorch.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from vision.errors import InputError
from vision.export.graphs import Graph, example_views

__all__ = ["TrackerEncoderGraph", "MaskDecoderGraph", "tracking_graphs", "graphs"]


class TrackerEncoderGraph(nn.Module):
    """:meth:`G2TAM.tracking_encoding` as one graph: ``views [1, S, 3, s, s]`` -> its tensors."""

    output_names = ("feats", "hires", "world_points", "extrinsics", "intrinsics", "depth")

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, views: torch.Tensor) -> tuple[torch.Tensor, ...]:
        encoded = self.model.tracking_encoding(views)
        return tuple(encoded[name] for name in self.output_names)


class MaskDecoderGraph(nn.Module):
    """The tracker's :class:`~vision.tracking.decoder.MaskDecoder` as one graph (with the hi-res maps input when
    the decoder fuses them)."""

    def __init__(self, decoder: nn.Module) -> None:
        super().__init__()
        self.decoder = decoder

    def forward(self, image: torch.Tensor, image_pe: torch.Tensor, sparse: torch.Tensor, sparse_pad: torch.Tensor,
                hires: torch.Tensor, maps: torch.Tensor | None = None) -> tuple[torch.Tensor, ...]:
        out = self.decoder(image, image_pe, sparse, sparse_pad, hires, maps)
        return out["masks"], out["iou"], out["presence"]


def tracking_graphs(model: nn.Module, config: Any, folder: Any = None, seed: int = 0) -> list[Graph]:
    """G2TAM's per-window encoder and its mask decoder (the memory-bank control exports nothing)."""
    if config.architecture != "g2tam":
        raise InputError(f"the {config.architecture!r} tracker has no ONNX export; only G2TAM's encoder and mask "
                         "decoder export")
    views = example_views(int(config.image_size), 2, seed)[None]
    encoder = TrackerEncoderGraph(model)
    graphs = [Graph("tracker_encoder", encoder, (views,), ("views",), encoder.output_names, {"views": {1: "views"}})]
    graphs.append(_decoder_graph(model, views))
    return graphs


def _decoder_graph(model: nn.Module, views: torch.Tensor) -> Graph:
    """The mask decoder's graph, its example inputs those :meth:`G2TAM.decode` builds for a click on each view's
    centre (so they are the decoder's real inputs)."""
    from vision.tracking.multiplex import MultiplexDecoder
    from vision.tracking.prompts import BOX_BR, BOX_TL, POSITIVE, Prompts

    captured: dict[str, tuple] = {}

    def hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
        captured["args"] = tuple(a for a in args if a is not None)

    s = float(views.shape[-1])
    prompts = Prompts.empty(1, 2, (views.shape[-2], views.shape[-1]), num_points=2, text_dim=model.text_dim)
    prompts.valid[:] = True
    prompts.view[:] = 0
    prompts.points[0, 0, 0] = torch.tensor([s / 2, s / 2])  # object 1: a click on the centre
    prompts.labels[0, 0, 0] = POSITIVE
    prompts.points[0, 1] = torch.tensor([[s / 5, s / 5], [s * 3 / 5, s * 3 / 5]])  # object 2: a box
    prompts.labels[0, 1] = torch.tensor([BOX_TL, BOX_BR])
    handle = model.decoder.register_forward_pre_hook(hook, with_kwargs=True)
    try:
        with torch.no_grad():
            model.decode(model.tracking_encoding(views), prompts)
    finally:
        handle.remove()
    args = captured["args"]
    names = ("image", "image_pe", "sparse", "sparse_pad", "hires", "maps")[:len(args)]
    if isinstance(model.decoder, MultiplexDecoder):  # one window: [V, ...] views, [V, N, ...] maps, [1, N, T] tokens
        dynamic = {name: {0: "views"} for name in names}
        for name in ("sparse", "sparse_pad"):
            dynamic[name] = {1: "objects", 2: "tokens"}
        dynamic["maps"] = {0: "views", 1: "objects"}
    else:  # one row per (view, object) pair
        dynamic = {name: {0: "pairs"} for name in names}
        dynamic["sparse"] = {0: "pairs", 1: "tokens"}
        dynamic["sparse_pad"] = {0: "pairs", 1: "tokens"}
    return Graph("mask_decoder", MaskDecoderGraph(model.decoder), args, names, ("masks", "iou", "presence"), dynamic)


#: the registry's fixed name (vision.tasks.PARTS)
graphs = tracking_graphs
