"""Reading a real tracker's checkpoint (:class:`~vision.tracking.real.lightning.RealTrackerModule`, ``make
train-real-tracking``) with ``torch.load(weights_only=True)``, or its model folder (``vision-export``, safetensors):
its config from ``hyper_parameters.config`` (plain data), every weight from ``state_dict`` under ``model.``.

``make train-real-tracking`` leaves it where ``vision-predict --task tracking`` looks without ``--ckpt``
(:data:`vision.tracking.cli.DEFAULT_CKPT`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from vision.checkpoint import load_weights, read_model
from vision.errors import DataError
from vision.tracking.real.model import RealG2TAM, RealTrackerConfig

__all__ = ["is_real_tracker", "load_real_tracker"]


def is_real_tracker(checkpoint: Mapping[str, Any]) -> bool:
    """Whether a checkpoint (already read) holds a real tracker."""
    hparams = checkpoint.get("hyper_parameters")
    return isinstance(hparams, Mapping) and hparams.get("real_tracker") is True


def load_real_tracker(path: str | Path, device: str | torch.device = "cpu",
                      checkpoint: Mapping[str, Any] | None = None) -> RealG2TAM:
    """The :class:`RealG2TAM` of a checkpoint file or a model folder (or of ``checkpoint``, that file already
    read), in eval mode on ``device``. Its pretrained parts come from the checkpoint too; nothing else is read."""
    if checkpoint is None:
        from vision.model_folder import one_task

        checkpoint = read_model(path, config_of=one_task(RealTrackerConfig))
    if not is_real_tracker(checkpoint):
        raise DataError("not a real tracker's checkpoint (no hyper_parameters.real_tracker); train one with make "
                        "train-real-tracking", file=path, field="hyper_parameters")
    config = checkpoint["hyper_parameters"].get("config")
    if not isinstance(config, Mapping):
        raise DataError("the real tracker's config is missing", file=path, field="hyper_parameters.config")
    try:
        config = RealTrackerConfig(**dict(config))
    except TypeError as exc:
        raise DataError(f"the real tracker's config does not read ({exc})", file=path,
                        field="hyper_parameters.config") from None
    weights = {k[len("model."):]: v for k, v in (checkpoint.get("state_dict") or {}).items() if k.startswith("model.")}
    from vision.weights.nets.nanotrack import NanoTrack
    from vision.weights.nets.tcmonodepth import TCSmallNet
    from vision.weights.nets.yolox import YOLOXNano

    perception = config.perception_config()
    with torch.random.fork_rng(devices=[]):  # the networks are overwritten by the checkpoint's weights
        model = RealG2TAM(config, nanotrack=NanoTrack(perception.features.split("-")[1]), depth_net=TCSmallNet(),
                          detector_net=YOLOXNano() if perception.detector is not None else None)
    load_weights(model, weights, path, hint="train it again with make train-real-tracking")
    return model.to(device).eval()
