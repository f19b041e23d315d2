"""The networks that read the registered pretrained files (:mod:`vision.weights.registry`), written in the package:
one module per network (``tcmonodepth``, ``alike``, ``mobilenet``, ``yolox``, ``nanotrack``) and the ONNX ones run
with onnxruntime (``onnx_models``). Each loads its file through :func:`vision.weights.store.weights_path`, which
checks it."""

from pathlib import Path

import torch
from torch import nn

from vision.weights.store import WeightsError

__all__ = ["load_state_strict"]


def load_state_strict(net: nn.Module, state: dict[str, torch.Tensor], what: str, path: str | Path) -> nn.Module:
    """Load ``state`` into ``net`` only when its keys and every tensor's shape are exactly ``net``'s; otherwise a
    :class:`WeightsError` naming ``what`` (e.g. ``"alike-t"``), ``path`` and the first few missing, unexpected or
    mis-shaped tensors. Returns ``net``."""
    expected = net.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    name = type(net).__name__
    if missing or unexpected:
        raise WeightsError(f"{what} at {path}: keys do not match {name}: missing {missing[:5]}"
                           f"{' ...' if len(missing) > 5 else ''}, unexpected {unexpected[:5]}"
                           f"{' ...' if len(unexpected) > 5 else ''}")
    wrong = [f"{k} {tuple(state[k].shape)} (expected {tuple(v.shape)})" for k, v in expected.items()
             if state[k].shape != v.shape]
    if wrong:
        raise WeightsError(f"{what} at {path}: tensor shapes do not match {name}: {wrong[:5]}")
    net.load_state_dict(state, strict=True)
    return net
