"""Two baselines of concept tracking (every instance of a phrase, with ids, across a video or a view set), built from
the package's detector and tracker as a practitioner would without the concept tracker; both write the concept
results of :mod:`vision.concept.records`.

(a) :func:`detect_then_track`: the OOV detector (:class:`~vision.detection.predictor.DetectorPredictor`, its
    vocabulary the video's phrases) on every view in ``frame_index`` order; ByteTrack (``trackers``' ByteTrackTracker,
    the ByteTrack that ``supervision`` moved to Roboflow's ``trackers`` package) links the boxes of each phrase from
    view to view; G2TAM (:class:`~vision.tracking.predictor.TrackerPredictor`) turns each tracked box into a mask, the
    box given as a box prompt on its own view and the mask of that view kept (:func:`box_masks`). A record's score
    is its detection's confidence; the presence of a phrase on a view is its best detection score there (0 without
    one). ByteTrack is 2D: it links boxes by their overlap with a motion-predicted box, so it cannot follow an object
    across the jumps of an unordered view set; it drops low-score boxes that continue no track and boxes of a track
    seen on one view only, by design.
(b) :func:`text_prompt_tracker`: the tracker's single-object text prompt, one object per phrase
    (``add_prompt(state, None, obj_id, text=phrase)``), propagated over the video: one instance per phrase at most.
    A record per view where its mask is non-empty, scored by the presence probability; the presence of the phrase
    on a view is that probability.

:func:`run_baseline` runs one of them on every video of a split with the phrases queried on each video
(:func:`vision.concept.records.queried_phrases`). ``benchmarks/concept_baselines.py`` times them and writes their
results. ByteTrack comes from the ``dev`` extra (``pip install -e .[dev]``): the package itself does not need it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch

from vision.concept.records import presence_record, queried_phrases, view_records
from vision.data.coco import Split, load_split
from vision.data.resize import resize_nearest
from vision.detection.predictor import DetectorPredictor
from vision.device import autocast
from vision.errors import InputError
from vision.text.user_text import check_text
from vision.tracking.inference import video_frames
from vision.tracking.predictor import TrackerPredictor
from vision.tracking.propagation import WindowDecoder

__all__ = ["BASELINES", "track_boxes", "box_masks", "detect_then_track", "text_prompt_tracker", "run_baseline"]

#: the baselines' names (:func:`run_baseline`)
BASELINES = ("detect_then_track", "text_prompt")


def _check_phrases(phrases: dict[int, str]) -> list[int]:
    """The category ids of ``phrases`` ``{category id: phrase}``, sorted; InputError for an empty phrase."""
    for cid, phrase in phrases.items():
        check_text(phrase, f"the phrase of category {cid}")
    return sorted(int(c) for c in phrases)


def _video(split: Split, video_id: int) -> tuple[list[dict], np.ndarray, bool]:
    """The video's image dicts in ``frame_index`` order, their pixels uint8 ``[T, H, W, 3]`` and its ``ordered``."""
    frames = video_frames(split, video_id)
    if not frames:
        return [], np.zeros((0, 1, 1, 3), np.uint8), True
    return frames, np.stack([split.load_image(im) for im in frames]), bool(split.videos[video_id].get("ordered", True))


def track_boxes(boxes: Sequence[np.ndarray], scores: Sequence[np.ndarray], *, frame_rate: float = 30.0,
                lost_track_buffer: int = 30, track_activation_threshold: float = 0.6,
                high_conf_det_threshold: float = 0.5, minimum_iou_threshold: float = 0.2,
                minimum_consecutive_frames: int = 2) -> list[np.ndarray]:
    """ByteTrack over one sequence of views: ``boxes[t]`` float ``[n_t, 4]`` XYXY pixels and ``scores[t]`` ``[n_t]``
    of view ``t`` -> the track id of each box per view, int64 ``[n_t]``, ids 0, 1, ... (-1: the box continues or
    starts no track).

    The settings are ByteTrack's (Zhang et al. 2022; defaults the paper's MOT17 ones): boxes scoring at least
    ``high_conf_det_threshold`` are matched first, the others only continue tracks left unmatched; a new track
    starts from an unmatched box scoring at least ``track_activation_threshold`` and gets its id once matched on
    ``minimum_consecutive_frames`` consecutive views; a box matches a track's predicted box when their IoU is at
    least ``minimum_iou_threshold``; a lost track is kept ``lost_track_buffer`` frames at 30 fps, scaled by
    ``frame_rate`` (views per second).

    ByteTrack returns a track's first view with id -1 (the track is not confirmed yet); these baselines see the
    whole video, so that box is given the id its track is confirmed with later (a track is never charged a missed
    first view). Boxes that never reach a confirmed track keep -1."""
    import supervision as sv
    from trackers import ByteTrackTracker

    if len(boxes) != len(scores):
        raise InputError(f"track_boxes needs one score array per view: {len(boxes)} box arrays, {len(scores)}")
    tracker = ByteTrackTracker(lost_track_buffer=lost_track_buffer, frame_rate=frame_rate,
                               track_activation_threshold=track_activation_threshold,
                               minimum_consecutive_frames=minimum_consecutive_frames,
                               minimum_iou_threshold=minimum_iou_threshold,
                               high_conf_det_threshold=high_conf_det_threshold)
    ids: list[np.ndarray] = []
    births: list[tuple[int, int, Any]] = []  # (view, box index, the tracklet the box started)
    for t, (b, s) in enumerate(zip(boxes, scores)):
        b = np.asarray(b, np.float32).reshape(-1, 4)
        s = np.asarray(s, np.float32).reshape(-1)
        if len(b) != len(s):
            raise InputError(f"view {t}: {len(b)} boxes and {len(s)} scores")
        before = {id(track) for track in tracker.tracks}
        out = tracker.update(sv.Detections(xyxy=b, confidence=s, data={"index": np.arange(len(b))}))
        view_ids = np.full(len(b), -1, np.int64)
        if len(out):
            view_ids[out.data["index"]] = out.tracker_id
        ids.append(view_ids)
        for track in tracker.tracks:  # the tracks started on this view, each from one of its unmatched boxes
            if id(track) not in before:
                start = track.get_state_bbox()
                free = np.flatnonzero(view_ids < 0)
                births.append((t, int(free[np.abs(b[free] - start).sum(axis=1).argmin()]), track))
    for t, i, track in births:
        ids[t][i] = int(track.tracker_id)  # -1 when the track was never confirmed
    return ids


