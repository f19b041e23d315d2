"""The forensic detector's probabilities as the task's results: one ``{video_id, score, verdict}`` per video.

What :class:`~vision.forensics.lightning.ForensicsModule`'s validation, test and predict steps score and write, and
what ``tools/evaluate.py --task forensics`` reads (:func:`vision.evaluation.tasks.forensics.validate_forensics_results`).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["to_results", "results_of"]


def results_of(video_ids: Sequence[int], probabilities: Sequence[float], threshold: float) -> list[dict]:
    """Results ``[{video_id, score, verdict}]``: score = calibrated probability of generated, verdict
    ``generated`` when ``score >= threshold`` else ``real``."""
    return [{"video_id": int(v), "score": float(p), "verdict": "generated" if float(p) >= threshold else "real"}
            for v, p in zip(video_ids, probabilities)]

#: model outputs -> the task's results (the registry's fixed name, vision.tasks.PARTS)
to_results = results_of
