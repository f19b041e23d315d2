"""The one loader of the shared backbone's weights, for every task.

:func:`load_backbone` fills a :class:`~vision.geometry.model.GeometryBackbone` from a local file of one of three
kinds, recognised from its content:

- a ``GeometryModule`` checkpoint (``hyper_parameters.config`` and weights under ``model.backbone.``), or a geometry
  model folder (:mod:`vision.model_folder`), read by :func:`vision.geometry.task.read_backbone_checkpoint`;
- a VGGT checkpoint (``model.safetensors`` / ``model.pt`` of VGGT-1B, VGGT's key names), mapped by
  :func:`vision.geometry.vggt_keys.convert_vggt_state_dict` (the same names as the backbone's, apart from the
  DINOv2 patch embed, so a state dict saved from a ``GeometryBackbone`` loads too).

DINOv2 / timm weights enter through the patch embed (``GeometryConfig.patch_embed_weights``,
:func:`vision.geometry.patch_embed.load_patch_embed_weights`), since they hold no more than that part.

The strictness rule, the same for every caller: the backbone's *components* are its top-level submodules and
parameters (``aggregator``, ``camera_head``, ``depth_head``, ``point_head``, ``ray_head``) that it has built. Every
tensor of every component must come from the file with the model's shape, except components named in ``fresh``
(left as initialised: e.g. a ray head that a VGGT file cannot hold). File tensors of components the backbone has not
built (the control and the detector build the aggregator alone; VGGT's track head) are skipped. Anything else (a
missing tensor, a tensor the component does not have, another shape) is one :class:`~vision.errors.DataError` naming
the file and the first keys. Files are read with ``torch.load(weights_only=True)`` or safetensors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import torch
from torch import nn

from vision.checkpoint import read_model
from vision.errors import DataError
from vision.model_folder import one_task

__all__ = ["BackboneFile", "BackboneLoad", "components_of", "load_backbone", "read_backbone_file"]


class BackboneFile(NamedTuple):
    """A weights file read by :func:`read_backbone_file`: its kind (``"geometry checkpoint"`` or ``"VGGT-format"``),
    the state dict in :class:`GeometryBackbone` key names, the file keys the VGGT map dropped, the geometry config
    of a geometry checkpoint (None otherwise) and the file's path."""

    source: str
    weights: dict[str, torch.Tensor]
    dropped: list[str]
    config: Any
    path: Path


class BackboneLoad(NamedTuple):
    """What :func:`load_backbone` did: the file's kind, the keys loaded and the file keys skipped."""

    source: str
    loaded: list[str]
    skipped: list[str]


def components_of(module: nn.Module, state: Mapping[str, torch.Tensor] | None = None) -> set[str]:
    """The top-level names of ``module``'s state dict (its built submodules and direct parameters / buffers);
    ``state``: that state dict, when the caller already has it."""
    return {key.split(".", 1)[0] for key in (module.state_dict() if state is None else state)}


def read_backbone_file(path: str | Path, backbone: nn.Module) -> BackboneFile:
    """Read a weights file once (a geometry checkpoint, or VGGT-format weights: VGGT's names are the backbone's own
    apart from the DINOv2 patch embed). ``backbone`` decides how a DINOv2 patch embed converts."""
    from vision.geometry.patch_embed import read_state_dict, state_dict_of
    from vision.geometry.task import GeometryConfig, backbone_of_checkpoint
    from vision.geometry.vggt_keys import convert_vggt_state_dict

    path = Path(path)
    if not path.is_file() and not path.is_dir():
        raise DataError("weights file not found", file=path)
    if path.suffix == ".safetensors" and path.is_file():
        state = read_state_dict(path)
    else:
        raw = read_model(path, config_of=one_task(GeometryConfig))  # a checkpoint file or a geometry model folder
        if isinstance(raw, Mapping) and "hyper_parameters" in raw:
            config, weights = backbone_of_checkpoint(raw, path)
            return BackboneFile("geometry checkpoint", weights, [], config, path)
        state = state_dict_of(raw, path)
    converted, dropped = convert_vggt_state_dict(state, backbone)
    return BackboneFile("VGGT-format", converted, dropped, None, path)


def load_backbone(backbone: nn.Module, source: str | Path | BackboneFile, fresh: Sequence[str] = ()) -> BackboneLoad:
    """Load a weights file (a path, or a file already read by :func:`read_backbone_file`) into ``backbone`` under the
    module's strictness rule (see the module docstring). ``fresh``: components left as initialised. Returns a
    :class:`BackboneLoad`.

    Raises:
        DataError: the file is missing, unreadable, not a weights file, or its weights do not fit (naming the file,
            then the first missing / unexpected / mismatched keys).
    """
    file = source if isinstance(source, BackboneFile) else read_backbone_file(source, backbone)
    weights, path = file.weights, file.path
    own = backbone.state_dict()
    built = components_of(backbone, own) - set(fresh)
    wanted = {k: v for k, v in weights.items() if k.split(".", 1)[0] in built}
    skipped = sorted(set(weights) - set(wanted)) + list(file.dropped)
    missing = sorted(k for k in own if k.split(".", 1)[0] in built and k not in wanted)
    unexpected = sorted(k for k in wanted if k not in own)
    mismatched = [f"{k} {tuple(v.shape)} vs model {tuple(own[k].shape)}" for k, v in wanted.items()
                  if k in own and tuple(v.shape) != tuple(own[k].shape)]
    if missing or unexpected or mismatched:
        parts = [f"{name}={keys[:5]}" for name, keys in
                 (("missing", missing), ("unexpected", unexpected), ("shape mismatches", mismatched)) if keys]
        raise DataError(f"the {file.source} weights do not fit this {type(backbone).__name__} ({'; '.join(parts)})",
                        file=path)
    backbone.load_state_dict(wanted, strict=False)
    return BackboneLoad(file.source, sorted(wanted), skipped)
