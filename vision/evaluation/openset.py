"""Open-set detection metrics (OWOD -> OpenDet2 -> FOOD evaluators), over COCO-format ground truth and results.

Ground truth: every non-crowd annotation whose category is in ``vocabulary_category_ids`` is *known*; every other
non-crowd annotation is *unknown*; crowd annotations are left out. Results: ``[{image_id, category_id, bbox XYWH,
score}]``; a result whose ``category_id`` is ``unknown_category_id`` is an OOV ("unknown") detection, any other is a
known-class detection. Detections are ranked by score (stable: ties keep the results' order).

Two conventions, ``convention="coco"`` (default) and ``"opendet2"`` (OpenDet2's evaluator,
``opendet2/evaluation/pascal_voc_evaluation.py``, itself OWOD's); they differ in ``AP_U`` and ``WI`` only:

- IoU (both): continuous coordinates, ``box_iou_xywh``. OpenDet2's ``compute_overlaps`` adds one pixel to widths
  and heights, but on VOC boxes (1-based inclusive corners; detectron2's loader subtracts 1 from xmin and ymin, and
  the evaluator adds 1 back to predicted xmin and ymin), so on boxes in continuous coordinates it equals this IoU;
  the +1 changes figures only for boxes read as inclusive pixel corners, which COCO boxes are not.
- Matching (both, VOC rule): detections by score each take their highest-IoU ground truth of the class if IoU >
  ``iou`` and it is still free; otherwise they are false positives.
- ``U-Recall`` (both): recall of the unknown ground truth by the unknown detections, over all detections.
- ``AP_U``: ``coco``: COCO AP50 (101-point, pycocotools) of the unknown detections against the unknown ground
  truth (one class). ``opendet2``: VOC07 11-point AP (:func:`voc07_ap`) of the same, with the matching above.
- ``WI`` (x100, as OpenDet2 reports it): per known class k, detections sorted by score are matched closed-set
  (to the ground truth of class k) giving a recall curve; the operating index is the one whose recall is closest
  to ``recall_level`` (first on ties). ``tp+fp_k`` = detections up to it; ``hits_k`` = those among them that
  overlap some unknown object at IoU > ``iou``. ``WI = mean_k hits_k / mean_k (tp+fp_k)``. ``coco``: over known
  classes with ground truth and detections. ``opendet2``: over vocabulary classes with detections, also those
  without ground truth (their recall is 0/0 at every rank, and OpenDet2's operating index is then the first).
  Where no class qualifies the figure is ``-1.0`` (OpenDet2 prints 0).
- ``A-OSE``: number of known-class detections (all outputs) that overlap an unknown object at IoU > ``iou``.
- ``IV_AP`` / ``IV_AP50``: COCO AP / AP50 over the vocabulary classes (unknown detections dropped), in both
  conventions (OpenDet2's own known-class figure, VOC07 mAP, is not reported).
- ``novel_AP50``: COCO AP50 over ``novel_category_ids`` (when given and present in the ground truth).
- ``H-mean``: harmonic mean of ``IV_AP50`` and ``U-Recall`` (our definition), 0 when either is 0.

Every figure is on the 0-1 scale except ``WI`` (x100) and ``A-OSE`` (a count); ``-1.0`` where undefined (no
unknown ground truth for U-Recall / AP_U, no class reaching the WI computation).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from vision.errors import DataError
from vision.evaluation.detection import coco_ap, coco_ground_truth

__all__ = ["CONVENTIONS", "box_iou_xywh", "evaluate_openset", "unknown_recall", "voc07_ap", "voc07_ap50",
           "wilderness_impact", "absolute_open_set_error"]

CONVENTIONS: tuple[str, ...] = ("coco", "opendet2")


def box_iou_xywh(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU matrix ``[len(a), len(b)]`` of XYWH boxes (continuous coordinates)."""
    a = np.asarray(a, np.float64).reshape(-1, 4)
    b = np.asarray(b, np.float64).reshape(-1, 4)
    ax1, ay1, ax2, ay2 = a[:, 0], a[:, 1], a[:, 0] + a[:, 2], a[:, 1] + a[:, 3]
    bx1, by1, bx2, by2 = b[:, 0], b[:, 1], b[:, 0] + b[:, 2], b[:, 1] + b[:, 3]
    iw = np.clip(np.minimum(ax2[:, None], bx2[None]) - np.maximum(ax1[:, None], bx1[None]), 0, None)
    ih = np.clip(np.minimum(ay2[:, None], by2[None]) - np.maximum(ay1[:, None], by1[None]), 0, None)
    inter = iw * ih
    union = (a[:, 2] * a[:, 3])[:, None] + (b[:, 2] * b[:, 3])[None] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


def _sorted(results: list[dict]) -> list[dict]:
    """Stable sort by descending score."""
    return sorted(results, key=lambda r: -float(r["score"]))


