"""Toy model outputs -> the toy task's results: one ``{"image_id": int, "brightness": float}`` per image, the
image's predicted brightness (the mean of its per-pixel map), which :func:`.evaluation.score_toy` scores."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from vision.errors import InputError

__all__ = ["image_results"]


def image_results(image_ids: Sequence[int], maps: torch.Tensor) -> list[dict]:
    """``image_ids`` (B) and predicted brightness maps ``[B, H, W]`` -> ``[{image_id, brightness}]`` in the same
    order."""
    if len(image_ids) != maps.shape[0]:
        raise InputError(f"{len(image_ids)} image ids for {maps.shape[0]} brightness maps")
    means = maps.detach().float().flatten(1).mean(dim=1).cpu().tolist()
    return [{"image_id": int(image_id), "brightness": float(mean)} for image_id, mean in zip(image_ids, means)]

#: the registry's fixed name (vision.tasks.PARTS)
to_results = image_results
