"""Tracking evaluation for G2TAM: J / F / J&F (DAVIS), presence accuracy, 3D instance IoU, per prompt type.

Definitions (ours; also in docs/metrics.md):

- J, F, J&F, matched mIoU: :func:`vision.evaluation.tracking.evaluate_tracking` over the frames of each video
  except ``prompted_image_ids`` (on unordered sets this is cross-view consistency: J&F over the unprompted views),
  by its ``protocol`` (default ``"vos-benchmark"``: each track from its first appearance in ground truth or
  prediction).
- Presence accuracy: over every (track, unprompted frame of its video) pair, whatever the J&F protocol, the object
  counts as predicted present when a result exists with ``score >= presence_threshold`` and a non-empty mask, and as
  truly present when its ground-truth mask is non-empty; accuracy = fraction of pairs where the two agree.
- 3D instance IoU: every ground-truth and predicted mask pixel with valid ground-truth depth is lifted to world
  coordinates with the split's depth and cameras (OpenCV, camera-from-world) and quantised to voxels of side
  ``voxel_size`` (metres); per track, IoU of the sets of occupied voxels over its evaluated frames; the figure is
  the mean over tracks whose ground truth occupies at least one voxel. It is computed only when ``split_root`` is
  given (the folder the split's ``depth_file`` paths are relative to) and the split has cameras and depth (some
  image with a ``camera`` and some with a ``depth_file``); plain COCO-video splits get J&F without ``iou3d``. In a
  split with cameras, an evaluated image without one is an error.
- Per prompt type: results may carry a ``prompt_type`` key (``point``, ``box``, ``mask``, ``text``...). Each type
  is scored on its own (``prompted_image_ids`` may then be a dict type -> ids) and reported as ``<type>/<metric>``;
  the unprefixed figures are the means over types.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from vision.data.masks import decode_rle
from vision.errors import DataError
from vision.evaluation.tracking import evaluate_tracking

__all__ = ["presence_accuracy", "instance_iou_3d", "has_cameras_and_depth", "evaluate_tracking_task"]

_SCALARS = ("J", "F", "J&F", "J_recall", "F_recall", "matched_mIoU", "presence_accuracy", "iou3d")


def _index(gt: dict, results: list[dict], prompted: set[int]):
    frames_by_video: dict[int, list[dict]] = defaultdict(list)
    for img in gt.get("images", []):
        if img.get("video_id") is not None and int(img["id"]) not in prompted:
            frames_by_video[int(img["video_id"])].append(img)
    gt_rle = {(int(a["track_id"]), int(a["image_id"])): a["segmentation"] for a in gt.get("annotations", [])
              if a.get("track_id") is not None and a.get("segmentation")}
    pred = {(int(r["track_id"]), int(r["image_id"])): r for r in results}
    tracks = gt.get("tracks")
    if tracks is None:
        images = {int(i["id"]): i for i in gt.get("images", [])}
        seen = {}
        for a in gt.get("annotations", []):
            if a.get("track_id") is not None:
                seen.setdefault(int(a["track_id"]), int(images[int(a["image_id"])]["video_id"]))
        tracks = [{"id": t, "video_id": v} for t, v in seen.items()]
    return frames_by_video, gt_rle, pred, [(int(t["id"]), int(t["video_id"])) for t in tracks]


def presence_accuracy(gt: dict, results: list[dict], prompted_image_ids: Iterable[int] = (),
                      presence_threshold: float = 0.5) -> float:
    """Fraction of (track, unprompted frame) pairs whose predicted presence matches the ground truth (see the
    module docstring); NaN when there is no pair."""
    frames_by_video, gt_rle, pred, tracks = _index(gt, results, {int(i) for i in prompted_image_ids})
    agree = total = 0
    for track_id, video_id in tracks:
        for img in frames_by_video.get(video_id, []):
            key = (track_id, int(img["id"]))
            truth = key in gt_rle and bool(decode_rle(gt_rle[key]).any())
            r = pred.get(key)
            guess = r is not None and float(r["score"]) >= presence_threshold and bool(
                decode_rle(r["segmentation"]).any())
            agree += int(truth == guess)
            total += 1
    return agree / total if total else float("nan")


def _lift(mask: np.ndarray, depth: np.ndarray, k: np.ndarray, extrinsics: np.ndarray) -> np.ndarray:
    """World points [P, 3] of mask pixels with depth > 0 (pixel (x, y) -> ray K^-1 [x, y, 1])."""
    ys, xs = np.nonzero(mask & (depth > 0))
    z = depth[ys, xs].astype(np.float64)
    rays = np.linalg.inv(k.astype(np.float64)) @ np.stack([xs, ys, np.ones_like(xs)]).astype(np.float64)
    cam = rays * z
    r, t = extrinsics[:, :3].astype(np.float64), extrinsics[:, 3].astype(np.float64)
    return (r.T @ (cam - t[:, None])).T


def instance_iou_3d(gt: dict, results: list[dict], split_root: Any, prompted_image_ids: Iterable[int] = (),
                    voxel_size: float = 0.05, presence_threshold: float = 0.0,
                    gt_file: str | None = None) -> dict[str, Any]:
    """3D instance IoU per track and its mean (see the module docstring).

    Returns ``{"iou3d": mean (NaN if no track), "per_track": {track_id: iou}}``. Raises :class:`DataError`
    when an evaluated image has no camera.
    """
    from vision.data.coco import Split

    if voxel_size <= 0:
        raise DataError("voxel_size must be positive", field="voxel_size", value=voxel_size)
    split = Split.from_dict(gt, split_root, check_files=False, file=gt_file)
    frames_by_video, gt_rle, pred, tracks = _index(gt, results, {int(i) for i in prompted_image_ids})
    cache: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    per_track: dict[int, float] = {}
    for track_id, video_id in tracks:
        g_vox: set = set()
        p_vox: set = set()
        for img in frames_by_video.get(video_id, []):
            iid = int(img["id"])
            key = (track_id, iid)
            r = pred.get(key)
            has_pred = r is not None and float(r["score"]) >= presence_threshold
            if key not in gt_rle and not has_pred:
                continue
            if iid not in cache:
                cam = split.camera(img)
                if cam is None:
                    raise DataError("image has no camera: 3D IoU needs cameras and depth", file=gt_file,
                                    field=f"images[id={iid}].camera")
                cache[iid] = (split.depth(img), cam[0], cam[1])
            depth, k, ext = cache[iid]
            if key in gt_rle:
                g_vox.update(map(tuple, np.floor(_lift(decode_rle(gt_rle[key]), depth, k, ext) / voxel_size)
                                 .astype(np.int64)))
            if has_pred:
                p_vox.update(map(tuple, np.floor(_lift(decode_rle(r["segmentation"]), depth, k, ext) / voxel_size)
                                 .astype(np.int64)))
        if g_vox:
            per_track[track_id] = len(g_vox & p_vox) / len(g_vox | p_vox)
    return {"iou3d": float(np.mean(list(per_track.values()))) if per_track else float("nan"),
            "per_track": per_track}


def has_cameras_and_depth(gt: dict) -> bool:
    """Whether the split carries the geometry 3D IoU needs: some image with a camera and some with a depth file."""
    images = [img for img in gt.get("images", []) if isinstance(img, dict)]
    return any(img.get("camera") is not None for img in images) and any("depth_file" in img for img in images)


def _one(gt: dict, results: list[dict], prompted: list[int], split_root: Any, voxel_size: float,
         presence_threshold: float, gt_file: str | None, options: dict) -> dict[str, Any]:
    clean = [{k: v for k, v in r.items() if k != "prompt_type"} for r in results]
    metrics = evaluate_tracking(gt, clean, prompted_image_ids=prompted, gt_file=gt_file, **options)
    metrics["presence_accuracy"] = presence_accuracy(gt, clean, prompted, presence_threshold)
    if split_root is not None and has_cameras_and_depth(gt):
        metrics["iou3d"] = instance_iou_3d(gt, clean, split_root, prompted, voxel_size, gt_file=gt_file)["iou3d"]
    return metrics


def evaluate_tracking_task(gt: dict, results: list, *, prompted_image_ids: Any = (), split_root: Any = None,
                           voxel_size: float = 0.05, presence_threshold: float = 0.5, gt_file: str | None = None,
                           **options: Any) -> dict[str, Any]:
    """Score G2TAM-style tracking results (COCO-video results, optionally tagged with ``prompt_type``).

    Args:
        gt: the split dict. results: ``[{video_id, track_id, image_id, segmentation, score[, prompt_type]}]``.
        prompted_image_ids: ids excluded from scoring (a list, or a dict prompt type -> list).
        split_root: folder of the split JSON (enables 3D IoU on splits with cameras and depth). voxel_size: metres.
        presence_threshold: on score.
        **options: passed to :func:`evaluate_tracking` (``protocol``, ``skip_first_and_last``, ``match_iou``,
            ``tolerance``, ``allow_unknown_tracks``, ``results_file``).

    Returns:
        Flat dict: ``J, F, J&F, J_recall, F_recall, matched_mIoU, presence_accuracy`` (+ ``iou3d``), ``protocol``
        and, when results carry prompt types, ``<type>/<metric>`` for each type plus ``prompt_types`` (the list).
    """
    if not isinstance(results, list):
        raise DataError("results must be a list", value=type(results).__name__)
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        groups[str(r.get("prompt_type", ""))].append(r)
    if not groups:
        groups[""] = []

    def prompted_for(kind: str) -> list[int]:
        if isinstance(prompted_image_ids, dict):
            return [int(i) for i in prompted_image_ids.get(kind, [])]
        return [int(i) for i in prompted_image_ids]

    out: dict[str, Any] = {}
    per_type = {kind: _one(gt, rs, prompted_for(kind), split_root, voxel_size, presence_threshold, gt_file, options)
                for kind, rs in sorted(groups.items())}
    for key in _SCALARS:
        values = [m[key] for m in per_type.values() if key in m]
        if values:
            out[key] = float(np.mean(values))
    kinds = [k for k in per_type if k]
    if kinds:
        out["prompt_types"] = kinds
        for kind in kinds:
            for key in _SCALARS:
                if key in per_type[kind]:
                    out[f"{kind}/{key}"] = per_type[kind][key]
    out["num_tracks"] = int(sum(m["num_tracks"] for m in per_type.values()))
    out["protocol"] = next(iter(per_type.values()))["protocol"]
    return out
