"""Video object segmentation metrics (DAVIS J, F, J&F) and COCO-video tracking evaluation.

Definitions (see docs/metrics.md; they follow davis2017-evaluation and the PyPI ``vos-benchmark`` package):

- J (region similarity) = |M ∩ G| / |M ∪ G|, and 1 when both masks are empty.
- F (boundary measure): boundaries are the XOR of a mask with its east / south / south-east shifts (one pixel wide,
  offset half a pixel towards the origin); a boundary pixel matches when it lies within ``ceil(0.008 * diagonal)``
  pixels (disk dilation) of the other boundary; precision P and recall R of boundary pixels, F = 2PR / (P + R).
  Edge cases: no predicted and some GT boundary -> P=1, R=0; some predicted and no GT boundary -> P=0, R=1;
  neither -> P=R=1; F = 0 when P + R = 0.
- Per object: mean over its scored frames; J-Recall = fraction of frames with value > 0.5; decay = mean of the
  first quarter of frames minus mean of the last quarter (davis2017 binning). J&F = (mean J + mean F) / 2 over
  objects. Which frames and objects are scored is the protocol's (see :func:`evaluate_tracking`): by default
  vos-benchmark's, where an object is scored from its first appearance in ground truth or prediction.

Masks are boolean arrays ``[H, W]``. Every figure is on the 0-1 scale.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

import cv2
import numpy as np
from scipy.optimize import linear_sum_assignment

from vision.data.masks import decode_rle
from vision.errors import DataError, InputError
from vision.evaluation.flags import MASK_PROTOCOLS, PROTOCOLS

__all__ = [
    "region_similarity", "boundary_map", "boundary_f_measure", "sequence_statistics", "evaluate_sequence",
    "evaluate_tracking", "PROTOCOLS",
]


def region_similarity(pred: np.ndarray, gt: np.ndarray) -> float:
    """J: intersection over union of two boolean masks [H, W]; 1.0 when both are empty."""
    pred = np.asarray(pred, dtype=bool)
    gt = np.asarray(gt, dtype=bool)
    if pred.shape != gt.shape:
        raise ValueError(f"mask shapes differ: prediction {pred.shape}, ground truth {gt.shape}")
    union = int(np.count_nonzero(pred | gt))
    if union == 0:
        return 1.0
    return int(np.count_nonzero(pred & gt)) / union


def boundary_map(mask: np.ndarray) -> np.ndarray:
    """One-pixel-wide boundary [H, W] bool of a mask: pixels whose value differs from the east, south or
    south-east neighbour (outside the image counts as background), with the last row / column compared only
    along the image edge and the bottom-right pixel cleared, as in the DAVIS toolkit."""
    m = np.asarray(mask, dtype=bool)
    east = np.zeros_like(m)
    south = np.zeros_like(m)
    south_east = np.zeros_like(m)
    east[:, :-1] = m[:, 1:]
    south[:-1, :] = m[1:, :]
    south_east[:-1, :-1] = m[1:, 1:]
    boundary = (m ^ east) | (m ^ south) | (m ^ south_east)
    boundary[-1, :] = m[-1, :] ^ east[-1, :]
    boundary[:, -1] = m[:, -1] ^ south[:, -1]
    boundary[-1, -1] = False
    return boundary


def _disk(radius: int) -> np.ndarray:
    """Disk structuring element of the given radius: (2r+1, 2r+1) uint8 with x^2 + y^2 <= r^2."""
    offsets = np.arange(-radius, radius + 1)
    xx, yy = np.meshgrid(offsets, offsets)
    return (xx ** 2 + yy ** 2 <= radius ** 2).astype(np.uint8)


def boundary_f_measure(pred: np.ndarray, gt: np.ndarray, tolerance: float = 0.008) -> float:
    """F: boundary F-measure of two boolean masks [H, W].

    Args:
        tolerance: below 1 a fraction of the image diagonal (radius ``ceil(tolerance * hypot(H, W))``),
            otherwise a radius in pixels.
    """
    pred = np.asarray(pred, dtype=bool)
    gt = np.asarray(gt, dtype=bool)
    if pred.shape != gt.shape:
        raise ValueError(f"mask shapes differ: prediction {pred.shape}, ground truth {gt.shape}")
    radius = int(tolerance) if tolerance >= 1 else int(math.ceil(tolerance * math.hypot(*pred.shape)))
    pred_b = boundary_map(pred)
    gt_b = boundary_map(gt)
    n_pred = int(np.count_nonzero(pred_b))
    n_gt = int(np.count_nonzero(gt_b))
    if n_pred == 0 and n_gt == 0:
        return 1.0
    if n_pred == 0 or n_gt == 0:
        return 0.0  # (P, R) = (1, 0) or (0, 1) -> F = 0
    kernel = _disk(radius)
    pred_dil = cv2.dilate(pred_b.astype(np.uint8), kernel) > 0
    gt_dil = cv2.dilate(gt_b.astype(np.uint8), kernel) > 0
    precision = np.count_nonzero(pred_b & gt_dil) / n_pred
    recall = np.count_nonzero(gt_b & pred_dil) / n_gt
    if precision + recall == 0:
        return 0.0
    return float(2 * precision * recall / (precision + recall))


def sequence_statistics(values: Sequence[float]) -> tuple[float, float, float]:
    """(mean, recall, decay) of per-frame values as in davis2017-evaluation.

    recall = fraction of frames with value > 0.5; decay = mean of the first of four bins minus mean of the last,
    the bin edges being ``round(linspace(1, n, 5)) - 1`` with both ends of each bin included. Empty input gives NaN.
    """
    v = np.asarray(values, dtype=float)
    n = len(v)
    if n == 0:
        return float("nan"), float("nan"), float("nan")
    mean = float(v.mean())
    recall = float((v > 0.5).mean())
    edges = (np.round(np.linspace(1, n, 5) + 1e-10) - 1).astype(int)
    first = v[edges[0]: edges[1] + 1]
    last = v[edges[3]: edges[4] + 1]
    decay = float(first.mean() - last.mean())
    return mean, recall, decay


def evaluate_sequence(preds: Sequence[np.ndarray], gts: Sequence[np.ndarray], *, skip_first_and_last: bool = False,
                      tolerance: float = 0.008) -> dict:
    """J and F of one object over a sequence of frames.

    Args:
        preds, gts: per-frame boolean masks [H, W] of the object (same length; an empty mask where absent).
        skip_first_and_last: drop the first and the last frame (DAVIS semi-supervised protocol).

    Returns:
        ``{"J", "J_recall", "J_decay", "F", "F_recall", "F_decay", "J&F", "J_per_frame", "F_per_frame"}``.
    """
    if len(preds) != len(gts):
        raise ValueError(f"{len(preds)} predicted frames but {len(gts)} ground-truth frames")
    pairs = list(zip(preds, gts))
    if skip_first_and_last:
        pairs = pairs[1:-1]
    j = [region_similarity(p, g) for p, g in pairs]
    f = [boundary_f_measure(p, g, tolerance) for p, g in pairs]
    j_mean, j_recall, j_decay = sequence_statistics(j)
    f_mean, f_recall, f_decay = sequence_statistics(f)
    return {"J": j_mean, "J_recall": j_recall, "J_decay": j_decay, "F": f_mean, "F_recall": f_recall,
            "F_decay": f_decay, "J&F": (j_mean + f_mean) / 2, "J_per_frame": j, "F_per_frame": f}


def _rle_mask(rle: dict, height: int, width: int, file: str | None, field: str) -> np.ndarray:
    size = rle.get("size") if isinstance(rle, dict) else None
    if not (isinstance(size, (list, tuple)) and len(size) == 2 and [int(size[0]), int(size[1])] == [height, width]):
        raise DataError(f"RLE size does not match the image's [height, width] = [{height}, {width}]",
                        file=file, field=f"{field}.size", value=size)
    return decode_rle(rle)


def _check_ground_truth(gt: dict, file: str | None) -> None:
    """Raise a :class:`DataError` naming the field when the split lacks what tracking evaluation reads."""
    if not isinstance(gt, dict):
        raise DataError("a split must be a JSON object", file=file, value=type(gt).__name__)
    needs = {"images": ("id", "height", "width"), "annotations": ("image_id",), "tracks": ("id", "video_id")}
    for key, fields in needs.items():
        items = gt.get(key, [])
        if not isinstance(items, list):
            raise DataError(f"{key!r} must be a list", file=file, field=key, value=type(items).__name__)
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                raise DataError("expected an object", file=file, field=f"{key}[{i}]", value=item)
            for name in fields:
                if name not in item:
                    raise DataError(f"missing key {name!r}", file=file, field=f"{key}[{i}]")
    image_ids = {int(img["id"]) for img in gt.get("images", [])}
    for i, ann in enumerate(gt.get("annotations", [])):
        if ann.get("track_id") is not None and int(ann["image_id"]) not in image_ids:
            raise DataError("image_id is not in the split's images", file=file, field=f"annotations[{i}].image_id",
                            value=ann["image_id"])


def _scored_range(protocol: str, gt_present: list[bool], pred_present: list[bool]) -> range | None:
    """The frames (indices into the video's frame list) over which one ground-truth track is scored, or None
    when the protocol does not score it."""
    n = len(gt_present)
    if protocol == "davis2017":
        return range(1, n - 1) if n and gt_present[0] else None
    if not any(gt_present):
        return None
    start = next(t for t in range(n) if gt_present[t] or pred_present[t])
    return range(start, n)


def evaluate_tracking(gt: dict, results: list[dict], *, protocol: str = "vos-benchmark",
                      prompted_image_ids: Iterable[int] = (), skip_first_and_last: bool = False,
                      match_iou: float = 0.5, tolerance: float = 0.008, allow_unknown_tracks: bool = False,
                      results_file: str | None = None, gt_file: str | None = None) -> dict:
    """Evaluate COCO-video tracking results against a split's ground-truth tracks.

    Ground truth: ``videos``, ``images`` (with ``video_id``, ``frame_index``, ``height``, ``width``),
    ``annotations`` (with ``track_id`` and RLE ``segmentation``) and ``tracks`` (``id``, ``video_id``).
    Results: ``[{video_id, track_id, image_id, segmentation (RLE), score}]`` (validated beforehand, see
    :mod:`vision.evaluation.results`). Result tracks are matched to ground-truth tracks by ``track_id``.

    Frames: a video's frames are its images in ``frame_index`` order, less the images marked ``annotated: false``
    (frames without ground truth, as YouTube-VOS and MOSE label only some; scored only where labelled, as their
    servers do) and less ``prompted_image_ids`` (the views that carried the prompt; leaving them out gives our
    cross-view consistency, J&F over the unprompted views). The protocol then works on that list as if it were
    the whole video. A track is present in a frame when its mask
    there is non-empty; a missing annotation or result is an empty mask.

    J&F by ``protocol``:

    - ``"vos-benchmark"`` (default): PyPI ``vos-benchmark``'s ``VideoEvaluator`` with the same
      ``skip_first_and_last`` (which drops the first and the last frame first). A track is scored from the first
      frame where it is present in the ground truth or in the prediction to the last frame (frames after it
      leaves count, J = F = 1 where both masks are empty); frames before it appears are not scored. A track
      never present in the ground truth of those frames is not scored.
    - ``"davis2017"``: davis2017-evaluation's semi-supervised protocol: the tracks present in the first frame,
      each scored over frames [1:-1] (all of them, before and after any exit); tracks that enter later are not
      scored. ``skip_first_and_last`` does not apply (the protocol always drops those frames).

    Either way J and F are means over a track's scored frames, and the reported J, F (and recalls and decays) are
    means over scored tracks of all videos; J&F = (J + F) / 2.

    Matched mIoU (class-agnostic, IGGT-style): per video, the spatio-temporal IoU (summed over the evaluated
    frames: all frames for ``"vos-benchmark"`` unless ``skip_first_and_last``, frames [1:-1] for
    ``"davis2017"``) between every predicted track and every ground-truth track; Hungarian assignment maximising
    IoU; pairs with IoU >= ``match_iou`` are matches. ``matched_mIoU`` = mean IoU over matched pairs (0 if none),
    ``match_recall`` = matched GT tracks / GT tracks, ``mIoU`` = mean over GT tracks of the matched IoU (0 when
    unmatched).

    Returns:
        Scalars ``J, F, J&F, J_recall, J_decay, F_recall, F_decay`` (means over scored tracks; 0 without any),
        ``mIoU``, ``matched_mIoU``, ``match_recall``, ``num_tracks`` (scored), ``num_frames`` (scored track-frames),
        ``protocol`` and ``per_track``: a list of ``{track_id, video_id, J, F, J&F, num_frames, ...}``.
    """
    if protocol not in MASK_PROTOCOLS:
        raise InputError(f"unknown protocol {protocol!r}; expected one of {', '.join(MASK_PROTOCOLS)} (box tracks: "
                         f"score_tracking with protocol='boxes')")
    _check_ground_truth(gt, gt_file)
    images_by_video, image_by_id = _index_images(gt)
    track_video = _ground_truth_tracks(gt, image_by_id)
    gt_rle = _ground_truth_masks(gt, gt_file)
    pred_rle, pred_tracks_by_video = _predicted_masks(results, track_video, allow_unknown_tracks, results_file)
    video = _VideoFrames(images_by_video, {int(i) for i in prompted_image_ids},
                         skip_first_and_last and protocol == "vos-benchmark")
    masks = _Masks(gt_rle, pred_rle, gt_file, results_file)

    per_track, total_frames = _score_tracks(track_video, video, masks, protocol, tolerance)
    metrics: dict[str, Any] = {}
    for key in ("J", "F", "J_recall", "J_decay", "F_recall", "F_decay"):
        metrics[key] = float(np.mean([t[key] for t in per_track])) if per_track else 0.0
    metrics["J&F"] = (metrics["J"] + metrics["F"]) / 2

    matched_ious, n_gt_tracks = _matched_track_ious(track_video, pred_tracks_by_video, video, masks, protocol,
                                                    match_iou)
    metrics["matched_mIoU"] = float(np.mean(matched_ious)) if matched_ious else 0.0
    metrics["match_recall"] = len(matched_ious) / n_gt_tracks if n_gt_tracks else 0.0
    metrics["mIoU"] = float(np.sum(matched_ious)) / n_gt_tracks if n_gt_tracks else 0.0
    metrics["num_tracks"] = len(per_track)
    metrics["num_frames"] = total_frames
    metrics["protocol"] = protocol
    metrics["per_track"] = per_track
    return metrics


def _index_images(gt: dict) -> tuple[dict[int, list[dict]], dict[int, dict]]:
    """(video id -> its images in ``frame_index`` order (ties by id), image id -> image)."""
    images_by_video: dict[int, list[dict]] = defaultdict(list)
    image_by_id: dict[int, dict] = {}
    for img in gt.get("images", []):
        image_by_id[int(img["id"])] = img
        if img.get("video_id") is not None:
            images_by_video[int(img["video_id"])].append(img)
    for vid in images_by_video:
        images_by_video[vid].sort(key=lambda im: (im.get("frame_index", 0), im["id"]))
    return images_by_video, image_by_id


def _ground_truth_tracks(gt: dict, image_by_id: dict[int, dict]) -> dict[int, int]:
    """track id -> video id, from the split's ``tracks`` (or, without that list, from its annotations)."""
    tracks = gt.get("tracks")
    if tracks is None:  # derive tracks from the annotations when the split has no "tracks" list
        seen: dict[int, int] = {}
        for ann in gt.get("annotations", []):
            video_id = image_by_id[int(ann["image_id"])].get("video_id") if ann.get("track_id") is not None else None
            if video_id is not None:
                seen.setdefault(int(ann["track_id"]), int(video_id))
        tracks = [{"id": t, "video_id": v} for t, v in sorted(seen.items())]
    return {int(t["id"]): int(t["video_id"]) for t in tracks}


def _ground_truth_masks(gt: dict, file: str | None) -> dict[tuple[int, int], tuple[dict, str]]:
    """(track_id, image_id) -> (RLE, field) of every tracked annotation. Tracking is scored on masks: a tracked
    annotation without a segmentation (a box-only split) is a :class:`DataError`, not an empty mask, and a split
    without any tracked annotation has nothing to score."""
    gt_rle: dict[tuple[int, int], tuple[dict, str]] = {}
    for i, ann in enumerate(gt.get("annotations", [])):
        if ann.get("track_id") is None:
            continue
        if not isinstance(ann.get("segmentation"), dict):
            raise DataError("a tracked annotation needs an RLE segmentation: tracking is scored on masks (J, F), "
                            "and a box alone cannot be scored", file=file, field=f"annotations[{i}].segmentation",
                            value=ann.get("segmentation"))
        gt_rle[(int(ann["track_id"]), int(ann["image_id"]))] = (ann["segmentation"], f"annotations[{i}]")
    if not gt_rle:
        raise DataError("the split has no tracked annotations (none carries a track_id): nothing to score",
                        file=file, field="annotations")
    return gt_rle


def _predicted_masks(results: list[dict], track_video: dict[int, int], allow_unknown_tracks: bool,
                     results_file: str | None) -> tuple[dict[tuple[int, int], tuple[dict, str]], dict[int, set[int]]]:
    """(track_id, image_id) -> (RLE, field) of every result, and video id -> its predicted track ids; duplicates,
    a track in another video than its ground truth's, and unknown tracks (unless allowed) are errors."""
    pred_rle: dict[tuple[int, int], tuple[dict, str]] = {}
    pred_tracks_by_video: dict[int, set[int]] = defaultdict(set)
    for i, r in enumerate(results):
        key = (int(r["track_id"]), int(r["image_id"]))
        field = f"results[{i}]"
        if key in pred_rle:
            raise DataError("duplicate prediction for the same (track_id, image_id)", file=results_file,
                            field=field, value={"track_id": key[0], "image_id": key[1]})
        vid = int(r["video_id"])
        if key[0] in track_video and track_video[key[0]] != vid:
            raise DataError(f"track {key[0]} belongs to video {track_video[key[0]]}", file=results_file,
                            field=f"{field}.video_id", value=vid)
        if key[0] not in track_video and not allow_unknown_tracks:
            raise DataError("track_id is not a ground-truth track of the split (pass allow_unknown_tracks=True "
                            "to score such tracks only in the matched mIoU)", file=results_file,
                            field=f"{field}.track_id", value=key[0])
        pred_rle[key] = (r["segmentation"], field)
        pred_tracks_by_video[vid].add(key[0])
    return pred_rle, pred_tracks_by_video


class _VideoFrames:
    """The frames a video is evaluated on: its annotated images (an image with ``annotated: false`` has no ground
    truth, e.g. YouTube-VOS's unlabelled frames) less the prompted views and, when ``skip_first_and_last``, the
    first and the last of those."""

    def __init__(self, images_by_video: dict[int, list[dict]], prompted: set[int], skip_first_and_last: bool) -> None:
        self.images_by_video, self.prompted, self.skip = images_by_video, prompted, skip_first_and_last

    def __call__(self, video_id: int) -> list[dict]:
        frames = [im for im in self.images_by_video.get(video_id, [])
                  if int(im["id"]) not in self.prompted and im.get("annotated", True) is not False]
        return frames[1:-1] if self.skip else frames


class _Masks:
    """Decoded masks of ground truth and results; a missing entry is an empty mask of the image's size."""

    def __init__(self, gt_rle: dict, pred_rle: dict, gt_file: str | None, results_file: str | None) -> None:
        self.tables = {"gt": (gt_rle, gt_file), "pred": (pred_rle, results_file)}

    def __call__(self, which: str, key: tuple[int, int], img: dict) -> np.ndarray:
        table, file = self.tables[which]
        h, w = int(img["height"]), int(img["width"])
        entry = table.get(key)
        if entry is None:
            return np.zeros((h, w), dtype=bool)
        rle, field = entry
        return _rle_mask(rle, h, w, file, f"{field}.segmentation")


def _score_tracks(track_video: dict[int, int], video: _VideoFrames, masks: _Masks, protocol: str,
                  tolerance: float) -> tuple[list[dict], int]:
    """J and F of every ground-truth track the protocol scores: (per-track records, scored track-frames)."""
    per_track = []
    total_frames = 0
    for track_id, video_id in sorted(track_video.items()):
        frames = video(video_id)
        preds = [masks("pred", (track_id, int(im["id"])), im) for im in frames]
        gts = [masks("gt", (track_id, int(im["id"])), im) for im in frames]
        scored = _scored_range(protocol, [bool(g.any()) for g in gts], [bool(p.any()) for p in preds])
        if not scored:
            continue
        scores = evaluate_sequence([preds[t] for t in scored], [gts[t] for t in scored], tolerance=tolerance)
        total_frames += len(scored)
        per_track.append({"track_id": track_id, "video_id": video_id, "num_frames": len(scored),
                          "first_frame_index": frames[scored[0]].get("frame_index"),
                          **{k: v for k, v in scores.items() if not k.endswith("per_frame")}})
    return per_track, total_frames


def _matched_track_ious(track_video: dict[int, int], pred_tracks_by_video: dict[int, set[int]],
                        video: _VideoFrames, masks: _Masks, protocol: str,
                        match_iou: float) -> tuple[list[float], int]:
    """Hungarian matching on spatio-temporal IoU, per video: (IoUs of the matched pairs, ground-truth tracks)."""
    matched_ious: list[float] = []
    n_gt_tracks = 0
    for video_id in sorted(set(track_video.values()) | set(pred_tracks_by_video)):
        gt_ids = sorted(t for t, v in track_video.items() if v == video_id)
        pr_ids = sorted(pred_tracks_by_video.get(video_id, set()))
        n_gt_tracks += len(gt_ids)
        if not gt_ids or not pr_ids:
            continue
        frames = video(video_id)
        if protocol == "davis2017":
            frames = frames[1:-1]
        inter = np.zeros((len(pr_ids), len(gt_ids)))
        pr_area = np.zeros(len(pr_ids))
        gt_area = np.zeros(len(gt_ids))
        for im in frames:
            iid = int(im["id"])
            p = np.stack([masks("pred", (t, iid), im).ravel() for t in pr_ids]).astype(np.float32)
            g = np.stack([masks("gt", (t, iid), im).ravel() for t in gt_ids]).astype(np.float32)
            inter += p @ g.T
            pr_area += p.sum(axis=1)
            gt_area += g.sum(axis=1)
        union = pr_area[:, None] + gt_area[None, :] - inter
        iou = np.where(union > 0, inter / np.maximum(union, 1), 0.0)
        rows, cols = linear_sum_assignment(iou, maximize=True)
        matched_ious.extend(float(iou[r, c]) for r, c in zip(rows, cols) if iou[r, c] >= match_iou)
    return matched_ious, n_gt_tracks
