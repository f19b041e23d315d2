"""Where the package looks for pretrained weight files, and the check that a file is the registered one.

One folder holds them: ``$VISION_WEIGHTS_DIR`` when set, else ``$XDG_CACHE_HOME/vision/weights`` (``~/.cache/vision/
weights`` without ``XDG_CACHE_HOME``). ``vision-fetch-weights`` writes there (or to ``--out``); nothing is downloaded
implicitly. A file that is missing, or whose sha256 is not the registered one (truncated, corrupt, another version),
is a :class:`WeightsError` whose one line names the file and the command that fetches it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from vision.errors import InputError
from vision.weights.registry import WeightsEntry, entry

__all__ = ["WeightsError", "weights_dir", "weights_path", "sha256_of", "ENV"]

#: the environment variable that overrides the weights folder
ENV = "VISION_WEIGHTS_DIR"

#: (path, size, mtime_ns) -> sha256, so a file is hashed once per process while it is unchanged
_HASHES: dict[tuple[str, int, int], str] = {}


class WeightsError(InputError):
    """A registered weights file is missing or is not the registered file."""


def weights_dir() -> Path:
    """The weights folder (see the module docstring); not created here."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).expanduser() / "vision" / "weights"


def sha256_of(path: str | Path, chunk: int = 1 << 20) -> str:
    """The sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _fetch_hint(item: WeightsEntry) -> str:
    return f"run vision-fetch-weights {item.name} (or vision-fetch-weights {item.name} --from DIR for a local copy)"


def weights_path(name: str, folder: str | Path | None = None, verify: bool = True) -> Path:
    """The checked path of the registered file ``name`` in ``folder`` (None: :func:`weights_dir`).

    Raises:
        InputError: ``name`` is not registered.
        WeightsError: the file is missing, or (``verify``) its sha256 is not the registered one.
    """
    item = entry(name)
    path = (Path(folder).expanduser() if folder is not None else weights_dir()) / item.file
    if not path.is_file():
        raise WeightsError(f"weights {name!r} not found at {path}: {_fetch_hint(item)}")
    if verify:
        stat = path.stat()
        key = (str(path.resolve()), stat.st_size, stat.st_mtime_ns)
        digest = _HASHES.get(key) or sha256_of(path)
        if digest != item.sha256:
            raise WeightsError(f"weights {name!r} at {path} has sha256 {digest[:12]}..., not the registered "
                               f"{item.sha256[:12]}... (truncated, corrupt or another version): {_fetch_hint(item)}")
        _HASHES[key] = digest
    return path
