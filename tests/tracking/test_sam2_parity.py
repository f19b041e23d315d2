"""Numeric parity of G2TAM's SAM-shaped prompt encoder and mask decoder (``decoder_style="sam2"``) with SAM 2.1's
reference ``PromptEncoder`` / ``MaskDecoder`` (PyPI ``sam2`` 1.1.0) at a small configuration with random weights.

The fixtures in data/sam2_small/ were produced by SAM 2's own modules (data/sam2_small/README.md says how;
regenerate.py rebuilds them). Here the reference state dict, in SAM 2.1 checkpoint key names, goes through
:func:`vision.tracking.sam2_keys.load_sam2_heads` into a G2TAM built from a TrackingConfig at the same widths; given
the same image embedding and a point or a box prompt, the sparse / dense prompt embeddings, the positional code, the
masks of all four mask tokens, the IoU predictions and the object-score logits match the reference's to 1e-4.
"""

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from vision.errors import InputError
from vision.tracking.sam2_keys import (FRESH_PREFIXES, SAM2_1_HEADS, convert_sam2_state_dict, load_sam2_heads,
                                      sam2_sparse_tokens)
from vision.tracking.task import TrackingConfig, build_model

DATA = Path(__file__).parent / "data" / "sam2_small"
TOLERANCE = 1e-4
GRID_HW, IMAGE_HW = (6, 8), (96, 128)  # as regenerate.py
SMALL = dict(SAM2_1_HEADS, dim=32, num_heads=2, backbone="tiny", image_size=32, text_encoder=None, text_dim=8)


@pytest.fixture(scope="module")
def parity():
    model = build_model(TrackingConfig(**SMALL)).eval()
    report = load_sam2_heads(model, DATA / "state_dict.safetensors")
    io = load_file(str(DATA / "io.safetensors"))
    pe, dec = model.prompt_encoder, model.decoder
    out = {}
    with torch.no_grad():
        out["image_pe"] = pe.dense_pe(GRID_HW, IMAGE_HW)[None]
        rgb = torch.rand(1, 3, 8 * GRID_HW[0], 8 * GRID_HW[1], generator=torch.Generator().manual_seed(0))
        hires = dec.encode_hires(rgb, GRID_HW)  # G2TAM's stride-2 RGB branch (no SAM counterpart): zeroed on load
        maps = torch.rand(1, dec.map_channels, 4 * GRID_HW[0], 4 * GRID_HW[1])  # the dense-map branch: zeroed too
        prompts = {"point": dict(points=io["points"], labels=io["point_labels"].long()), "box": dict(boxes=io["boxes"])}
        for kind, kwargs in prompts.items():
            sparse = sam2_sparse_tokens(pe, IMAGE_HW, **kwargs)
            n = sparse.shape[0]
            dense = pe.no_mask.view(1, -1, 1, 1).expand(n, -1, *GRID_HW)
            pad = torch.zeros(sparse.shape[:2], dtype=torch.bool)
            image = io["image_embedding"].expand(n, -1, -1, -1) + dense
            res = dec(image, out["image_pe"].expand(n, -1, -1, -1), sparse, pad, hires.expand(n, -1, -1, -1),
                      maps.expand(n, -1, -1, -1))
            out.update({f"{kind}_sparse": sparse, f"{kind}_dense": dense, f"{kind}_masks": res["masks"],
                        f"{kind}_iou": res["iou"], f"{kind}_object_score": res["presence"][:, None]})
    return report, io, out


def test_reference_state_dict_loads_into_the_sam2_heads(parity):
    report, _, _ = parity
    assert report.unexpected == [] and report.skipped == []
    assert report.missing and all(k.startswith(FRESH_PREFIXES) for k in report.missing), report.missing
    assert "prompt_encoder.text_proj.layers.0.weight" in report.missing and "decoder.hires.0.weight" in report.missing