def _group_boxes(annotations: Iterable[dict]) -> dict[int, np.ndarray]:
    groups: dict[int, list] = defaultdict(list)
    for a in annotations:
        groups[int(a["image_id"])].append([float(v) for v in a["bbox"]])
    return {k: np.asarray(v, np.float64).reshape(-1, 4) for k, v in groups.items()}


def _match_greedy(detections: list[dict], gt_by_image: dict[int, np.ndarray], iou: float) -> np.ndarray:
    """VOC matching of score-sorted ``detections``: each takes its highest-IoU GT if IoU > iou and still free.
    Returns a bool array of true positives (in the given order)."""
    used = {k: np.zeros(len(v), bool) for k, v in gt_by_image.items()}
    tp = np.zeros(len(detections), bool)
    for i, det in enumerate(detections):
        gts = gt_by_image.get(int(det["image_id"]))
        if gts is None or len(gts) == 0:
            continue
        overlaps = box_iou_xywh(np.asarray(det["bbox"]), gts)[0]
        j = int(np.argmax(overlaps))
        if overlaps[j] > iou and not used[int(det["image_id"])][j]:
            used[int(det["image_id"])][j] = True
            tp[i] = True
    return tp


def _hits_unknown(detections: list[dict], unknown_by_image: dict[int, np.ndarray], iou: float) -> np.ndarray:
    """Bool per detection: overlaps some unknown object at IoU > iou (no one-to-one matching, as in OWOD)."""
    hit = np.zeros(len(detections), bool)
    for i, det in enumerate(detections):
        gts = unknown_by_image.get(int(det["image_id"]))
        if gts is not None and len(gts):
            hit[i] = bool(box_iou_xywh(np.asarray(det["bbox"]), gts).max() > iou)
    return hit


def unknown_recall(unknown_gt: list[dict], unknown_detections: list[dict], iou: float = 0.5) -> float:
    """U-Recall (0-1) of ``unknown_gt`` annotations by ``unknown_detections``; -1.0 without unknown ground truth."""
    if not unknown_gt:
        return -1.0
    tp = _match_greedy(_sorted(unknown_detections), _group_boxes(unknown_gt), iou)
    return float(tp.sum()) / len(unknown_gt)


def voc07_ap(recall: np.ndarray, precision: np.ndarray) -> float:
    """VOC07 11-point AP as detectron2's ``voc_ap(use_07_metric=True)`` (which OpenDet2 calls): the mean over
    ``t in np.arange(0.0, 1.1, 0.1)`` of the highest precision at recall >= t (0 where none). Those thresholds are
    floats as numpy makes them (the fourth is 0.30000000000000004, so a recall of exactly 0.3 does not reach it)."""
    recall = np.asarray(recall, np.float64)
    precision = np.asarray(precision, np.float64)
    ap = 0.0
    for t in np.arange(0.0, 1.1, 0.1):
        reached = recall >= t
        ap += (float(precision[reached].max()) if reached.any() else 0.0) / 11.0
    return ap


def voc07_ap50(gt: list[dict], detections: list[dict], iou: float = 0.5) -> float:
    """VOC07 11-point AP of ``detections`` against ``gt`` (one class) with the VOC matching at IoU > ``iou``;
    -1.0 without ground truth."""
    if not gt:
        return -1.0
    tp = _match_greedy(_sorted(detections), _group_boxes(gt), iou)
    cum_tp = np.cumsum(tp)
    cum_fp = np.cumsum(~tp)
    recall = cum_tp / len(gt)
    precision = cum_tp / np.maximum(cum_tp + cum_fp, np.finfo(np.float64).eps)
    return voc07_ap(recall, precision)


def wilderness_impact(known_gt: list[dict], unknown_gt: list[dict], known_detections: list[dict],
                      iou: float = 0.5, recall_level: float = 0.8, classes: Iterable[int] | None = None) -> float:
    """WI x100 (see the module docstring).

    Args:
        classes: the known classes to average over (those with detections count). ``None`` (the ``coco``
            convention): the classes of ``known_gt``. OpenDet2 passes every vocabulary class; a class without
            ground truth then operates at its first detection.

    Returns:
        WI x100, or -1.0 when no class counts.
    """
    unknown_by_image = _group_boxes(unknown_gt)
    hits, totals = [], []
    if classes is None:
        classes = {int(a["category_id"]) for a in known_gt}
    for c in sorted({int(c) for c in classes}):
        gts = [a for a in known_gt if int(a["category_id"]) == c]
        dets = _sorted([d for d in known_detections if int(d["category_id"]) == c])
        if not dets:
            continue
        if gts:
            tp = _match_greedy(dets, _group_boxes(gts), iou)
            recall = np.cumsum(tp) / len(gts)
            index = int(np.argmin(np.abs(recall - recall_level)))
        else:  # recall 0/0 at every rank: OpenDet2's min over NaN distances keeps the first index
            index = 0
        is_unknown = _hits_unknown(dets, unknown_by_image, iou)
        hits.append(float(is_unknown[: index + 1].sum()))
        totals.append(float(index + 1))
    if not totals:
        return -1.0
    return 100.0 * float(np.mean(hits)) / float(np.mean(totals))


