"""Open-set detection metrics (OWOD -> OpenDet2 -> FOOD evaluators), over COCO-format ground truth and results.

Ground truth: every non-crowd annotation whose category is in ``vocabulary_category_ids`` is *known*; every other
non-crowd annotation is *unknown*. Results: ``[{image_id, category_id, bbox XYWH, score}]``; a result whose
``category_id`` is ``unknown_category_id`` is an OOV ("unknown") detection, any other is a known-class detection.
Boxes are compared by continuous-coordinate IoU (COCO convention, no +1 pixel).

- ``U-Recall``: unknown detections, sorted by score, are matched greedily (each to its best still-unmatched unknown
  ground truth with IoU > ``iou``, VOC convention); recall of the unknown ground truth, over all detections.
- ``AP_U``: COCO AP50 of the unknown detections against the unknown ground truth (one class).
- ``WI`` (x100, as OpenDet2 reports it): per known class k, detections sorted by score are matched closed-set
  (VOC: to an unmatched GT of class k at IoU > ``iou``) giving a recall curve; the operating index is the one whose
  recall is closest to ``recall_level`` (first on ties). ``tp+fp_k`` = detections up to it; ``hits_k`` = those among
  them that overlap some unknown object at IoU > ``iou``. ``WI = mean_k hits_k / mean_k (tp+fp_k)`` over known
  classes with ground truth and detections.
- ``A-OSE``: number of known-class detections (all outputs) that overlap an unknown object at IoU > ``iou``.
- ``IV_AP`` / ``IV_AP50``: COCO AP / AP50 over the vocabulary classes (unknown detections dropped).
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

__all__ = ["box_iou_xywh", "evaluate_openset", "unknown_recall", "wilderness_impact", "absolute_open_set_error"]


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


def wilderness_impact(known_gt: list[dict], unknown_gt: list[dict], known_detections: list[dict],
                      iou: float = 0.5, recall_level: float = 0.8) -> float:
    """WI x100 (see the module docstring); -1.0 when no known class has both ground truth and detections."""
    unknown_by_image = _group_boxes(unknown_gt)
    hits, totals = [], []
    classes = sorted({int(a["category_id"]) for a in known_gt})
    for c in classes:
        gts = [a for a in known_gt if int(a["category_id"]) == c]
        dets = _sorted([d for d in known_detections if int(d["category_id"]) == c])
        if not dets:
            continue
        tp = _match_greedy(dets, _group_boxes(gts), iou)
        recall = np.cumsum(tp) / len(gts)
        index = int(np.argmin(np.abs(recall - recall_level)))
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
                     iou: float = 0.5, recall_level: float = 0.8) -> dict[str, Any]:
    """All open-set figures (see the module docstring) of ``results`` against the split ``gt``.

    Args:
        gt: a COCO-format split dict. results: COCO detection results (validated by the caller).
        vocabulary_category_ids: the category ids the detector was given (known classes).
        unknown_category_id: the category id results use for OOV detections (must not be a vocabulary id).
        novel_category_ids: vocabulary ids never seen in training (zero-shot), for ``novel_AP50``.
        iou: the overlap threshold (VOC convention, IoU > iou). recall_level: WI operating point.

    Returns:
        ``{"IV_AP", "IV_AP50", "novel_AP50", "U-Recall", "AP_U", "WI", "A-OSE", "H-mean", "num_known_gt",
        "num_unknown_gt", "num_unknown_detections", "hmean_definition"}``.
    """
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

    if unknown_gt:
        unknown_coco = {"images": coco["images"], "categories": [{"id": unknown_id, "name": "unknown"}],
                        "annotations": [dict(a, category_id=unknown_id) for a in unknown_gt]}
        out["AP_U"] = coco_ap(unknown_coco, unknown_dets, "bbox")["AP50"]
    else:
        out["AP_U"] = -1.0
    out["U-Recall"] = unknown_recall(unknown_gt, unknown_dets, iou)
    out["WI"] = wilderness_impact(known_gt, unknown_gt, known_dets, iou, recall_level)
    out["A-OSE"] = absolute_open_set_error(unknown_gt, known_dets, iou)
    a, b = max(out["IV_AP50"], 0.0), max(out["U-Recall"], 0.0)
    out["H-mean"] = 2 * a * b / (a + b) if a + b > 0 else 0.0
    out.update({"num_known_gt": len(known_gt), "num_unknown_gt": len(unknown_gt),
                "num_unknown_detections": len(unknown_dets),
                "hmean_definition": "harmonic mean of IV_AP50 and U-Recall (ours)"})
    return out
