"""Box tracks scored on labelled frames: success, mean IoU, the success curve's area, and whether a tracker says
"absent" where the object is out of view (``vision evaluate --task tracking --protocol boxes``).

Ground truth: a COCO-video split whose tracks carry ``bbox`` annotations (``[x, y, w, h]``, pixels) on the images
marked ``annotated: true`` (every image when no image carries the flag). On a scored image a track is *present*
when it has an annotation there, *absent* otherwise (the object is out of view or fully hidden). A track's first
annotated image, where the prompt is given, is not scored.

Results: ``{video_id, image_id, track_id, bbox, score[, segmentation]}`` records (validated by
:func:`vision.evaluation.tasks.tracking.validate_box_track_results`). A record with ``score >= presence_threshold``
says the object is there with that box; no record, or a lower score, says it is absent.

Figures (0-1; ``-1.0`` where undefined), first per track, then the mean over tracks (each track counts once, as
OTB's and GOT-10k's sequence averages do):

- ``success@0.5``: the share of the present frames where the tracker says present and the boxes' IoU is at least
  0.5 (a frame it calls absent counts as IoU 0);
- ``mIoU``: the mean IoU over the present frames (GOT-10k's average overlap, with absent calls as 0);
- ``success_auc``: the area under the success curve, the mean over the thresholds 0, 0.05, ..., 1 of the share of
  present frames with IoU above the threshold (OTB's success score; strictly above, as the OTB toolkit counts);
- ``absent_accuracy``: the share of the absent frames where the tracker says absent;
- ``after_event/success@0.5`` and ``after_event/mIoU``: the same on the present frames after the end of the
  video's first event (``videos[i].events``: ``{kind: exit | occlusion, first, last}`` frame indices), where a
  tracker must find the object again;
- ``J``, ``F`` and ``J&F``: on the scored frames whose annotation carries a ``segmentation`` (an RLE mask
  labelled by hand), the region similarity and the boundary F-measure (DAVIS's, tolerance 0.008 of the diagonal;
  :mod:`vision.evaluation.tracking`) of the record's mask: its ``segmentation`` RLE where it has one, else its box
  filled; empty where the tracker says absent. Per track the mean over its mask frames, then the mean over tracks;
  ``num_mask_frames`` counts them;
- ``<video name>/<figure>`` per track, ``num_tracks``, ``num_present_frames``, ``num_absent_frames``.

IoU is computed on continuous coordinates (``w * h`` areas, no +1 pixel), as the OTB and GOT-10k toolkits do.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

__all__ = ["SUCCESS_THRESHOLD", "AUC_THRESHOLDS", "box_iou_xywh", "evaluate_box_tracks"]

#: the IoU at which a frame counts as tracked
SUCCESS_THRESHOLD = 0.5
#: the thresholds of the success curve (OTB's 21)
AUC_THRESHOLDS = np.linspace(0.0, 1.0, 21)


def box_iou_xywh(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """IoU of boxes ``a [N, 4]`` and ``b [N, 4]`` (``[x, y, w, h]``, row by row) -> ``[N]``; 0 where the union is
    empty."""
    a, b = np.asarray(a, np.float64).reshape(-1, 4), np.asarray(b, np.float64).reshape(-1, 4)
    w = np.clip(np.minimum(a[:, 0] + a[:, 2], b[:, 0] + b[:, 2]) - np.maximum(a[:, 0], b[:, 0]), 0, None)
    h = np.clip(np.minimum(a[:, 1] + a[:, 3], b[:, 1] + b[:, 3]) - np.maximum(a[:, 1], b[:, 1]), 0, None)
    inter = w * h
    union = a[:, 2] * a[:, 3] + b[:, 2] * b[:, 3] - inter
    return np.where(union > 0, inter / np.where(union > 0, union, 1.0), 0.0)


def _figures(ious: np.ndarray, absent_said: np.ndarray) -> dict[str, float]:
    """The figures of one set of present-frame IoUs and absent-frame calls (True: said absent)."""
    out = {"success@0.5": -1.0, "mIoU": -1.0, "success_auc": -1.0}
    if len(ious):
        out["success@0.5"] = float(np.mean(ious >= SUCCESS_THRESHOLD))
        out["mIoU"] = float(np.mean(ious))
        out["success_auc"] = float(np.mean(ious[:, None] > AUC_THRESHOLDS[None, :]))
    out["absent_accuracy"] = float(np.mean(absent_said)) if len(absent_said) else -1.0
    return out


def _mask_of(record: tuple[float, list[float], dict | None] | None, height: int, width: int,
             presence_threshold: float) -> np.ndarray:
    """bool ``[H, W]``: a record's mask (its RLE, else its box filled), empty when it says absent or is missing."""
    from vision.data.masks import decode_rle

    mask = np.zeros((height, width), bool)
    if record is None or record[0] < presence_threshold:
        return mask
    if record[2] is not None:
        return decode_rle(record[2])
    x, y, w, h = record[1]
    x0, y0 = max(int(np.floor(x)), 0), max(int(np.floor(y)), 0)
    x1, y1 = min(int(np.ceil(x + w)), width), min(int(np.ceil(y + h)), height)
    mask[y0:y1, x0:x1] = True
    return mask


