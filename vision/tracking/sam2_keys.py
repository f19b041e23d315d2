"""Key map from a SAM 2.1 checkpoint's prompt encoder and mask decoder to G2TAM's (``decoder_style="sam2"``).

A SAM 2.1 checkpoint (``sam2.1_hiera_{tiny,small,base_plus,large}.pt``, state dict under ``model``) holds the
whole video model; only its SAM heads have a counterpart in G2TAM. Build the model with
``TrackingConfig(**SAM2_1_HEADS)`` (256-d, 4 mask tokens: the single-mask token then the 3 multimask tokens, 8 heads,
depth 2, token MLP 2048, sigmoid IoU head, 3-layer object-score MLP) and load them with :func:`load_sam2_heads`:

=================================================================== ================================== =============
SAM 2.1 key (``sam_prompt_encoder.`` / ``sam_mask_decoder.``)        ours (``prompt_encoder.`` / ``decoder.``) transform
=================================================================== ================================== =============
``pe_layer.positional_encoding_gaussian_matrix``                    ``pe.gaussian``                    --
``point_embeddings.{0..3}.weight`` (neg, pos, box TL, box BR)       ``point_embed.weight`` rows 0..3   stacked
``not_a_point_embed.weight`` / ``no_mask_embed.weight``             ``not_a_point`` / ``no_mask``      ``[1, D]->[D]``
``mask_downscaling.{0,1,3,4,6}.*``                                  ``mask_downscale.{0,1,3,4,6}.*``   first conv:
                                                                                                       SAM's 1 input
                                                                                                       channel -> our
                                                                                                       mask channel 0;
                                                                                                       click / box
                                                                                                       channels 0
``obj_score_token`` / ``iou_token`` / ``mask_tokens`` ``.weight``   ``presence_token`` / ``iou_token`` --
                                                                    / ``mask_tokens``
``transformer.layers.{i}.{self_attn,norm1..4}.*``                   ``transformer.blocks.{i}.*``       --
``transformer.layers.{i}.cross_attn_token_to_image.*``              ``transformer.blocks.{i}.cross_t2i.*``
``transformer.layers.{i}.cross_attn_image_to_token.*``              ``transformer.blocks.{i}.cross_i2t.*``
``transformer.layers.{i}.mlp.layers.{0,1}.*``                       ``transformer.blocks.{i}.mlp.{0,2}.*``
``transformer.final_attn_token_to_image.*`` / ``norm_final_attn.*`` ``transformer.final_attn.*`` / ``final_norm.*``
``output_upscaling.{0,1,3}.*``                                      ``upscale.{0,1,3}.*``              --
``output_hypernetworks_mlps.{m}.layers.{j}.*``                      ``hypernets.{m}.layers.{j}.*``     --
``iou_prediction_head.layers.{j}.*``                                ``iou_head.layers.{j}.*``          --
``pred_obj_score_head.layers.{j}.*``                                ``presence_head.layers.{j}.*``     --
``conv_s0.*``, ``conv_s1.*``                                        --                                 skipped
every key outside ``sam_prompt_encoder.`` / ``sam_mask_decoder.``    --                                 skipped
=================================================================== ================================== =============

Skipped on purpose: ``conv_s0`` / ``conv_s1`` project the Hiera backbone's stride-4 / stride-8 features into the
upscaling path (``use_high_res_features_in_sam``); G2TAM's backbone has no such pyramid, so its decoder runs SAM's
upscaling without them (as SAM with ``use_high_res_features=False``), which changes a trained SAM 2.1 decoder's
output: fine-tune before use. The image encoder, memory attention / encoder, object pointers and the rest of the
video model are skipped too (G2TAM's geometry backbone replaces them).

Fresh (no SAM counterpart; :data:`FRESH_PREFIXES`): the text projection ``prompt_encoder.text_proj``, the
stride-2 RGB branch ``decoder.hires`` and the dense-map branch ``decoder.map_proj`` (3D proximity and prompt maps at
the upsampled resolution), the presence of click / box maps in the dense prompt (channels 1..3 of
``mask_downscale.0``, zero), and outside the heads the geometry backbone, ``feat_proj`` and ``spatial_encoder`` (3D
lifting of prompts, proximity maps, memory tokens, presence from geometry). :func:`load_sam2_heads` zeroes the last
convolution of ``decoder.hires`` and ``decoder.map_proj`` (``zero_fresh_branches``) so that, given SAM's inputs, the
loaded decoder starts by computing what SAM's does.

Numeric parity with SAM 2.1's own ``PromptEncoder`` / ``MaskDecoder`` (PyPI ``sam2`` 1.1.0) at a small
configuration with random weights is checked by ``tests/tracking/test_sam2_parity.py``; :func:`sam2_sparse_tokens`
lays out point and box prompts as SAM does (there, a padding point is an attended token, not masked).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping, NamedTuple

import torch
from torch import nn

from vision.errors import InputError
from vision.geometry.patch_embed import read_state_dict
from vision.tracking.prompts import BOX_BR, BOX_TL, PAD, PromptEncoder

__all__ = ["SAM2_1_HEADS", "SAM_PREFIXES", "SKIPPED_DECODER_PREFIXES", "FRESH_PREFIXES", "LoadReport",
           "convert_sam2_state_dict", "load_sam2_heads", "sam2_sparse_tokens"]

#: TrackingConfig fields giving G2TAM SAM 2.1's prompt encoder and mask decoder shapes (all four SAM 2.1 sizes
#: share them): ``TrackingConfig(**SAM2_1_HEADS)``
SAM2_1_HEADS: dict[str, object] = dict(dim=256, num_masks=4, num_heads=8, decoder_depth=2, click_maps=False,
                                      decoder_style="sam2")

PROMPT_PREFIX, DECODER_PREFIX = "sam_prompt_encoder.", "sam_mask_decoder."
SAM_PREFIXES: tuple[str, ...] = (PROMPT_PREFIX, DECODER_PREFIX)
#: SAM 2.1 mask decoder keys dropped on purpose (the high-resolution backbone features G2TAM does not have)
SKIPPED_DECODER_PREFIXES: tuple[str, ...] = ("conv_s0.", "conv_s1.")
#: our prompt encoder / decoder parameters that no SAM 2.1 weight fills
FRESH_PREFIXES: tuple[str, ...] = ("prompt_encoder.text_proj.", "decoder.hires.", "decoder.map_proj.")

_PROMPT_RULES: tuple[tuple[str, str], ...] = (
    (r"pe_layer\.positional_encoding_gaussian_matrix", "pe.gaussian"),
    (r"not_a_point_embed\.weight", "not_a_point"),
    (r"no_mask_embed\.weight", "no_mask"),
    (r"mask_downscaling\.(\d+)\.(weight|bias)", r"mask_downscale.\1.\2"),
)
_DECODER_RULES: tuple[tuple[str, str], ...] = (
    (r"obj_score_token\.weight", "presence_token"),
    (r"iou_token\.weight", "iou_token"),
    (r"mask_tokens\.weight", "mask_tokens"),
    (r"transformer\.layers\.(\d+)\.(self_attn|norm\d)\.(.+)", r"transformer.blocks.\1.\2.\3"),
    (r"transformer\.layers\.(\d+)\.cross_attn_token_to_image\.(.+)", r"transformer.blocks.\1.cross_t2i.\2"),
    (r"transformer\.layers\.(\d+)\.cross_attn_image_to_token\.(.+)", r"transformer.blocks.\1.cross_i2t.\2"),
    (r"transformer\.layers\.(\d+)\.mlp\.layers\.0\.(.+)", r"transformer.blocks.\1.mlp.0.\2"),
    (r"transformer\.layers\.(\d+)\.mlp\.layers\.1\.(.+)", r"transformer.blocks.\1.mlp.2.\2"),
    (r"transformer\.final_attn_token_to_image\.(.+)", r"transformer.final_attn.\1"),
    (r"transformer\.norm_final_attn\.(.+)", r"transformer.final_norm.\1"),
    (r"output_upscaling\.(\d+)\.(.+)", r"upscale.\1.\2"),
    (r"output_hypernetworks_mlps\.(\d+)\.layers\.(\d+)\.(.+)", r"hypernets.\1.layers.\2.\3"),
    (r"iou_prediction_head\.layers\.(\d+)\.(.+)", r"iou_head.layers.\1.\2"),
    (r"pred_obj_score_head\.layers\.(\d+)\.(.+)", r"presence_head.layers.\1.\2"),
)
_POINT_EMBED = re.compile(r"point_embeddings\.(\d)\.weight")


class LoadReport(NamedTuple):
    missing: list[str]  # our prompt-encoder / decoder parameters the checkpoint did not fill (FRESH_PREFIXES)
    unexpected: list[str]  # SAM head keys we could not place (or whose shape does not fit)
    skipped: list[str]  # checkpoint keys dropped on purpose (see the module doc)


def _rename(key: str, rules: tuple[tuple[str, str], ...]) -> str | None:
    for pattern, target in rules:
        if re.fullmatch(pattern, key):
            return re.sub(pattern, target, key)
    return None


def convert_sam2_state_dict(state: Mapping[str, torch.Tensor], mask_channels_in: int = PromptEncoder.PROMPT_MAP_CHANNELS
                            ) -> tuple[dict[str, torch.Tensor], list[str], list[str]]:
    """Map a SAM 2.1 state dict to G2TAM names (``prompt_encoder.*``, ``decoder.*``).

    Returns ``(converted, skipped, unplaced)``: ``unplaced`` are SAM head keys with no rule (e.g. a linear
    ``pred_obj_score_head`` of a SAM 2.0 model without ``pred_obj_scores_mlp``). A leading ``module.`` is stripped.
    ``mask_channels_in``: input channels of our ``mask_downscale.0`` (SAM's single mask channel becomes channel 0).
    """
    state = {(k[len("module."):] if k.startswith("module.") else k): v for k, v in state.items()}
    out: dict[str, torch.Tensor] = {}
    skipped, unplaced = [], []
    points: dict[int, torch.Tensor] = {}
    for key, value in state.items():
        if key.startswith(PROMPT_PREFIX):
            sub = key[len(PROMPT_PREFIX):]
            match = _POINT_EMBED.fullmatch(sub)
            if match:
                points[int(match.group(1))] = value
                continue
            ours = _rename(sub, _PROMPT_RULES)
            if ours is None:
                unplaced.append(key)
                continue
            if ours in ("not_a_point", "no_mask"):
                value = value.reshape(-1)
            elif ours == "mask_downscale.0.weight":  # [C/4, 1, 2, 2] -> [C/4, 4, 2, 2]: SAM's mask -> channel 0
                padded = value.new_zeros(value.shape[0], mask_channels_in, *value.shape[2:])
                padded[:, :value.shape[1]] = value
                value = padded
            out["prompt_encoder." + ours] = value
        elif key.startswith(DECODER_PREFIX):
            sub = key[len(DECODER_PREFIX):]
            if sub.startswith(SKIPPED_DECODER_PREFIXES):
                skipped.append(key)
                continue
            ours = _rename(sub, _DECODER_RULES)
            if ours is None:
                unplaced.append(key)
                continue
            out["decoder." + ours] = value
        else:
            skipped.append(key)
    if points:
        if sorted(points) != [0, 1, 2, 3]:
            unplaced += [f"{PROMPT_PREFIX}point_embeddings.{i}.weight" for i in sorted(points)]
        else:
            out["prompt_encoder.point_embed.weight"] = torch.cat([points[i].reshape(1, -1) for i in range(4)])
    return out, sorted(skipped), sorted(unplaced)


def load_sam2_heads(model: nn.Module, source: str | Path | Mapping[str, torch.Tensor], strict: bool = True,
                    zero_fresh_branches: bool = True) -> LoadReport:
    """Load a SAM 2.1 checkpoint's prompt encoder and mask decoder into ``model.prompt_encoder`` / ``model.decoder``
    (a :class:`~vision.tracking.model.G2TAM` built with ``decoder_style="sam2"``).

    Args:
        source: a local checkpoint (``sam2.1_hiera_*.pt``, read with ``weights_only=True``; the ``model`` key is
            unwrapped; or ``.safetensors``) or a state dict in SAM 2.1's key names.
        strict: raise :class:`InputError` when a SAM head key cannot be placed or does not fit (shape), or when one
            of our head parameters outside :data:`FRESH_PREFIXES` stays unfilled.
        zero_fresh_branches: zero the last convolution of ``decoder.hires`` and ``decoder.map_proj`` so the loaded
            decoder starts by computing SAM's masks (see the module doc).

    Returns:
        :class:`LoadReport`; ``missing`` lists the fresh parameters (no SAM counterpart).
    """
    if getattr(model, "decoder_style", "sam2") != "sam2":
        raise InputError(f"SAM 2.1 weights need a G2TAM built with decoder_style='sam2' "
                         f"(TrackingConfig(**SAM2_1_HEADS)), got decoder_style={model.decoder_style!r}")
    name = str(source) if isinstance(source, (str, Path)) else "<state dict>"
    state = read_state_dict(source) if isinstance(source, (str, Path)) else dict(source)
    in_ch = model.prompt_encoder.mask_downscale[0].in_channels
    converted, skipped, unplaced = convert_sam2_state_dict(state, mask_channels_in=in_ch)
    ours = {**{"prompt_encoder." + k: v for k, v in model.prompt_encoder.state_dict().items()},
            **{"decoder." + k: v for k, v in model.decoder.state_dict().items()}}
    mismatched = [f"{k}: checkpoint {tuple(v.shape)} vs model {tuple(ours[k].shape)}"
                  for k, v in converted.items() if k in ours and tuple(v.shape) != tuple(ours[k].shape)]
    unexpected = sorted(unplaced + [k for k in converted if k not in ours])
    missing = sorted(k for k in ours if k not in converted)
    not_fresh = [k for k in missing if not k.startswith(FRESH_PREFIXES)]
    if not any(k.startswith(SAM_PREFIXES) for k in state):
        raise InputError(f"{name!r} holds no SAM 2.1 prompt encoder / mask decoder keys "
                         f"({SAM_PREFIXES[0]!r}, {SAM_PREFIXES[1]!r})")
    if strict and (mismatched or unexpected or not_fresh):
        raise InputError(f"SAM 2.1 checkpoint {name!r} does not fit the model: missing={not_fresh[:10]} "
                         f"unexpected={unexpected[:10]} shape mismatches={mismatched[:10]}")
    loadable = {k: v for k, v in converted.items() if k in ours and tuple(v.shape) == tuple(ours[k].shape)}
    for prefix, module in (("prompt_encoder.", model.prompt_encoder), ("decoder.", model.decoder)):
        part = {k[len(prefix):]: v for k, v in loadable.items() if k.startswith(prefix)}
        module.load_state_dict(part, strict=False)
    if zero_fresh_branches:
        with torch.no_grad():
            for branch in (model.decoder.hires, model.decoder.map_proj):
                if branch is not None:
                    last = [m for m in branch if isinstance(m, nn.Conv2d)][-1]
                    last.weight.zero_()
                    last.bias.zero_()
    return LoadReport(missing, unexpected + [m.split(":")[0] for m in mismatched], skipped)


def sam2_sparse_tokens(prompt_encoder: PromptEncoder, image_hw: tuple[int, int], points: torch.Tensor | None = None,
                       labels: torch.Tensor | None = None, boxes: torch.Tensor | None = None) -> torch.Tensor:
    """Sparse prompt tokens laid out as SAM 2.1's ``PromptEncoder.forward``: the points, then a padding point when
    there is no box, then the box's two corners. Every token is attended (pass an all-False ``sparse_pad`` to the
    decoder), as in SAM.

    Args:
        image_hw: the input size the pixel coordinates refer to (SAM's ``input_image_size``).
        points: ``[B, K, 2]`` (x, y) pixels with ``labels [B, K]`` (0 negative, 1 positive, -1 padding).
        boxes: ``[B, 4]`` XYXY pixels.

    Returns:
        ``[B, T, dim]`` with ``T = K + 1`` (points only), ``2`` (box only) or ``K + 2`` (both).
    """
    if points is None and boxes is None:
        raise InputError("sam2_sparse_tokens needs points or boxes")
    parts = []
    if points is not None:
        if labels is None or labels.shape != points.shape[:-1]:
            raise InputError(f"labels must have shape {tuple(points.shape[:-1])} (points {tuple(points.shape)}), "
                             f"got {None if labels is None else tuple(labels.shape)}")
        labels = labels.long()
        if boxes is None:
            points = torch.cat([points, points.new_zeros(points.shape[0], 1, 2)], dim=1)
            labels = torch.cat([labels, labels.new_full((labels.shape[0], 1), PAD)], dim=1)
        parts.append(prompt_encoder.embed_points(points, labels, image_hw))
    if boxes is not None:
        corners = boxes.reshape(-1, 2, 2)
        corner_labels = torch.tensor([BOX_TL, BOX_BR], device=boxes.device).expand(corners.shape[0], 2)
        parts.append(prompt_encoder.embed_points(corners, corner_labels, image_hw))
    return torch.cat(parts, dim=1)
