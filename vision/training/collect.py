"""Keyed items gathered across ranks: one copy per dataset item, in key order, the same on every rank.

A step hands its per-item output under a key that names the dataset item it comes from (an image id, a clip's image
ids, a video id). :func:`gather_unique` collects every rank's ``(key, item)`` pairs
(``torch.distributed.all_gather_object``), keeps one per key (a distributed sampler pads a rank's share by
repeating items, and those repeats are dropped) and orders them by key. So a figure computed from the gathered items
is the one a single process computes on the same split. Used by
:class:`~vision.training.evaluator.TaskEvaluator` (validation, test) and
:class:`~vision.training.writer.ResultsWriter` (predict).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import torch.distributed as dist

__all__ = ["gather_unique"]


def _world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def gather_unique(items: list[tuple[Hashable, Any]]) -> list[Any]:
    """``(key, payload)`` pairs of every rank -> the payloads, one per key (the first seen), in key order.

    A collective under ``torch.distributed``: every rank calls it. Keys must be comparable with each other (one
    kind of key per call)."""
    if _world_size() > 1:
        parts: list[list[tuple[Hashable, Any]] | None] = [None] * _world_size()
        dist.all_gather_object(parts, items)
        items = [item for part in parts for item in (part or [])]
    unique: dict[Hashable, Any] = {}
    for key, payload in items:
        unique.setdefault(key, payload)
    return [unique[key] for key in sorted(unique)]
