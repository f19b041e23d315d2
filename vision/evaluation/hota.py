"""HOTA (with DetA, AssA, LocA, DetRe, DetPr, AssRe, AssPr) and CLEAR's id switches, as PyPI ``trackeval`` defines
them (``trackeval.metrics.HOTA`` and ``CLEAR``, v1.3), on trackeval's per-sequence data.

A *sequence* is one class (phrase) of one video: a dict with trackeval's keys

- ``num_timesteps``: T; ``gt_ids`` / ``tracker_ids``: T int arrays, the ids present at each timestep, relabelled
  0..``num_gt_ids``-1 / 0..``num_tracker_ids``-1 (:func:`sequence_data` does it);
- ``similarity_scores``: T arrays ``[len(gt_ids[t]), len(tracker_ids[t])]`` (mask IoU here);
- ``num_gt_ids``, ``num_tracker_ids``, ``num_gt_dets``, ``num_tracker_dets``.

HOTA is computed at each alpha of :data:`ALPHAS` (0.05, 0.10, ..., 0.95) and reported as the mean over alphas, as
trackeval's summary does. Sequences of a class are combined by :func:`combine_sequences` (counts summed; AssA, AssRe,
AssPr and LocA weighted by true positives; DetA, HOTA recomputed), and classes by :func:`combine_classes` (the mean
of the classes' figures: trackeval's ``cls_comb_cls_av`` with the classes it is given). Numbers only, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = ["ALPHAS", "HOTA_FIELDS", "sequence_data", "hota_sequence", "id_switches", "combine_sequences",
           "combine_classes", "summary"]

#: trackeval's HOTA alphas (``np.arange(0.05, 0.99, 0.05)``, 19 values).
ALPHAS: np.ndarray = np.arange(0.05, 0.99, 0.05)
#: The per-alpha figures.
HOTA_FIELDS: tuple[str, ...] = ("HOTA", "DetA", "AssA", "LocA", "DetRe", "DetPr", "AssRe", "AssPr")
_EPS = np.finfo("float").eps
_CLEAR_THRESHOLD = 0.5  # trackeval CLEAR's default similarity threshold for a match


def sequence_data(gt_ids: Sequence[Sequence[int]], tracker_ids: Sequence[Sequence[int]],
                  similarity: Sequence[np.ndarray]) -> dict[str, Any]:
    """trackeval's data dict of one sequence from per-timestep ids (any integers, unique within a timestep) and
    similarity matrices ``[len(gt_ids[t]), len(tracker_ids[t])]``; ids are relabelled to 0..n-1 in sorted order, as
    trackeval's datasets do."""
    def relabel(ids: Sequence[Sequence[int]]) -> tuple[list[np.ndarray], int]:
        unique = np.unique(np.concatenate([np.asarray(t, np.int64) for t in ids])) if ids else np.zeros(0, np.int64)
        return [np.searchsorted(unique, np.asarray(t, np.int64)).astype(int) for t in ids], len(unique)

    gt, num_gt = relabel(gt_ids)
    tracker, num_tracker = relabel(tracker_ids)
    return {"num_timesteps": len(gt), "gt_ids": gt, "tracker_ids": tracker,
            "similarity_scores": [np.asarray(s, float).reshape(len(g), len(p)) for s, g, p in
                                  zip(similarity, gt, tracker)],
            "num_gt_ids": num_gt, "num_tracker_ids": num_tracker,
            "num_gt_dets": sum(len(g) for g in gt), "num_tracker_dets": sum(len(p) for p in tracker)}


