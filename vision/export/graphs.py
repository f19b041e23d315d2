"""The graphs that export to ONNX: plain tensors in, a tuple of tensors out, no Python structures or data-dependent
branches inside.

Each :class:`Graph` is a wrapper module over a loaded model plus what its export needs: example inputs, input and
output names, the axes that stay dynamic, and the tolerance its onnxruntime check is held to.

- ``detector`` (:class:`DetectorGraph`): ``images [B, 3, s, s]`` in [0, 1] and ``text [K, D]`` (unit rows, the
  vocabulary's text embeddings) -> per location ``boxes [B, N, 4]`` (XYXY px), ``scores [B, N]``, ``labels [B, N]``
  (int64: the vocabulary row, -1 where the OOV column wins: the OOV decision), ``embeddings [B, N, D]`` (unit
  region embeddings). Dynamic: ``B``, ``K``. Thresholding and NMS (:meth:`OOVDetector.postprocess`) stay outside
  the graph: their output sizes depend on the data.
- ``geometry`` (:class:`GeometryGraph`): ``views [B, S, 3, s, s]`` -> ``depth [B, S, s, s, 1]``, ``depth_conf``,
  ``world_points [B, S, s, s, 3]``, ``world_points_conf``, ``extrinsics [B, S, 3, 4]``, ``intrinsics [B, S, 3, 3]``
  (the heads the backbone has). Dynamic: ``B``, ``S``.
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

The geometry backbone's input range check reads the data, so it runs in eager mode only
(:func:`vision.geometry.model.validate_images`); callers of an exported graph pass views in [0, 1].
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch
from torch import nn

from vision.errors import InputError
from vision.tasks import TASKS, get_task

__all__ = ["Graph", "DetectorGraph", "GeometryGraph", "TrackerEncoderGraph", "MaskDecoderGraph", "graphs_of",
           "detection_graphs", "geometry_graphs", "tracking_graphs", "example_views"]

@dataclasses.dataclass
class Graph:
    """A module to export and how.

    Args:
        name: the file stem (``<name>.onnx``).
        module: the wrapper (eval mode); ``module(*inputs)`` returns a tuple, one tensor per output name.
        inputs: example inputs, used to trace the export.
        input_names / output_names: the ONNX graph's.
        dynamic: input name -> {axis: dimension name} for the axes that stay dynamic.
        atol / rtol: onnxruntime's float outputs must lie within ``atol + rtol * |PyTorch's|`` of PyTorch's
            (float32 rounding grows with the value: an untrained camera's focal length is hundreds of pixels).
        exact: outputs that must match exactly (integer labels).
    """

    name: str
    module: nn.Module
    inputs: tuple[torch.Tensor, ...]
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    dynamic: dict[str, dict[int, str]]
    atol: float = 1e-4
    rtol: float = 1e-4
    exact: tuple[str, ...] = ()


class DetectorGraph(nn.Module):
    """The OOV detector as one graph (see the module docstring); ``model``: a loaded
    :class:`~vision.detection.model.OOVDetector`."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor, text: torch.Tensor) -> tuple[torch.Tensor, ...]:
        from vision.detection.model import UNKNOWN_LABEL, location_scores

        outputs = self.model(images)
        k = text.shape[0]
        scores, index = location_scores(self.model.classify(outputs["embeddings"], text), outputs["objectness"], k)
        labels = torch.where(index >= k, torch.full_like(index, UNKNOWN_LABEL), index)
        return outputs["boxes"], scores, labels, outputs["embeddings"]


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


def example_views(size: int, views: int, seed: int = 0) -> torch.Tensor:
    """``[views, 3, size, size]`` float views in [0, 1] of one scene of the synthetic renderer
    (:func:`vision.synthetic.scenes.generate_scene`): real images to trace and check an export with."""
    from vision.synthetic.scenes import generate_scene

    scene = generate_scene(seed, views=views, size=size, threads=1)
    return torch.from_numpy(np.ascontiguousarray(scene.rgb)).permute(0, 3, 1, 2).float() / 255.0


def graphs_of(task: str, model: nn.Module, config: Any, folder: Any = None, seed: int = 0) -> list[Graph]:
    """The graphs of a loaded ``model`` of ``task``: the registered task's ``export_graphs`` (:mod:`vision.tasks`),
    with example inputs from the synthetic renderer at the model's input size (two views: a dynamic axis traced at 1
    would be fixed to 1). ``folder``: the model folder or checkpoint the model came from (the detector's example
    text is its training vocabulary's embeddings when it records one), or None.

    Raises:
        InputError: the task exports nothing (forensics), or a tracker without the decoder's graph inputs.
    """
    entry = get_task(task)
    if entry.export_graphs is None:
        exporting = ", ".join(t.name for t in TASKS if t.export_graphs is not None)
        raise InputError(f"the {task} task has no ONNX export (exports: {exporting})")
    return entry.resolve("export_graphs")(model.eval(), config, folder, seed)


def detection_graphs(model: nn.Module, config: Any, folder: Any = None, seed: int = 0) -> list[Graph]:
    """The detector's graph; its example ``text [K, D]`` is the training vocabulary's embeddings when ``folder``
    records one, else ``K = 3`` random unit rows."""
    text = None
    if folder is not None:
        from vision.detection.task import load
        from vision.detection.vocabulary import encode_vocabulary

        _, _, vocabulary = load(folder, with_vocabulary=True)
        if vocabulary is not None:  # the training vocabulary's text embeddings: the detector's real text input
            text = encode_vocabulary(vocabulary.class_names, config.prompt_template)
    if text is None:
        generator = torch.Generator().manual_seed(seed)
        text = nn.functional.normalize(torch.randn(3, config.embed_dim, generator=generator), dim=-1)
    images = example_views(int(config.image_size), 2, seed)
    return [Graph("detector", DetectorGraph(model), (images, text.float()), ("images", "text"),
                  ("boxes", "scores", "labels", "embeddings"), {"images": {0: "batch"}, "text": {0: "classes"}},
                  exact=("labels",))]


def geometry_graphs(model: nn.Module, config: Any, folder: Any = None, seed: int = 0) -> list[Graph]:
    """The geometry backbone's graph."""
    graph = GeometryGraph(model.backbone)
    views = example_views(int(config.image_size), 2, seed)[None].expand(2, -1, -1, -1, -1).contiguous()
    return [Graph("geometry", graph, (views,), ("views",), graph.output_names, {"views": {0: "batch", 1: "views"}})]


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
