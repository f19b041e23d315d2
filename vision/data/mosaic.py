"""Mosaic: four detection samples tiled into one image (YOLOv4's augmentation), before the usual crop and resize.

A detector trained on few videos learns their framing (one large person filling every frame, objects always in the
same places); tiling four frames shows it objects at half their size, in every quadrant and beside the content of
other frames. :func:`mosaic` tiles the samples in a 2 x 2 grid, each resized to the first sample's size, so the
canvas is twice its height and width; the detection transform's random crop and resize then take a window of it
(:class:`vision.data.transforms.DetectionTransform`).

Samples are the detection dicts of :class:`vision.data.datasets.DetectionImageDataset`: ``image`` uint8
``[H, W, 3]``, ``boxes`` float32 ``[N, 4]`` XYXY px, ``masks`` bool ``[N, H, W]``, and per-instance
``category_ids`` / ``iscrowd``; the result has the first sample's ``image_id``.
"""

from __future__ import annotations

from typing import Any, Sequence

import cv2
import numpy as np

from vision.errors import InputError

__all__ = ["mosaic"]

#: per-instance fields concatenated in quadrant order
_INSTANCE_FIELDS = ("category_ids", "iscrowd")


def mosaic(samples: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Tile four samples: quadrant ``q`` (0 top-left, 1 top-right, 2 bottom-left, 3 bottom-right) holds
    ``samples[q]`` resized (bilinear; masks nearest) to the first sample's ``H x W``; boxes are scaled and shifted
    with their image. Returns a sample of ``2H x 2W``."""
    if len(samples) != 4:
        raise InputError(f"a mosaic tiles 4 samples, got {len(samples)}")
    height, width = samples[0]["image"].shape[:2]
    canvas = np.zeros((2 * height, 2 * width, 3), np.uint8)
    boxes, masks, fields = [], [], {key: [] for key in _INSTANCE_FIELDS}
    for quadrant, sample in enumerate(samples):
        y0, x0 = (quadrant // 2) * height, (quadrant % 2) * width
        image = sample["image"]
        h, w = image.shape[:2]
        canvas[y0:y0 + height, x0:x0 + width] = (image if (h, w) == (height, width) else
                                                 cv2.resize(image, (width, height), interpolation=cv2.INTER_LINEAR))
        scale = np.array([width / w, height / h, width / w, height / h], np.float32)
        boxes.append(np.asarray(sample["boxes"], np.float32).reshape(-1, 4) * scale
                     + np.array([x0, y0, x0, y0], np.float32))
        tile = np.zeros((len(boxes[-1]), 2 * height, 2 * width), bool)
        for i, mask in enumerate(np.asarray(sample["masks"], bool)):
            if mask.any():
                tile[i, y0:y0 + height, x0:x0 + width] = cv2.resize(mask.astype(np.uint8), (width, height),
                                                                    interpolation=cv2.INTER_NEAREST) > 0
        masks.append(tile)
        for key in _INSTANCE_FIELDS:
            fields[key].append(np.asarray(sample[key]).reshape(-1))
    out = {"image": canvas, "boxes": np.concatenate(boxes).astype(np.float32), "masks": np.concatenate(masks),
           "image_id": samples[0]["image_id"]}
    out.update({key: np.concatenate(values) for key, values in fields.items()})
    return out
