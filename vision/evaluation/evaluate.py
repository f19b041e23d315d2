"""One entry point: ``evaluate(split, results, task)`` -> metrics dict, and ``format_table`` for printing.

Tasks:
- ``"detection"``: COCO bbox AP/AR, pycocotools' twelve summary figures (keys ``AP, AP50, AP75, APs, APm, APl,
  AR1, AR10, AR100, ARs, ARm, ARl``); when every result and every annotation of the split carries a
  ``segmentation``, also mask AP/AR under the same keys prefixed ``segm_``. When only some do, the masks are not
  scored and ``notes`` (a list of sentences) says what was skipped and why. Options: ``category_ids``
  (restrict to a vocabulary: IV mAP; ``"vocabulary"``: the split's ``info.vocabulary``, as training reports it),
  ``extra_category_ids`` (ids accepted in results besides the split's categories, e.g. an ``oov`` id; they never
  match ground truth). Results that carry ``category_name`` (``vision-predict --task detection`` writes the
  vocabulary's names, its ids being their positions 1..K) are scored under the split's ids of those names; a name
  the split lacks is a :class:`~vision.errors.DataError`
  (:func:`vision.evaluation.tasks.detection.named_category_ids`).
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
  (:func:`vision.evaluation.tasks.geometry.validate_geometry_results`). The split's depth files are read from
  ``split_root`` (default: the split file's folder). Options: ``split_root``, ``max_points``, ``seed``.
- ``"concept"``: every instance of a phrase: trackeval's HOTA, DetA, AssA, LocA, DetRe, DetPr, AssRe, AssPr and
  IDSW on mask IoU (videos as sequences, phrases as classes, averaged over the queried phrases with a detection),
  sam3's phrase-HOTA (``phrase_HOTA``, ...: every (video, phrase) pair one sequence of one class), YouTube-VIS video
  mask AP / AP50 / AP75, SA-Co's cgF1, pmF1 and IL_MCC per (frame, phrase) (sam3's image evaluator) and
  ``video_cgF1``, ``video_pmF1``, ``video_IL_MCC`` per (video, phrase) on sequence IoU (sam3's video evaluator),
  presence_MCC, outside_accepted, near_accepted and ``HOTA/<phrase>`` (see :mod:`vision.evaluation.concept`). Results: instance and presence records
  (:func:`vision.evaluation.tasks.concept.validate_concept_results`). Options: ``score_threshold`` (cgF1's, 0.5),
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

from vision.evaluation.results import load_document, load_results
from vision.tasks import get_task
from vision.errors import InputError

__all__ = ["evaluate", "format_table", "validate_scored_parts"]


def evaluate(split: dict | str | Path, results: list | str | Path, task: str, **options: Any) -> dict:
    """Score ``results`` against the ground truth in ``split`` for ``task``, with the task's scorer
    (:mod:`vision.tasks`, ``Task.scorer``).

    Args:
        split: a COCO-format split dict or the path of its JSON (only the annotations are read).
        results: a COCO results list or the path of its JSON.
        task: a registered task (:func:`vision.tasks.task_names`); another name is an :class:`InputError`.
        **options: the task's options (``Task.evaluate_options``; see the module docstring); others raise
            :class:`InputError`.

    Returns:
        A flat dict of scalar metrics (plus ``per_track`` details for tracking).
    """
    entry = get_task(task)
    unknown = set(options) - entry.evaluate_options
    if unknown:
        raise InputError(f"unknown option(s) for task {task!r}: {', '.join(sorted(unknown))}")
    gt, split_file = load_document(split, dict, "a split must be a JSON object", "split")
    results, results_file = load_results(results)
    return entry.resolve("scorer")(gt, results, split_file=split_file, results_file=results_file, **options)


def validate_scored_parts(dataset: Any, task: str, file: str | Path | None = None) -> None:
    """Check what scoring ``task`` reads from a split: the registered task's ``check_split``.

    Raises:
        DataError: naming ``file``, the entry and the field.
        InputError: an unknown ``task``.
    """
    get_task(task).resolve("split_check")(dataset, file)


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
