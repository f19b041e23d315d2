"""Checkpoints written atomically and read with ``weights_only=True``.

A checkpoint is first serialised to memory, then written to a temporary file in the destination folder, fsynced
and renamed over the target, so a process killed at any moment leaves either the previous checkpoint or the new
one, never a truncated file. Loading never unpickles arbitrary objects.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.plugins.io import TorchCheckpointIO

from vision.data.io import atomic_write_bytes
from vision.errors import DataError

__all__ = ["AtomicCheckpointIO", "load_checkpoint"]


def load_checkpoint(path: str | Path, map_location: Any = "cpu") -> dict:
    """Read a checkpoint with ``torch.load(weights_only=True)``; a missing or unreadable file is a ``DataError``."""
    path = Path(path)
    if not path.is_file():
        raise DataError("checkpoint file not found", file=path)
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:  # torch raises many types for corrupt or unsafe files
        raise DataError(f"cannot read checkpoint ({_one_line(exc)})", file=path) from exc


def _one_line(exc: Exception) -> str:
    """torch's reason in one line; for a refused pickle only the offending global, not torch's advice to load
    the file with ``weights_only=False`` (which would run whatever code it holds)."""
    text = str(exc)
    if "Weights only load failed" in text:
        reason = next((line.strip() for line in text.splitlines() if "WeightsUnpickler error" in line), "")
        reason = reason.split(" was not an allowed global")[0]
        return ("the file holds more than tensors and plain data, and only weights are loaded"
                + (f"; {reason}" if reason else ""))
    return f"{type(exc).__name__}: {' '.join(text.split())}"


class AtomicCheckpointIO(TorchCheckpointIO):
    """Lightning checkpoint I/O plugin: atomic writes, ``weights_only=True`` reads."""

    def save_checkpoint(self, checkpoint: dict[str, Any], path: str | Path, storage_options: Any = None) -> None:
        buffer = io.BytesIO()
        torch.save(checkpoint, buffer)
        atomic_write_bytes(path, buffer.getvalue())
        # a process killed mid-write leaves its temporary file behind (the target itself stays intact); the next
        # successful write of the same checkpoint removes such leftovers
        path = Path(path)
        for stale in path.parent.glob(f".{path.name}.*.tmp"):
            stale.unlink(missing_ok=True)

    def load_checkpoint(self, path: str | Path, map_location: Any = None, weights_only: bool | None = None) -> dict:
        return load_checkpoint(path, map_location=map_location or "cpu")
