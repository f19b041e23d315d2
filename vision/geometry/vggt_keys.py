"""Key map from the official VGGT-1B checkpoint to :class:`GeometryBackbone` (``create_backbone("vggt_1b")``).

Our module and parameter names equal VGGT's (``aggregator.frame_blocks.*``, ``aggregator.global_blocks.*``,
``aggregator.camera_token``, ``aggregator.register_token``, ``camera_head.*``, ``depth_head.*``,
``point_head.*``), so the map is the identity except for the DINOv2 patch embed, which we run as the equivalent
timm model ``vit_large_patch14_reg4_dinov2``:

=========================================== =============================== =========================================
VGGT key                                    ours                            transform
=========================================== =============================== =========================================
``aggregator.patch_embed.register_tokens``  ``aggregator.patch_embed.reg_token``  rename
``aggregator.patch_embed.cls_token``        same                            ``+ pos_embed[:, 0]`` (timm keeps no class
                                                                            position; the network is unchanged)
``aggregator.patch_embed.pos_embed``        same                            ``[1, 1370, C] -> [1, 1369, C]`` (class
                                                                            position dropped, resampled if our grid
                                                                            differs)
``aggregator.patch_embed.mask_token``       --                              skipped (masked pre-training only)
``track_head.*``                            --                              skipped: we have no track head
=========================================== =============================== =========================================

Keys of heads disabled in our model (e.g. ``point_head.*`` with ``enable_points=False``) are skipped as well.
A leading ``module.`` (DDP) is stripped. A checkpoint of VGGT's ``Aggregator(patch_embed="conv")`` (keys
``aggregator.patch_embed.proj.{weight,bias}``) maps by identity into our ``patch_embed="conv"``; a DINOv2 patch embed
needs a timm one (``create_backbone("vggt_1b")``). Numeric parity with VGGT's own code at a small conv configuration
is checked by ``tests/geometry/test_vggt_parity.py``. Files are loaded by
:func:`vision.geometry.weights.load_backbone`, the one loader of backbone weights.
"""

from __future__ import annotations

from typing import Mapping

import torch
from torch import nn

from vision.errors import InputError
from vision.geometry.patch_embed import ConvPatchEmbed, dinov2_to_timm

__all__ = ["SKIPPED_PREFIXES", "SKIPPED_KEYS", "convert_vggt_state_dict"]

PATCH_EMBED_PREFIX = "aggregator.patch_embed."
SKIPPED_PREFIXES = ("track_head.",)
SKIPPED_KEYS = ("aggregator.patch_embed.mask_token",)
CONV_PATCH_EMBED_KEYS = {"proj.weight", "proj.bias"}  # VGGT's PatchEmbed (patch_embed="conv")
HEAD_PREFIXES = {"camera_head.": "camera_head", "depth_head.": "depth_head", "point_head.": "point_head"}


def convert_vggt_state_dict(state: Mapping[str, torch.Tensor],
                            model: nn.Module) -> tuple[dict[str, torch.Tensor], list[str]]:
    """Map a VGGT state dict to our names and conventions. Returns ``(converted, skipped_keys)``.

    Works on meta tensors too (only shapes are needed), which the tests use to check the map without weights.
    """
    state = {(k[len("module."):] if k.startswith("module.") else k): v for k, v in state.items()}
    skipped = [k for k in state if k.startswith(SKIPPED_PREFIXES) or k in SKIPPED_KEYS]
    for prefix, attr in HEAD_PREFIXES.items():
        if getattr(model, attr, None) is None:
            skipped += [k for k in state if k.startswith(prefix)]
    kept = {k: v for k, v in state.items() if k not in set(skipped)}
    patch = {k[len(PATCH_EMBED_PREFIX):]: v for k, v in kept.items() if k.startswith(PATCH_EMBED_PREFIX)}
    out = {k: v for k, v in kept.items() if not k.startswith(PATCH_EMBED_PREFIX)}
    if patch:
        vit = model.aggregator.patch_embed
        if isinstance(vit, ConvPatchEmbed):
            if set(patch) - CONV_PATCH_EMBED_KEYS:  # a DINOv2 patch embed (VGGT-1B) cannot go into a conv one
                raise InputError("the VGGT checkpoint holds a DINOv2 patch embed but this model uses "
                                 "patch_embed='conv'; build it with create_backbone('vggt_1b')")
            out.update({PATCH_EMBED_PREFIX + k: v for k, v in patch.items()})  # VGGT patch_embed="conv": identity
        else:
            out.update({PATCH_EMBED_PREFIX + k: v for k, v in dinov2_to_timm(patch, vit).items()})
    return out, sorted(skipped)
