"""The geometry task's one definition: its config, the model it builds and the reader of its checkpoints.

- :class:`GeometryConfig`: the fields that define the model (backbone size, input size, patch embedding, the
  optional matching projection); ``GeometryModule`` stores ``config.to_dict()`` in its checkpoints under
  ``hyper_parameters["config"]``.
- :func:`build_model`: a :class:`GeometryModel`, the backbone (:class:`~vision.geometry.model.GeometryBackbone`)
  and, when ``match_dim`` is set, the matching projection (:class:`~vision.geometry.matching.MatchProjection`) that
  the ``match_pose`` evaluation reads. Its weights sit in a checkpoint under ``model.backbone.*`` and
  ``model.match.*``.
- :func:`load`: ``(model, config)`` from a checkpoint (``torch.load(weights_only=True)``) or a model folder
  (:mod:`vision.model_folder`, safetensors); :func:`save` writes the folder.
- :func:`read_backbone_checkpoint`: the backbone's state dict alone (keys ``aggregator.*``, ``camera_head.*``,
  ``depth_head.*``, ``point_head.*``; a ray head, a geometry-task output, is left out), which
  :func:`vision.geometry.weights.load_backbone` loads into the tasks that start from a trained geometry backbone.

Inference code imports this module; it does not import :mod:`vision.training`.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from vision.checkpoint import load_weights, read_model, read_task_checkpoint, task_checkpoint_parts
from vision.errors import DataError, InputError
from vision.export.model_card import model_card
from vision.geometry.matching import MatchProjection
from vision.geometry.model import BACKBONE_CONFIGS, GeometryBackbone, create_backbone
from vision.geometry.patch_embed import build_patch_embed
from vision.geometry.solver import CameraSolver
from vision.model_folder import ModelFolder, one_task, write_model_folder
from vision.task_config import TaskConfig, checked

__all__ = ["Config", "GeometryConfig", "GeometryModel", "MAX_IMAGE_SIZE", "check_image_size", "check_patch_embed_weights",
           "backbone_of_checkpoint", "build_model", "load", "save", "read_backbone_checkpoint"]

#: The largest square input side a task config takes: the backbone's position grid, its feature maps and the
#: memory of one view grow with its square (2048 keeps the largest backbone buildable on a 24 GB machine).
MAX_IMAGE_SIZE = 2048


def check_image_size(config: TaskConfig, size: str, field: str = "image_size") -> None:
    """Refuse ``config.<field>`` (:meth:`~vision.task_config.TaskConfig.field_error`) unless it is a multiple of the
    patch size of the backbone size ``size`` (a key of :data:`BACKBONE_CONFIGS`): the one rule every task's input
    size follows."""
    patch = int(BACKBONE_CONFIGS[size]["patch_size"])
    if getattr(config, field) % patch:
        raise config.field_error(field, f"not a multiple of the {size} backbone's patch size {patch}")


def check_patch_embed_weights(config: TaskConfig, kind: str, field: str = "patch_embed_weights") -> None:
    """Refuse ``config.<field>`` when it is set and the patch embedding ``kind`` reads no weights (``conv``,
    ``convstem``): only ``mobilenetv2`` (``"mobilenetv2-imagenet"`` or a local file) and a timm ViT (a local file)
    do. Whether the file is there is checked when the model is first built, not here: a config read back from a
    checkpoint names weights that its loader does not read again."""
    if getattr(config, field) is not None and kind in ("conv", "convstem"):
        raise config.field_error(field, f"is for a 'mobilenetv2' or timm ViT patch embedding; this one is {kind!r}")


@dataclasses.dataclass
class GeometryConfig(TaskConfig):
    """What defines a geometry model.

    Args:
        size: backbone size, a key of :data:`vision.geometry.model.BACKBONE_CONFIGS` (``tiny``, ``tiny_mobilenet``,
            ``base``, ``vggt_1b``).
        image_size: side of the square input (training and evaluation resolution, linked to the datamodule's
            ``image_size``); a multiple of the patch size, at most :data:`MAX_IMAGE_SIZE`.
        patch_embed: patch embedding (``conv``, ``convstem``, ``mobilenetv2`` or a timm ViT name whose patch size
            and width are the size's); None: the size's own.
        patch_embed_weights: patch-embed weights used when the model is first built; never downloaded, and not
            read again by :func:`load` (the checkpoint holds the weights). For a timm ViT a local file (timm /
            DINOv2); for ``mobilenetv2`` the registry name ``mobilenetv2-imagenet`` (the file
            ``vision-fetch-weights mobilenetv2-imagenet`` fetches) or a local file; None leaves a ``mobilenetv2``
            stem randomly initialised (frozen all the same: for tests, not for training). Refused for ``conv`` /
            ``convstem``.
        use_checkpoint: gradient checkpointing of the aggregator's blocks while training.
        match_dim: width of the matching projection of the aggregator's last patch tokens (trained by the
            correspondence loss; the evaluation registers cameras from its matches, the ``match_pose`` row);
            None: no projection.
        ray_head: add the ray-map head (Depth Anything 3's camera target: per pixel the ray origin and direction,
            :mod:`vision.geometry.rays`; trained by the ``loss_rays`` term, its cameras scored as the ``ray_pose``
            row). A checkpoint whose config has no ``ray_head`` loads with False.
        camera_solver: the model's cameras (its results' ``extrinsics``, the geometry table's ``model`` row) are
            solved from dense flow between the views and the predicted depth, falling back to the learned matches' and
            then the camera head's (:class:`~vision.geometry.solver.CameraSolver`); the head's own are kept as
            ``head_extrinsics`` (the ``camera_head`` row). False: the camera head's. Inference only: the trained
            weights do not depend on it, and a checkpoint whose config has no ``camera_solver`` loads with True.
    """

    task: ClassVar[str] = "geometry"  # the registry name its checkpoints and model folders record

    size: str = checked("tiny", choices=BACKBONE_CONFIGS)
    image_size: int = checked(64, low=8, high=MAX_IMAGE_SIZE)
    patch_embed: str | None = checked(None, max_chars=200)
    patch_embed_weights: str | None = None
    use_checkpoint: bool = False
    match_dim: int | None = checked(None, low=1, high=4096)
    ray_head: bool = False
    camera_solver: bool = True

    def __post_init__(self) -> None:
        super().__post_init__()
        check_image_size(self, self.size)
        if self.patch_embed is not None:
            problem = _patch_embed_problem(self.patch_embed, self.size)
            if problem is not None:
                raise self.field_error("patch_embed", problem)
        check_patch_embed_weights(self, self.patch_embed or BACKBONE_CONFIGS[self.size]["patch_embed"])


@functools.lru_cache(maxsize=32)
def _patch_embed_problem(kind: str, size: str) -> str | None:
    """Why the patch embedding ``kind`` does not fit the backbone ``size`` (None when it does). It is built on the
    meta device, which takes no memory: a name of a huge timm model costs nothing before it is refused."""
    backbone = BACKBONE_CONFIGS[size]
    try:
        with torch.device("meta"):
            build_patch_embed(kind, int(backbone["img_size"]), int(backbone["patch_size"]), int(backbone["embed_dim"]))
    except InputError as exc:
        return str(exc)
    except Exception as exc:  # timm raises many types for a model that is not a ViT (an argument it does not take)
        return f"timm cannot build {kind!r} as a ViT patch embedding ({type(exc).__name__})"
    return None


class GeometryModel(nn.Module):
    """The geometry backbone and its optional matching projection.

    ``forward(images)`` is the backbone's (see :mod:`vision.geometry.model`: ``images`` ``[B, S, 3, H, W]`` in
    [0, 1] -> ``extrinsics [B, S, 3, 4]``, ``intrinsics``, ``depth [B, S, H, W, 1]``, ``world_points``, ``tokens``
    ...). :meth:`match_features` projects the last aggregator layer's patch tokens to unit-norm matching features
    ``[B, S, P, match_dim]``. ``solver``: the camera solver of its results (None: the camera head's cameras).
    """

    def __init__(self, backbone: GeometryBackbone, match: MatchProjection | None = None,
                 solver: CameraSolver | None = None) -> None:
        super().__init__()
        self.backbone = backbone
        self.match = match
        self.solver = solver

    @property
    def patch_size(self) -> int:
        return self.backbone.patch_size

    def forward(self, images: Any) -> dict[str, Any]:
        return self.backbone(images)

    def match_features(self, outputs: dict[str, Any]) -> torch.Tensor:
        """``[B, S, P, match_dim]`` from the outputs of :meth:`forward`; an :class:`InputError` without a projection."""
        if self.match is None:
            raise InputError("this geometry model has no matching projection (GeometryConfig.match_dim is None)")
        return self.match(outputs["tokens"][-1][:, :, outputs["patch_start_idx"]:])


def build_model(config: GeometryConfig | dict | None = None) -> GeometryModel:
    """A freshly initialised :class:`GeometryModel` for ``config`` (a :class:`GeometryConfig`, a mapping of its
    fields or None for the defaults)."""
    config = GeometryConfig.from_value(config)
    overrides: dict[str, Any] = {"img_size": config.image_size, "patch_embed_weights": config.patch_embed_weights,
                                 "use_checkpoint": config.use_checkpoint, "enable_rays": config.ray_head}
    if config.patch_embed is not None:
        overrides["patch_embed"] = config.patch_embed
    backbone = create_backbone(config.size, **overrides)
    match = MatchProjection(2 * backbone.embed_dim, config.match_dim) if config.match_dim is not None else None
    return GeometryModel(backbone, match, CameraSolver() if config.camera_solver else None)


def load(checkpoint: str | Path, device: str | torch.device = "cpu") -> tuple[GeometryModel, GeometryConfig]:
    """``(model in eval mode on device, config)`` from a ``GeometryModule`` checkpoint or a geometry model folder
    (:func:`save`, ``vision-export``). The model is built without
    ``patch_embed_weights`` (the checkpoint's weights replace them); a checkpoint of another task or layout, or
    weights that do not fit, is a :class:`DataError` naming the file."""
    config, weights, _ = read_task_checkpoint(checkpoint, GeometryConfig, prefix="model.", map_location=device)
    model = build_model(config.replace(patch_embed_weights=None))
    load_weights(model, weights, checkpoint)
    return model.to(device).eval(), config


def save(model: GeometryModel, config: GeometryConfig | dict | None, folder: str | Path,
         overwrite: bool = False) -> Path:
    """Write ``model`` as a model folder (``config.json``, ``model.safetensors``, ``README.md``) that :func:`load`
    reads; see :func:`vision.model_folder.write_model_folder` for ``folder`` and ``overwrite``."""
    config = GeometryConfig.from_value(config)
    return write_model_folder(ModelFolder("geometry", config.to_dict(), {"model": model.state_dict()}), folder,
                              overwrite=overwrite, card=model_card)


def read_backbone_checkpoint(checkpoint: str | Path, map_location: Any = "cpu"
                             ) -> tuple[GeometryConfig, dict[str, torch.Tensor]]:
    """``(config, backbone state dict)`` of a ``GeometryModule`` checkpoint, read once: the state dict has the keys
    of :class:`~vision.geometry.model.GeometryBackbone` (``aggregator.*``, ``camera_head.*``, ``depth_head.*``,
    ``point_head.*``) as the tasks that start from it build it: the ray head (``GeometryConfig.ray_head``,
    ``ray_head.*``) is left out. A checkpoint without them is a :class:`DataError` naming the file."""
    raw = read_model(checkpoint, map_location=map_location, config_of=one_task(GeometryConfig))
    return backbone_of_checkpoint(raw, checkpoint)


def backbone_of_checkpoint(checkpoint: dict, path: str | Path) -> tuple[GeometryConfig, dict[str, torch.Tensor]]:
    """:func:`read_backbone_checkpoint` of a checkpoint already read from ``path``."""
    config, weights = task_checkpoint_parts(checkpoint, path, GeometryConfig, prefix="model.")
    backbone = {k[len("backbone."):]: v for k, v in weights.items()
                if k.startswith("backbone.") and not k.startswith("backbone.ray_head.")}
    if not backbone:
        raise DataError("not a geometry checkpoint of this version (no weights under 'model.backbone.')",
                        file=path, field="state_dict")
    return config, backbone

#: the task's config class (the registry's fixed name, vision.tasks.PARTS)
Config = GeometryConfig
