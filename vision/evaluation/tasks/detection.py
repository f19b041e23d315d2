"""What ``vision-evaluate --task detection`` runs: the detection scorer (COCO box and mask AP/AR, the open-set
figures), its options and flags, the split check and the results validator. Torch-free; pycocotools is imported by
:mod:`vision.evaluation.detection` when scoring."""

from __future__ import annotations

import argparse
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from vision.errors import DataError, InputError
from vision.evaluation.flags import given, id_list, positive_int

if TYPE_CHECKING:
    from vision.evaluation.results import ResultsChecker

__all__ = ["OPTIONS", "UNKNOWN_NAME", "score_detection", "check_detection_parts", "validate_detection_results",
           "named_category_ids", "vocabulary_ids", "add_flags", "options", "score", "check_split", "check_results"]

#: the options :func:`score_detection` takes
OPTIONS = frozenset({"category_ids", "extra_category_ids", "unknown_category_id", "openset_convention", "processes"})

#: the ``category_name`` of a detection rejected as out of vocabulary (the predictor's
#: :data:`vision.detection.results.UNKNOWN_NAME`, repeated here: this module imports no task)
UNKNOWN_NAME = "unknown"


def score_detection(gt: dict, results: list, *, split_file: str | None = None, results_file: str | None = None,
                    **options: Any) -> dict:
    """COCO box (and mask) AP/AR, and the open-set figures with ``unknown_category_id`` (see
    :mod:`vision.evaluation.evaluate`)."""
    from vision.evaluation.detection import coco_ap
    from vision.evaluation.fork import Forked

    unknown_id = options.get("unknown_category_id")
    if "openset_convention" in options and unknown_id is None:
        raise InputError("openset_convention applies to the open-set figures: give unknown_category_id too")
    extra = tuple(options.get("extra_category_ids", ())) + ((int(unknown_id),) if unknown_id is not None else ())
    results, with_segm = _validated(results, gt, results_file, extra, split_file)
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


def check_detection_parts(dataset: Any, file: str | Path | None = None) -> None:
    """Detection: ``images`` (unique integer id, width, height), ``categories`` (unique integer id),
    ``annotations`` (image_id and category_id that exist, a finite bbox with w, h >= 0, iscrowd 0/1, a finite area
    >= 0, a segmentation of its image's size)."""
    from vision.data.checker import ScalarChecker
    from vision.data.schema import entries, scored_detection_annotations, scored_images, top_list

    c = ScalarChecker(None if file is None else str(file))
    c.dict_(dataset, "<top level>")
    images = scored_images(c, dataset)
    categories = {ident: cat for _, cat, ident in entries(c, top_list(c, dataset, "categories"), "categories")}
    scored_detection_annotations(c, top_list(c, dataset, "annotations"), images, categories)


def validate_detection_results(results: list, split: dict, file: str | None = None,
                               extra_category_ids: tuple[int, ...] = (), split_file: str | None = None) -> bool:
    """Check the split (:func:`vision.data.schema.validate_scored_parts`, errors naming
    ``split_file``) and the detection results in
    ``file`` against it; return True when every result carries a segmentation (so segm AP can be computed too).
    ``extra_category_ids`` are accepted besides the split's categories (e.g. an ``oov`` id for rejected objects;
    they never match ground truth). Results that name their categories (``category_name``) are checked with the
    split's ids of those names (:func:`named_category_ids`)."""
    return _validated(results, split, file, extra_category_ids, split_file)[1]


def _validated(results: list, split: dict, file: str | None, extra_category_ids: tuple[int, ...],
               split_file: str | None) -> tuple[list, bool]:
    """:func:`validate_detection_results`: the results as scored (named categories under the split's ids) and
    whether every result carries a segmentation."""
    from vision.data.checker import check_rle
    from vision.data.schema_columns import DeferredRle
    from vision.evaluation.results import ResultsChecker

    check_detection_parts(split, split_file)
    results = named_category_ids(results, split, file)
    c = ResultsChecker(file)
    images = {int(img["id"]): img for img in split.get("images", [])}
    categories = {int(cat["id"]) for cat in split.get("categories", [])} | {int(i) for i in extra_category_ids}
    all_segm = bool(results)
    with DeferredRle(c, "results") as deferred:  # compressed RLE counts are decoded in batches
        for i, r in enumerate(results):
            if _plain_detection(r, images, categories):  # every check of _checked_image surely passes
                image = images[r["image_id"]]
            else:
                image = _checked_image(c, r, f"results[{i}]", images, categories)
            if "segmentation" not in r:
                all_segm = False
            elif not deferred.offer(i, r["segmentation"], image["height"], image["width"]):
                check_rle(c, r["segmentation"], f"results[{i}].segmentation", image["height"], image["width"])
    return results, all_segm


def _name_key(name: str) -> str:
    """What a result's category name and a split's are compared by: lower case, runs of whitespace as one space
    (the rule two vocabulary names are compared by, :mod:`vision.text.vocabulary`)."""
    return " ".join(name.split()).lower()


