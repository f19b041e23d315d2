"""Run a :class:`TrackerPredictor` over a COCO-format split and write COCO-video tracking results.

Protocol (used by the benchmark and ``make train``): in every video the prompt view is the first frame (by
``frame_index``); every track visible there is prompted with one prompt of the requested type drawn from its
ground-truth mask (point: the mask pixel closest to the mask's centroid; box: the mask's bounding box; mask: the
mask); text prompts use the track's caption and prompt every track of the video, with no prompted view.
Results carry ``prompt_type``; the returned ground truth keeps only the prompted tracks.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any

import numpy as np

from vision.data.coco import Split
from vision.data.masks import encode_mask
from vision.errors import InputError
from vision.tracking.predictor import TrackerPredictor
from vision.tracking.sampling import PROMPT_TYPES

__all__ = ["track_split", "central_point"]


def central_point(mask: np.ndarray) -> tuple[float, float]:
    """(x, y) of the mask pixel nearest to the mask's centroid (a point inside even for non-convex masks)."""
    ys, xs = np.nonzero(mask)
    cx, cy = xs.mean(), ys.mean()
    i = int(np.argmin((xs - cx) ** 2 + (ys - cy) ** 2))
    return float(xs[i]), float(ys[i])


def track_split(predictor: TrackerPredictor, split: Split, prompt_type: str,
                max_videos: int | None = None) -> tuple[list[dict], list[int], dict]:
    """Prompt and propagate every video of ``split``.

    Returns ``(results, prompted_image_ids, gt)``: COCO-video results tagged with ``prompt_type``, the ids of the
    prompted views, and a copy of the split's dict restricted to the prompted tracks (and their videos).
    """
    if prompt_type not in PROMPT_TYPES:
        raise InputError(f"prompt_type must be one of {PROMPT_TYPES}, got {prompt_type!r}")
    data = split.dataset
    images_by_video: dict[int, list[dict]] = defaultdict(list)
    for img in data["images"]:
        if img.get("video_id") is not None:
            images_by_video[int(img["video_id"])].append(img)
    anns = defaultdict(dict)
    for a in data["annotations"]:
        if a.get("track_id") is not None:
            anns[int(a["image_id"])][int(a["track_id"])] = a
    tracks_by_video: dict[int, list[dict]] = defaultdict(list)
    for t in data.get("tracks", []):
        tracks_by_video[int(t["video_id"])].append(t)
    results: list[dict] = []
    prompted_ids: list[int] = []
    kept_tracks: set[int] = set()
    videos = sorted(images_by_video)[: max_videos] if max_videos else sorted(images_by_video)
    for vid in videos:
        frames = sorted(images_by_video[vid], key=lambda im: (im.get("frame_index", 0), im["id"]))
        pixels = np.stack([split.load_image(im) for im in frames])
        state = predictor.init_state(pixels, ordered=True)
        first = frames[0]
        for t in tracks_by_video[vid]:
            tid = int(t["id"])
            if prompt_type == "text":
                predictor.add_prompt(state, None, tid, text=t.get("caption") or "object")
                kept_tracks.add(tid)
                continue
            ann = anns[int(first["id"])].get(tid)
            if ann is None:
                continue
            mask = split.annotation_mask(ann)
            if not mask.any():
                continue
            if prompt_type == "point":
                predictor.add_prompt(state, 0, tid, points=[central_point(mask)], labels=[1])
            elif prompt_type == "box":
                ys, xs = np.nonzero(mask)
                predictor.add_prompt(state, 0, tid, box=[xs.min(), ys.min(), xs.max() + 1, ys.max() + 1])
            else:
                predictor.add_prompt(state, 0, tid, mask=mask)
            kept_tracks.add(tid)
        if not state.prompts:
            continue
        if prompt_type != "text":
            prompted_ids.append(int(first["id"]))
        for view, obj_ids, masks, scores in predictor.propagate(state):
            img = frames[view]
            for oid, m, sc in zip(obj_ids, masks, scores):
                results.append({"video_id": vid, "track_id": int(oid), "image_id": int(img["id"]),
                                "segmentation": encode_mask(m), "score": float(sc), "prompt_type": prompt_type})
    gt = copy.deepcopy(data)
    gt["tracks"] = [t for t in gt.get("tracks", []) if int(t["id"]) in kept_tracks]
    gt["annotations"] = [a for a in gt["annotations"] if a.get("track_id") is None or int(a["track_id"]) in kept_tracks]
    keep_videos = {int(t["video_id"]) for t in gt["tracks"]}
    gt["videos"] = [v for v in gt.get("videos", []) if int(v["id"]) in keep_videos]
    gt["images"] = [im for im in gt["images"] if im.get("video_id") is not None and int(im["video_id"]) in keep_videos]
    kept_images = {int(im["id"]) for im in gt["images"]}
    gt["annotations"] = [a for a in gt["annotations"] if int(a["image_id"]) in kept_images]
    return results, prompted_ids, gt
