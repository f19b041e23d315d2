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

__all__ = ["AtomicCheckpointIO", "first_mismatch", "load_checkpoint", "load_weights"]


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


def load_weights(module: torch.nn.Module, state_dict: dict[str, Any], file: str | Path, strict: bool = True,
                 hint: str = "") -> None:
    """``module.load_state_dict(state_dict)``; weights that do not fit (missing or unexpected keys, other shapes) are a
    :class:`DataError` naming the checkpoint ``file`` and the first mismatch, in one line (then ``hint``)."""
    try:
        module.load_state_dict(state_dict, strict=strict)
    except RuntimeError as exc:
        raise DataError(f"the checkpoint's weights do not fit this {type(module).__name__} "
                        f"({first_mismatch(exc)}){'; ' + hint if hint else ''}", file=file) from None


def first_mismatch(exc: RuntimeError) -> str:
    """The first line of detail of torch's ``load_state_dict`` error (missing / unexpected keys, a shape), at most
    300 characters."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    detail = " ".join(lines[1:2] or lines[:1])
    return detail if len(detail) <= 300 else detail[:297] + "..."


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
        """Lightning's resume read: also refuses a file that is not a Lightning training checkpoint (a bare state
        dict, released weights) with a :class:`DataError` naming it, before Lightning indexes missing keys."""
        checkpoint = load_checkpoint(path, map_location=map_location or "cpu")
        missing = [k for k in ("state_dict", "pytorch-lightning_version") if k not in checkpoint]
        if missing:
            raise DataError(f"not a checkpoint written by Lightning training (no {' or '.join(map(repr, missing))}); "
                            "--ckpt_path resumes a run of tools/train.py, weights go in through the model's options",
                            file=path)
        return checkpoint
