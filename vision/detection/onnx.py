"""The OOV detector's ONNX graph (the registry's ``export_graphs`` of the detection task; how graphs export:
:mod:`vision.export.graphs`).

- ``detector`` (:class:`DetectorGraph`): ``images [B, 3, s, s]`` in [0, 1] and ``text [K, D]`` (unit rows, the
  vocabulary's text embeddings) -> per location ``boxes [B, N, 4]`` (XYXY px), ``scores [B, N]``, ``labels [B, N]``
  (int64: the vocabulary row, -1 where the OOV column wins: the OOV decision), ``embeddings [B, N, D]`` (unit
  region embeddings). Dynamic: ``B``, ``K``. Thresholding and NMS (:meth:`OOVDetector.postprocess`) stay outside
  the graph: their output sizes depend on the data.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from vision.export.graphs import Graph, example_views

__all__ = ["DetectorGraph", "detection_graphs", "graphs"]


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
        scores, index = location_scores(self.model.classify(outputs["embeddings"], text), outputs["objectness"], k,
                                        self.model.score_exponent)
        labels = torch.where(index >= k, torch.full_like(index, UNKNOWN_LABEL), index)
        return outputs["boxes"], scores, labels, outputs["embeddings"]


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


#: the registry's fixed name (vision.tasks.PARTS)
graphs = detection_graphs
