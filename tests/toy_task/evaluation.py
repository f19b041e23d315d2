"""Scoring the toy task: the split check, the results check, the scorer and its ``vision-evaluate`` flag, with the
signatures :class:`vision.tasks.Task` names.

A split's scored parts: ``images``, each with a unique integer ``id`` and its true ``brightness`` (a number in
[0, 1]). Results: one ``{"image_id", "brightness"}`` per image of the split. Figures (0-1 scale):
``brightness_mae`` (the mean absolute error of the images' brightness), ``brightness_within`` (the share of images
whose error is at most ``tolerance``, 0.05 unless the option says otherwise) and ``num_results``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from vision.data.checker import ScalarChecker
from vision.errors import InputError
from vision.evaluation.flags import finite_float

__all__ = ["DEFAULT_TOLERANCE", "OPTIONS", "check_toy_parts", "validate_toy_results", "score_toy", "add_flags", "options",
           "score", "check_split", "check_results"]

#: the options :func:`score_toy` takes
OPTIONS = frozenset({"tolerance"})

#: the largest error of an image counted as right by ``brightness_within`` unless ``tolerance`` is given
DEFAULT_TOLERANCE = 0.05


def check_toy_parts(dataset: Any, file: str | Path | None = None) -> None:
    """The parts of a split the scorer reads: ``images[]`` with a unique integer ``id`` and a ``brightness`` in
    [0, 1] (a :class:`~vision.errors.DataError` naming ``file``, the entry and the field)."""
    c = ScalarChecker(None if file is None else str(file))
    c.dict_(dataset, "<top level>")
    if "images" not in dataset:
        raise c.fail("missing required key 'images'", "images", sorted(map(str, dataset)))
    seen: dict[int, int] = {}
    for i, image in enumerate(c.list_(dataset["images"], "images")):
        field = f"images[{i}]"
        c.dict_(image, field)
        image_id = c.unique_id(seen, image, field)
        seen[image_id] = i
        value = c.number(c.key(image, "brightness", field), f"{field}.brightness", minimum=0.0)
        if value > 1.0:
            raise c.fail("brightness must be in [0, 1]", f"{field}.brightness", value)


def validate_toy_results(results: list, split: dict, file: str | None = None, split_file: str | None = None) -> None:
    """Check the split (:func:`check_toy_parts`, errors naming ``split_file``) and the results in ``file``: each an
    object with an ``image_id`` of the split and a finite ``brightness``, one per image, every image covered."""
    check_toy_parts(split, split_file)
    c = ScalarChecker(file)
    images = {int(image["id"]) for image in split["images"]}
    first: dict[int, int] = {}
    for i, result in enumerate(c.list_(results, "results")):
        field = f"results[{i}]"
        c.dict_(result, field)
        image_id = c.int_(c.key(result, "image_id", field), f"{field}.image_id")
        if image_id not in images:
            raise c.fail("image_id is not an image of the split", f"{field}.image_id", image_id)
        if image_id in first:
            raise c.fail(f"duplicate result for this image (first: results[{first[image_id]}])",
                         f"{field}.image_id", image_id)
        first[image_id] = i
        c.number(c.key(result, "brightness", field), f"{field}.brightness")
    missing = sorted(images - set(first))
    if missing:
        raise c.fail(f"{len(missing)} image(s) of the split have no result", "image_id", missing[:10])


def score_toy(gt: dict, results: list, *, split_file: str | None = None, results_file: str | None = None,
              **options: Any) -> dict[str, Any]:
    """``brightness_mae``, ``brightness_within`` and ``num_results`` of ``results`` against the split ``gt`` (see
    the module docstring); option ``tolerance`` (a number >= 0)."""
    validate_toy_results(results, gt, results_file, split_file=split_file)
    tolerance = options.get("tolerance", DEFAULT_TOLERANCE)
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not 0.0 <= tolerance < float("inf"):
        raise InputError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
    truth = {int(image["id"]): float(image["brightness"]) for image in gt["images"]}
    errors = [abs(float(r["brightness"]) - truth[int(r["image_id"])]) for r in results]
    return {"brightness_mae": sum(errors) / len(errors),
            "brightness_within": sum(e <= tolerance for e in errors) / len(errors),
            "num_results": len(results)}


def add_flags(group: argparse._ArgumentGroup) -> None:
    """``vision-evaluate --task toy`` flags (defaults None: given to another task, they are refused)."""
    group.add_argument("--brightness-tolerance", type=finite_float, default=None,
                       help=f"brightness_within counts images whose error is at most this (default "
                            f"{DEFAULT_TOLERANCE})")


def options(args: argparse.Namespace, split: Path) -> dict[str, Any]:
    """The scorer's options from the parsed flags."""
    return {} if args.brightness_tolerance is None else {"tolerance": args.brightness_tolerance}


# The registry's fixed names (vision.tasks.PARTS)
score = score_toy
check_split = check_toy_parts
check_results = validate_toy_results
