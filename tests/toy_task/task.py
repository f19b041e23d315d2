"""The toy task's one definition: its config, the model it builds, and the reader and writer of its weights.

- :class:`ToyConfig`: the model's width; ``ToyModule`` stores ``config.to_dict()`` under
  ``hyper_parameters["config"]`` and the weights under ``model.``.
- :func:`build_model`: a :class:`ToyModel`, images ``[B, 3, H, W]`` in [0, 1] -> brightness ``[B, H, W]``.
- :func:`load`: ``(model in eval mode, config)`` from a checkpoint (``torch.load(weights_only=True)``) or a model
  folder (safetensors); :func:`save` writes the folder (:mod:`vision.model_folder`).
- :func:`brightness`: the target, a pixel's mean of R, G, B.

Inference code imports this module; it never imports :mod:`vision.training` or Lightning.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import ClassVar

import torch
from torch import nn

from vision.checkpoint import load_weights, read_task_checkpoint
from vision.export.model_card import model_card
from vision.model_folder import ModelFolder, write_model_folder
from vision.task_config import TaskConfig, checked

__all__ = ["ToyConfig", "ToyModel", "brightness", "build_model", "load", "save"]


@dataclasses.dataclass
class ToyConfig(TaskConfig):
    """What defines a toy model.

    Args:
        hidden: channels of the hidden 1x1 convolution.
    """

    task: ClassVar[str] = "toy"  # the registry name its checkpoints and model folders record

    hidden: int = checked(4, low=1, high=64)  # checked by TaskConfig's one schema, as every task's fields


class ToyModel(nn.Module):
    """Per-pixel brightness: two 1x1 convolutions with a ReLU between, so each pixel is predicted from its own
    colour only. ``forward(images [B, 3, H, W] float in [0, 1]) -> [B, H, W]``."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.encode = nn.Conv2d(3, hidden, kernel_size=1)
        self.decode = nn.Conv2d(hidden, 1, kernel_size=1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.decode(torch.relu(self.encode(images))).squeeze(1)


def brightness(images: torch.Tensor) -> torch.Tensor:
    """The true per-pixel brightness: ``[..., 3, H, W]`` in [0, 1] -> ``[..., H, W]``, the mean of R, G, B."""
    return images.mean(dim=-3)


def build_model(config: ToyConfig | dict | None = None) -> ToyModel:
    """A freshly initialised :class:`ToyModel` for ``config`` (a :class:`ToyConfig`, a mapping of its fields or None
    for the defaults)."""
    config = ToyConfig.from_value(config)
    return ToyModel(config.hidden)


def load(checkpoint: str | Path, device: str | torch.device = "cpu") -> tuple[ToyModel, ToyConfig]:
    """Read a toy checkpoint (``weights_only=True``) or model folder: ``(model in eval mode on device, config)``.

    Raises:
        DataError: the file is missing or unreadable, holds another task's model, or its weights do not fit the
            config's model (naming the file).
    """
    config, weights, _ = read_task_checkpoint(checkpoint, ToyConfig, prefix="model.", map_location=device)
    model = build_model(config)
    load_weights(model, weights, checkpoint)
    return model.to(device).eval(), config


def save(model: ToyModel, config: ToyConfig | dict | None, folder: str | Path, overwrite: bool = False) -> Path:
    """Write ``model`` as a model folder (``config.json``, ``model.safetensors``, ``README.md``) that :func:`load`
    reads; see :func:`vision.model_folder.write_model_folder` for ``folder`` and ``overwrite``."""
    config = ToyConfig.from_value(config)
    return write_model_folder(ModelFolder(ToyConfig.task, config.to_dict(), {"model": model.state_dict()}), folder,
                              overwrite=overwrite, card=model_card)

#: the registry's fixed name (vision.tasks.PARTS)
Config = ToyConfig
