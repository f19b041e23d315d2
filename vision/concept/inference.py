"""The concept evaluation protocol: every video of a split queried with its phrases, tracked whole, scored.

One protocol for the training loop's validation / test (:class:`~vision.concept.lightning.ConceptModule`),
``benchmarks/bench_concept.py`` and ``vision-evaluate --task concept``:

- each video (or unordered view set) is read whole, its frames in ``frame_index`` order, and queried in one pass
  with every phrase of :func:`vision.concept.records.queried_phrases` (the video's ``concepts``, absent phrases
  included, else the categories of its tracks), in category-id order;
- results: the instance records and one presence record per (phrase, view) of :mod:`vision.concept.records`;
- scoring: ``vision.evaluation.evaluate(split, results, "concept")`` (HOTA, video AP, cgF1, presence MCC and the
  acceptance of objects outside the phrases).

Nothing is random and nothing depends on which other videos are tracked alongside.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import numpy as np

from vision.concept.predictor import ConceptPredictor, ConceptState
from vision.concept.records import presence_record, queried_phrases, view_records
from vision.data.coco import Split
from vision.tracking.inference import video_frames

__all__ = ["concept_records", "track_video", "track_split", "score_concept"]


def concept_records(outputs: Iterable[tuple], state: ConceptState, video_id: int, image_ids: list[int],
                    category_ids: list[int]) -> list[dict]:
    """The results of a state whose concepts are the phrases ``category_ids`` (in order), from its per-view
    ``outputs`` (what :meth:`ConceptPredictor.propagate` yields; consumed here): its instance records, then the
    presence records of every (phrase, view)."""
    records: list[dict] = []
    names = [c.name for c in state.concepts]
    for view, obj_ids, concepts, masks, scores in outputs:
        keep = [n for n in range(len(obj_ids)) if masks[n].any()]
        records += view_records(video_id, image_ids[view], [obj_ids[n] for n in keep],
                                [category_ids[concepts[n]] for n in keep], [names[concepts[n]] for n in keep],
                                masks[keep], [float(np.clip(scores[n], 0.0, 1.0)) for n in keep])
    for view, image_id in enumerate(image_ids):
        for k, category_id in enumerate(category_ids):
            records.append(presence_record(video_id, image_id, category_id,
                                           float(np.clip(state.presence[view, k], 0.0, 1.0))))
    return records


def track_video(predictor: ConceptPredictor, split: Split, video_id: int, known_geometry: bool = False) -> list[dict]:
    """The protocol's results for one video ([] when it queries no phrase). ``known_geometry``: the oracle, the
    split's ground-truth depth and cameras replace the backbone's point maps
    (:func:`vision.tracking.inference.set_split_geometry`)."""
    phrases = queried_phrases(split, video_id)
    frames = video_frames(split, video_id)
    if not phrases or not frames:
        return []
    video = split.videos[video_id]
    state = predictor.init_state(np.stack([split.load_image(im) for im in frames]),
                                 ordered=bool(video.get("ordered", True)))
    if known_geometry:
        from vision.tracking.inference import set_split_geometry

        set_split_geometry(predictor.tracker, state.tracker, split, video_id, frames)
    for name in phrases.values():
        predictor.add_concept(state, name)
    return concept_records(predictor.propagate(state), state, video_id, [int(im["id"]) for im in frames],
                           list(phrases))


def track_split(predictor: ConceptPredictor, split: Split, max_videos: int | None = None,
                known_geometry: bool = False) -> list[dict]:
    """The protocol's results for every video of ``split`` (the first ``max_videos``; ``known_geometry``: see
    :func:`track_video`)."""
    videos = sorted(split.videos)[:max_videos] if max_videos else sorted(split.videos)
    return [r for vid in videos for r in track_video(predictor, split, vid, known_geometry)]


def score_concept(split: str | Path, results: list[dict], **options: Any) -> dict[str, Any]:
    """Score ``results`` against the split file ``split``: the figures of ``vision-evaluate --task concept``."""
    from vision.evaluation.evaluate import evaluate

    return evaluate(split, results, "concept", **options)
