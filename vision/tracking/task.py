"""The tracking task's one definition: its model config, how to build the model, and how to load a checkpoint.

:class:`TrackingConfig` holds the fields that define a tracker (the architecture, the backbone size, widths, the
dense prompt maps, the text encoder) with the one copy of their defaults; :func:`build_model` builds
:class:`~vision.tracking.model.G2TAM` or the memory-bank control
(:class:`~vision.tracking.baseline.MemoryBankTracker`) from it; :func:`load` rebuilds the model of a
:class:`~vision.tracking.lightning.TrackingModule` checkpoint (config under ``hyper_parameters.config``, weights
under ``model.``, read with ``weights_only=True``). A tracker's backbone starts from a geometry checkpoint through
:func:`vision.geometry.weights.load_backbone`. Inference code (the predictor, the demo) imports this module, never :mod:`vision.training`.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar
from pathlib import Path

import torch

from vision.checkpoint import TaskConfig, load_weights, read_task_checkpoint
from vision.errors import InputError
from vision.model_folder import ModelFolder, write_model_folder
from vision.text import TEXT_DIM
from vision.tracking.baseline import MemoryBankTracker
from vision.tracking.model import DECODER_STYLES, G2TAM, TRACKING_POINTS

__all__ = ["ARCHITECTURES", "TrackingConfig", "build_model", "load", "save"]

ARCHITECTURES: tuple[str, ...] = ("g2tam", "memory_bank")

#: what a checkpoint whose weights do not fit its config should do
RETRAIN_HINT = "retrain it (make train-tracking after deleting runs/tracking)"


@dataclasses.dataclass
class TrackingConfig(TaskConfig):
    """The fields that define a tracker.

    Args:
        architecture: ``g2tam`` (:class:`G2TAM`) or ``memory_bank`` (the control, :class:`MemoryBankTracker`).
        backbone: geometry backbone size name (:func:`vision.geometry.model.create_backbone`).
        image_size: square input size in pixels (a multiple of the backbone's patch size); the data is resized to it
            (the CLI links it to the datamodule's ``image_size``).
        dim: width of view features, prompt tokens and the decoder. num_masks: mask hypotheses per object.
        decoder_depth / num_heads: the two-way mask decoder.
        memory_size: frames in the control's memory bank (plus the prompted frame); G2TAM has no bank.
        click_maps: dense click / box maps on the prompted view. proximity_maps: dense 3D proximity maps on every
            view (G2TAM only). hires_maps: the decoder also fuses the maps at its upsampled resolution.
        text_encoder: name for :func:`vision.text.get_text_encoder` (None: no text prompts).
        text_dim: the text encoder's embedding width.
        decoder_style: ``g2tam`` or ``sam2`` (G2TAM only): the mask decoder computes as SAM 2.1's, so that
            :func:`vision.tracking.sam2_keys.load_sam2_heads` can start it from a SAM 2.1 checkpoint
            (``TrackingConfig(**SAM2_1_HEADS)`` gives SAM 2.1's widths).
        tracking_points: ``dpt`` or ``light`` (G2TAM only): where tracking reads its point maps
            (:class:`G2TAM`); a ``light`` model comes from ``vision-fit-light-points``, not from training.
    """

    task: ClassVar[str] = "tracking"  # the registry name its checkpoints and model folders record

    architecture: str = "g2tam"
    backbone: str = "tiny"
    image_size: int = 64
    dim: int = 64
    num_masks: int = 3
    decoder_depth: int = 2
    num_heads: int = 4
    memory_size: int = 4
    click_maps: bool = True
    proximity_maps: bool = True
    hires_maps: bool = True
    text_encoder: str | None = "minilm"
    text_dim: int = TEXT_DIM
    decoder_style: str = "g2tam"
    tracking_points: str = "dpt"

    def __post_init__(self) -> None:
        if self.architecture not in ARCHITECTURES:
            raise InputError(f"TrackingConfig.architecture must be one of {ARCHITECTURES}, got {self.architecture!r}")
        # G2TAM's options: a value of their choices, other than the first only for G2TAM
        for name, choices in (("decoder_style", DECODER_STYLES), ("tracking_points", TRACKING_POINTS)):
            value = getattr(self, name)
            if value not in choices:
                raise InputError(f"TrackingConfig.{name} must be one of {choices}, got {value!r}")
            if value != choices[0] and self.architecture != "g2tam":
                raise InputError(f"TrackingConfig.{name}={value!r} needs architecture 'g2tam', "
                                 f"got {self.architecture!r}")
        for name in ("image_size", "dim", "num_masks", "decoder_depth", "num_heads", "memory_size", "text_dim"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"TrackingConfig.{name} must be an integer >= 1, got {value!r}")


def build_model(config: TrackingConfig | dict | None = None) -> G2TAM | MemoryBankTracker:
    """The tracker ``config`` describes (untrained weights)."""
    config = TrackingConfig.from_value(config)
    common = dict(backbone=config.backbone, image_size=config.image_size, dim=config.dim, num_masks=config.num_masks,
                  decoder_depth=config.decoder_depth, num_heads=config.num_heads, text_dim=config.text_dim,
                  click_maps=config.click_maps, hires_maps=config.hires_maps)
    if config.architecture == "g2tam":
        return G2TAM(proximity_maps=config.proximity_maps, decoder_style=config.decoder_style,
                     tracking_points=config.tracking_points, **common)
    return MemoryBankTracker(memory_size=config.memory_size, **common)


def load(checkpoint: str | Path, device: str | torch.device = "cpu",
         image_size: int | None = None) -> tuple[G2TAM | MemoryBankTracker, TrackingConfig]:
    """``(model, config)`` of a :class:`~vision.tracking.lightning.TrackingModule` checkpoint or a tracking model
    folder (:func:`save`, ``vision-export``), in eval mode on ``device``.

    ``image_size`` rebuilds the model for another input size (the weights do not depend on it). A checkpoint
    without a tracking config, or whose weights do not fit it, is a :class:`~vision.errors.DataError` naming the
    file.
    """
    config, weights, _ = read_task_checkpoint(checkpoint, TrackingConfig, prefix="model.", map_location=device)
    if image_size is not None:
        config = config.replace(image_size=int(image_size))
    model = build_model(config)
    load_weights(model, weights, checkpoint, hint=RETRAIN_HINT)
    return model.to(device).eval(), config


def save(model: G2TAM | MemoryBankTracker, config: TrackingConfig | dict | None, folder: str | Path,
         overwrite: bool = False) -> Path:
    """Write ``model`` as a model folder (``config.json``, ``model.safetensors``, ``README.md``) that :func:`load`
    reads; see :func:`vision.model_folder.write_model_folder` for ``folder`` and ``overwrite``."""
    config = TrackingConfig.from_value(config)
    return write_model_folder(ModelFolder("tracking", config.to_dict(), {"model": model.state_dict()}), folder,
                              overwrite=overwrite)
