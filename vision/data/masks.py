"""Masks as COCO RLE through ``pycocotools.mask``; ``counts`` is stored as ``str`` so it survives JSON."""

from __future__ import annotations

import numpy as np
from pycocotools import mask as mask_utils

__all__ = ["encode_mask", "decode_rle", "rle_area", "rle_areas", "rle_intersections", "mask_to_bbox"]


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


#: the most RLEs one ``pycocotools.mask.area`` call takes: it sizes a ``uint8`` array by the count (numpy >= 2 refuses
#: 256 and more), so longer lists are measured in chunks of this many
_AREA_CHUNK = 255


def rle_areas(rles: list[dict]) -> np.ndarray:
    """Foreground pixel counts ``int64 [N]`` of pycocotools-ready RLEs (compressed counts, as ``area`` reads them),
    in chunks of :data:`_AREA_CHUNK` so that any number of masks is measured."""
    chunks = [np.asarray(mask_utils.area(rles[i:i + _AREA_CHUNK]), np.int64).reshape(-1)
              for i in range(0, len(rles), _AREA_CHUNK)]
    return np.concatenate(chunks) if chunks else np.zeros(0, np.int64)


def rle_intersections(a: list[dict], b: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pixel counts of the RLEs ``a`` and ``b`` (all of one size; compressed or uncompressed counts) and the pixel
    count of each pairwise intersection: ``(area_a [A], area_b [B], intersection [A, B])``, int64.

    Computed on the run-length encodings, never decoding a mask: pycocotools' ``area`` and ``iou`` (``rleIou``
    counts the intersection ``i`` and union ``u`` of two RLEs exactly and returns ``i / u``), the intersection
    recovered as ``i = iou (area_a + area_b) / (1 + iou)`` rounded to the nearest integer (exact: the relative
    error of the division is far below ``1 / (area_a + area_b)`` for any mask of at most 2**28 pixels)."""
    pa, pb = [_as_pycoco_fast(r) for r in a], [_as_pycoco_fast(r) for r in b]
    area_a, area_b = rle_areas(pa), rle_areas(pb)
    if not pa or not pb:
        return area_a, area_b, np.zeros((len(pa), len(pb)), np.int64)
    iou = np.asarray(mask_utils.iou(pa, pb, [0] * len(pb)), float).reshape(len(pa), len(pb))
    total = (area_a[:, None] + area_b[None, :]).astype(float)
    return area_a, area_b, np.rint(iou * total / (1.0 + iou)).astype(np.int64)


def _as_pycoco_fast(rle: dict) -> dict:
    """``rle`` as pycocotools' ``area`` and ``iou`` read it: compressed counts (``str`` or ``bytes``) as they are,
    uncompressed (list) counts compressed first."""
    return _as_pycoco(rle) if isinstance(rle["counts"], list) else rle


def mask_to_bbox(mask: np.ndarray) -> list[float]:
    """Tight COCO box ``[x, y, w, h]`` (floats, pixels) of a binary mask [H, W], computed by
    ``pycocotools.mask.toBbox``: x, y of the top-left foreground pixel, w and h counting whole pixels (a single
    pixel at (3, 5) gives ``[3, 5, 1, 1]``). An empty mask gives ``[0.0, 0.0, 0.0, 0.0]``."""
    rle = mask_utils.encode(_fortran_uint8(mask, "mask_to_bbox"))
    return [float(v) for v in mask_utils.toBbox(rle)]
