"""The box answers of a concept prompt on a clip, scored against reference boxes of its class (a teacher
detector's): how often and how many of the objects it finds, what it adds, and whether its ids persist.

Inputs, per sampled frame of the clip in order: the reference boxes of the class (XYXY, no identities) and the
answer (its instance ids and XYXY boxes). Figures (:func:`score_clip`):

- ``frames``: the clip's frames; ``frames_with_class``: those with at least one reference box;
- ``frame_recall``: the share of ``frames_with_class`` where some answer box has IoU >= ``iou`` with some
  reference box;
- ``instance_recall``: reference boxes matched one-to-one (Hungarian on IoU, pairs at IoU >= ``iou``) over all
  reference boxes; ``false_positives_per_frame``: answer boxes left unmatched, over all ``frames``;
- id persistence: the reference boxes are chained across consecutive sampled frames (Hungarian on IoU, links at
  IoU >= ``chain_iou``: :func:`chain_boxes`); along each chain, the ids of the answer boxes matched to its boxes
  (frames where it is unmatched are skipped): ``id_switches`` counts the changes of id between consecutive matched
  boxes of a chain, summed over chains; ``ids_per_chain`` is the mean number of distinct ids of a chain with at least
  one match (1.0 is perfect), ``max_ids_per_chain`` the largest.

A figure without data is None (no reference box: no recall; no chain with a match: no ids per chain). Numpy and
scipy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

from vision.evaluation.openset import box_iou_xywh

__all__ = ["box_iou_xyxy", "match_boxes", "chain_boxes", "score_clip"]


def box_iou_xyxy(a: Any, b: Any) -> np.ndarray:
    """IoU ``[len(a), len(b)]`` of XYXY boxes (:func:`vision.evaluation.openset.box_iou_xywh`)."""
    a = np.asarray(a, np.float64).reshape(-1, 4)
    b = np.asarray(b, np.float64).reshape(-1, 4)
    return box_iou_xywh(np.concatenate([a[:, :2], a[:, 2:] - a[:, :2]], 1),
                        np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], 1))


def match_boxes(a: Any, b: Any, iou: float) -> list[tuple[int, int]]:
    """One-to-one pairs ``(i, j)`` of boxes ``a[i]`` and ``b[j]`` at IoU >= ``iou``: the Hungarian assignment that
    makes the most such pairs, and among those the one of the highest total IoU."""
    overlap = box_iou_xyxy(a, b)
    if not overlap.size:
        return []
    weight = np.where(overlap >= iou, 1.0 + overlap, 0.0)  # one more pair outweighs any gain of IoU
    rows, cols = linear_sum_assignment(-weight)
    return [(int(i), int(j)) for i, j in zip(rows, cols) if overlap[i, j] >= iou]


def chain_boxes(reference: Sequence[Any], chain_iou: float) -> list[list[tuple[int, int]]]:
    """The chains of reference boxes: ``reference[t]`` ``[n_t, 4]`` XYXY per frame; a box continues the chain of the
    box of the previous frame it is matched to (:func:`match_boxes` at ``chain_iou``), else starts one. Each chain is
    its ``(frame, box index)`` in frame order."""
    chains: list[list[tuple[int, int]]] = []
    previous: dict[int, int] = {}  # box index on the previous frame -> its chain
    for t, boxes in enumerate(reference):
        current: dict[int, int] = {}
        if t > 0:
            for i, j in match_boxes(reference[t - 1], boxes, chain_iou):
                if i in previous:
                    current[j] = previous[i]
        for j in range(len(np.asarray(boxes).reshape(-1, 4))):
            if j not in current:
                current[j] = len(chains)
                chains.append([])
            chains[current[j]].append((t, j))
        previous = current
    return chains


def score_clip(reference: Sequence[Any], answers: Sequence[tuple[Sequence[int], Any]], iou: float = 0.5,
               chain_iou: float = 0.3) -> dict[str, Any]:
    """The figures of the module docstring: ``reference[t]`` the reference boxes ``[n_t, 4]`` XYXY of frame ``t``,
    ``answers[t]`` ``(ids, boxes [m_t, 4] XYXY)`` the answer on it."""
    if len(reference) != len(answers):
        raise ValueError(f"{len(reference)} frames of reference boxes but {len(answers)} answers")
    reference = [np.asarray(r, np.float64).reshape(-1, 4) for r in reference]
    matched: list[dict[int, int]] = []  # per frame: reference box index -> the id of its matched answer box
    hits = boxes_total = boxes_matched = unmatched = 0
    for ref, (ids, boxes) in zip(reference, answers):
        boxes = np.asarray(boxes, np.float64).reshape(-1, 4)
        pairs = match_boxes(ref, boxes, iou)
        matched.append({i: int(ids[j]) for i, j in pairs})
        boxes_total += len(ref)
        boxes_matched += len(pairs)
        unmatched += len(boxes) - len(pairs)
        hits += bool(pairs)  # the assignment makes the most pairs: one exists when any box reaches iou
    frames_with = sum(len(r) > 0 for r in reference)
    switches, distinct = 0, []
    chains = chain_boxes(reference, chain_iou)
    for chain in chains:
        ids = [matched[t][j] for t, j in chain if j in matched[t]]
        switches += sum(a != b for a, b in zip(ids, ids[1:]))
        if ids:
            distinct.append(len(set(ids)))
    all_ids = {int(o) for ids, _ in answers for o in ids}
    return {"frames": len(reference), "frames_with_class": frames_with,
            "frame_recall": hits / frames_with if frames_with else None,
            "reference_boxes": boxes_total, "instance_recall": boxes_matched / boxes_total if boxes_total else None,
            "false_positives_per_frame": unmatched / len(reference) if reference else None,
            "chains": len(chains), "id_switches": switches,
            "ids_per_chain": float(np.mean(distinct)) if distinct else None,
            "max_ids_per_chain": max(distinct) if distinct else None, "answer_ids": len(all_ids)}
