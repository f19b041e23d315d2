"""The forensics task's one definition: its model config, how to build the detector, how to load a checkpoint.

A checkpoint written by :class:`vision.forensics.lightning.ForensicsModule` holds the config as a plain dict under
``hyper_parameters["config"]`` and the detector's weights *and buffers* under ``state_dict["model."]``: the
normalisation, the real reference, the calibration, the threshold and the per-tool reliability (see
:class:`vision.forensics.model.ForensicDetector`), so :func:`load` restores everything
:class:`vision.forensics.predictor.ForensicsPredictor` needs. Inference code imports this module, never
:mod:`vision.training`.

Geometry backbone: with ``ForensicsConfig.geometry`` set (a backbone size of
:data:`vision.geometry.model.BACKBONE_CONFIGS`), the ``geometry`` and ``planar`` tools also measure the shared
geometry backbone's cues (cameras, depth, points; see :mod:`vision.forensics.tools.geometry`). The backbone is frozen:
training starts it from a ``GeometryModule`` checkpoint (:func:`load_geometry_backbone`), and the forensic checkpoint
keeps its weights under ``state_dict["backbone."]``, so ``load(..., with_backbone=True)`` rebuilds it from that one
file.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import ClassVar, Literal, overload

import torch

from vision.checkpoint import load_weights, read_task_checkpoint
from vision.errors import DataError, InputError
from vision.export.model_card import model_card
from vision.forensics.model import ForensicDetector
from vision.forensics.statistics import VERDICT_ALPHA, VERDICT_REAL_P
from vision.forensics.tools import CLASSICAL_TOOLS, TOOL_NAMES, build_tools, feature_names
from vision.geometry.model import BACKBONE_CONFIGS, GeometryBackbone
from vision.geometry.task import MAX_IMAGE_SIZE, check_image_size
from vision.model_folder import ModelFolder, write_model_folder
from vision.task_config import TaskConfig, checked

__all__ = ["Config", "ForensicsConfig", "DEFAULT_TOOLS", "VERDICT_RULES", "BACKBONE_PREFIX", "build_model",
           "build_backbone", "load_geometry_backbone", "load", "save"]

#: where a forensic checkpoint keeps the frozen geometry backbone's weights (``ForensicsModule.backbone``)
BACKBONE_PREFIX = "backbone."

#: The tools a detector uses unless its config names others: every tool that needs no pretrained file (the
#: shipped configs add the pretrained ones, :data:`vision.forensics.tools.PRETRAINED_TOOLS`).
DEFAULT_TOOLS: tuple[str, ...] = CLASSICAL_TOOLS
#: how the headline verdict weighs the self-referential tests and the detector (:attr:`ForensicsConfig.verdict_rule`)
VERDICT_RULES = ("tests", "two-keys")


@dataclasses.dataclass
class ForensicsConfig(TaskConfig):
    """What defines a forensic detector.

    Args:
        tools: forensic tool names (:data:`vision.forensics.tools.TOOL_NAMES`), in order; they fix the feature
            columns ``tool.feature`` of the detector's input.
        hidden: MLP width. dropout: MLP dropout.
        image_size: the analysis frame size: clips are resized (shorter side) and centre-cropped to
            ``image_size x image_size`` (:func:`vision.forensics.features.load_clip`).
        max_frames: the first ``max_frames`` frames of a video are analysed.
        geometry: the geometry backbone's size (a key of :data:`vision.geometry.model.BACKBONE_CONFIGS`, e.g.
            ``tiny``) whose cues the ``geometry`` and ``planar`` tools add; None: no backbone (classical cues only).
        geometry_image_size: the square side the backbone sees (frames are resized to it; a multiple of the size's
            patch size, the geometry checkpoint's ``image_size`` for a size with an absolute position grid).
        verdict_alpha: the level of the self-referential tests' verdict (:func:`vision.forensics.statistics.
            verdict_of`): ``generated`` at a Bonferroni-combined p at or below it. The stated default; a level fitted
            on held-out footage is what ``benchmarks/bench_forensics_sources.py`` prints as ``fitted``
            (:func:`vision.forensics.statistics.alpha_for_false_alarms`; docs/forensics.md).
        verdict_rule: how the headline verdict weighs the tests and the detector (:data:`VERDICT_RULES`):
            ``tests``: the self-referential tests decide (:func:`vision.forensics.statistics.verdict_of`);
            ``two-keys``: a clip the tests call ``generated`` is called so only when the detector, at its
            threshold, calls it generated too (otherwise ``insufficient evidence``: a statistic whose null spans
            few videos can find new real footage unusual), and a clip no test finds unusual after correction is
            called ``real`` when the detector scores it under what generated validation clips reach
            (:func:`vision.forensics.predictor.self_tests`).
    """

    task: ClassVar[str] = "forensics"  # the registry name its checkpoints and model folders record

    tools: list[str] = checked(factory=lambda: list(DEFAULT_TOOLS), choices=TOOL_NAMES, items=(1, len(TOOL_NAMES)))
    hidden: int = checked(32, low=1, high=4096)
    dropout: float = checked(0.1, low=0.0, high=1.0, open_high=True)
    image_size: int = checked(64, low=16, high=1024)
    max_frames: int = checked(16, low=1, high=512)
    geometry: str | None = checked(None, choices=BACKBONE_CONFIGS)
    geometry_image_size: int = checked(64, low=8, high=MAX_IMAGE_SIZE)
    verdict_alpha: float = checked(VERDICT_ALPHA, low=0.0, high=VERDICT_REAL_P, open_low=True, open_high=True)
    verdict_rule: str = checked("tests", choices=VERDICT_RULES)

    def __post_init__(self) -> None:
        super().__post_init__()
        if len(set(self.tools)) != len(self.tools):
            raise self.field_error("tools", "names a tool twice")
        if self.geometry is not None:
            check_image_size(self, self.geometry, "geometry_image_size")

    @property
    def feature_names(self) -> list[str]:
        """The detector's input columns, ``tool.feature`` for every feature of every tool, in order (with a
        ``geometry`` backbone, the ``geometry`` and ``planar`` tools' backbone features included)."""
        return list(_feature_names(tuple(self.tools), self.geometry, self.geometry_image_size))


@functools.lru_cache(maxsize=32)
def _feature_names(tools: tuple[str, ...], geometry: str | None, image_size: int) -> tuple[str, ...]:
    """The names of :func:`build_tools` given the config's backbone, built on the meta device (no memory, no
    weights: the names depend only on the architecture being there)."""
    if geometry is None:
        return tuple(feature_names(build_tools(tools)))
    with torch.device("meta"):
        backbone = _new_backbone(geometry, image_size)
    return tuple(feature_names(build_tools(tools, backbone=backbone)))


def _new_backbone(size: str, image_size: int) -> GeometryBackbone:
    from vision.geometry.task import GeometryConfig, build_model as build_geometry

    return build_geometry(GeometryConfig(size=size, image_size=image_size)).backbone


def build_model(config: ForensicsConfig | dict | None = None) -> ForensicDetector:
    """A fresh (untrained, uncalibrated) :class:`ForensicDetector` over the features of ``config.tools``
    (a :class:`ForensicsConfig`, a mapping of its fields or None for the defaults)."""
    config = ForensicsConfig.from_value(config)
    return ForensicDetector(config.feature_names, hidden=config.hidden, dropout=config.dropout)


def build_backbone(config: ForensicsConfig) -> GeometryBackbone | None:
    """The config's geometry backbone, frozen (eval mode, ``requires_grad=False``) with fresh (untrained) weights, or
    None when ``config.geometry`` is None. Its weights come from :func:`load_geometry_backbone` (training) or a
    forensic checkpoint (``load(..., with_backbone=True)``)."""
    if config.geometry is None:
        return None
    backbone = _new_backbone(config.geometry, config.geometry_image_size)
    backbone.requires_grad_(False)
    return backbone.eval()


def load_geometry_backbone(config: ForensicsConfig, checkpoint: str | Path) -> GeometryBackbone:
    """The frozen backbone of ``config`` with the weights of a ``GeometryModule`` checkpoint (or VGGT-format weights),
    through :func:`vision.geometry.weights.load_backbone`.

    Raises:
        InputError: ``config.geometry`` is None (no backbone to load into).
        DataError: the file is missing, unreadable or holds no backbone weights; a geometry checkpoint's backbone
            size (``hyper_parameters.config.size``) is not ``config.geometry``, or it uses another patch embedding
            than the size's own; or its weights do not fit (names the file and the field).
    """
    from vision.geometry.weights import load_backbone, read_backbone_file

    if config.geometry is None:
        raise InputError(f"a geometry checkpoint ({checkpoint}) needs ForensicsConfig.geometry (the backbone size, "
                         "e.g. 'tiny'); it is None")
    backbone = build_backbone(config)
    weights = read_backbone_file(checkpoint, backbone)  # read once
    geometry = weights.config
    if geometry is not None and geometry.size != config.geometry:
        raise DataError(f"the geometry checkpoint's backbone is {geometry.size!r}, but ForensicsConfig.geometry is "
                        f"{config.geometry!r}; set config.geometry to {geometry.size!r} or give a {config.geometry!r} "
                        "geometry checkpoint", file=checkpoint, field="hyper_parameters.config.size",
                        value=geometry.size)
    own = BACKBONE_CONFIGS[config.geometry]["patch_embed"]
    if geometry is not None and geometry.patch_embed not in (None, own):
        raise DataError(f"the geometry checkpoint's patch embedding is not the {geometry.size} backbone's own "
                        f"({own!r}); forensics builds the backbone from its size", file=checkpoint,
                        field="hyper_parameters.config.patch_embed", value=geometry.patch_embed)
    load_backbone(backbone, weights)
    return backbone


@overload
def load(checkpoint: str | Path, device: str | torch.device = "cpu", *,
         with_backbone: Literal[False] = False) -> tuple[ForensicDetector, ForensicsConfig]: ...


@overload
def load(checkpoint: str | Path, device: str | torch.device = "cpu", *,
         with_backbone: Literal[True]) -> tuple[ForensicDetector, ForensicsConfig, GeometryBackbone | None]: ...


def load(checkpoint: str | Path, device: str | torch.device = "cpu", *, with_backbone: bool = False
         ) -> tuple[ForensicDetector, ForensicsConfig] | tuple[ForensicDetector, ForensicsConfig,
                                                                GeometryBackbone | None]:
    """Read a forensics checkpoint (``weights_only=True``) or model folder (:func:`save`, ``vision-export``):
    ``(detector in eval mode on device, config)``. With ``with_backbone``, everything it holds:
    ``(detector, config, frozen geometry backbone or None)``, the backbone rebuilt from ``config.geometry`` /
    ``geometry_image_size`` and given the checkpoint's ``backbone.*`` weights, on ``device``.

    Raises:
        DataError: the file is missing or unreadable, is not a forensics checkpoint of this version, or its
            weights do not fit the config's detector (names the file); with ``with_backbone``, also a config with
            a backbone but no ``backbone.*`` weights, weights without a backbone in the config, or weights that do
            not fit it.
    """
    config, weights, raw = read_task_checkpoint(checkpoint, ForensicsConfig, prefix="model.", map_location=device)
    model = build_model(config)
    load_weights(model, weights, checkpoint)
    model = model.to(device).eval()
    if not with_backbone:
        return model, config
    state = raw.get("state_dict") or {}
    backbone_weights = {k[len(BACKBONE_PREFIX):]: v for k, v in state.items() if k.startswith(BACKBONE_PREFIX)}
    if config.geometry is None:
        if backbone_weights:
            raise DataError(f"the checkpoint holds geometry backbone weights ({BACKBONE_PREFIX!r}) but its config "
                            "names no backbone", file=checkpoint, field="hyper_parameters.config.geometry",
                            value=None)
        return model, config, None
    if not backbone_weights:
        raise DataError(f"the config names a {config.geometry!r} geometry backbone but the checkpoint holds no "
                        f"weights under {BACKBONE_PREFIX!r}", file=checkpoint, field="state_dict")
    backbone = build_backbone(config)
    load_weights(backbone, backbone_weights, checkpoint)
    return model, config, backbone.to(device).eval()


def save(model: ForensicDetector, config: ForensicsConfig | dict | None, folder: str | Path,
         backbone: GeometryBackbone | None = None, overwrite: bool = False) -> Path:
    """Write ``model`` as a model folder (``config.json``, ``model.safetensors``, ``README.md``) that :func:`load`
    reads; the frozen geometry ``backbone`` (needed when ``config.geometry`` is set) goes to
    ``backbone.safetensors``, which ``load(..., with_backbone=True)`` reads. See
    :func:`vision.model_folder.write_model_folder` for ``folder`` and ``overwrite``.

    Raises:
        InputError: a backbone without ``config.geometry``, or none with it.
    """
    config = ForensicsConfig.from_value(config)
    if (backbone is None) != (config.geometry is None):
        raise InputError(f"ForensicsConfig.geometry is {config.geometry!r}: save "
                         f"{'its frozen backbone with it' if backbone is None else 'no backbone'}")
    weights = {"model": model.state_dict()}
    if backbone is not None:
        weights[BACKBONE_PREFIX.rstrip(".")] = backbone.state_dict()
    return write_model_folder(ModelFolder("forensics", config.to_dict(), weights), folder, overwrite=overwrite,
                              card=model_card)

#: the task's config class (the registry's fixed name, vision.tasks.PARTS)
Config = ForensicsConfig

#: the top-level checkpoint key (plain data) its model folder keeps besides the config and weights: the geometry
#: backbone's config the features were measured with
FOLDER_EXTRAS: tuple[str, ...] = ("forensics_backbone",)
