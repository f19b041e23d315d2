"""The tracking evaluation protocol: prompt every object of a video once, propagate, write COCO-video results.

One protocol for the training loop's validation / test / predict (:class:`~vision.tracking.lightning.
TrackingModule`), ``benchmarks/bench_tracking.py`` and anyone scoring a tracker on a split:

- Each video (or image set) is tracked whole, its frames in ``frame_index`` order, by a :class:`TrackerPredictor`
  built by :func:`protocol_predictor` (windows of :data:`WINDOW_SIZE` views, :data:`MAX_ANCHORS` anchor).
- Every track of the video is prompted once with one prompt of the requested type drawn from its ground truth on
  its first visible view (the first frame where its mask is non-empty): ``point``, the mask pixel nearest the mask's
  centroid (:func:`central_point`); ``box``, the mask's bounding box; ``mask``, the mask. A ``text`` prompt is the
  track's caption (else its category name), with no view, for every track of the video. Tracks never visible get
  no visual prompt (and are not scored).
- Results: one per (prompted track, frame): ``{video_id, track_id, image_id, segmentation (RLE at the image's
  size), score (presence probability), prompt_type}`` (:mod:`vision.tracking.results`). Nothing is random and
  nothing depends on which other videos are tracked alongside, so the figure does not depend on batches or ranks.
- Scoring (:func:`score_tracking`): ``vision.evaluation.evaluate(split, results, "tracking",
  **tracking_options(split))``: the split's folder as ``split_root`` (3D IoU where the split has cameras and depth),
  the vos-benchmark protocol over every frame, prompted frames included; figures per prompt type (``point/J&F``...)
  and their mean (``J&F``). It is what ``tools/evaluate.py --task tracking --split S --results R`` computes for the
  same results file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from vision.data.coco import Split
from vision.errors import InputError
from vision.tracking.predictor import TrackerPredictor
from vision.tracking.results import propagated_results
from vision.tracking.sampling import PROMPT_TYPES

__all__ = ["WINDOW_SIZE", "MAX_ANCHORS", "central_point", "protocol_predictor", "video_frames", "prompt_video",
           "set_split_geometry", "track_video", "track_split", "tracking_options", "score_tracking"]

#: views per predictor window and prompted views kept in every window, in the protocol
WINDOW_SIZE, MAX_ANCHORS = 8, 1


def central_point(mask: np.ndarray) -> tuple[float, float]:
    """(x, y) of the mask pixel nearest to the mask's centroid (a point inside even for non-convex masks)."""
    ys, xs = np.nonzero(mask)
    cx, cy = xs.mean(), ys.mean()
    i = int(np.argmin((xs - cx) ** 2 + (ys - cy) ** 2))
    return float(xs[i]), float(ys[i])


def protocol_predictor(model: Any, text_encoder: Callable | str | None, refine: bool | None = None,
                       presence_threshold: float = 0.5, device: Any = None,
                       solve_cameras: bool = False) -> TrackerPredictor:
    """The predictor of the protocol over ``model`` (a G2TAM or the control; ``refine``: G2TAM's second pass, None:
    the model's choice; ``solve_cameras``: G2TAM's memory on the camera solver's cameras; see
    :class:`TrackerPredictor`)."""
    return TrackerPredictor(model, text_encoder=text_encoder, window_size=WINDOW_SIZE, max_anchors=MAX_ANCHORS,
                            refine=refine, presence_threshold=presence_threshold, device=device,
                            solve_cameras=solve_cameras)


def video_frames(split: Split, video_id: int) -> list[dict]:
    """The image dicts of one video in ``frame_index`` order (ties by image id)."""
    if video_id not in split.images_by_video:
        raise InputError(f"video {video_id} is not in split {split.file}")
    return sorted(split.images_by_video[video_id], key=lambda im: (im.get("frame_index", 0), im["id"]))


