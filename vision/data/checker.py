"""The typed checks that every split validation shares: :class:`Checker` (holds the file name for messages; its
:class:`ScalarChecker` also takes NumPy numbers) and :func:`check_rle`, the pure-Python verdict on one RLE
segmentation. Used by the one-by-one checks of :mod:`vision.data.schema` (which re-exports them), by the fast paths
of :mod:`vision.data.schema_columns` for whatever they cannot vouch for, and by :mod:`vision.evaluation.results`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from vision.data.rle import rle_counts_from_string
from vision.errors import DataError

__all__ = ["BOX_TOLERANCE_PX", "Checker", "ScalarChecker", "check_rle"]

BOX_TOLERANCE_PX = 1.0


class Checker:
    """Holds the file name for messages and offers small typed checks (shared with the results validation of
    :mod:`vision.evaluation.results`)."""

    def __init__(self, file: str | None) -> None:
        self.file = file

    def fail(self, message: str, field: str, value: Any) -> DataError:
        return DataError(message, file=self.file, field=field, value=value)

    def dict_(self, value: Any, field: str) -> dict:
        if not isinstance(value, dict):
            raise self.fail(f"expected an object, got {type(value).__name__}", field, value)
        return value

    def list_(self, value: Any, field: str) -> list:
        if not isinstance(value, list):
            raise self.fail(f"expected a list, got {type(value).__name__}", field, value)
        return value

    def key(self, obj: dict, key: str, field: str) -> Any:
        if key not in obj:
            raise self.fail(f"missing required key {key!r} (the entry has keys shown)", f"{field}.{key}",
                            sorted(map(str, obj.keys())))
        return obj[key]

    def int_(self, value: Any, field: str, minimum: int | None = None, maximum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(f"expected an integer, got {type(value).__name__}", field, value)
        if minimum is not None and value < minimum:
            raise self.fail(f"expected an integer >= {minimum}", field, value)
        if maximum is not None and value > maximum:
            raise self.fail(f"expected an integer <= {maximum}", field, value)
        return value

    def number(self, value: Any, field: str, minimum: float | None = None) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.fail(f"expected a number, got {type(value).__name__}", field, value)
        try:
            as_float = float(value)
        except OverflowError as exc:
            raise self.fail("number is too large", field, value) from exc
        if not math.isfinite(as_float):
            raise self.fail("expected a finite number", field, value)
        if minimum is not None and as_float < minimum:
            raise self.fail(f"expected a number >= {minimum}", field, value)
        return as_float

    def str_(self, value: Any, field: str, nonempty: bool = False) -> str:
        if not isinstance(value, str):
            raise self.fail(f"expected a string, got {type(value).__name__}", field, value)
        if nonempty and not value:
            raise self.fail("expected a non-empty string", field, value)
        return value

    def bool_(self, value: Any, field: str) -> bool:
        """``value`` when it is ``True`` or ``False``. A NumPy bool is refused too: the scorers read a flag such as
        ``annotated`` with ``is False``, which a NumPy false never is."""
        if isinstance(value, np.bool_):
            raise self.fail("expected true or false, got a NumPy bool (use Python's True or False)", field, value)
        if not isinstance(value, bool):
            raise self.fail(f"expected true or false, got {type(value).__name__}", field, value)
        return value

    def choice(self, value: Any, field: str, choices: tuple[str, ...]) -> str:
        if not isinstance(value, str) or value not in choices:
            raise self.fail(f"expected one of {', '.join(choices)}", field, value)
        return value

    def matrix(self, value: Any, field: str, rows: int, cols: int) -> list[list[float]]:
        self.list_(value, field)
        if len(value) != rows or any(not isinstance(r, list) or len(r) != cols for r in value):
            raise self.fail(f"expected a {rows}x{cols} matrix (list of {rows} lists of {cols} numbers)", field,
                            value)
        return [[self.number(v, f"{field}[{i}][{j}]") for j, v in enumerate(r)] for i, r in enumerate(value)]

    def unique_id(self, seen: dict[int, int], obj: dict, field: str) -> int:
        ident = self.int_(self.key(obj, "id", field), f"{field}.id")
        if ident in seen:
            raise self.fail(f"duplicate id (first used by entry {seen[ident]})", f"{field}.id", ident)
        return ident


class ScalarChecker(Checker):
    """The checks of :class:`Checker`, also accepting NumPy integers and floats where numbers are expected
    (documents built in Python rather than read from JSON: results, splits handed to the evaluation)."""

    def int_(self, value: Any, field: str, minimum: int | None = None, maximum: int | None = None) -> int:
        return super().int_(value.item() if isinstance(value, np.integer) else value, field, minimum, maximum)

    def number(self, value: Any, field: str, minimum: float | None = None) -> float:
        return super().number(value.item() if isinstance(value, (np.integer, np.floating)) else value, field,
                              minimum)


def check_rle(c: Checker, seg: Any, field: str, height: int, width: int) -> None:
    """A COCO RLE ``{size, counts}`` of an image of ``height`` x ``width``: its size is that of the image, its counts
    (a compressed string or a list of integers) are non-negative run lengths summing to exactly ``height * width``
    (pycocotools would otherwise decode uninitialised memory or write past the mask)."""
    c.dict_(seg, field)
    size = c.key(seg, "size", field)
    if (not isinstance(size, list) or len(size) != 2
            or any(isinstance(v, bool) or not isinstance(v, int) for v in size)):
        raise c.fail("expected [height, width] integers", f"{field}.size", size)
    if size != [height, width]:
        raise c.fail(f"RLE size does not match its image's [height, width] = [{height}, {width}]", f"{field}.size",
                     size)
    counts = c.key(seg, "counts", field)
    if isinstance(counts, str):
        try:
            runs = rle_counts_from_string(counts)
        except ValueError as exc:
            raise c.fail(f"malformed compressed RLE counts: {exc}", f"{field}.counts", counts) from exc
    elif isinstance(counts, list):
        runs = [c.int_(v, f"{field}.counts[{j}]") for j, v in enumerate(counts)]
    else:
        raise c.fail(f"expected counts as a string (compressed) or a list of integers, got "
                     f"{type(counts).__name__}", f"{field}.counts", counts)
    if any(r < 0 for r in runs):
        raise c.fail("RLE has a negative run length", f"{field}.counts", counts)
    if sum(runs) != height * width:
        raise c.fail(f"RLE run lengths sum to {sum(runs)}, not height*width = {height * width}", f"{field}.counts",
                     counts)