def hota_sequence(data: dict[str, Any]) -> dict[str, Any]:
    """trackeval ``HOTA.eval_sequence``: per-alpha arrays ``HOTA_TP, HOTA_FN, HOTA_FP`` and :data:`HOTA_FIELDS`.

    The same matching and counts, with the loop over alphas done once at the end: at each timestep the Hungarian
    matching does not depend on alpha, and a matched pair of similarity ``s`` counts at every alpha with
    ``s >= alpha - eps`` (the first ``k(s)`` alphas), so each figure is a sum over the matched pairs of those with
    ``k(s) > a``. Sums may differ from trackeval's in the last bits (another order of additions)."""
    n = len(ALPHAS)
    res: dict[str, Any] = {k: np.zeros(n) for k in ("HOTA_TP", "HOTA_FN", "HOTA_FP", "AssA", "AssRe", "AssPr",
                                                    "LocA")}
    if data["num_tracker_dets"] == 0:  # every ground-truth detection missed
        res["HOTA_FN"] = data["num_gt_dets"] * np.ones(n)
        res["LocA"] = np.ones(n)
        return _final_fields(res)
    if data["num_gt_dets"] == 0:  # every tracker detection false
        res["HOTA_FP"] = data["num_tracker_dets"] * np.ones(n)
        res["LocA"] = np.ones(n)
        return _final_fields(res)
    num_gt, num_tr = data["num_gt_ids"], data["num_tracker_ids"]
    steps = [(g, t, s) for g, t, s in zip(data["gt_ids"], data["tracker_ids"], data["similarity_scores"])
             if len(g) and len(t)]  # a timestep without one side adds only its counts
    potential = np.zeros((num_gt, num_tr))
    for gt_t, tr_t, sim in steps:
        denom = sim.sum(0)[np.newaxis, :] + sim.sum(1)[:, np.newaxis] - sim
        sim_iou = np.zeros_like(sim)
        ok = denom > 0 + _EPS
        sim_iou[ok] = sim[ok] / denom[ok]
        potential[gt_t[:, np.newaxis], tr_t[np.newaxis, :]] += sim_iou
    gt_count = np.bincount(np.concatenate(data["gt_ids"]).astype(np.int64), minlength=num_gt)[:, None].astype(float)
    tr_count = np.bincount(np.concatenate(data["tracker_ids"]).astype(np.int64),
                           minlength=num_tr)[None, :].astype(float)
    alignment = potential / (gt_count + tr_count - potential)
    pair_gt, pair_tr, pair_sim = [], [], []  # every matched pair of every timestep
    for gt_t, tr_t, sim in steps:
        rows, cols = linear_sum_assignment(-(alignment[gt_t[:, np.newaxis], tr_t[np.newaxis, :]] * sim))
        pair_gt.append(gt_t[rows])
        pair_tr.append(tr_t[cols])
        pair_sim.append(sim[rows, cols])
    g = np.concatenate(pair_gt) if pair_gt else np.zeros(0, int)
    t = np.concatenate(pair_tr) if pair_tr else np.zeros(0, int)
    s = np.concatenate(pair_sim) if pair_sim else np.zeros(0)
    reached = np.searchsorted(ALPHAS - _EPS, s, side="right")  # k(s): the alphas at which the pair is a match
    at = reached[None, :] > np.arange(n)[:, None]  # [alpha, pair]
    res["HOTA_TP"] = at.sum(axis=1).astype(float)
    res["HOTA_FN"] = data["num_gt_dets"] - res["HOTA_TP"]
    res["HOTA_FP"] = data["num_tracker_dets"] - res["HOTA_TP"]
    res["LocA"] = np.where(at, s[None, :], 0.0).sum(axis=1)
    counts = np.zeros((num_gt, num_tr, n + 1))
    np.add.at(counts, (g, t, reached), 1)
    matches = np.moveaxis(np.cumsum(counts[:, :, ::-1], axis=2)[:, :, ::-1][:, :, 1:], 2, 0)  # [alpha, gt, tr]
    tp = np.maximum(1, res["HOTA_TP"])
    res["AssA"] = np.sum(matches * (matches / np.maximum(1, gt_count + tr_count - matches)), axis=(1, 2)) / tp
    res["AssRe"] = np.sum(matches * (matches / np.maximum(1, gt_count)), axis=(1, 2)) / tp
    res["AssPr"] = np.sum(matches * (matches / np.maximum(1, tr_count)), axis=(1, 2)) / tp
    res["LocA"] = np.maximum(1e-10, res["LocA"]) / np.maximum(1e-10, res["HOTA_TP"])
    return _final_fields(res)


