"""Shared by the converter tests: what a failed conversion must leave behind (the old output, byte for byte, and no
staging folder beside or inside it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from vision.errors import DataError

USER_FILE = "notes.txt"


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder``, relative path -> its bytes (None for a folder)."""
    return {p.relative_to(folder).as_posix(): None if p.is_dir() else p.read_bytes()
            for p in sorted(folder.rglob("*"))}


def add_user_file(out: Path) -> None:
    """A file of the user's own in ``out``, which no conversion may touch."""
    out.mkdir(parents=True, exist_ok=True)
    (out / USER_FILE).write_text("mine, not the converter's\n")


def assert_left_as_it_was(out: Path, before: dict[str, bytes | None], siblings: set[str]) -> None:
    """``out`` holds exactly what ``before`` recorded, and its folder exactly the entries ``siblings`` (no
    staging folder left beside it, none inside it either)."""
    assert snapshot(out) == before
    assert {p.name for p in out.parent.iterdir()} == siblings
    assert (out / USER_FILE).is_file()


def fail_late(monkeypatch: pytest.MonkeyPatch, module: object, name: str, call: int = 1) -> list[object]:
    """Make the ``call``-th call of ``module.name`` (a writer called late in a conversion) do its work and then
    raise a :class:`DataError`; returns the first argument of each call (so a test sees that the conversion got
    that far and had written something)."""
    calls: list[object] = []
    writer = getattr(module, name)

    def failing(first, *args, **kwargs):
        result = writer(first, *args, **kwargs)
        calls.append(first)
        if len(calls) == call:
            raise DataError("injected late failure")
        return result

    monkeypatch.setattr(module, name, failing)
    return calls
