"""Small file helpers: atomic writes and checked paths."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from vision.errors import DataError

__all__ = ["atomic_write_bytes", "atomic_write_json", "resolve_inside"]


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file in the same folder and an atomic rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_json(path: str | Path, obj: Any, indent: int | None = None) -> None:
    """Deterministic JSON (sorted keys) written atomically."""
    text = json.dumps(obj, indent=indent, sort_keys=True, separators=(",", ": ") if indent else (",", ":"))
    atomic_write_bytes(path, text.encode("utf-8"))


def resolve_inside(root: str | Path, relative: str, *, file: str | Path | None = None, field: str | None = None) -> Path:
    """Resolve ``relative`` against ``root`` and refuse absolute paths or ``..`` escapes out of ``root``.

    Split files name their images, depth maps and videos relative to the JSON's folder; a name that points
    outside that folder is refused with a :class:`DataError` naming the file and field.
    """
    if not isinstance(relative, str) or not relative:
        raise DataError("expected a non-empty relative path", file=file, field=field, value=relative)
    if os.path.isabs(relative):
        raise DataError("absolute paths are not allowed in a split; name files relative to the JSON's folder",
                        file=file, field=field, value=relative)
    root = Path(root).resolve()
    target = (root / relative).resolve()
    if target != root and root not in target.parents:
        raise DataError("path escapes the split's folder", file=file, field=field, value=relative)
    return target
