"""One entry point: ``evaluate(split, results, task)`` -> metrics dict, and ``format_table`` for printing.

Tasks:
- ``"detection"``: COCO bbox AP/AR, pycocotools' twelve summary figures (keys ``AP, AP50, AP75, APs, APm, APl,
  AR1, AR10, AR100, ARs, ARm, ARl``); when every result and every annotation of the split carries a
  ``segmentation``, also mask AP/AR under the same keys prefixed ``segm_``. When only some do, the masks are not
  scored and ``notes`` (a list of sentences) says what was skipped and why. Options: ``category_ids``
  (restrict to a vocabulary: IV mAP; ``"vocabulary"``: the split's ``info.vocabulary``, as training reports it),
  ``extra_category_ids`` (ids accepted in results besides the split's categories, e.g. an ``oov`` id; they never
  match ground truth).
  With ``unknown_category_id`` (the id results use for rejected out-of-vocabulary objects) the open-set figures
  of :func:`vision.evaluation.openset.evaluate_openset` are added (IV AP, novel AP50, U-Recall, AP_U, WI, A-OSE,
  H-mean); the vocabulary is ``category_ids`` or else the split's ``info.vocabulary``, and novel ids are the
  categories marked ``split: "novel"``. ``openset_convention`` (``"coco"``, the default, or ``"opendet2"``)
  chooses how AP_U and WI are computed. ``processes`` (default 1): with 2 or more, mask AP is scored in a forked
  child while box AP is scored here (:mod:`vision.evaluation.fork`; the same figures; only from a process whose
  other threads are idle, as ``vision-evaluate``).
- ``"tracking"``: J, F, J&F, recalls, matched mIoU, presence accuracy, 3D instance IoU (with ``split_root``, on
  splits with cameras and depth) and per-prompt-type figures (see
  :func:`vision.evaluation.tracking3d.evaluate_tracking_task`). Options: ``protocol`` (``"vos-benchmark"``, the
  default, or ``"davis2017"``; see :func:`vision.evaluation.tracking.evaluate_tracking`), ``prompted_image_ids``
  (a list, or a dict prompt type -> list), ``skip_first_and_last``, ``match_iou``, ``allow_unknown_tracks``,
  ``split_root``, ``voxel_size``, ``presence_threshold``.
- ``"forensics"``: AUC, AP, ACC at a threshold fixed on real videos, real-class accuracy, EER, TPR at 5% FPR,
  per generator and macro-averaged (see :func:`vision.evaluation.forensics.evaluate_forensics`). Options:
  ``threshold`` (the detector's, fixed on real validation videos), ``pass_rate``, ``fpr``.
- ``"geometry"``: depth AbsRel / delta<1.25 (median-scaled per image), relative pose RRA@k / RTA@k / AUC@30 over
  the pairs of each clip, Chamfer of the point maps, and the baselines' rows ``constant_depth/*``,
  ``identity_pose/*`` (and ``match_pose/*`` when the results carry ``match_extrinsics``); see
  :func:`vision.evaluation.geometry.evaluate_geometry_results`. Results: one entry per image of each predicted
  clip, ``{image_id, clip, extrinsics, depth, world_points[, match_extrinsics]}``
  (:func:`vision.evaluation.results.validate_geometry_results`). The split's depth files are read from
  ``split_root`` (default: the split file's folder). Options: ``split_root``, ``max_points``, ``seed``.
- ``"concept"``: every instance of a phrase (issue 29): trackeval's HOTA, DetA, AssA, LocA, DetRe, DetPr, AssRe,
  AssPr and IDSW on mask IoU (videos as sequences, phrases as classes), YouTube-VIS video mask AP / AP50 / AP75,
  SA-Co's cgF1, pmF1 and IL_MCC (sam3's definition), presence_MCC, outside_accepted, near_accepted and
  ``HOTA/<phrase>`` (see :mod:`vision.evaluation.concept`). Results: instance and presence records
  (:func:`vision.evaluation.results.validate_concept_results`). Options: ``score_threshold`` (cgF1's, 0.5),
  ``presence_threshold`` (0.5), ``accept_iou`` (0.5).

Before scoring, the parts of the split a task reads and every result are validated
(:mod:`vision.evaluation.results`): any problem is a :class:`~vision.errors.DataError` naming the file, the entry
and the field, never a wrong figure.

All figures are on the 0-1 scale.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from vision.errors import DataError, InputError
from vision.evaluation.detection import coco_ap
from vision.evaluation.fork import Forked
from vision.evaluation.results import (load_document, load_results, validate_concept_results,
                                       validate_detection_results, validate_tracking_results)
from vision.evaluation.options import TASK_OPTIONS, TASKS

__all__ = ["TASKS", "evaluate", "format_table"]


def evaluate(split: dict | str | Path, results: list | str | Path, task: str, **options: Any) -> dict:
    """Score ``results`` against the ground truth in ``split`` for ``task``.

    Args:
        split: a COCO-format split dict or the path of its JSON (only the annotations are read).
        results: a COCO results list or the path of its JSON.
        task: one of :data:`TASKS`.
        **options: task options (see the module docstring); unknown ones raise :class:`InputError`.

    Returns:
        A flat dict of scalar metrics (plus ``per_track`` details for tracking).
    """
    if task not in TASKS:
        raise InputError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    unknown = set(options) - TASK_OPTIONS[task]
    if unknown:
        raise InputError(f"unknown option(s) for task {task!r}: {', '.join(sorted(unknown))}")
    gt, split_file = load_document(split, dict, "a split must be a JSON object", "split")
    results, results_file = load_results(results)

    if task == "detection":
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

    if task == "forensics":  # imported here: scikit-learn takes seconds to import and only this task needs it
        from vision.evaluation.forensics import evaluate_forensics

        return evaluate_forensics(gt, results, results_file=results_file, gt_file=split_file, **options)

    # each task's scorer is imported where it is used: the geometry, concept and tracking ones load SciPy, which
    # scoring detections (vision-evaluate's most frequent use, where start-up time shows) does not need
    if task == "geometry":
        from vision.evaluation.geometry import evaluate_geometry_results

        return evaluate_geometry_results(gt, results, results_file=results_file, gt_file=split_file, **options)

    if task == "concept":
        from vision.evaluation.concept import evaluate_concept

        validate_concept_results(results, gt, results_file, split_file=split_file)
        return evaluate_concept(gt, results, gt_file=split_file, **options)

    from vision.evaluation.tracking3d import evaluate_tracking_task

    validate_tracking_results(results, gt, results_file, split_file=split_file)
    return evaluate_tracking_task(gt, results, results_file=results_file, gt_file=split_file, **options)


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


def format_table(metrics: dict) -> str:
    """Two-column text table of the scalar entries of ``metrics`` (floats with 4 decimals, in insertion order;
    ``-1.0000`` means undefined, as in COCO). Non-scalar entries (e.g. ``per_track``) are left out."""
    rows = []
    for key, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if isinstance(value, int):
            rows.append((str(key), str(value)))
        else:
            rows.append((str(key), "nan" if math.isnan(value) else f"{value:.4f}"))
    if not rows:
        return "(no metrics)"
    width = max(len("metric"), *(len(k) for k, _ in rows))
    vwidth = max(len("value"), *(len(v) for _, v in rows))
    lines = [f"{'metric':<{width}}  {'value':>{vwidth}}", f"{'-' * width}  {'-' * vwidth}"]
    lines += [f"{k:<{width}}  {v:>{vwidth}}" for k, v in rows]
    return "\n".join(lines)
