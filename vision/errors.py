"""The package's error types.

Every error caused by bad input is a :class:`VisionError`. Errors about data name the file, the field and the
offending value so a user can find and fix the problem without reading our code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["VisionError", "DataError", "VideoError", "InputError"]


def _short(value: Any, limit: int = 80) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int beyond Python's digit limit for str()
        text = f"<an integer of {value.bit_length()} bits>" if isinstance(value, int) else f"<a {type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


class VisionError(Exception):
    """Base class of every error that bad input can cause in this package."""


class DataError(VisionError, ValueError):
    """A split, an annotation file or a data file is malformed or missing.

    Args:
        message: what is wrong, in plain words.
        file: the file the problem is in (a split JSON, an image, a depth file ...).
        field: a dotted path to the field, e.g. ``annotations[3].bbox``.
        value: the offending value (shown truncated).
    """

    _UNSET = object()

    def __init__(self, message: str, *, file: str | Path | None = None, field: str | None = None,
                 value: Any = _UNSET) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.field = field
        self.value = None if value is DataError._UNSET else value
        parts = []
        if self.file:
            parts.append(self.file)
        if field:
            parts.append(field if value is DataError._UNSET else f"{field}={_short(value)}")
        elif value is not DataError._UNSET:
            parts.append(f"value={_short(value)}")
        prefix = ": ".join(parts)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class VideoError(DataError):
    """A video file is missing, empty, truncated, corrupt or cannot be written."""


class InputError(VisionError, ValueError):
    """A tensor, prompt, vocabulary or argument given to a model or predictor is invalid."""
