"""Checkpoints written atomically and read with ``weights_only=True``.

A checkpoint is first serialised to memory, then written to a temporary file in the destination folder, fsynced
and renamed over the target, so a process killed at any moment leaves either the previous checkpoint or the new
one, never a truncated file. Loading never unpickles arbitrary objects (reading is :mod:`vision.checkpoint`, shared
with inference code; its names are re-exported here for training code).

A pickled checkpoint can carry code that runs when it is unpickled, so the opt-outs are refused rather than
honoured (:func:`check_checkpoint_io`): ``--weights_only false`` and a checkpoint I/O plugin other than
:class:`AtomicCheckpointIO` (Lightning's ``TorchCheckpointIO`` would read ``--ckpt_path last`` with a plain
``torch.load``).
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import torch
from lightning.pytorch.plugins.io import CheckpointIO, TorchCheckpointIO

from vision.checkpoint import first_mismatch, load_checkpoint, load_weights
from vision.data.io import atomic_write_bytes
from vision.errors import DataError, InputError

__all__ = ["AtomicCheckpointIO", "check_checkpoint_io", "first_mismatch", "load_checkpoint", "load_weights"]

_UNSAFE = ("a checkpoint is a pickle, and unpickling can run any code it carries; training reads checkpoints "
           "only with weights_only=True")


def check_checkpoint_io(plugins: list[Any], weights_only: bool | None) -> None:
    """Refuse the ways a training run could read a checkpoint with a plain ``torch.load``: ``weights_only=False``
    (``--weights_only false``) and any checkpoint I/O plugin that is not an :class:`AtomicCheckpointIO`.

    Raises:
        InputError: naming the option or the plugin.
    """
    if weights_only is False:
        raise InputError(f"--weights_only false is refused: {_UNSAFE}")
    for plugin in plugins:
        if isinstance(plugin, CheckpointIO) and not isinstance(plugin, AtomicCheckpointIO):
            raise InputError(f"trainer.plugins names {type(plugin).__name__}, which is refused: {_UNSAFE}, through "
                             f"AtomicCheckpointIO (added by default)")


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
        dict, released weights) with a :class:`DataError` naming it, before Lightning indexes missing keys;
        ``weights_only=False`` is refused (:func:`check_checkpoint_io`)."""
        check_checkpoint_io([], weights_only)
        checkpoint = load_checkpoint(path, map_location=map_location or "cpu")
        missing = [k for k in ("state_dict", "pytorch-lightning_version") if k not in checkpoint]
        if missing:
            raise DataError(f"not a checkpoint written by Lightning training (no {' or '.join(map(repr, missing))}); "
                            "--ckpt_path resumes a run of tools/train.py, weights go in through the model's options",
                            file=path)
        return checkpoint
