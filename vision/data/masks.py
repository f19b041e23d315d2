"""Masks as COCO RLE through ``pycocotools.mask``; ``counts`` is stored as ``str`` so it survives JSON."""

from __future__ import annotations

import numpy as np
from pycocotools import mask as mask_utils

__all__ = ["encode_mask", "decode_rle", "rle_area", "mask_to_bbox"]


def _fortran_uint8(mask: np.ndarray, caller: str) -> np.ndarray:
    """``mask`` as the Fortran-ordered uint8 [H, W] array pycocotools encodes; refuses other shapes."""
    m = np.asfortranarray(np.asarray(mask, dtype=np.uint8))
    if m.ndim != 2:
        raise ValueError(f"{caller} expects a 2-D mask [H, W], got shape {m.shape}")
    return m


def encode_mask(mask: np.ndarray) -> dict:
    """Binary mask [H, W] (bool or 0/1) -> COCO RLE ``{"size": [H, W], "counts": str}``."""
    rle = mask_utils.encode(_fortran_uint8(mask, "encode_mask"))
    return {"size": [int(rle["size"][0]), int(rle["size"][1])], "counts": rle["counts"].decode("ascii")}


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


def mask_to_bbox(mask: np.ndarray) -> list[float]:
    """Tight COCO box ``[x, y, w, h]`` (floats, pixels) of a binary mask [H, W], computed by
    ``pycocotools.mask.toBbox``: x, y of the top-left foreground pixel, w and h counting whole pixels (a single
    pixel at (3, 5) gives ``[3, 5, 1, 1]``). An empty mask gives ``[0.0, 0.0, 0.0, 0.0]``."""
    rle = mask_utils.encode(_fortran_uint8(mask, "mask_to_bbox"))
    return [float(v) for v in mask_utils.toBbox(rle)]
