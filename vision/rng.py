"""The global random state of torch, numpy and Python: captured as a checkpoint-safe dict, restored, or preserved.

:func:`get_rng_state` returns only tensors, strings, ints, floats and tuples, so it survives ``torch.save`` and
``torch.load(weights_only=True)`` (numpy's state array travels as an int64 tensor). CUDA generators are included
when CUDA is available.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
import torch

__all__ = ["get_rng_state", "set_rng_state", "preserved_rng_state"]


def get_rng_state() -> dict[str, Any]:
    """``{"torch", "numpy", "python"[, "cuda"]}``: the global generators' states of this process."""
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    version, internal, py_gauss = random.getstate()
    state: dict[str, Any] = {
        "torch": torch.get_rng_state(),
        "numpy": (str(name), torch.from_numpy(np.asarray(keys, np.int64)), int(pos), int(has_gauss), float(gauss)),
        "python": (int(version), torch.tensor(internal, dtype=torch.int64), py_gauss),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what :func:`get_rng_state` returned."""
    torch.set_rng_state(state["torch"])
    name, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    version, internal, py_gauss = state["python"]
    random.setstate((version, tuple(int(v) for v in internal.tolist()), py_gauss))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


@contextlib.contextmanager
def preserved_rng_state() -> Iterator[None]:
    """Run a block without moving the global generators: whatever it draws, they are restored afterwards."""
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