def named_category_ids(results: list, split: dict, file: str | None = None) -> list:
    """``results`` with each named category under the split's id of that name.

    A result may carry ``category_name`` (what ``vision-predict --task detection`` writes: the vocabulary's name,
    :data:`UNKNOWN_NAME` for a rejected object) besides its ``category_id`` (then the position in the user's
    vocabulary, which means nothing to the split). When the results name their categories, each name is looked up
    among the split's category names (ignoring case and spacing) and the result is scored under that category's
    id; a rejected object (:data:`UNKNOWN_NAME` on an id that is not the split's) keeps its id, which must then be
    an accepted extra id (``unknown_category_id``). Results without names are returned as they are.

    Raises:
        DataError: naming ``file``, the entry, the field and the value: some results name their category and
            others do not, a name is not a string, names none of the split's categories or several of them.
    """
    from vision.evaluation.results import ResultsChecker

    named = next((i for i, r in enumerate(results) if isinstance(r, dict) and "category_name" in r), None)
    if named is None:
        return results
    c = ResultsChecker(file)
    unnamed = next((i for i, r in enumerate(results) if isinstance(r, dict) and "category_name" not in r), None)
    if unnamed is not None:
        raise c.fail(f"has no category_name while results[{named}] names its category: either every result "
                     "names its category or none does", f"results[{unnamed}]", results[unnamed])
    categories = [cat for cat in split.get("categories", []) if isinstance(cat, dict)]
    split_ids = {int(cat["id"]) for cat in categories}
    by_name: dict[str, list[int]] = {}
    for cat in categories:
        if isinstance(cat.get("name"), str):
            by_name.setdefault(_name_key(cat["name"]), []).append(int(cat["id"]))
    out = list(results)
    for i, r in enumerate(results):
        if not isinstance(r, dict):
            continue  # the validator refuses it, in its words
        field = f"results[{i}]"
        c.entry(r, field, ("category_id", "category_name"))
        category_id = c.int_(r["category_id"], f"{field}.category_id")
        name = c.str_(r["category_name"], f"{field}.category_name")
        key = _name_key(name)
        if key == UNKNOWN_NAME and category_id not in split_ids:
            continue  # a rejected object: its id is checked as an accepted extra id
        ids = by_name.get(key, [])
        if not ids:
            known = ", ".join(repr(cat["name"]) for cat in categories if isinstance(cat.get("name"), str))
            raise c.fail(f"category_name names none of the split's categories ({_shortened(known)}); results "
                         f"are scored under the split's ids of their names", f"{field}.category_name", name)
        if len(ids) > 1:
            raise c.fail(f"category_name names {len(ids)} of the split's categories (ids {sorted(ids)})",
                         f"{field}.category_name", name)
        if category_id != ids[0]:
            out[i] = {**r, "category_id": ids[0]}
    return out


def _shortened(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _checked_image(c: ResultsChecker, r: Any, field: str, images: dict[int, dict], categories: set[int]) -> dict:
    """Every check of one detection result but its segmentation, one by one, each error naming the field and
    the value; returns the split's image the result is on."""
    c.entry(r, field, ("image_id", "category_id", "bbox", "score"))
    image_id = c.int_(r["image_id"], f"{field}.image_id")
    if image_id not in images:
        raise c.fail("image_id is not in the split", f"{field}.image_id", image_id)
    category_id = c.int_(r["category_id"], f"{field}.category_id")
    if category_id not in categories:
        raise c.fail("category_id is not in the split's categories", f"{field}.category_id", category_id)
    c.bbox(r["bbox"], f"{field}.bbox")
    c.number(r["score"], f"{field}.score")
    return images[image_id]


def _plain_detection(r: Any, images: dict[int, dict], categories: set[int]) -> bool:
    """True when :func:`_checked_image` surely accepts result ``r`` (every check but the segmentation): exact
    JSON types (a dict; int ids of the split; a list of four finite int / float numbers, width and height >= 0; a
    finite score). False: the one-by-one checks decide and word the error."""
    if type(r) is not dict:
        return False
    image_id, category_id, bbox, score = r.get("image_id"), r.get("category_id"), r.get("bbox"), r.get("score")
    if (type(image_id) is not int or image_id not in images or type(category_id) is not int
            or category_id not in categories or type(bbox) is not list or len(bbox) != 4):
        return False
    for v in (*bbox, score):
        if type(v) is float:
            if not math.isfinite(v):
                return False
        elif type(v) is not int or v.bit_length() > 1023:
            return False
    return bbox[2] >= 0 and bbox[3] >= 0


def _category_ids(text: str) -> list[int] | str:
    """``--category-ids``: comma-separated ids, or ``vocabulary`` (the split's ``info.vocabulary``)."""
    return "vocabulary" if text.strip() == "vocabulary" else id_list(text)


def _default_processes() -> int:
    """2 where this process may run on two or more cores and the platform forks, else 1."""
    from vision.evaluation.fork import can_fork

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return 2 if cores > 1 and can_fork() else 1


def add_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--category-ids", type=_category_ids,
                       help="restrict AP to these ids (IV mAP), or 'vocabulary': the ids of the split's "
                            "info.vocabulary (the figures tools/train.py test prints)")
    group.add_argument("--extra-category-ids", type=id_list,
                       help="ids accepted in results besides the split's (e.g. oov)")
    group.add_argument("--unknown-category-id", type=int,
                       help="the id of rejected (OOV) detections; adds the open-set metrics")
    group.add_argument("--openset-convention", choices=("coco", "opendet2"),
                       help="how AP_U and WI are computed (default coco; opendet2: OpenDet2's evaluator)")
    group.add_argument("--processes", type=positive_int, default=None,
                       help="2 scores mask AP in a second process while box AP runs (default: 2 where this process "
                            "may use two or more cores and the platform forks, else 1)")


def options(args: argparse.Namespace, split: Path) -> dict[str, Any]:
    options = given(args, ("category_ids", "extra_category_ids", "unknown_category_id", "openset_convention"))
    options["processes"] = args.processes if args.processes is not None else _default_processes()
    return options


# The registry's fixed names (vision.tasks.PARTS)
score = score_detection
check_split = check_detection_parts
check_results = validate_detection_results
