"""Concept results records: per-view masks, scores and presence probabilities -> the records a concept tracker writes.

The format (what the ``concept`` scorer reads; ``vision.evaluation.results`` validates it) is a JSON list of two
kinds of records:

- an instance record, one per (predicted instance, image where its mask is non-empty)
  (:func:`instance_record`, :func:`view_records`)::

    {"video_id", "image_id", "track_id", "category_id", "phrase", "segmentation": {"size": [h, w], "counts": str},
     "bbox": [x, y, w, h], "score": float in [0, 1], "prompt_type": "concept"}

  ``segmentation`` is pycocotools' compressed RLE of the mask at the image's size (:func:`vision.data.masks.
  encode_mask`), ``bbox`` the mask's tight box (:func:`vision.data.masks.mask_to_bbox`); ``track_id`` is unique
  within a video across all phrases; ``score`` the instance's confidence on that image.
- a presence record, one per (queried phrase, image) (:func:`presence_record`)::

    {"video_id", "image_id", "category_id", "presence": float in [0, 1]}

  the probability that the phrase is present on that view.

The phrases queried on a video (:func:`queried_phrases`) are its ``concepts`` (category ids, present and absent
phrases), else the categories of its tracks; a phrase is its category's name.

Every caller that writes concept results (the concept tracker, the baselines of :mod:`vision.concept.baselines`)
formats them here. Numpy and the data layer only: no torch, no Lightning.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from vision.data.masks import encode_mask, mask_to_bbox
from vision.errors import InputError
from vision.text.user_text import check_text

if TYPE_CHECKING:
    from vision.data.coco import Split

__all__ = ["PROMPT_TYPE", "queried_phrases", "instance_record", "view_records", "presence_record"]

#: the ``prompt_type`` of every instance record
PROMPT_TYPE = "concept"


def queried_phrases(split: "Split", video_id: int) -> dict[int, str]:
    """``{category id: phrase}`` queried on video ``video_id`` of ``split``: :meth:`vision.data.coco.Split.
    queried_phrases`."""
    return split.queried_phrases(video_id)


def _probability(value: Any, name: str) -> float:
    """``value`` as a float in [0, 1]; :class:`InputError` naming ``name`` and the value otherwise."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a number in [0, 1], got {value!r}") from None
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise InputError(f"{name} must be a number in [0, 1], got {number!r}")
    return number


def _mask(mask: Any, name: str) -> np.ndarray:
    m = np.asarray(mask)
    if m.ndim != 2 or m.shape[0] < 1 or m.shape[1] < 1:
        raise InputError(f"{name} must be a 2-D mask [H, W] at the image's size, got shape {m.shape}")
    return m.astype(bool, copy=False)


def instance_record(video_id: int, image_id: int, track_id: int, category_id: int, phrase: str, mask: Any,
                    score: float) -> dict:
    """One instance on one image: ``mask`` bool (or 0/1) ``[H, W]`` at the image's size, non-empty; ``score`` in
    [0, 1]. Raises :class:`InputError` for an empty or non-2-D mask, a score outside [0, 1] or an empty phrase."""
    m = _mask(mask, f"the mask of track {track_id} on image {image_id}")
    if not m.any():
        raise InputError(f"the mask of track {track_id} on image {image_id} is empty: an instance record needs "
                         f"a non-empty mask")
    check_text(phrase, "phrase")
    return {"video_id": int(video_id), "image_id": int(image_id), "track_id": int(track_id),
            "category_id": int(category_id), "phrase": phrase, "segmentation": encode_mask(m),
            "bbox": mask_to_bbox(m), "score": _probability(score, f"the score of track {track_id} on image "
                                                                   f"{image_id}"),
            "prompt_type": PROMPT_TYPE}


def view_records(video_id: int, image_id: int, track_ids: Sequence[int], category_ids: Sequence[int],
                 phrases: Sequence[str], masks: Any, scores: Sequence[float]) -> list[dict]:
    """The instance records of one image: ``masks`` bool ``[N, H, W]`` at the image's size with ``track_ids``,
    ``category_ids``, ``phrases`` and ``scores`` ``[N]``; instances whose mask is empty get no record (the format
    has one record per image where the instance's mask is non-empty)."""
    masks = np.asarray(masks)
    n = len(track_ids)
    if masks.ndim != 3 or len(masks) != n or not (len(category_ids) == len(phrases) == len(scores) == n):
        raise InputError(f"view_records needs masks [N, H, W] and N track ids, category ids, phrases and scores; "
                         f"got masks of shape {masks.shape}, {len(track_ids)} track ids, {len(category_ids)} "
                         f"category ids, {len(phrases)} phrases, {len(scores)} scores")
    return [instance_record(video_id, image_id, tid, cid, phrase, mask, score)
            for tid, cid, phrase, mask, score in zip(track_ids, category_ids, phrases, masks, scores)
            if np.asarray(mask).any()]


def presence_record(video_id: int, image_id: int, category_id: int, presence: float) -> dict:
    """The presence of phrase ``category_id`` on image ``image_id``: a probability in [0, 1]."""
    return {"video_id": int(video_id), "image_id": int(image_id), "category_id": int(category_id),
            "presence": _probability(presence, f"the presence of category {category_id} on image {image_id}")}