def absolute_open_set_error(unknown_gt: list[dict], known_detections: list[dict], iou: float = 0.5) -> int:
    """A-OSE: known-class detections overlapping an unknown object at IoU > iou."""
    return int(_hits_unknown(known_detections, _group_boxes(unknown_gt), iou).sum())


def evaluate_openset(gt: dict, results: list[dict], vocabulary_category_ids: Iterable[int],
                     unknown_category_id: int, *, novel_category_ids: Iterable[int] | None = None,
                     iou: float = 0.5, recall_level: float = 0.8, convention: str = "coco") -> dict[str, Any]:
    """All open-set figures (see the module docstring) of ``results`` against the split ``gt``.

    Args:
        gt: a COCO-format split dict. results: COCO detection results (validated by the caller).
        vocabulary_category_ids: the category ids the detector was given (known classes).
        unknown_category_id: the category id results use for OOV detections (must not be a vocabulary id).
        novel_category_ids: vocabulary ids never seen in training (zero-shot), for ``novel_AP50``.
        iou: the overlap threshold (VOC convention, IoU > iou). recall_level: WI operating point.
        convention: ``"coco"`` or ``"opendet2"`` (how ``AP_U`` and ``WI`` are computed; see the module docstring).

    Returns:
        ``{"IV_AP", "IV_AP50", "novel_AP50", "U-Recall", "AP_U", "WI", "A-OSE", "H-mean", "num_known_gt",
        "num_unknown_gt", "num_unknown_detections", "hmean_definition", "openset_convention"}``.
    """
    if convention not in CONVENTIONS:
        raise DataError(f"unknown open-set convention; expected one of {', '.join(CONVENTIONS)}",
                        field="convention", value=convention)
    vocab = {int(c) for c in vocabulary_category_ids}
    if not vocab:
        raise DataError("vocabulary_category_ids is empty", field="vocabulary_category_ids")
    unknown_id = int(unknown_category_id)
    if unknown_id in vocab:
        raise DataError("unknown_category_id is also a vocabulary id", field="unknown_category_id", value=unknown_id)
    coco = coco_ground_truth(gt)
    split_ids = {c["id"] for c in coco["categories"]}
    missing = sorted(vocab - split_ids)
    if missing:
        raise DataError("vocabulary category ids are not in the split's categories", field="vocabulary_category_ids",
                        value=missing)
    annotations = [a for a in coco["annotations"] if not a.get("iscrowd", 0)]
    known_gt = [a for a in annotations if a["category_id"] in vocab]
    unknown_gt = [a for a in annotations if a["category_id"] not in vocab]
    unknown_dets = [r for r in results if int(r["category_id"]) == unknown_id]
    known_dets = [r for r in results if int(r["category_id"]) in vocab]

    iv = coco_ap(coco, known_dets, "bbox", category_ids=sorted(vocab))
    out: dict[str, Any] = {"IV_AP": iv["AP"], "IV_AP50": iv["AP50"]}
    novel = sorted({int(c) for c in (novel_category_ids or [])} & {a["category_id"] for a in known_gt})
    out["novel_AP50"] = coco_ap(coco, known_dets, "bbox", category_ids=novel)["AP50"] if novel else -1.0

    if not unknown_gt:
        out["AP_U"] = -1.0
    elif convention == "opendet2":
        out["AP_U"] = voc07_ap50(unknown_gt, unknown_dets, iou)
    else:
        unknown_coco = {"images": coco["images"], "categories": [{"id": unknown_id, "name": "unknown"}],
                        "annotations": [dict(a, category_id=unknown_id) for a in unknown_gt]}
        out["AP_U"] = coco_ap(unknown_coco, unknown_dets, "bbox")["AP50"]
    out["U-Recall"] = unknown_recall(unknown_gt, unknown_dets, iou)
    wi_classes = sorted(vocab) if convention == "opendet2" else None
    out["WI"] = wilderness_impact(known_gt, unknown_gt, known_dets, iou, recall_level, classes=wi_classes)
    out["A-OSE"] = absolute_open_set_error(unknown_gt, known_dets, iou)
    a, b = max(out["IV_AP50"], 0.0), max(out["U-Recall"], 0.0)
    out["H-mean"] = 2 * a * b / (a + b) if a + b > 0 else 0.0
    out.update({"num_known_gt": len(known_gt), "num_unknown_gt": len(unknown_gt),
                "num_unknown_detections": len(unknown_dets),
                "hmean_definition": "harmonic mean of IV_AP50 and U-Recall (ours)", "openset_convention": convention})
    return out