def _mean(values: list[float]) -> float:
    kept = [v for v in values if v >= 0]
    return float(np.mean(kept)) if kept else -1.0


def evaluate_box_tracks(gt: dict, results: list[dict], presence_threshold: float = 0.5) -> dict[str, Any]:
    """The figures of the module docstring for ``results`` on the split ``gt`` (both already validated)."""
    from vision.data.masks import decode_rle
    from vision.evaluation.tracking import boundary_f_measure, region_similarity

    images = {int(im["id"]): im for im in gt.get("images", [])}
    flagged = any("annotated" in im for im in images.values())
    scored = {i for i, im in images.items() if not flagged or im.get("annotated", False)}
    videos = {int(v["id"]): v for v in gt.get("videos") or []}
    boxes: dict[int, dict[int, list[float]]] = defaultdict(dict)  # track -> image -> box
    labelled_masks: dict[int, dict[int, dict]] = defaultdict(dict)  # track -> image -> RLE
    for ann in gt.get("annotations", []):
        if ann.get("track_id") is not None and int(ann["image_id"]) in scored:
            boxes[int(ann["track_id"])][int(ann["image_id"])] = ann["bbox"]
            if isinstance(ann.get("segmentation"), dict):
                labelled_masks[int(ann["track_id"])][int(ann["image_id"])] = ann["segmentation"]
    said: dict[tuple[int, int], tuple[float, list[float], dict | None]] = {}
    for r in results:
        key = (int(r["track_id"]), int(r["image_id"]))
        if key not in said or float(r["score"]) > said[key][0]:
            said[key] = (float(r["score"]), r["bbox"], r.get("segmentation"))
    frames_of: dict[int, list[int]] = defaultdict(list)  # video -> scored images in frame order
    for i in sorted(scored, key=lambda i: (images[i].get("video_id"), images[i].get("frame_index", 0))):
        if images[i].get("video_id") is not None:
            frames_of[int(images[i]["video_id"])].append(i)
    per_track: dict[str, dict[str, float]] = {}
    after: list[dict[str, float]] = []
    present_total = absent_total = mask_total = 0
    mask_figures: dict[str, dict[str, float]] = {}
    for track in sorted(gt.get("tracks") or [], key=lambda t: int(t["id"])):
        track_id, video_id = int(track["id"]), int(track["video_id"])
        labelled = frames_of.get(video_id, [])
        prompt = next((i for i in labelled if i in boxes[track_id]), None)
        events = videos.get(video_id, {}).get("events") or []
        event_end = min((int(e["last"]) for e in events), default=None)
        ious, absent_said, later = [], [], []
        for image_id in labelled:
            if image_id == prompt:
                continue
            score, box, _ = said.get((track_id, image_id), (-1.0, None, None))
            there = score >= presence_threshold
            if image_id in boxes[track_id]:
                iou = float(box_iou_xywh(box, boxes[track_id][image_id])[0]) if there else 0.0
                ious.append(iou)
                if event_end is not None and images[image_id].get("frame_index", 0) > event_end:
                    later.append(iou)
            else:
                absent_said.append(not there)
        name = str(videos.get(video_id, {}).get("name", f"track{track_id}"))
        per_track[name] = _figures(np.asarray(ious), np.asarray(absent_said, bool))
        j, f = [], []
        for image_id, rle in labelled_masks[track_id].items():
            if image_id == prompt:
                continue
            truth = decode_rle(rle)
            mask = _mask_of(said.get((track_id, image_id)), *truth.shape, presence_threshold)
            j.append(region_similarity(mask, truth))
            f.append(boundary_f_measure(mask, truth))
        if j:
            mask_figures[name] = {"J": float(np.mean(j)), "F": float(np.mean(f)),
                                  "J&F": float(np.mean(j) + np.mean(f)) / 2}
            per_track[name].update(mask_figures[name])
            mask_total += len(j)
        if later:
            after.append(_figures(np.asarray(later), np.zeros(0, bool)))
        present_total += len(ious)
        absent_total += len(absent_said)
    out: dict[str, Any] = {key: _mean([f[key] for f in per_track.values()])
                           for key in ("success@0.5", "mIoU", "success_auc", "absent_accuracy")}
    out["after_event/success@0.5"] = _mean([f["success@0.5"] for f in after])
    out["after_event/mIoU"] = _mean([f["mIoU"] for f in after])
    for key in ("J", "F", "J&F"):
        out[key] = _mean([f[key] for f in mask_figures.values()])
    out.update(num_tracks=len(per_track), num_present_frames=present_total, num_absent_frames=absent_total,
               num_mask_frames=mask_total, protocol="boxes")
    for name, figures in per_track.items():
        for key, value in figures.items():
            out[f"{name}/{key}"] = value
    return out