def box_masks(tracker: TrackerPredictor, frames: np.ndarray, boxes: dict[int, np.ndarray],
              ordered: bool = True) -> dict[int, np.ndarray]:
    """Masks of box prompts, each decoded on the view of its box: ``frames`` uint8 ``[T, H, W, 3]``, ``boxes``
    ``{view: float [n, 4] XYXY pixels of frames}`` -> ``{view: bool [n, H, W]}`` for the views with boxes.

    One tracker state for the frames: the views are encoded window by window (``tracker.window_size`` consecutive
    views, only windows holding a box), and all boxes of a view are decoded together on that view alone; each box
    is its own object (no memory carried between views). The tracker's presence gate is off: the detector decided
    that the object is there, the box prompt only draws its mask (as a box prompt to SAM). Boxes are clipped to the
    image; the masks have the frames' size."""
    views = sorted(v for v, b in boxes.items() if len(b))
    if not views:
        return {}
    state = tracker.init_state(frames, ordered=ordered)
    height, width = state.height, state.width
    decoder = WindowDecoder(tracker.model, tracker.device, mask_threshold=tracker.mask_threshold,
                            presence_threshold=0.0, memory_points=tracker.memory_points, refine=False,
                            object_bucket=tracker.object_bucket)
    limit = np.array([width, height, width, height], np.float64)
    out: dict[int, np.ndarray] = {}
    with torch.no_grad(), autocast(tracker.device, tracker.dtype):
        for start in range(0, state.num_views, tracker.window_size):
            window = list(range(start, min(start + tracker.window_size, state.num_views)))
            todo = [v for v in window if v in views]
            if not todo:
                continue
            encoded = tracker._encode(state, window)  # the predictor's one encoding path (and its cache)
            for v in todo:
                clipped = np.clip(np.asarray(boxes[v], np.float64).reshape(-1, 4), 0.0, limit)
                state.prompts = {j + 1: tracker.make_prompt(state, v, box=box) for j, box in enumerate(clipped)}
                prompts = decoder.prompts(state, state.obj_ids, window, {})
                masks, _ = decoder.decode(encoded, prompts, [window.index(v)])
                out[v] = np.stack([resize_nearest(m, (height, width)) for m in masks[0].cpu().numpy()])
    state.prompts = {}
    return out


