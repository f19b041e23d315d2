"""Forensic detection metrics over a split's labelled videos and results ``[{video_id, score, verdict?}]``.

Generated is the positive class; ``score`` is the probability (or any score) of generated.
- ``AUC``: ``sklearn.metrics.roc_auc_score``; ``AP``: ``average_precision_score`` (not interpolated).
- ``EER``: the FPR at the ROC threshold where ``|FNR - FPR|`` is smallest.
- ``TPR@5%FPR``: the largest TPR on the ROC curve with FPR <= ``fpr`` (default 0.05).
- ``ACC``: accuracy at a threshold (``score >= threshold`` = generated) fixed on real validation videos and given
  as the ``threshold`` option; without it the threshold is set on this split's real videos so that ``pass_rate``
  of them are below it (``threshold_source`` then says ``eval-real``, an optimistic choice). ``real_acc``: the
  share of real videos below the threshold; ``fake_acc``: the share of generated videos at or above it.
- Per generator: the same metrics on (all real videos + that generator's videos), keys ``<generator>/<metric>``,
  and their unweighted mean over generators, ``macro/<metric>``.

Figures are on the 0-1 scale; a metric that is undefined (one class only) is ``nan``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

from vision.errors import DataError, InputError

__all__ = ["evaluate_forensics", "binary_metrics", "equal_error_rate", "tpr_at_fpr", "threshold_from_real"]

METRICS = ("AUC", "AP", "ACC", "real_acc", "fake_acc", "EER", "TPR@5%FPR")


def equal_error_rate(labels: np.ndarray, scores: np.ndarray) -> float:
    """FPR at the ROC threshold where ``|FNR - FPR|`` is smallest (``nan`` with one class)."""
    if len(np.unique(labels)) < 2:
        return float("nan")
    fpr, tpr, _ = roc_curve(labels, scores)
    idx = int(np.argmin(np.abs((1.0 - tpr) - fpr)))
    return float(fpr[idx])


def tpr_at_fpr(labels: np.ndarray, scores: np.ndarray, fpr_max: float = 0.05) -> float:
    """Largest TPR with FPR <= ``fpr_max`` on the ROC curve (``nan`` with one class)."""
    if len(np.unique(labels)) < 2:
        return float("nan")
    fpr, tpr, _ = roc_curve(labels, scores)
    ok = fpr <= fpr_max + 1e-12
    return float(tpr[ok].max()) if ok.any() else 0.0


def threshold_from_real(real_scores: np.ndarray, pass_rate: float = 0.95) -> float:
    """The smallest threshold above the ``pass_rate`` quantile (method "higher") of real scores."""
    real_scores = np.asarray(real_scores, np.float64)
    if real_scores.size == 0:
        raise InputError("no real videos to set a threshold on")
    return float(np.nextafter(np.quantile(real_scores, pass_rate, method="higher"), np.inf))


def binary_metrics(labels: np.ndarray, scores: np.ndarray, threshold: float, fpr_max: float = 0.05) -> dict:
    """AUC, AP, ACC, real_acc, fake_acc, EER, TPR@FPR of one set (labels 1 = generated)."""
    labels = np.asarray(labels, np.int64)
    scores = np.asarray(scores, np.float64)
    both = len(np.unique(labels)) == 2
    pred = scores >= threshold
    real, fake = labels == 0, labels == 1
    return {
        "AUC": float(roc_auc_score(labels, scores)) if both else float("nan"),
        "AP": float(average_precision_score(labels, scores)) if both else float("nan"),
        "ACC": float((pred == (labels == 1)).mean()) if labels.size else float("nan"),
        "real_acc": float((~pred[real]).mean()) if real.any() else float("nan"),
        "fake_acc": float(pred[fake].mean()) if fake.any() else float("nan"),
        "EER": equal_error_rate(labels, scores),
        "TPR@5%FPR": tpr_at_fpr(labels, scores, fpr_max),
    }


def evaluate_forensics(gt: dict, results: list, threshold: float | None = None, pass_rate: float = 0.95,
                       fpr: float = 0.05, results_file: str | None = None, gt_file: str | None = None) -> dict:
    """Score forensic ``results`` against the labelled videos of ``gt`` (see the module docstring).

    Every labelled video needs exactly one result with a finite ``score``; results for unknown video ids, a
    missing or non-finite score, or duplicates raise :class:`DataError` naming the file, index and field.

    Returns a flat dict: overall metrics, ``threshold``, ``threshold_source``, ``num_real``, ``num_generated``,
    ``<generator>/<metric>`` and ``macro/<metric>`` (keys in :data:`METRICS`).
    """
    if not isinstance(gt, dict) or not isinstance(gt.get("videos"), list):
        raise DataError("ground truth must be a split dict with a 'videos' list", file=gt_file, field="videos")
    if not isinstance(results, list):
        raise DataError("results must be a list of {video_id, score}", file=results_file)
    labelled = {int(v["id"]): v for v in gt["videos"] if isinstance(v, dict) and v.get("label") in ("real", "generated")}
    if not labelled:
        raise DataError("no video carries a label 'real' or 'generated'", file=gt_file, field="videos")
    scores: dict[int, float] = {}
    for i, entry in enumerate(results):
        if not isinstance(entry, dict):
            raise DataError("each result must be an object", file=results_file, field=f"results[{i}]", value=entry)
        vid = entry.get("video_id")
        if isinstance(vid, bool) or not isinstance(vid, (int, np.integer)) or int(vid) not in labelled:
            raise DataError("video_id is not a labelled video of the split", file=results_file,
                            field=f"results[{i}].video_id", value=vid)
        score = entry.get("score")
        if isinstance(score, bool) or not isinstance(score, (int, float, np.integer, np.floating)) \
                or not math.isfinite(float(score)):
            raise DataError("score must be a finite number", file=results_file, field=f"results[{i}].score",
                            value=score)
        if int(vid) in scores:
            raise DataError("duplicate result for this video", file=results_file, field=f"results[{i}].video_id",
                            value=vid)
        scores[int(vid)] = float(score)
    missing = sorted(set(labelled) - set(scores))
    if missing:
        raise DataError(f"{len(missing)} labelled video(s) have no result", file=results_file,
                        field="video_id", value=missing[:10])
    ids = sorted(labelled)
    labels = np.array([1 if labelled[v]["label"] == "generated" else 0 for v in ids])
    values = np.array([scores[v] for v in ids])
    gens = [labelled[v].get("generator") or "unknown" for v in ids]
    source = "given"
    if threshold is None:
        threshold = threshold_from_real(values[labels == 0], pass_rate)
        source = "eval-real"
    out: dict[str, Any] = dict(binary_metrics(labels, values, float(threshold), fpr))
    out.update(threshold=float(threshold), threshold_source=source, num_real=int((labels == 0).sum()),
               num_generated=int((labels == 1).sum()))
    names = sorted({g for g, y in zip(gens, labels) if y == 1})
    per: dict[str, dict] = {}
    for name in names:
        keep = np.array([y == 0 or g == name for g, y in zip(gens, labels)])
        per[name] = binary_metrics(labels[keep], values[keep], float(threshold), fpr)
        out.update({f"{name}/{k}": v for k, v in per[name].items()})
    for metric in METRICS:
        vals = [per[n][metric] for n in names if not math.isnan(per[n][metric])]
        out[f"macro/{metric}"] = float(np.mean(vals)) if vals else float("nan")
    return out
