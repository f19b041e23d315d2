"""Masks as COCO RLE through ``pycocotools.mask``; ``counts`` is stored as ``str`` so it survives JSON."""

from __future__ import annotations

import numpy as np
from pycocotools import mask as mask_utils

__all__ = ["encode_mask", "decode_rle", "rle_area", "rle_to_bbox", "mask_to_bbox"]


def encode_mask(mask: np.ndarray) -> dict:
    """Binary mask [H, W] (bool or 0/1) -> COCO RLE ``{"size": [H, W], "counts": str}``."""
    m = np.asfortranarray(np.asarray(mask, dtype=np.uint8))
    if m.ndim != 2:
        raise ValueError(f"encode_mask expects a 2-D mask [H, W], got shape {m.shape}")
    rle = mask_utils.encode(m)
    rle["counts"] = rle["counts"].decode("ascii")
    return {"size": [int(rle["size"][0]), int(rle["size"][1])], "counts": rle["counts"]}


def _as_pycoco(rle: dict) -> dict:
    counts = rle["counts"]
    if isinstance(counts, list):  # uncompressed RLE
        h, w = rle["size"]
        return mask_utils.frPyObjects(rle, h, w)
    return {"size": list(rle["size"]), "counts": counts.encode("ascii") if isinstance(counts, str) else counts}


def decode_rle(rle: dict) -> np.ndarray:
    """COCO RLE (compressed str/bytes or uncompressed list counts) -> bool mask [H, W]."""
    return mask_utils.decode(_as_pycoco(rle)).astype(bool)


def rle_area(rle: dict) -> int:
    """Number of foreground pixels of an RLE."""
    return int(mask_utils.area(_as_pycoco(rle)))


def rle_to_bbox(rle: dict) -> list[float]:
    """Tight XYWH box (COCO convention, pixels) of an RLE; [0, 0, 0, 0] when empty."""
    return [float(v) for v in mask_utils.toBbox(_as_pycoco(rle))]


def mask_to_bbox(mask: np.ndarray) -> list[float]:
    """Tight XYWH box of a binary mask: x0, y0 of the first pixel and width/height in whole pixels."""
    ys, xs = np.nonzero(mask)
    if len(xs) == 0:
        return [0.0, 0.0, 0.0, 0.0]
    x0, y0 = int(xs.min()), int(ys.min())
    return [float(x0), float(y0), float(xs.max() - x0 + 1), float(ys.max() - y0 + 1)]
