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
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import torch

from vision.checkpoint import load_weights, read_model, task_checkpoint_parts
from vision.errors import InputError
from vision.export.model_card import model_card
from vision.geometry.model import BACKBONE_CONFIGS
from vision.geometry.task import MAX_IMAGE_SIZE, check_image_size, check_patch_embed_weights
from vision.model_folder import ModelFolder, one_task, write_model_folder
from vision.task_config import TaskConfig, checked
from vision.text import TEXT_DIM, TEXT_ENCODERS
from vision.tracking.baseline import MemoryBankTracker
from vision.tracking.model import DECODER_STYLES, G2TAM, TRACKING_POINTS

if TYPE_CHECKING:
    from vision.tracking.real.model import RealG2TAM, RealTrackerConfig

__all__ = ["Config", "ARCHITECTURES", "TrackingConfig", "build_model", "load", "save"]

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
        dim: width of view features, prompt tokens and the decoder (a multiple of 8: the decoder upsamples to
            ``dim / 8`` channels). num_masks: mask hypotheses per object.
        decoder_depth / num_heads: the two-way mask decoder; ``num_heads`` divides ``dim / 2``, the width of its
            cross-attention.
        memory_size: frames in the control's memory bank (plus the prompted frame); G2TAM has no bank.
        click_maps: dense click / box maps on the prompted view. proximity_maps: dense 3D proximity maps on every
            view (G2TAM only). hires_maps: the decoder also fuses the maps at its upsampled resolution.
        text_encoder: name for :func:`vision.text.get_text_encoder` (None: no text prompts).
        text_dim: the text encoder's embedding width.
        decoder_style: ``g2tam``, ``sam2`` or ``multiplex`` (G2TAM only). ``sam2``: the mask decoder computes as
            SAM 2.1's, so that :func:`vision.tracking.sam2_keys.load_sam2_heads` can start it from a SAM 2.1
            checkpoint (``TrackingConfig(**SAM2_1_HEADS)`` gives SAM 2.1's widths). ``multiplex``: objects share
            one decoding of each view (:class:`~vision.tracking.multiplex.MultiplexDecoder`).
        map_attention: with ``decoder_style: multiplex``, each object's maps bias its tokens' attention to the view
            (:class:`~vision.tracking.multiplex.MultiplexDecoder`); false only for that decoder (the ablation).
        tracking_points: ``dpt``, ``light`` or ``patch`` (G2TAM only): where tracking reads its point maps
            (:class:`G2TAM`); a ``light`` head is trained with the tracker or fitted afterwards by
            ``vision-fit-light-points``, a ``patch`` head is trained with the tracker.
        patch_embed_weights: weights of the backbone's patch embedding, read when the tracker is first built
            (:attr:`vision.geometry.task.GeometryConfig.patch_embed_weights`: for ``tiny_mobilenet``
            ``mobilenetv2-imagenet`` or a local file), for a tracker that does not start from a geometry checkpoint
            (one that does takes the checkpoint's stem). Not read again by :func:`load`; refused for a backbone
            whose patch embedding reads none.
    """

    task: ClassVar[str] = "tracking"  # the registry name its checkpoints and model folders record

    @classmethod
    def variant(cls, hyper_parameters):
        """A folder of G2TAM on real video (``hyper_parameters.real_tracker``) is read with its own config,
        :class:`~vision.tracking.real.model.RealTrackerConfig`; any other with this one."""
        if hyper_parameters.get("real_tracker") is True:
            from vision.tracking.real.model import RealTrackerConfig

            return RealTrackerConfig
        return cls

    architecture: str = checked("g2tam", choices=ARCHITECTURES)
    backbone: str = checked("tiny", choices=BACKBONE_CONFIGS)
    image_size: int = checked(64, low=8, high=MAX_IMAGE_SIZE)
    dim: int = checked(64, low=8, high=512, multiple_of=8)
    num_masks: int = checked(3, low=1, high=16)
    decoder_depth: int = checked(2, low=1, high=8)
    num_heads: int = checked(4, low=1, high=32)
    memory_size: int = checked(4, low=1, high=64)
    click_maps: bool = True
    proximity_maps: bool = True
    hires_maps: bool = True
    text_encoder: str | None = checked("minilm", choices=TEXT_ENCODERS)
    text_dim: int = checked(TEXT_DIM, low=1, high=4096)
    decoder_style: str = checked("g2tam", choices=DECODER_STYLES)
    map_attention: bool = True
    tracking_points: str = checked("dpt", choices=TRACKING_POINTS)
    patch_embed_weights: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        check_image_size(self, self.backbone)
        check_patch_embed_weights(self, BACKBONE_CONFIGS[self.backbone]["patch_embed"])
        if (self.dim // 2) % self.num_heads:
            raise self.field_error("num_heads", f"must divide dim / 2 = {self.dim // 2} (the width of the decoder's "
                                                "cross-attention)")
        # G2TAM's options: other than the first of their choices only for G2TAM
        for name, choices in (("decoder_style", DECODER_STYLES), ("tracking_points", TRACKING_POINTS)):
            if getattr(self, name) != choices[0] and self.architecture != "g2tam":
                raise self.field_error(name, f"needs architecture 'g2tam', got {self.architecture!r}")
        if not self.map_attention and self.decoder_style != "multiplex":
            raise self.field_error("map_attention", f"is an option of decoder_style 'multiplex', got "
                                                    f"{self.decoder_style!r}")
        if self.decoder_style == "multiplex" and not self.hires_maps:
            raise self.field_error("hires_maps", "must be true with decoder_style 'multiplex' (its decoder reads "
                                                 "the per-object maps)")


def build_model(config: TrackingConfig | dict | None = None) -> G2TAM | MemoryBankTracker:
    """The tracker ``config`` describes (untrained weights; ``config.patch_embed_weights`` is read here)."""
    config = TrackingConfig.from_value(config)
    common = dict(backbone=config.backbone, image_size=config.image_size, dim=config.dim, num_masks=config.num_masks,
                  decoder_depth=config.decoder_depth, num_heads=config.num_heads, text_dim=config.text_dim,
                  click_maps=config.click_maps, hires_maps=config.hires_maps)
    if config.patch_embed_weights is not None:
        common["backbone_overrides"] = {"patch_embed_weights": config.patch_embed_weights}
    if config.architecture == "g2tam":
        return G2TAM(proximity_maps=config.proximity_maps, decoder_style=config.decoder_style,
                     map_attention=config.map_attention,
                     tracking_points=config.tracking_points, **common)
    return MemoryBankTracker(memory_size=config.memory_size, **common)


def load(checkpoint: str | Path, device: str | torch.device = "cpu",
         image_size: int | None = None) -> tuple[G2TAM | MemoryBankTracker | RealG2TAM,
                                                 TrackingConfig | RealTrackerConfig]:
    """``(model, config)`` of a :class:`~vision.tracking.lightning.TrackingModule` checkpoint or a tracking model
    folder (:func:`save`, ``vision-export``), in eval mode on ``device``; of G2TAM on real video
    (:class:`~vision.tracking.real.model.RealG2TAM`, ``make train-real-tracking``) for its checkpoint or folder.

    ``image_size`` rebuilds the model for another input size (the weights do not depend on it). The model is built
    without ``patch_embed_weights`` (the checkpoint holds the weights). A checkpoint without a tracking config, or
    whose weights do not fit it, is a :class:`~vision.errors.DataError` naming the file.
    """
    from vision.tracking.real.checkpoint import is_real_tracker, load_real_tracker

    read = read_model(checkpoint, map_location=device, config_of=one_task(TrackingConfig))
    if is_real_tracker(read):
        if image_size is not None:
            raise InputError(f"{checkpoint} holds G2TAM on real video, which takes frames of any size: no image_size")
        real = load_real_tracker(checkpoint, device=device, checkpoint=read)
        return real, real.config
    config, weights = task_checkpoint_parts(read, checkpoint, TrackingConfig, prefix="model.")
    if image_size is not None:
        config = config.replace(image_size=int(image_size))
    model = build_model(config.replace(patch_embed_weights=None))
    load_weights(model, weights, checkpoint, hint=RETRAIN_HINT)
    return model.to(device).eval(), config


def save(model: G2TAM | MemoryBankTracker | RealG2TAM, config: TrackingConfig | dict | None, folder: str | Path,
         overwrite: bool = False) -> Path:
    """Write ``model`` as a model folder (``config.json``, ``model.safetensors``, ``README.md``) that :func:`load`
    reads; see :func:`vision.model_folder.write_model_folder` for ``folder`` and ``overwrite``. A
    :class:`~vision.tracking.real.model.RealG2TAM` is written with its own config (``config`` is not read), its
    pretrained parts with it, and ``hyper_parameters.real_tracker`` true."""
    from vision.tracking.real.model import RealG2TAM

    if isinstance(model, RealG2TAM):  # G2TAM on real video: its own config, marked as make train-real-tracking does
        folder_of = ModelFolder("tracking", model.config.to_dict(), {"model": model.state_dict()},
                                hyper_parameters={"real_tracker": True})
        return write_model_folder(folder_of, folder, overwrite=overwrite, card=model_card)
    config = TrackingConfig.from_value(config)
    return write_model_folder(ModelFolder("tracking", config.to_dict(), {"model": model.state_dict()}), folder,
                              overwrite=overwrite, card=model_card)

#: the task's config class (the registry's fixed name, vision.tasks.PARTS)
Config = TrackingConfig
