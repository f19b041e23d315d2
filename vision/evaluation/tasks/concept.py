"""What ``vision-evaluate --task concept`` runs: the concept scorer (HOTA, video mask AP, SA-Co's figures), its
options and flags, the split check and the results validator. Torch-free; SciPy is imported by
:mod:`vision.evaluation.concept` when scoring."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from vision.evaluation.flags import finite_float, given

__all__ = ["OPTIONS", "score_concept", "check_concept_parts", "validate_concept_results", "add_flags", "options",
           "score", "check_split", "check_results"]

#: the options :func:`score_concept` takes
OPTIONS = frozenset({"score_threshold", "presence_threshold", "accept_iou"})


def score_concept(gt: dict, results: list, *, split_file: str | None = None, results_file: str | None = None,
                  **options: Any) -> dict:
    """HOTA, video mask AP and SA-Co's figures (:func:`vision.evaluation.concept.evaluate_concept`)."""
    from vision.evaluation.concept import evaluate_concept

    validate_concept_results(results, gt, results_file, split_file=split_file)
    return evaluate_concept(gt, results, gt_file=split_file, **options)


def check_concept_parts(dataset: Any, file: str | Path | None = None) -> None:
    """Concept: the tracking parts (:func:`check_tracking_parts`); the phrases, queries and exhaustiveness are
    read and checked by :func:`vision.evaluation.concept.concept_split`."""
    from vision.evaluation.tasks.tracking import check_tracking_parts

    check_tracking_parts(dataset, file)


#: The fields of a concept instance record that a presence record must not carry.
_INSTANCE_ONLY = ("track_id", "phrase", "segmentation", "bbox", "score", "prompt_type")


def validate_concept_results(results: list, split: dict, file: str | None = None,
                             split_file: str | None = None) -> None:
    """Check the split (:func:`check_concept_parts`, then its concept parts:
    :func:`vision.evaluation.concept.concept_split`; errors naming ``split_file``) and the concept results in
    ``file`` against it. Each record is one of:

    - an instance record ``{video_id, image_id, track_id, category_id, phrase, segmentation, bbox, score
      [, prompt_type]}``: the image belongs to that video, the category is a phrase queried on the video and
      ``phrase`` its name, the segmentation an RLE of the image's size, ``score`` in [0, 1]; one record per
      (video, track_id, image_id), and a track_id keeps one category_id within its video;
    - a presence record ``{video_id, image_id, category_id, presence}`` (none of the fields only instance records
      carry: track_id, phrase, segmentation, bbox, score, prompt_type): ``presence`` in [0, 1], the category
      queried on the video, one record per (image, category).

    Ids are any integers (the scorer ranks them); other keys are left alone, as in tracking results.
    """
    from vision.data.checker import check_rle
    from vision.data.schema_columns import DeferredRle
    from vision.evaluation.results import ResultsChecker
    from vision.evaluation.concept import concept_split  # the one reading of a split's concept parts

    check_concept_parts(split, split_file)
    gt = concept_split(split, split_file)
    c = ResultsChecker(file)
    images = {int(img["id"]): img for img in split.get("images", [])}
    first: dict[tuple, int] = {}  # (video, track, image) or (image, category) -> first record's index
    categories: dict[tuple[int, int], tuple[int, int]] = {}  # (video, track) -> (category, first record)
    with DeferredRle(c, "results") as deferred:
        for i, r in enumerate(results):
            field = f"results[{i}]"
            kind = "presence" if isinstance(r, dict) and "presence" in r else "instance"
            required = (("video_id", "image_id", "category_id", "presence") if kind == "presence" else
                        ("video_id", "image_id", "track_id", "category_id", "phrase", "segmentation", "bbox",
                         "score"))
            c.entry(r, field, required)
            video_id = c.int_(r["video_id"], f"{field}.video_id")
            image_id = c.int_(r["image_id"], f"{field}.image_id")
            category_id = c.int_(r["category_id"], f"{field}.category_id")
            if video_id not in gt.video_images:
                raise c.fail("video_id is not in the split", f"{field}.video_id", video_id)
            if image_id not in images:
                raise c.fail("image_id is not in the split", f"{field}.image_id", image_id)
            if image_id not in gt.video_images[video_id]:
                raise c.fail(f"image {image_id} belongs to video {images[image_id].get('video_id')}, not to this "
                             f"video_id", f"{field}.video_id", video_id)
            if category_id not in gt.phrases:
                raise c.fail("category_id is not in the split's categories", f"{field}.category_id", category_id)
            if category_id not in gt.queried[video_id]:
                raise c.fail(f"phrase {gt.phrases[category_id]!r} is not queried on video {video_id}",
                             f"{field}.category_id", category_id)
            if kind == "presence":
                for key in _INSTANCE_ONLY:  # a record of both kinds: which one was meant is unknown
                    if key in r:
                        raise c.fail(f"a presence record carries no {key} (only instance records do)",
                                     f"{field}.{key}", r[key])
                if not 0.0 <= c.number(r["presence"], f"{field}.presence") <= 1.0:
                    raise c.fail("presence must be in [0, 1]", f"{field}.presence", r["presence"])
                key = ("presence", image_id, category_id)
            else:
                track_id = c.int_(r["track_id"], f"{field}.track_id")
                if c.str_(r["phrase"], f"{field}.phrase") != gt.phrases[category_id]:
                    raise c.fail(f"phrase is not the name of category {category_id} "
                                 f"({gt.phrases[category_id]!r})", f"{field}.phrase", r["phrase"])
                c.bbox(r["bbox"], f"{field}.bbox")
                if not 0.0 <= c.number(r["score"], f"{field}.score") <= 1.0:
                    raise c.fail("score must be in [0, 1]", f"{field}.score", r["score"])
                if "prompt_type" in r:
                    c.str_(r["prompt_type"], f"{field}.prompt_type")
                known, at = categories.setdefault((video_id, track_id), (category_id, i))
                if known != category_id:
                    raise c.fail(f"track {track_id} of video {video_id} has category {known} in results[{at}]",
                                 f"{field}.category_id", category_id)
                image = images[image_id]
                if not deferred.offer(i, r["segmentation"], image["height"], image["width"]):
                    check_rle(c, r["segmentation"], f"{field}.segmentation", image["height"], image["width"])
                key = ("instance", video_id, track_id, image_id)
            if key in first:
                what = "(image_id, category_id)" if kind == "presence" else "(track_id, image_id)"
                raise c.fail(f"duplicate record for this {what} (first: results[{first[key]}])", field,
                             {k: r[k] for k in ("video_id", "image_id", "category_id", "track_id") if k in r})
            first[key] = i


def add_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--score-threshold", type=finite_float,
                       help="the score at which an instance counts for cgF1 / IL_MCC (default 0.5)")
    group.add_argument("--presence-threshold", type=finite_float,
                       help="the presence at which a presence record says present (default 0.5)")
    group.add_argument("--accept-iou", type=finite_float,
                       help="the mask IoU at which an instance covers an object outside the phrases (default 0.5)")


def options(args: argparse.Namespace, split: Path) -> dict[str, Any]:
    return given(args, ("score_threshold", "presence_threshold", "accept_iou"))


# The registry's fixed names (vision.tasks.PARTS)
score = score_concept
check_split = check_concept_parts
check_results = validate_concept_results