def detect_then_track(split: Split, video_id: int, phrases: dict[int, str], detector: DetectorPredictor,
                      tracker: TrackerPredictor, *, frame_rate: float = 30.0, lost_track_buffer: int = 30,
                      track_activation_threshold: float = 0.6, high_conf_det_threshold: float = 0.5,
                      minimum_iou_threshold: float = 0.2, minimum_consecutive_frames: int = 2) -> list[dict]:
    """Baseline (a) on one video (see the module docstring): ``phrases`` ``{category id: phrase}`` queried on it.

    The detector's vocabulary becomes the phrases (in category-id order; :meth:`DetectorPredictor.set_vocabulary`,
    so ``detector`` keeps it afterwards). One ByteTrack per phrase: ByteTrack matches boxes by overlap alone,
    whatever their class, so one tracker over every phrase would let a box of one phrase continue another's track
    (and two phrases' boxes on one object compete for one track); a tracker per phrase gives each phrase its own
    ids, as multi-class MOT does. The ByteTrack settings are those of :func:`track_boxes`. Track ids are then
    numbered 1, 2, ... over the video, phrase by phrase.

    Returns the instance records of every tracked box whose mask is non-empty and a presence record per (phrase,
    view)."""
    cids = _check_phrases(phrases)
    frames, pixels, ordered = _video(split, video_id)
    if not frames or not cids:
        return []
    names = [phrases[c] for c in cids]
    if list(detector.vocabulary) != names:
        detector.set_vocabulary(names)
    detections = detector.predict(pixels)
    settings = dict(frame_rate=frame_rate, lost_track_buffer=lost_track_buffer,
                    track_activation_threshold=track_activation_threshold,
                    high_conf_det_threshold=high_conf_det_threshold, minimum_iou_threshold=minimum_iou_threshold,
                    minimum_consecutive_frames=minimum_consecutive_frames)
    # per view: (track id, category id, phrase, box, score) of every tracked box
    tracked: list[list[tuple[int, int, str, np.ndarray, float]]] = [[] for _ in frames]
    presence = np.zeros((len(frames), len(cids)), np.float64)
    next_id = 1
    for k, (cid, phrase) in enumerate(zip(cids, names)):
        keep = [det["label_ids"] == k for det in detections]
        boxes = [det["boxes"][m] for det, m in zip(detections, keep)]
        scores = [det["scores"][m] for det, m in zip(detections, keep)]
        presence[:, k] = [float(s.max()) if len(s) else 0.0 for s in scores]
        local = track_boxes(boxes, scores, **settings)
        numbering = {t: next_id + n for n, t in enumerate(sorted({int(t) for ids in local for t in ids if t >= 0}))}
        next_id += len(numbering)
        for view, (ids, b, s) in enumerate(zip(local, boxes, scores)):
            tracked[view] += [(numbering[int(t)], cid, phrase, box, float(score))
                              for t, box, score in zip(ids, b, s) if t >= 0]
    masks = box_masks(tracker, pixels, {v: np.array([row[3] for row in rows]) for v, rows in enumerate(tracked)},
                      ordered=ordered)
    records: list[dict] = []
    for view, (image, rows) in enumerate(zip(frames, tracked)):
        image_id = int(image["id"])
        if rows:
            records += view_records(video_id, image_id, [r[0] for r in rows], [r[1] for r in rows],
                                    [r[2] for r in rows], masks[view], [r[4] for r in rows])
        records += [presence_record(video_id, image_id, cid, presence[view, k]) for k, cid in enumerate(cids)]
    return records


def text_prompt_tracker(split: Split, video_id: int, phrases: dict[int, str],
                        tracker: TrackerPredictor) -> list[dict]:
    """Baseline (b) on one video (see the module docstring): one text-prompted object per phrase (track ids 1, 2,
    ... in category-id order), all propagated together. Returns an instance record per (phrase, view) where its
    mask is non-empty and a presence record per (phrase, view)."""
    cids = _check_phrases(phrases)
    frames, pixels, ordered = _video(split, video_id)
    if not frames or not cids:
        return []
    state = tracker.init_state(pixels, ordered=ordered)
    for j, cid in enumerate(cids):
        tracker.add_prompt(state, None, j + 1, text=phrases[cid])
    records: list[dict] = []
    for view, obj_ids, masks, scores in tracker.propagate(state):
        image_id = int(frames[view]["id"])
        categories = [cids[o - 1] for o in obj_ids]
        records += view_records(video_id, image_id, obj_ids, categories, [phrases[c] for c in categories], masks,
                                scores)
        records += [presence_record(video_id, image_id, c, s) for c, s in zip(categories, scores)]
    return records


def run_baseline(name: str, split: Split | str | Path, detector: DetectorPredictor | None,
                 tracker: TrackerPredictor, max_videos: int | None = None, **options: Any) -> list[dict]:
    """Baseline ``name`` (:data:`BASELINES`) on every video of ``split`` (a :class:`Split` or a split file; the
    first ``max_videos`` by id), each with the phrases queried on it (:func:`queried_phrases`); ``options`` go to
    :func:`detect_then_track` (its ByteTrack settings). ``detector`` is needed by ``detect_then_track`` only."""
    if name not in BASELINES:
        raise InputError(f"unknown baseline {name!r}; baselines: {', '.join(BASELINES)}")
    if name == "detect_then_track" and detector is None:
        raise InputError("the detect_then_track baseline needs a detector")
    if name == "text_prompt" and options:
        raise InputError(f"the text_prompt baseline takes no options, got {sorted(options)}")
    if max_videos is not None and (isinstance(max_videos, bool) or not isinstance(max_videos, int)
                                   or max_videos < 1):
        raise InputError(f"max_videos must be an integer >= 1 or None, got {max_videos!r}")
    split = split if isinstance(split, Split) else load_split(split)
    records: list[dict] = []
    for video_id in sorted(split.videos)[:max_videos]:
        phrases = queried_phrases(split, video_id)
        if name == "detect_then_track":
            records += detect_then_track(split, video_id, phrases, detector, tracker, **options)
        else:
            records += text_prompt_tracker(split, video_id, phrases, tracker)
    return records