NAMES = ["image_pe"] + [f"{kind}_{what}" for kind in ("point", "box")
                        for what in ("sparse", "dense", "masks", "iou", "object_score")]


@pytest.mark.parametrize("name", NAMES)
def test_output_matches_sam2_reference(parity, name):
    _, io, out = parity
    expected, got = io[name], out[name]
    assert got.shape == expected.shape, f"{name}: shape {tuple(got.shape)} vs reference {tuple(expected.shape)}"
    diff = float((got.detach() - expected).abs().max())
    print(f"{name}: max abs difference {diff:.3g}")
    assert diff <= TOLERANCE, f"{name}: max abs difference to SAM 2.1's reference {diff:.3g} > {TOLERANCE}"


def test_reference_outputs_are_not_degenerate():
    """The comparison means something only if the reference outputs vary over pixels, tokens and prompts."""
    io = load_file(str(DATA / "io.safetensors"))
    for kind in ("point", "box"):
        masks = io[f"{kind}_masks"]
        assert torch.isfinite(masks).all() and float(masks.std()) > 1e-2
        assert float((masks[:, 0] - masks[:, 1]).abs().max()) > 1e-2  # the mask tokens differ
        assert float((masks[0] - masks[1]).abs().max()) > 1e-2  # the prompts differ
        assert float((io[f"{kind}_iou"][0] - io[f"{kind}_iou"][1]).abs().max()) > 1e-3
    assert float((io["point_masks"] - io["box_masks"]).abs().max()) > 1e-2


def test_g2tam_style_decoder_differs_and_rejects_sam2_weights():
    """The default decoder is unchanged (not SAM's computation) and the loader refuses it."""
    model = build_model(TrackingConfig(**dict(SMALL, decoder_style="g2tam")))
    assert not model.decoder.iou_sigmoid and not model.decoder.transformer.blocks[0].skip_first_layer_pe
    with pytest.raises(InputError, match="decoder_style"):
        load_sam2_heads(model, DATA / "state_dict.safetensors")
    with pytest.raises(InputError, match="decoder_style"):
        TrackingConfig(decoder_style="sam3")


def test_sam2_1_head_shapes_fit_a_full_size_checkpoint():
    """Every SAM 2.1 head key, at the shapes SAM 2's code builds for ``sam2.1_hiera_*.pt`` (256-d, 4 mask tokens,
    MLP 2048, high-res convs; data/sam2_small/sam2_1_head_shapes.json), maps onto TrackingConfig(**SAM2_1_HEADS)
    with the same shape, except the high-res convs, which are skipped (checked on the meta device)."""
    shapes = json.loads((DATA / "sam2_1_head_shapes.json").read_text())
    state = {k: torch.empty(v, device="meta") for k, v in shapes.items()}
    state["image_encoder.trunk.pos_embed"] = torch.empty(1, 96, 7, 7, device="meta")  # not a head key
    with torch.device("meta"):
        model = build_model(TrackingConfig(**dict(SAM2_1_HEADS, backbone="tiny", image_size=32, text_dim=8)))
    ours = {**{"prompt_encoder." + k: v for k, v in model.prompt_encoder.state_dict().items()},
            **{"decoder." + k: v for k, v in model.decoder.state_dict().items()}}
    converted, skipped, unplaced = convert_sam2_state_dict(state)
    assert unplaced == []
    assert skipped == ["image_encoder.trunk.pos_embed", "sam_mask_decoder.conv_s0.bias",
                       "sam_mask_decoder.conv_s0.weight", "sam_mask_decoder.conv_s1.bias",
                       "sam_mask_decoder.conv_s1.weight"]
    assert sorted(k for k in converted if k not in ours) == []
    assert {k: (tuple(v.shape), tuple(ours[k].shape)) for k, v in converted.items() if ours[k].shape != v.shape} == {}
    assert all(k.startswith(FRESH_PREFIXES) for k in ours if k not in converted)
