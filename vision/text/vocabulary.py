"""Class-name vocabularies: the one rule for a list of names and the one for a text that lists them.

A vocabulary is a non-empty list of distinct, non-empty class names. :func:`check_vocabulary` checks a list (the
detector's API, the training data's class names) and :func:`parse_vocabulary` reads one from a text, as
``vision-predict --vocabulary``, the demo and ``DetectorPredictor.set_vocabulary`` receive it:

- commas, semicolons and line breaks separate names: ``"mug, chair; lamp"`` -> ``["mug", "chair", "lamp"]``;
- whitespace around each name (and around the whole text) is dropped, and a run of spaces inside a name becomes one
  space (``" red   mug "`` -> ``"red mug"``);
- an empty text, an empty name (two separators in a row, or one at the start or end: ``"mug,,chair"``,
  ``"mug, chair,"``) and a duplicate (compared ignoring case and spacing: ``"mug, Mug"``) are each an
  :class:`~vision.errors.InputError` that names the name;
- the text and each name pass :mod:`vision.text.user_text`'s check (valid Unicode, no control character, something
  visible in each name, a length bound).

Plain Python: the CLI imports it before any model.
"""

from __future__ import annotations

import re
from typing import Any

from vision.errors import InputError
from vision.text.user_text import check_text, check_text_field

__all__ = ["SEPARATORS", "check_vocabulary", "parse_vocabulary"]

#: the characters that separate names in a vocabulary text
SEPARATORS = ",;\n"


def _key(name: str) -> str:
    """What two names are compared by: lower case, runs of whitespace as one space."""
    return " ".join(name.split()).lower()


def check_vocabulary(vocabulary: Any, field: str = "vocabulary") -> list[str]:
    """Return ``vocabulary`` as a list of stripped names; :class:`InputError` (naming the index and value) on a
    non-list, an empty list, a non-string or empty entry, or a duplicate (case- and space-insensitive)."""
    if isinstance(vocabulary, str) or not isinstance(vocabulary, (list, tuple)):
        raise InputError(f"{field} must be a list of class names, got {type(vocabulary).__name__} {vocabulary!r}")
    if len(vocabulary) == 0:
        raise InputError(f"{field} is empty; give at least one class name")
    names: list[str] = []
    seen: dict[str, int] = {}
    for i, name in enumerate(vocabulary):
        if not isinstance(name, str):
            raise InputError(f"{field}[{i}] must be a str, got {type(name).__name__} {name!r}")
        clean = check_text(name, f"{field}[{i}]")
        key = _key(clean)
        if key in seen:
            raise InputError(f"{field}[{i}]={name!r} duplicates {field}[{seen[key]}]={vocabulary[seen[key]]!r}")
        seen[key] = i
        names.append(clean)
    return names


def parse_vocabulary(text: str, field: str = "vocabulary") -> list[str]:
    """The class names of a vocabulary text, by the rule of the module docstring: ``"mug, chair; lamp"`` ->
    ``["mug", "chair", "lamp"]``. ``field`` names the text in error messages (e.g. ``"--vocabulary"``).

    Raises:
        InputError: ``text`` is not a str, is empty, holds an empty name, names one class twice (the message
            gives the text and the names' positions, counted from 1) or fails :mod:`vision.text.user_text`'s check.
    """
    if not isinstance(text, str):
        raise InputError(f"{field} must be a text of class names, got {type(text).__name__} {text!r}")
    check_text_field(text, field)
    if not text.strip():
        raise InputError(f"the {field} is empty: type class names separated by commas, e.g. 'mug, chair, lamp'")
    shown = text.strip()
    names = [" ".join(name.split()) for name in re.split(f"[{re.escape(SEPARATORS)}]", shown)]
    first: dict[str, int] = {}
    for i, name in enumerate(names, 1):
        if not name:
            raise InputError(f"{field} {shown!r}: name {i} of {len(names)} is empty (commas, semicolons and line "
                             "breaks separate names; two in a row, or one at either end, leave an empty name)")
        check_text(name, f"{field} {shown!r}: name {i}")
        if _key(name) in first:
            j = first[_key(name)]
            raise InputError(f"{field} {shown!r}: name {i} {name!r} repeats name {j} {names[j - 1]!r} (names are "
                             "compared ignoring case and spacing)")
        first[_key(name)] = i
    return names
