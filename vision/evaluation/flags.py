"""What the tasks' ``vision-evaluate`` flags share (each task's own are ``add_flags`` / ``options`` of its
evaluation module, :mod:`vision.evaluation.tasks`): argument types and the options a namespace gives. Importable
without any scoring dependency: the command line builds its parser from them."""

from __future__ import annotations

import argparse
import math
from typing import Any

__all__ = ["MASK_PROTOCOLS", "PROTOCOLS", "id_list", "finite_float", "positive_int", "given"]

#: The tracking protocols that score masks (see :func:`vision.evaluation.tracking.evaluate_tracking`).
MASK_PROTOCOLS: tuple[str, ...] = ("vos-benchmark", "davis2017")
#: Every tracking protocol: the mask ones, and ``boxes`` (box tracks on labelled frames,
#: :mod:`vision.evaluation.box_tracks`).
PROTOCOLS: tuple[str, ...] = (*MASK_PROTOCOLS, "boxes")


def id_list(text: str) -> list[int]:
    """Comma-separated integer ids."""
    try:
        return [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integer ids, got {text!r}") from None


def positive_int(text: str) -> int:
    """An integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def finite_float(text: str) -> float:
    """A finite number."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {text!r}")
    return value


def given(args: argparse.Namespace, names: tuple[str, ...]) -> dict[str, Any]:
    """The flags among ``names`` that were given (not None), by destination."""
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


# ------------------------------------------------------------------------------------------------------- tracking

# -------------------------------------------------------------------------------------------------------- concept
