"""Forensic detection metrics over a split's labelled videos and results ``[{video_id, score, verdict?}]``.

Generated is the positive class; ``score`` is the probability (or any score) of generated.
- ``AUC``: ``sklearn.metrics.roc_auc_score``; ``AP``: ``average_precision_score`` (not interpolated).
- ``EER`` and ``TPR@5%FPR`` are read off the full ROC curve (``roc_curve(..., drop_intermediate=False)``: one
  point per distinct score, plus (0, 0)), taken as the polyline through its points (linear interpolation between
  neighbouring points, i.e. randomising between two thresholds). ``EER``: the FPR where FPR = FNR (= 1 - TPR) on
  that polyline. ``TPR@5%FPR``: the TPR of the polyline at FPR = ``fpr`` (default 0.05), the highest one where the
  curve is vertical there. Tied scores form a diagonal segment: 100 tied (real, generated) pairs give EER 0.5 and
  TPR@5%FPR 0.05.
- ``ACC``: accuracy at a threshold (``score >= threshold`` = generated) fixed on real validation videos and given
  as the ``threshold`` option; without it the threshold is set on this split's real videos so that ``pass_rate``
  of them are below it (``threshold_source`` then says ``eval-real``, an optimistic choice). ``real_acc``: the
  share of real videos below the threshold; ``fake_acc``: the share of generated videos at or above it.
- Per generator: the same metrics on (all real videos + that generator's videos), keys ``<generator>/<metric>``,
  and their unweighted mean over generators, ``macro/<metric>``. When the generated videos carry a ``family``
  (the group a leave-family-out protocol holds out together), the rows are families instead of generators (a
  generated video without one counts under its generator).
- ``cgi`` videos (computer graphics that is not AI-generated: an animated film, a rendering) are neither class:
  they need a result like every labelled video, take no part in the metrics above, and are reported apart:
  ``cgi/false_alarm``, the share of them at or above the threshold (0 is right), and ``num_cgi``.

Figures are on the 0-1 scale. The split must hold both classes: a split without real or without generated
videos raises :class:`DataError` (AUC, AP, EER and TPR are undefined with one class).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

from vision.errors import InputError

__all__ = ["binary_metrics", "equal_error_rate", "tpr_at_fpr", "threshold_from_real",
           "format_forensics", "METRICS"]

METRICS = ("AUC", "AP", "ACC", "real_acc", "fake_acc", "EER", "TPR@5%FPR")


def _full_roc(labels: np.ndarray, scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(FPR, TPR) at every distinct score, from (0, 0) to (1, 1); :class:`InputError` without both classes."""
    if len(np.unique(labels)) < 2:
        raise InputError("EER and TPR at a fixed FPR need both classes (real = 0 and generated = 1)")
    fpr, tpr, _ = roc_curve(labels, scores, drop_intermediate=False)
    return fpr, tpr


def equal_error_rate(labels: np.ndarray, scores: np.ndarray) -> float:
    """EER: the FPR where FPR = FNR on the full ROC polyline (see the module docstring).

    Along the curve ``FPR + TPR - 1`` never decreases, from -1 at (0, 0) to 1 at (1, 1); the EER is where it is 0,
    linearly interpolated between the two ROC points around that crossing.
    """
    fpr, tpr = _full_roc(labels, scores)
    gap = fpr + tpr - 1.0  # FPR - FNR
    i = int(np.argmax(gap >= 0))  # first point at or past the crossing (i >= 1, since gap[0] = -1)
    if gap[i] == 0:
        return float(fpr[i])
    t = -gap[i - 1] / (gap[i] - gap[i - 1])
    return float(fpr[i - 1] + t * (fpr[i] - fpr[i - 1]))


def tpr_at_fpr(labels: np.ndarray, scores: np.ndarray, fpr_max: float = 0.05) -> float:
    """TPR of the full ROC polyline at FPR = ``fpr_max``: the highest TPR among points with that exact FPR, else
    interpolated between the last point below it and the first point above it."""
    fpr, tpr = _full_roc(labels, scores)
    below = np.flatnonzero(fpr <= fpr_max)  # never empty: the curve starts at FPR 0
    i = int(below[-1])  # TPR never decreases along the curve: the last such point has the highest TPR
    if fpr[i] == fpr_max or i == len(fpr) - 1:
        return float(tpr[i])
    t = (fpr_max - fpr[i]) / (fpr[i + 1] - fpr[i])
    return float(tpr[i] + t * (tpr[i + 1] - tpr[i]))


