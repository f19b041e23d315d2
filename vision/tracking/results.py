"""The tracker's propagated masks as the task's results: COCO-video results, one per (track, frame).

A result is ``{video_id, track_id, image_id, segmentation (RLE at the image's size), score (presence probability)
[, prompt_type]}`` (format: :func:`vision.evaluation.tasks.tracking.validate_tracking_results`); what the tracking
protocol (:mod:`vision.tracking.inference`) scores and writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from vision.data.masks import encode_mask

__all__ = ["to_results", "mask_result", "propagated_results"]


def mask_result(video_id: int, track_id: int, image_id: int, mask: np.ndarray, score: float,
                prompt_type: str | None = None) -> dict:
    """One track's result on one frame: ``mask`` bool ``[H, W]`` at the image's size, ``score`` its presence
    probability; ``prompt_type`` (when given) names the prompt the track was tracked from."""
    result = {"video_id": int(video_id), "track_id": int(track_id), "image_id": int(image_id),
              "segmentation": encode_mask(mask), "score": float(score)}
    if prompt_type is not None:
        result["prompt_type"] = prompt_type
    return result


def propagated_results(propagated: Iterable[tuple[int, Sequence[int], Sequence[np.ndarray], Sequence[float]]],
                       video_id: int, image_ids: Sequence[int], prompt_type: str | None = None) -> list[dict]:
    """The results of :meth:`TrackerPredictor.propagate`'s ``(view, object ids, masks, scores)`` frames, in the
    order they come; ``image_ids[view]`` is the image id of view ``view`` of the video ``video_id``."""
    return [mask_result(video_id, obj_id, image_ids[view], mask, score, prompt_type)
            for view, obj_ids, masks, scores in propagated
            for obj_id, mask, score in zip(obj_ids, masks, scores)]

#: model outputs -> the task's results (the registry's fixed name, vision.tasks.PARTS)
to_results = propagated_results