def prompt_video(predictor: TrackerPredictor, state: Any, split: Split, video_id: int, frames: list[dict],
                 prompt_type: str) -> list[int]:
    """Add the protocol's prompt of ``prompt_type`` for every track of the video to ``state``; the prompted ids."""
    tracks = sorted(t for t, track in split.tracks.items() if int(track["video_id"]) == video_id)
    prompted = []
    for tid in tracks:
        if prompt_type == "text":
            track = split.tracks[tid]
            caption = track.get("caption") or split.categories[track["category_id"]]["name"]
            predictor.add_prompt(state, None, tid, text=caption)
            prompted.append(tid)
            continue
        for view, img in enumerate(frames):
            ann = next((a for a in split.annotations_by_image[img["id"]] if a.get("track_id") == tid), None)
            mask = split.annotation_mask(ann) if ann is not None else None
            if mask is None or not mask.any():
                continue
            if prompt_type == "point":
                predictor.add_prompt(state, view, tid, points=[central_point(mask)], labels=[1])
            elif prompt_type == "box":
                ys, xs = np.nonzero(mask)
                predictor.add_prompt(state, view, tid, box=[xs.min(), ys.min(), xs.max() + 1, ys.max() + 1])
            else:
                predictor.add_prompt(state, view, tid, mask=mask)
            prompted.append(tid)
            break
    return prompted


def set_split_geometry(predictor: TrackerPredictor, state: Any, split: Split, video_id: int,
                       frames: list[dict]) -> None:
    """Give ``state`` the split's ground-truth depth and cameras of ``frames`` (the oracle of the benchmarks;
    :meth:`TrackerPredictor.set_known_geometry`); an :class:`InputError` when an image has no camera."""
    cameras = [split.camera(im) for im in frames]
    if any(cam is None for cam in cameras):
        raise InputError(f"known_geometry needs a camera on every image of video {video_id} of {split.file}")
    predictor.set_known_geometry(state, np.stack([split.depth(im) for im in frames]),
                                 np.stack([cam[1] for cam in cameras]), np.stack([cam[0] for cam in cameras]))


def track_video(predictor: TrackerPredictor, split: Split, video_id: int, prompt_type: str,
                known_geometry: bool = False) -> list[dict]:
    """The protocol's results for one video and one prompt type (see the module docstring); [] when no track of
    the video gets a prompt. ``known_geometry``: the oracle, G2TAM tracks on the split's ground-truth depth and
    cameras instead of its backbone's point maps (:meth:`TrackerPredictor.set_known_geometry`)."""
    if prompt_type not in PROMPT_TYPES:
        raise InputError(f"prompt_type must be one of {PROMPT_TYPES}, got {prompt_type!r}")
    frames = video_frames(split, video_id)
    if not frames:
        return []
    state = predictor.init_state(np.stack([split.load_image(im) for im in frames]), ordered=True)
    if known_geometry:
        set_split_geometry(predictor, state, split, video_id, frames)
    if not prompt_video(predictor, state, split, video_id, frames, prompt_type):
        return []
    return propagated_results(predictor.propagate(state), video_id, [int(im["id"]) for im in frames], prompt_type)


def track_split(predictor: TrackerPredictor, split: Split, prompt_types: Sequence[str],
                max_videos: int | None = None, known_geometry: bool = False) -> list[dict]:
    """The protocol's results for every video of ``split`` (the first ``max_videos``) and every prompt type
    (``known_geometry``: see :func:`track_video`)."""
    videos = sorted(split.videos)[:max_videos] if max_videos else sorted(split.videos)
    return [r for kind in prompt_types for vid in videos
            for r in track_video(predictor, split, vid, kind, known_geometry)]


def tracking_options(split: str | Path) -> dict[str, Any]:
    """The protocol's options of ``evaluate(split, results, "tracking", ...)`` for the split file ``split``: its
    folder as ``split_root`` (the depth and cameras of 3D IoU), every frame scored (prompted ones included)."""
    return {"split_root": str(Path(split).resolve().parent), "skip_first_and_last": False}


def score_tracking(split: str | Path, results: list[dict]) -> dict[str, Any]:
    """Score the protocol's ``results`` against the split file ``split``: the figures of
    ``tools/evaluate.py --task tracking --split SPLIT`` (see the module docstring)."""
    from vision.evaluation.evaluate import evaluate

    return evaluate(split, results, "tracking", **tracking_options(split))
