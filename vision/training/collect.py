"""Predictions gathered across ranks and scored once: the task metric inside Lightning's loops.

Each ``validation_step`` / ``test_step`` / ``predict_step`` hands :class:`KeyedResults` its COCO-format results
under a key that names the dataset item they come from (an image id, a clip's image ids, a video id). At the end of
the epoch :meth:`KeyedResults.gather` collects every rank's items (``torch.distributed.all_gather_object``), keeps
one per key (a distributed sampler pads a rank's share by repeating items, and those repeats are dropped), orders
them by key and returns the results of all of them, identically on every rank. So the figure is the one a single
process computes on the same split, and every rank logs the same value.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import Any

import torch.distributed as dist

__all__ = ["KeyedResults", "gather_unique", "log_metrics"]


def _world_size() -> int:
    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def gather_unique(items: list[tuple[Hashable, Any]]) -> list[Any]:
    """``(key, payload)`` pairs of every rank -> the payloads, one per key (the first seen), in key order."""
    if _world_size() > 1:
        parts: list[list[tuple[Hashable, Any]] | None] = [None] * _world_size()
        dist.all_gather_object(parts, items)
        items = [item for part in parts for item in (part or [])]
    unique: dict[Hashable, Any] = {}
    for key, payload in items:
        unique.setdefault(key, payload)
    return [unique[key] for key in sorted(unique)]


class KeyedResults:
    """Per-item results of one epoch of one stage: ``add(key, results)`` in each step, ``gather()`` at its end."""

    def __init__(self) -> None:
        self._items: list[tuple[Hashable, list[dict]]] = []

    def add(self, key: Hashable, results: list[dict]) -> None:
        self._items.append((key, list(results)))

    def __len__(self) -> int:
        return len(self._items)

    def gather(self) -> list[dict]:
        """Every rank's results, one copy per key, in key order (a collective: call it on every rank); then empty."""
        items, self._items = self._items, []
        return [result for results in gather_unique(items) for result in results]


def log_metrics(module: Any, stage: str, metrics: Mapping[str, Any]) -> dict[str, float]:
    """Log every finite scalar of ``metrics`` as ``{stage}/{name}`` (the same value on every rank) and return them."""
    logged: dict[str, float] = {}
    for name, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if not math.isfinite(float(value)):
            continue
        logged[f"{stage}/{name}"] = float(value)
    if logged:
        module.log_dict(logged, sync_dist=True)
    return logged
