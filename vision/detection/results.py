"""The OOV detector's detections as results: the predictor's per-image results and the COCO detection results.

One conversion for :class:`~vision.detection.predictor.DetectorPredictor` and for
:class:`~vision.detection.lightning.OOVDetModule`'s validation, test and predict steps:

- :func:`label_detections`: one image's :meth:`OOVDetector.postprocess` output -> the predictor's result (boxes
  XYXY scaled to the image's pixels, names and COCO category ids of the vocabulary, :data:`UNKNOWN_NAME` /
  ``unknown_category_id`` for objects rejected as out of vocabulary);
- :func:`coco_results`: per-image results -> COCO detection results ``{image_id, category_id, bbox XYWH, score}``
  (with ``names``: also ``category_name``, the vocabulary's name, so that the results say what their ids mean);
- :func:`image_results`: a batch's detections at the model's input size -> ``(image_id, COCO results)`` per image in
  the pixels of the split's images, what the module's steps hand the evaluator and the results writer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from vision.detection.model import UNKNOWN_LABEL

__all__ = ["to_results", "UNKNOWN_CATEGORY_ID", "UNKNOWN_NAME", "coco_results", "image_results", "label_detections"]

#: COCO category id written for OOV ("unknown") detections.
UNKNOWN_CATEGORY_ID = 1000
UNKNOWN_NAME = "unknown"


def label_detections(detections: dict[str, torch.Tensor], vocabulary: Sequence[str], category_ids: Sequence[int],
                     unknown_category_id: int, scale: tuple[float, float] = (1.0, 1.0)) -> dict[str, Any]:
    """One image's :meth:`OOVDetector.postprocess` output (boxes XYXY in model-input pixels, labels indexing
    ``vocabulary`` or :data:`UNKNOWN_LABEL`) -> the predictor's result: ``{"boxes" float32 [n, 4] XYXY multiplied by
    ``scale`` (x, y), "scores" float32 [n], "label_ids" int64 [n] (-1 = unknown), "labels" list[str] (``"unknown"``
    for OOV), "category_ids" int64 [n] (``unknown_category_id`` for OOV)}``. The one conversion of the predictor and
    of :class:`~vision.detection.lightning.OOVDetModule`'s evaluation steps."""
    factors = torch.tensor([scale[0], scale[1], scale[0], scale[1]], device=detections["boxes"].device)
    label_ids = detections["labels"].cpu().numpy().astype(np.int64)
    return {
        "boxes": (detections["boxes"].float() * factors).cpu().numpy(),  # float32 also under bf16 autocast
        "scores": detections["scores"].float().cpu().numpy(),
        "label_ids": label_ids,
        "labels": [UNKNOWN_NAME if i == UNKNOWN_LABEL else vocabulary[i] for i in label_ids],
        "category_ids": np.asarray([unknown_category_id if i == UNKNOWN_LABEL else category_ids[i]
                                    for i in label_ids], np.int64),
    }


def coco_results(results: Sequence[dict[str, Any]], image_ids: Sequence[int],
                 names: bool = False) -> list[dict[str, Any]]:
    """Per-image results (:func:`label_detections`) -> COCO detection results ``[{image_id, category_id,
    bbox XYWH px (rounded to 1e-3), score (rounded to 1e-5)}]``, OOV detections under their unknown category id.
    With ``names`` each result also carries ``category_name``: its vocabulary name (:data:`UNKNOWN_NAME` for OOV),
    by which ``vision-evaluate`` scores it under the split's id of that name
    (:func:`vision.evaluation.tasks.detection.named_category_ids`); the ids of a vocabulary given at inference
    are its positions 1..K, which mean nothing to a split."""
    out = []
    for image_id, res in zip(image_ids, results):
        labels = res["labels"] if names else [None] * len(res["category_ids"])
        for box, score, cid, label in zip(res["boxes"], res["scores"], res["category_ids"], labels):
            x0, y0, x1, y1 = (float(v) for v in box)
            record = {"image_id": int(image_id), "category_id": int(cid)}
            if names:
                record["category_name"] = label
            record["bbox"] = [round(x0, 3), round(y0, 3), round(x1 - x0, 3), round(y1 - y0, 3)]
            record["score"] = round(float(score), 5)
            out.append(record)
    return out


def image_results(detections: Sequence[dict[str, torch.Tensor]], image_ids: Sequence[int],
                  input_sizes: Sequence[tuple[int, int]], images: Mapping[int, dict], vocabulary: Sequence[str],
                  category_ids: Sequence[int],
                  unknown_category_id: int = UNKNOWN_CATEGORY_ID) -> list[tuple[int, list[dict[str, Any]]]]:
    """``(image_id, COCO results)`` per image of a batch.

    Args:
        detections: :meth:`OOVDetector.postprocess` per image (boxes XYXY in model-input pixels).
        image_ids: the images' ids in the split.
        input_sizes: ``(height, width)`` of each image at the model's input.
        images: the split's image dicts by id (their ``width`` / ``height``: the pixels results are written in).
        vocabulary / category_ids: the names and COCO ids the labels index; OOV detections get
            ``unknown_category_id``.
    """
    pairs = []
    for image_id, (h, w), det in zip(image_ids, input_sizes, detections):
        image = images[int(image_id)]
        result = label_detections(det, vocabulary, category_ids, unknown_category_id,
                                  (float(image["width"]) / w, float(image["height"]) / h))
        pairs.append((int(image_id), coco_results([result], [int(image_id)])))
    return pairs

#: model outputs -> the task's results (the registry's fixed name, vision.tasks.PARTS)
to_results = image_results