def id_switches(data: dict[str, Any]) -> int:
    """trackeval ``CLEAR.eval_sequence``'s ``IDSW`` (threshold 0.5): a ground-truth id matched to another tracker
    id than at its last match, the matching favouring the previous timestep's pairs."""
    if data["num_tracker_dets"] == 0 or data["num_gt_dets"] == 0:
        return 0
    prev_tracker = np.full(data["num_gt_ids"], np.nan)  # the tracker id at each gt id's last match
    prev_step = np.full(data["num_gt_ids"], np.nan)  # the tracker id matched at the previous timestep
    switches = 0
    for gt_t, tr_t, sim in zip(data["gt_ids"], data["tracker_ids"], data["similarity_scores"]):
        if len(gt_t) == 0 or len(tr_t) == 0:
            continue  # trackeval leaves the previous-timestep matches as they are here
        score = 1000 * (tr_t[np.newaxis, :] == prev_step[gt_t[:, np.newaxis]]) + sim
        score[sim < _CLEAR_THRESHOLD - _EPS] = 0
        rows, cols = linear_sum_assignment(-score)
        keep = score[rows, cols] > 0 + _EPS
        matched_gt, matched_tr = gt_t[rows[keep]], tr_t[cols[keep]]
        before = prev_tracker[matched_gt]
        switches += int(np.sum(~np.isnan(before) & (matched_tr != before)))
        prev_tracker[matched_gt] = matched_tr
        prev_step[:] = np.nan
        prev_step[matched_gt] = matched_tr
    return switches


def combine_sequences(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """trackeval ``HOTA.combine_sequences`` over the sequences of one class (``IDSW`` summed when present)."""
    res: dict[str, Any] = {k: sum(r[k] for r in results) for k in ("HOTA_TP", "HOTA_FN", "HOTA_FP")}
    weight = np.maximum(1.0, res["HOTA_TP"])
    for key in ("AssRe", "AssPr", "AssA"):
        res[key] = sum(r[key] * r["HOTA_TP"] for r in results) / weight
    res["LocA"] = (np.maximum(1e-10, sum(r["LocA"] * r["HOTA_TP"] for r in results))
                   / np.maximum(1e-10, res["HOTA_TP"]))
    res = _final_fields(res)
    res["IDSW"] = int(sum(r.get("IDSW", 0) for r in results))
    return res


def combine_classes(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """trackeval ``HOTA.combine_classes_class_averaged`` over the classes given (the caller leaves out the empty
    ones for ``ignore_empty_classes=True``): counts summed, per-alpha figures averaged (``IDSW`` summed)."""
    res: dict[str, Any] = {k: sum(r[k] for r in results) for k in ("HOTA_TP", "HOTA_FN", "HOTA_FP")}
    for key in HOTA_FIELDS:
        res[key] = np.mean([r[key] for r in results], axis=0)
    res["IDSW"] = int(sum(r.get("IDSW", 0) for r in results))
    return res


def summary(res: dict[str, Any]) -> dict[str, float]:
    """The reported figures: each of :data:`HOTA_FIELDS` averaged over the alphas (trackeval's summary row)."""
    return {key: float(np.mean(res[key])) for key in HOTA_FIELDS}


def _final_fields(res: dict[str, Any]) -> dict[str, Any]:
    """trackeval ``HOTA._compute_final_fields``: DetRe, DetPr, DetA and HOTA from the counts and AssA."""
    tp, fn, fp = res["HOTA_TP"], res["HOTA_FN"], res["HOTA_FP"]
    res["DetRe"] = tp / np.maximum(1, tp + fn)
    res["DetPr"] = tp / np.maximum(1, tp + fp)
    res["DetA"] = tp / np.maximum(1, tp + fn + fp)
    res["HOTA"] = np.sqrt(res["DetA"] * res["AssA"])
    return res