def threshold_from_real(real_scores: np.ndarray, pass_rate: float = 0.95, dtype: type = np.float64) -> float:
    """The real-calibrated threshold: the smallest value representable in ``dtype`` strictly above the ``pass_rate``
    quantile (method ``"higher"``: one of the scores) of the real scores ``[N]``.

    A video is called generated when ``score >= threshold``, so every real score at or below that quantile (a share
    of at least ``pass_rate``) passes, ties with the quantile included. ``dtype=np.float32`` gives the threshold to
    store in a float32 buffer: rounded *up* to the next float32, so reading the buffer back never lets it fall to
    or below the quantile (a nearest-float32 rounding could, turning those real videos into generated ones). The
    returned Python float is exactly representable in ``dtype``.

    Raises:
        InputError: no real score, a non-finite one, or ``pass_rate`` outside (0, 1).
    """
    real_scores = np.asarray(real_scores, np.float64).ravel()
    if real_scores.size == 0:
        raise InputError("no real videos to set a threshold on")
    if not np.isfinite(real_scores).all():
        raise InputError("real scores for the threshold must be finite")
    if not 0.0 < pass_rate < 1.0:
        raise InputError(f"pass_rate must be in (0, 1); got {pass_rate}")
    quantile = np.quantile(real_scores, pass_rate, method="higher")
    threshold = np.asarray(quantile, dtype=dtype)[()]
    if float(threshold) <= quantile:
        threshold = np.nextafter(threshold, np.asarray(np.inf, dtype=dtype))
    return float(threshold)


def binary_metrics(labels: np.ndarray, scores: np.ndarray, threshold: float, fpr_max: float = 0.05) -> dict:
    """AUC, AP, ACC, real_acc, fake_acc, EER, TPR@FPR of one set (labels 1 = generated); both classes needed
    (:class:`InputError` otherwise)."""
    labels = np.asarray(labels, np.int64)
    scores = np.asarray(scores, np.float64)
    if len(np.unique(labels)) < 2:
        raise InputError("forensic metrics need both classes (real = 0 and generated = 1)")
    pred = scores >= threshold
    real, fake = labels == 0, labels == 1
    return {
        "AUC": float(roc_auc_score(labels, scores)),
        "AP": float(average_precision_score(labels, scores)),
        "ACC": float((pred == (labels == 1)).mean()),
        "real_acc": float((~pred[real]).mean()),
        "fake_acc": float(pred[fake].mean()),
        "EER": equal_error_rate(labels, scores),
        "TPR@5%FPR": tpr_at_fpr(labels, scores, fpr_max),
    }


def format_forensics(metrics: dict[str, Any], title: str) -> str:
    """The fixed-width table of :func:`evaluate_forensics`'s ``metrics``: one row per generator, ``macro`` and
    ``all``, the class counts and the threshold (in full, as ``vision evaluate --threshold`` takes it)."""
    rows = sorted({key.split("/")[0] for key in metrics if "/" in key} - {"macro", "cgi"}) + ["macro"]
    header = f"{title:14s}" + "".join(f"{c:>11s}" for c in METRICS)
    lines = [header, "-" * len(header)]
    for row in rows:
        lines.append(f"{row:14s}" + "".join(f"{metrics.get(f'{row}/{c}', float('nan')):11.3f}" for c in METRICS))
    lines.append(f"{'all':14s}" + "".join(f"{metrics.get(c, float('nan')):11.3f}" for c in METRICS))
    source = "fixed on real validation videos" if metrics.get("threshold_source") == "given" else \
        "set on this split's real videos"
    if "cgi/false_alarm" in metrics:
        lines.append(f"cgi (not AI-generated): {metrics['cgi/false_alarm']:.3f} called generated "
                     f"of {metrics['num_cgi']} videos")
    lines.append(f"({metrics['num_real']} real, {metrics['num_generated']} generated videos; "
                 f"threshold {metrics['threshold']!r} {source})")
    return "\n".join(lines)
