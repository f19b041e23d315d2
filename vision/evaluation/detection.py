"""COCO detection metrics (bbox and segm AP/AR) through the faster-coco-eval backend.

Ground truth is a COCO-format split dict (ours carries extra keys such as ``videos``, ``tracks`` or ``camera``;
they are ignored). Results follow COCO results files: ``[{image_id, category_id, bbox, score}]`` with ``bbox`` in
XYWH pixels, plus ``segmentation`` (COCO RLE) for mask results. Every figure is on the 0-1 scale; as in
pycocotools, a figure is ``-1.0`` where it is undefined (no ground truth in that area range / for those categories).

The twelve summary statistics are pycocotools' ``COCOeval.summarize`` (read from faster-coco-eval's accumulated
precision and recall, which equal pycocotools'), under pycocotools' names: ``AP`` (IoU 0.50:0.95), ``AP50``,
``AP75``, ``APs``, ``APm``, ``APl``, ``AR1``, ``AR10``, ``AR100``, ``ARs``, ``ARm``, ``ARl``. With other
``max_dets`` the rules stay pycocotools': ``AP`` is at 100 detections per image (``-1.0`` when 100 is not among
``max_dets``); ``AP50`` to ``APl`` and ``ARs`` to ``ARl`` are at ``max_dets[2]``; the three ARs are named by their
limits (``max_dets=(1, 10, 300)`` gives ``AR1, AR10, AR300``).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable
from typing import Any

import numpy as np
from faster_coco_eval import COCO, COCOeval_faster
from faster_coco_eval.core import mask as mask_api

from vision.data.masks import decode_rle, encode_mask
from vision.errors import DataError

__all__ = ["COCO_STAT_KEYS", "stat_keys", "coco_ground_truth", "coco_ap", "class_agnostic_ap"]

#: The twelve COCO summary statistics at the default max_dets (1, 10, 100), in COCOeval.stats order.
COCO_STAT_KEYS: tuple[str, ...] = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm",
                                   "ARl")

_LOG = logging.getLogger(__name__)


def _require(obj: Any, key: str, file: str | None, field: str) -> Any:
    if not isinstance(obj, dict):
        raise DataError("expected an object", file=file, field=field, value=obj)
    if key not in obj:
        raise DataError(f"missing key {key!r}", file=file, field=field)
    return obj[key]


def _as_int(value: Any, file: str | None, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise DataError("expected an integer", file=file, field=field, value=value)
    return int(value)


def coco_ground_truth(split: dict, *, file: str | None = None, need_segmentation: bool = False) -> dict:
    """Strip a split dict to what COCOeval needs and return a fresh dict (the input is not modified).

    Keeps ``images`` (id, width, height), ``annotations`` (image_id, category_id, bbox XYWH, area, iscrowd and,
    when present, segmentation) and ``categories`` (id, name). Annotation ids are renumbered 1..N because COCOeval
    uses id 0 as its "unmatched" marker. ``area`` falls back to the mask area (or the box area) when absent.

    Args:
        split: the COCO-format ground truth (``info`` optional, extra keys ignored).
        file: the split's path, used in error messages.
        need_segmentation: raise a :class:`DataError` when an annotation has no ``segmentation``.
    """
    from vision.data.masks import rle_area  # local: only needed for area fallback

    if not isinstance(split, dict):
        raise DataError("a split must be a JSON object", file=file, value=type(split).__name__)
    for key in ("images", "annotations", "categories"):
        if not isinstance(split.get(key), list):
            raise DataError(f"missing or non-list {key!r}", file=file, field=key, value=split.get(key))
    images = []
    for i, img in enumerate(split["images"]):
        field = f"images[{i}]"
        images.append({
            "id": _as_int(_require(img, "id", file, field), file, f"{field}.id"),
            "width": _as_int(_require(img, "width", file, field), file, f"{field}.width"),
            "height": _as_int(_require(img, "height", file, field), file, f"{field}.height"),
        })
    categories = []
    for i, cat in enumerate(split["categories"]):
        field = f"categories[{i}]"
        cid = _as_int(_require(cat, "id", file, field), file, f"{field}.id")
        categories.append({"id": cid, "name": str(cat.get("name", cid))})
    annotations = []
    for i, ann in enumerate(split["annotations"]):
        field = f"annotations[{i}]"
        bbox = _require(ann, "bbox", file, field)
        if not (isinstance(bbox, (list, tuple)) and len(bbox) == 4):
            raise DataError("bbox must be 4 numbers [x, y, w, h]", file=file, field=f"{field}.bbox", value=bbox)
        out = {
            "id": i + 1,
            "image_id": _as_int(_require(ann, "image_id", file, field), file, f"{field}.image_id"),
            "category_id": _as_int(_require(ann, "category_id", file, field), file, f"{field}.category_id"),
            "bbox": [float(v) for v in bbox],
            "iscrowd": int(ann.get("iscrowd", 0)),
        }
        seg = ann.get("segmentation")
        if seg is not None and seg != []:
            out["segmentation"] = _copy_segmentation(seg)
        elif need_segmentation:
            raise DataError("segm evaluation needs a segmentation on every ground-truth annotation",
                            file=file, field=f"{field}.segmentation")
        if "area" in ann:
            out["area"] = float(ann["area"])
        elif isinstance(seg, dict):
            out["area"] = float(rle_area(seg))
        else:
            out["area"] = float(out["bbox"][2] * out["bbox"][3])
        annotations.append(out)
    return {"images": images, "annotations": annotations, "categories": categories}


def _copy_segmentation(seg: Any) -> Any:
    """A copy of a COCO segmentation that shares nothing mutable with it: an RLE dict (``size`` and ``counts``
    lists copied; a counts string is immutable) or a list of polygons (each list copied); anything else deep-copied
    (it has been validated before, so that is rare)."""
    if isinstance(seg, dict) and all(isinstance(v, (list, str, bytes)) for v in seg.values()):
        return {k: list(v) if isinstance(v, list) else v for k, v in seg.items()}
    if isinstance(seg, list) and all(isinstance(poly, list) for poly in seg):
        return [list(poly) for poly in seg]
    return copy.deepcopy(seg)


def _results_for(results: Iterable[dict], iou_type: str) -> list[dict]:
    """Fresh minimal result dicts. For segm the bbox is dropped so that detection areas come from the masks
    (as detectron2 does); pycocotools would otherwise use the box area for the area ranges."""
    out = []
    for r in results:
        item = {"image_id": int(r["image_id"]), "category_id": int(r["category_id"]), "score": float(r["score"])}
        if iou_type == "bbox":
            item["bbox"] = [float(v) for v in r["bbox"]]
        else:
            seg = r["segmentation"]
            if isinstance(seg["counts"], list):  # uncompressed RLE -> compressed (what loadRes accepts)
                seg = encode_mask(decode_rle(seg))
            item["segmentation"] = {"size": [int(seg["size"][0]), int(seg["size"][1])], "counts": seg["counts"]}
        out.append(item)
    return out


def _load_mask_results(coco_gt: COCO, results: list[dict]) -> COCO:
    """``coco_gt.loadRes(results)`` for mask results without boxes (:func:`_results_for` ``"segm"``): each
    detection gets ``area`` and ``bbox`` from its mask, ``id`` (1-based, in order) and ``iscrowd`` 0, as loadRes
    gives them, but from one batched ``area`` and one ``toBbox`` call instead of two calls per detection (the same
    C functions, so the same values)."""
    if not results:
        return coco_gt.loadRes(results)
    masks = [r["segmentation"] for r in results]
    areas, boxes = mask_api.area(masks), mask_api.toBbox(masks)
    for i, r in enumerate(results):
        r.update(area=areas[i], bbox=boxes[i], id=i + 1, iscrowd=0)
    return COCO({"info": copy.deepcopy(coco_gt.dataset.get("info", {})), "images": list(coco_gt.dataset["images"]),
                 "categories": copy.deepcopy(coco_gt.dataset["categories"]), "annotations": results},
                print_function=coco_gt.print_function)


def stat_keys(max_dets: tuple[int, int, int] = (1, 10, 100)) -> tuple[str, ...]:
    """The twelve summary names for ``max_dets`` (the ARs named by their limits)."""
    return ("AP", "AP50", "AP75", "APs", "APm", "APl", *(f"AR{m}" for m in max_dets), "ARs", "ARm", "ARl")


def _summary(evaluator: Any, max_dets: tuple[int, int, int]) -> list[float]:
    """The twelve ``COCOeval.summarize`` figures, computed exactly as pycocotools does from ``evaluator.eval``:
    the mean of the entries > -1 of precision [T, R, K, A, M] or recall [T, K, A, M], or -1 if there are none."""
    params = evaluator.params
    precision = np.asarray(evaluator.eval["precision"])
    recall = np.asarray(evaluator.eval["recall"])

    def mean(ap: bool, iou: float | None = None, area: str = "all", limit: int = 100) -> float:
        values = precision if ap else recall
        if iou is not None:
            values = values[np.flatnonzero(np.isclose(np.asarray(params.iouThrs), iou))]
        a = [i for i, label in enumerate(params.areaRngLbl) if label == area]
        m = [i for i, d in enumerate(params.maxDets) if d == limit]
        values = values[..., a, :][..., m]
        values = values[values > -1]
        return float(values.mean()) if values.size else -1.0

    last = max_dets[2]
    return [mean(True), mean(True, 0.5, limit=last), mean(True, 0.75, limit=last),
            mean(True, area="small", limit=last), mean(True, area="medium", limit=last),
            mean(True, area="large", limit=last),
            mean(False, limit=max_dets[0]), mean(False, limit=max_dets[1]), mean(False, limit=last),
            mean(False, area="small", limit=last), mean(False, area="medium", limit=last),
            mean(False, area="large", limit=last)]


def coco_ap(gt: dict, results: list[dict], iou_type: str = "bbox", *,
            category_ids: Iterable[int] | None = None, max_dets: tuple[int, int, int] = (1, 10, 100),
            file: str | None = None) -> dict:
    """COCO AP/AR of ``results`` against ``gt``.

    Args:
        gt: a COCO dict as returned by :func:`coco_ground_truth` (or any split dict; it is stripped again).
        results: ``[{image_id, category_id, bbox (XYWH), score}]`` (+ ``segmentation`` RLE for ``"segm"``);
            assumed already validated (see :mod:`vision.evaluation.results`).
        iou_type: ``"bbox"`` or ``"segm"``.
        category_ids: restrict the evaluation to these categories (IV mAP over a vocabulary).
        max_dets: three increasing limits of detections per image (see the module docstring for which figure
            uses which, as in pycocotools).
        file: the split's path, named by errors in ``gt``.

    Returns:
        The twelve figures keyed by :func:`stat_keys` (:data:`COCO_STAT_KEYS` for the default ``max_dets``), floats
        in [0, 1] (``-1.0`` where COCO leaves a figure undefined).
    """
    if iou_type not in ("bbox", "segm"):
        raise ValueError(f"iou_type must be 'bbox' or 'segm', got {iou_type!r}")
    max_dets = tuple(int(m) for m in max_dets)
    if len(max_dets) != 3 or not 0 < max_dets[0] < max_dets[1] < max_dets[2]:
        raise ValueError(f"max_dets must be three increasing positive limits, got {max_dets!r}")
    keys = stat_keys(max_dets)
    gt_dict = coco_ground_truth(gt, file=file, need_segmentation=iou_type == "segm")
    coco_gt = COCO(gt_dict)
    dets = _results_for(results, iou_type)
    coco_dt = _load_mask_results(coco_gt, dets) if iou_type == "segm" else coco_gt.loadRes(dets)
    # one thread for the mask IoUs: faster-coco-eval's thread pool (8 workers by default) is slower than one thread,
    # as its IoU calls hold the GIL (measured by benchmarks/bench_evaluate.py --iou-workers)
    evaluator = COCOeval_faster(coco_gt, coco_dt, iou_type, print_function=_LOG.debug, rle_iou_max_workers=1)
    evaluator.params.maxDets = list(max_dets)
    if category_ids is not None:
        known = {c["id"] for c in gt_dict["categories"]}
        wanted = sorted({int(c) for c in category_ids})
        unknown = [c for c in wanted if c not in known]
        if unknown:
            raise DataError("category ids are not in the split's categories", field="category_ids", value=unknown)
        if not wanted:
            raise DataError("category_ids is empty; give at least one category id", field="category_ids")
        evaluator.params.catIds = wanted
    if not gt_dict["images"] or not gt_dict["categories"]:
        return {key: -1.0 for key in keys}
    evaluator.evaluate()
    evaluator.accumulate()
    return dict(zip(keys, _summary(evaluator, max_dets)))


def class_agnostic_ap(gt: dict, results: list[dict], *, gt_category_ids: Iterable[int] | None = None,
                      result_category_ids: Iterable[int] | None = None, ignore_other: bool = False,
                      max_dets: tuple[int, int, int] = (1, 10, 100), file: str | None = None) -> dict:
    """Class-agnostic COCO bbox AP/AR (are objects found at all, whatever their label?): :func:`coco_ap` of one-class
    copies of ``gt`` and ``results`` (the inputs are not modified).

    Args:
        gt: a COCO split dict.
        results: ``[{image_id, category_id, bbox (XYWH), score}]``.
        gt_category_ids: the annotations that count as objects (None: every annotation). The others are dropped or,
            with ``ignore_other``, kept as crowd regions (``iscrowd=1``), so a detection on one of them counts
            neither as a hit nor as a false positive (COCO's ignore rule).
        result_category_ids: the detections that take part (None: every detection); the others are dropped.
        max_dets / file: as for :func:`coco_ap`.

    Returns:
        The twelve figures of :func:`coco_ap` for the single class ``1`` ("object").
    """
    stripped = coco_ground_truth(gt, file=file)
    keep_gt = None if gt_category_ids is None else {int(c) for c in gt_category_ids}
    annotations = []
    for ann in stripped["annotations"]:
        if keep_gt is None or ann["category_id"] in keep_gt:
            annotations.append(dict(ann, category_id=1))
        elif ignore_other:
            annotations.append(dict(ann, category_id=1, iscrowd=1))
    one_class = {"images": stripped["images"], "annotations": annotations,
                 "categories": [{"id": 1, "name": "object"}]}
    keep_dt = None if result_category_ids is None else {int(c) for c in result_category_ids}
    detections = [dict(r, category_id=1) for r in results if keep_dt is None or int(r["category_id"]) in keep_dt]
    return coco_ap(one_class, detections, max_dets=max_dets, file=file)
