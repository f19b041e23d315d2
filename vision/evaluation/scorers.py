"""The scorers of the package's tasks, one per task, with the one signature the registry (:mod:`vision.tasks`,
``Task.scorer``) names and :func:`vision.evaluation.evaluate.evaluate` calls::

    scorer(split, results, *, split_file=None, results_file=None, **options) -> metrics

Each validates the results against the split first (:mod:`vision.evaluation.results`: a
:class:`~vision.errors.DataError` naming the file, the entry and the field) and then scores them. Each imports its
scoring module where it is used: scikit-learn (forensics) and SciPy (geometry, concept, tracking) take time to import
and scoring detections, ``vision-evaluate``'s most frequent use, needs neither.
"""

from __future__ import annotations

from typing import Any

from vision.errors import DataError, InputError
from vision.evaluation.detection import coco_ap
from vision.evaluation.fork import Forked
from vision.evaluation.results import validate_concept_results, validate_detection_results, validate_tracking_results

__all__ = ["score_detection", "score_tracking", "score_forensics", "score_geometry", "score_concept",
           "vocabulary_ids"]


def score_detection(gt: dict, results: list, *, split_file: str | None = None, results_file: str | None = None,
                    **options: Any) -> dict:
    """COCO box (and mask) AP/AR, and the open-set figures with ``unknown_category_id`` (see
    :mod:`vision.evaluation.evaluate`)."""
    unknown_id = options.get("unknown_category_id")
    if "openset_convention" in options and unknown_id is None:
        raise InputError("openset_convention applies to the open-set figures: give unknown_category_id too")
    extra = tuple(options.get("extra_category_ids", ())) + ((int(unknown_id),) if unknown_id is not None else ())
    with_segm = validate_detection_results(results, gt, results_file, extra, split_file=split_file)
    category_ids = options.get("category_ids")
    if category_ids == "vocabulary":
        category_ids = vocabulary_ids(gt, split_file)
    processes = options.get("processes", 1)
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 1:
        raise InputError(f"processes must be an integer >= 1; got {processes!r}")
    segm_note = _segm_skipped(gt, results, with_segm, split_file, results_file)
    segm = None
    if with_segm and segm_note is None:
        # mask AP in a forked child while box AP runs here (identical figures; see vision.evaluation.fork)
        segm = Forked(lambda: coco_ap(gt, results, "segm", category_ids=category_ids, file=split_file),
                      fork=processes > 1)
    try:
        metrics: dict[str, Any] = dict(coco_ap(gt, results, "bbox", category_ids=category_ids, file=split_file))
    except BaseException:
        if segm is not None:
            segm.cancel()
        raise
    if segm is not None:
        metrics.update({f"segm_{k}": v for k, v in segm.result().items()})
    metrics["num_results"] = len(results)
    if segm_note is not None:
        metrics["notes"] = [segm_note]
    if unknown_id is not None:
        metrics.update(_open_set(gt, results, category_ids, int(unknown_id), split_file,
                                 options.get("openset_convention", "coco")))
    return metrics


def score_tracking(gt: dict, results: list, *, split_file: str | None = None, results_file: str | None = None,
                   **options: Any) -> dict:
    """J&F, recalls, presence and 3D instance IoU (:func:`vision.evaluation.tracking3d.evaluate_tracking_task`)."""
    from vision.evaluation.tracking3d import evaluate_tracking_task

    validate_tracking_results(results, gt, results_file, split_file=split_file)
    return evaluate_tracking_task(gt, results, results_file=results_file, gt_file=split_file, **options)


def score_concept(gt: dict, results: list, *, split_file: str | None = None, results_file: str | None = None,
                  **options: Any) -> dict:
    """HOTA, video mask AP and SA-Co's figures (:func:`vision.evaluation.concept.evaluate_concept`)."""
    from vision.evaluation.concept import evaluate_concept

    validate_concept_results(results, gt, results_file, split_file=split_file)
    return evaluate_concept(gt, results, gt_file=split_file, **options)


def score_forensics(gt: dict, results: list, *, split_file: str | None = None, results_file: str | None = None,
                    **options: Any) -> dict:
    """AUC, AP, ACC and the rest per generator (:func:`vision.evaluation.forensics.evaluate_forensics`, which
    validates the results)."""
    from vision.evaluation.forensics import evaluate_forensics

    return evaluate_forensics(gt, results, results_file=results_file, gt_file=split_file, **options)


def score_geometry(gt: dict, results: list, *, split_file: str | None = None, results_file: str | None = None,
                   **options: Any) -> dict:
    """Depth, pose and point-map figures with their baselines
    (:func:`vision.evaluation.geometry.evaluate_geometry_results`, which validates the results)."""
    from vision.evaluation.geometry import evaluate_geometry_results

    return evaluate_geometry_results(gt, results, results_file=results_file, gt_file=split_file, **options)


def _segm_skipped(gt: dict, results: list, with_segm: bool, split_file: str | None,
                  results_file: str | None) -> str | None:
    """Why mask AP is not scored although some results carry masks (None: it is scored, or no result carries
    one). pycocotools scores masks only when every result has one and every ground-truth annotation has one;
    otherwise the box figures are scored alone and this says what was skipped."""
    carrying = sum(isinstance(r, dict) and "segmentation" in r for r in results)
    if carrying == 0:
        return None
    if not with_segm:
        first = next(i for i, r in enumerate(results) if "segmentation" not in r)
        return (f"segm figures skipped: {carrying} of {len(results)} results in {results_file or 'the results'} "
                f"carry a segmentation, results[{first}] has none; mask AP needs one on every result")
    missing = next((i for i, a in enumerate(gt.get("annotations", []))
                    if isinstance(a, dict) and a.get("segmentation") in (None, [], {})), None)
    if missing is not None:
        return (f"segm figures skipped: {split_file or 'the split'} has no mask on annotations[{missing}] (a "
                f"box-only split), so the results' masks are not scored; the bbox figures are")
    return None


def vocabulary_ids(gt: dict, split_file: str | None = None,
                   message: str = "category_ids='vocabulary' needs the split's info.vocabulary") -> list[int]:
    """The ids of the categories named in the split's ``info.vocabulary`` (what a detector was given); a split
    without one is a :class:`DataError` with ``message``."""
    names = (gt.get("info") or {}).get("vocabulary")
    if not isinstance(names, list) or not names:
        raise DataError(message, file=split_file, field="info.vocabulary",
                        value=names)
    return [c["id"] for c in gt.get("categories", []) if isinstance(c, dict) and c.get("name") in set(names)]


def _open_set(gt: dict, results: list, category_ids: Any, unknown_id: int, split_file: str | None,
              convention: str) -> dict:
    """Open-set figures; the vocabulary is ``category_ids`` or the split's ``info.vocabulary`` names."""
    from vision.evaluation.openset import evaluate_openset

    categories = [c for c in gt.get("categories", []) if isinstance(c, dict)]
    if category_ids is None:
        category_ids = vocabulary_ids(gt, split_file,
                                      "open-set evaluation needs category_ids or the split's info.vocabulary")
    vocab = {int(i) for i in category_ids}
    novel = [c["id"] for c in categories if c.get("split") == "novel" and c["id"] in vocab]
    return evaluate_openset(gt, results, sorted(vocab), unknown_id, novel_category_ids=novel or None,
                            convention=convention)
