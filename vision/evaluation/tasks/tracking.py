"""What ``vision-evaluate --task tracking`` runs: the tracking scorer (J&F, recalls, presence, 3D instance IoU),
its options and flags, the split check and the results validator. Torch-free; SciPy is imported by the scoring
modules when scoring."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from vision.evaluation.flags import PROTOCOLS, given, id_list

__all__ = ["OPTIONS", "BOX_OPTIONS", "score_tracking", "check_tracking_parts", "validate_tracking_results",
           "validate_box_track_results", "add_flags", "options", "score", "check_split", "check_results"]

#: the options :func:`score_tracking` takes
OPTIONS = frozenset({"protocol", "prompted_image_ids", "skip_first_and_last", "match_iou", "allow_unknown_tracks",
                     "tolerance", "split_root", "voxel_size", "presence_threshold"})


#: the options of ``protocol="boxes"`` (the others read masks)
BOX_OPTIONS = frozenset({"protocol", "presence_threshold", "split_root"})


def score_tracking(gt: dict, results: list, *, split_file: str | None = None, results_file: str | None = None,
                   **options: Any) -> dict:
    """J&F, recalls, presence and 3D instance IoU (:func:`vision.evaluation.tracking3d.evaluate_tracking_task`);
    with ``protocol="boxes"``, box tracks on labelled frames (:func:`vision.evaluation.box_tracks.
    evaluate_box_tracks`)."""
    if options.get("protocol") == "boxes":
        from vision.errors import InputError
        from vision.evaluation.box_tracks import evaluate_box_tracks

        mask_only = sorted(k for k, v in options.items() if k not in BOX_OPTIONS and v not in (None, False, ()))
        if mask_only:
            raise InputError(f"{', '.join(mask_only)} do(es) not apply to the boxes protocol (it scores box tracks "
                             f"on the labelled frames)")
        validate_box_track_results(results, gt, results_file, split_file=split_file)
        return evaluate_box_tracks(gt, results, presence_threshold=options.get("presence_threshold", 0.5))
    from vision.evaluation.tracking3d import evaluate_tracking_task

    validate_tracking_results(results, gt, results_file, split_file=split_file)
    return evaluate_tracking_task(gt, results, results_file=results_file, gt_file=split_file, **options)


def check_tracking_parts(dataset: Any, file: str | Path | None = None) -> None:
    """Tracking: ``images`` (also video_id, frame_index, annotated), ``videos`` and ``tracks`` (integer ids),
    ``annotations`` (image_id, track_id of a track of the image's video, at most one per track and image, RLE
    segmentations)."""
    from vision.data.checker import ScalarChecker
    from vision.data.schema import scored_images, scored_tracking_annotations

    c = ScalarChecker(None if file is None else str(file))
    c.dict_(dataset, "<top level>")
    scored_tracking_annotations(c, dataset, scored_images(c, dataset, annotated=True))


def validate_tracking_results(results: list, split: dict, file: str | None = None,
                              split_file: str | None = None) -> None:
    """Check the split (:func:`vision.data.schema.validate_scored_parts`, errors naming
    ``split_file``) and the tracking results in
    ``file`` against it: ids are integers, video_id and image_id exist, the image belongs to that video, the score
    is a finite number, the segmentation an RLE of exactly the image's pixels and ``prompt_type`` (optional) a
    string."""
    from vision.data.checker import check_rle
    from vision.data.schema_columns import DeferredRle
    from vision.evaluation.results import ResultsChecker

    check_tracking_parts(split, split_file)
    c = ResultsChecker(file)
    images = {int(img["id"]): img for img in split.get("images", [])}
    videos = {int(v["id"]) for v in split.get("videos") or []} | \
        {int(img["video_id"]) for img in images.values() if img.get("video_id") is not None}
    with DeferredRle(c, "results") as deferred:  # compressed RLE counts decoded in batches
        for i, r in enumerate(results):
            field = f"results[{i}]"
            c.entry(r, field, ("video_id", "track_id", "image_id", "segmentation", "score"))
            video_id = c.int_(r["video_id"], f"{field}.video_id")
            c.int_(r["track_id"], f"{field}.track_id")
            image_id = c.int_(r["image_id"], f"{field}.image_id")
            c.number(r["score"], f"{field}.score")
            if video_id not in videos:
                raise c.fail("video_id is not in the split", f"{field}.video_id", video_id)
            image = _image_of_video(c, images, image_id, video_id, field)
            if not deferred.offer(i, r["segmentation"], image["height"], image["width"]):
                check_rle(c, r["segmentation"], f"{field}.segmentation", image["height"], image["width"])
            if "prompt_type" in r:
                c.str_(r["prompt_type"], f"{field}.prompt_type")


def _image_of_video(c: Any, images: dict[int, dict], image_id: int, video_id: int, field: str) -> dict:
    """The split's image ``image_id`` of video ``video_id``; the checker's error naming ``field`` otherwise."""
    image = images.get(image_id)
    if image is None:
        raise c.fail("image_id is not in the split", f"{field}.image_id", image_id)
    if image.get("video_id") != video_id:
        raise c.fail(f"image {image_id} belongs to video {image.get('video_id')}, not to this video_id",
                     f"{field}.video_id", video_id)
    return image


def validate_box_track_results(results: list, split: dict, file: str | None = None,
                               split_file: str | None = None) -> None:
    """Check the split (:func:`check_tracking_parts`) and box-track results against it: each record
    ``{video_id, image_id, track_id, bbox, score}`` has integer ids, an image of that video in the split, a track of
    the split (of that video), ``bbox`` ``[x, y, w, h]`` finite with ``w, h >= 0``, a finite ``score`` and, when
    it has one, a ``segmentation`` RLE of exactly the image's pixels; one record per (track, image)."""
    from vision.data.checker import check_rle
    from vision.evaluation.results import ResultsChecker

    check_tracking_parts(split, split_file)
    c = ResultsChecker(file)
    images = {int(img["id"]): img for img in split.get("images", [])}
    tracks = {int(t["id"]): int(t["video_id"]) for t in split.get("tracks") or []}
    first: dict[tuple[int, int], int] = {}
    for i, r in enumerate(results):
        field = f"results[{i}]"
        c.entry(r, field, ("video_id", "image_id", "track_id", "bbox", "score"))
        video_id = c.int_(r["video_id"], f"{field}.video_id")
        image_id = c.int_(r["image_id"], f"{field}.image_id")
        track_id = c.int_(r["track_id"], f"{field}.track_id")
        c.number(r["score"], f"{field}.score")
        c.bbox(r["bbox"], f"{field}.bbox")
        image = _image_of_video(c, images, image_id, video_id, field)
        if "segmentation" in r:
            check_rle(c, r["segmentation"], f"{field}.segmentation", image["height"], image["width"])
        if tracks.get(track_id) != video_id:
            raise c.fail(f"track_id is not a track of video {video_id} in the split", f"{field}.track_id", track_id)
        key = (track_id, image_id)
        if key in first:
            raise c.fail(f"duplicate record for this (track_id, image_id) (first: results[{first[key]}])", field,
                         {"track_id": track_id, "image_id": image_id})
        first[key] = i


def add_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument("--prompted-image-ids", type=id_list, help="views to exclude (prompted)")
    group.add_argument("--skip-first-and-last", action="store_true",
                       help="drop the first and last frame (DAVIS semi-supervised protocol)")
    group.add_argument("--protocol", choices=PROTOCOLS,
                       help="which frames and objects J&F scores (default vos-benchmark); boxes: box tracks on the "
                            "labelled frames (success@0.5, mIoU, absent accuracy; vision/evaluation/box_tracks.py)")


def options(args: argparse.Namespace, split: Path) -> dict[str, Any]:
    options = given(args, ("prompted_image_ids", "protocol"))
    options["skip_first_and_last"] = args.skip_first_and_last
    try:  # the 3D figures read the split's depth files next to it
        options["split_root"] = str(split.resolve().parent)
    except (OSError, RuntimeError):  # a link loop: reading the split then reports it in one line
        options["split_root"] = str(split.absolute().parent)
    return options


# The registry's fixed names (vision.tasks.PARTS)
score = score_tracking
check_split = check_tracking_parts
check_results = validate_tracking_results
