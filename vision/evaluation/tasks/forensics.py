"""What ``vision-evaluate --task forensics`` runs: the forensics scorer (AUC, AP, ACC and the rest per generator),
its options and flag, the split check and the results validator. Torch-free; scikit-learn is imported by
:mod:`vision.evaluation.forensics` when scoring."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


from vision.errors import DataError
from vision.evaluation.flags import finite_float, given

__all__ = ["OPTIONS", "score_forensics", "evaluate_forensics", "check_forensics_parts", "validate_forensics_results", "add_flags",
           "options", "score", "check_split", "check_results"]

#: the options :func:`score_forensics` takes
OPTIONS = frozenset({"threshold", "pass_rate", "fpr"})


def score_forensics(gt: dict, results: list, *, split_file: str | None = None, results_file: str | None = None,
                    **options: Any) -> dict:
    """AUC, AP, ACC and the rest per generator (:func:`evaluate_forensics`, which validates the results)."""
    return evaluate_forensics(gt, results, results_file=results_file, gt_file=split_file, **options)


def evaluate_forensics(gt: dict, results: list, threshold: float | None = None, pass_rate: float = 0.95,
                       fpr: float = 0.05, results_file: str | None = None, gt_file: str | None = None) -> dict:
    """Score forensic ``results`` against the labelled videos of ``gt`` (the figures of
    :mod:`vision.evaluation.forensics`).

    The split and the results are validated first (:func:`validate_forensics_results`):
    every labelled video needs exactly one result with a finite ``score``; results for unknown video ids, a
    missing or non-finite score, or duplicates raise :class:`DataError` naming the file, index and field.

    A split whose labelled videos are all real or all generated raises :class:`DataError` naming the missing class.

    Returns a flat dict: overall metrics, ``threshold``, ``threshold_source``, ``num_real``, ``num_generated``,
    ``num_cgi``, ``<generator or family>/<metric>`` and ``macro/<metric>`` (keys in :data:`METRICS`), and
    ``cgi/false_alarm`` when the split has cgi videos.
    """
    import numpy as np
    from vision.evaluation.forensics import METRICS, binary_metrics, threshold_from_real

    validate_forensics_results(results, gt, results_file, split_file=gt_file)
    labelled = {int(v["id"]): v for v in gt["videos"] if v.get("label") in ("real", "generated")}
    if not labelled:
        raise DataError("no video carries a label 'real' or 'generated'", file=gt_file, field="videos")
    scores = {int(r["video_id"]): float(r["score"]) for r in results}
    for label in ("real", "generated"):
        if not any(v["label"] == label for v in labelled.values()):
            raise DataError(f"no '{label}' video among the {len(labelled)} labelled videos: AUC, AP, EER and "
                            "TPR@5%FPR need both real and generated videos", file=gt_file, field="videos[].label")
    ids = sorted(labelled)
    labels = np.array([1 if labelled[v]["label"] == "generated" else 0 for v in ids])
    values = np.array([scores[v] for v in ids])
    by_family = any(labelled[v].get("family") for v in ids if labelled[v]["label"] == "generated")
    gens = [(by_family and labelled[v].get("family")) or labelled[v].get("generator") or "unknown" for v in ids]
    source = "given"
    if threshold is None:
        threshold = threshold_from_real(values[labels == 0], pass_rate)
        source = "eval-real"
    out: dict[str, Any] = dict(binary_metrics(labels, values, float(threshold), fpr))
    cgi = [scores[int(v["id"])] for v in gt["videos"] if v.get("label") == "cgi"]
    out.update(threshold=float(threshold), threshold_source=source, num_real=int((labels == 0).sum()),
               num_generated=int((labels == 1).sum()), num_cgi=len(cgi))
    if cgi:
        out["cgi/false_alarm"] = float(np.mean(np.asarray(cgi) >= threshold))
    names = sorted({g for g, y in zip(gens, labels) if y == 1})
    per: dict[str, dict] = {}
    for name in names:
        keep = np.array([y == 0 or g == name for g, y in zip(gens, labels)])
        per[name] = binary_metrics(labels[keep], values[keep], float(threshold), fpr)
        out.update({f"{name}/{k}": v for k, v in per[name].items()})
    for metric in METRICS:  # every generator's subset holds all the real videos: both classes
        out[f"macro/{metric}"] = float(np.mean([per[n][metric] for n in names]))
    return out


def check_forensics_parts(dataset: Any, file: str | Path | None = None) -> None:
    """Forensics: ``videos`` (unique integer id, label ``real``/``generated``/``cgi`` when present, generator a
    string)."""
    from vision.data.checker import ScalarChecker
    from vision.data.schema import check_provenance, entries, top_list

    c = ScalarChecker(None if file is None else str(file))
    c.dict_(dataset, "<top level>")
    for field, video, _ in entries(c, top_list(c, dataset, "videos"), "videos"):
        check_provenance(c, video, field)


def validate_forensics_results(results: list, split: dict, file: str | None = None,
                               split_file: str | None = None) -> None:
    """Check the split (:func:`vision.data.schema.validate_scored_parts`, errors naming
    ``split_file``) and the forensics results in
    ``file`` against it: one result per labelled video, each with an integer video_id of a labelled video and a
    finite score."""
    from vision.data.schema import VIDEO_LABELS
    from vision.evaluation.results import ResultsChecker

    check_forensics_parts(split, split_file)
    c = ResultsChecker(file)
    labelled = {v["id"] for v in split["videos"] if v.get("label") in VIDEO_LABELS}
    seen: set[int] = set()
    for i, r in enumerate(results):
        field = f"results[{i}]"
        c.entry(r, field, ("video_id", "score"))
        video_id = c.int_(r["video_id"], f"{field}.video_id")
        if video_id not in labelled:
            raise c.fail("video_id is not a labelled video of the split", f"{field}.video_id", video_id)
        if video_id in seen:
            raise c.fail("duplicate result for this video", f"{field}.video_id", video_id)
        seen.add(video_id)
        c.number(r["score"], f"{field}.score")
    missing = sorted(labelled - seen)
    if missing:
        raise c.fail(f"{len(missing)} labelled video(s) have no result", "video_id", missing[:10])


def add_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--threshold", type=finite_float,
                       help="the detector's threshold (fixed on real validation videos)")


def options(args: argparse.Namespace, split: Path) -> dict[str, Any]:
    return given(args, ("threshold",))


# The registry's fixed names (vision.tasks.PARTS)
score = score_forensics
check_split = check_forensics_parts
check_results = validate_forensics_results
