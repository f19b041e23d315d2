"""Prompt encoder, spatial encoder helpers, decoder and losses."""

from __future__ import annotations

import math

import pytest
import torch

from vision.errors import InputError
from vision.tracking.decoder import MaskDecoder
from vision.tracking.losses import dice_loss, mask_iou, sigmoid_focal_loss, tracking_losses
from vision.tracking.prompts import BOX_BR, BOX_TL, NEGATIVE, PAD, POSITIVE, PromptEncoder, box_to_points
from vision.tracking.spatial_encoder import (SpatialEncoder, gather_points, sample_features, scene_scale,
                                             spaced_mask_indices)


def test_prompt_encoder_points_and_padding():
    enc = PromptEncoder(32)
    pts = torch.tensor([[[3.0, 4.0], [0.0, 0.0]]])
    labels = torch.tensor([[POSITIVE, PAD]])
    out = enc.embed_points(pts, labels, (16, 16))
    assert out.shape == (1, 2, 32)
    assert torch.allclose(out[0, 1], enc.not_a_point)
    expected = enc.encode_coords(pts[0, 0], (16, 16)) + enc.point_embed.weight[POSITIVE]
    assert torch.allclose(out[0, 0], expected)
    # Fourier features of the normalised centre are sin(0)=0 / cos(0)=1
    centre = enc.encode_coords(torch.tensor([7.5, 7.5]), (16, 16))
    assert torch.allclose(centre[:16], torch.zeros(16), atol=1e-6)
    assert torch.allclose(centre[16:], torch.ones(16), atol=1e-6)


def test_prompt_encoder_masks_text_and_box():
    enc = PromptEncoder(32, text_dim=8)
    assert enc.embed_masks(torch.zeros(3, 32, 32), (4, 4)).shape == (3, 32, 4, 4)
    assert enc.embed_text(torch.randn(2, 5, 8)).shape == (2, 5, 32)
    assert enc.dense_pe((4, 4), (32, 32)).shape == (32, 4, 4)
    pts, labels = box_to_points(torch.tensor([[1.0, 2.0, 10.0, 12.0]]))
    assert pts.tolist() == [[[1.0, 2.0], [10.0, 12.0]]]
    assert labels.tolist() == [[BOX_TL, BOX_BR]]


def test_gather_points_and_sample_features():
    wp = torch.arange(2 * 4 * 5 * 3, dtype=torch.float32).view(1, 2, 4, 5, 3)
    xy = torch.tensor([[[[2.0, 3.0], [4.0, 0.0]]]])
    got = gather_points(wp, torch.tensor([[1]]), xy)
    assert torch.equal(got[0, 0, 0], wp[0, 1, 3, 2])
    assert torch.equal(got[0, 0, 1], wp[0, 1, 0, 4])
    feats = torch.zeros(1, 2, 1, 2, 2)
    feats[0, 0, 0] = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    # pixel centre of the top-left patch of an 8x8 image with a 2x2 grid lies at (1.5, 1.5)
    val = sample_features(feats, torch.tensor([[0]]), torch.tensor([[[[1.5, 1.5], [3.5, 3.5]]]]), (8, 8))
    assert val[0, 0, 0, 0].item() == pytest.approx(1.0)
    assert val[0, 0, 1, 0].item() == pytest.approx(2.5)


def test_spaced_mask_indices_and_scale():
    mask = torch.zeros(4, 4)
    mask[1, 1] = mask[2, 3] = 1
    idx, valid = spaced_mask_indices(mask[None], 4)
    picked = sorted({int(i) for i, v in zip(idx[0], valid[0]) if v})
    assert picked == [5, 11]
    idx, valid = spaced_mask_indices(torch.zeros(1, 4, 4), 3)
    assert not valid.any()
    wp = torch.zeros(1, 1, 2, 2, 3)
    wp[..., 0] = torch.tensor([[3.0, 0.0], [0.0, 1.0]])
    wp[0, 0, 0, 1, 0] = float("nan")
    assert scene_scale(wp).item() == pytest.approx(4.0 / 3)


def test_decoder_shapes():
    dec = MaskDecoder(32, num_masks=3, depth=1, num_heads=2, mlp_dim=32)
    image = torch.randn(5, 32, 4, 4)
    hires = dec.encode_hires(torch.rand(5, 3, 32, 32), (4, 4))
    out = dec(image, torch.randn_like(image), torch.randn(5, 3, 32), torch.tensor([[False, True, True]] * 5), hires)
    assert out["masks"].shape == (5, 3, 16, 16) and out["iou"].shape == (5, 3) and out["presence"].shape == (5,)


def test_decoder_ignores_padded_token_slots():
    """Slots padded in every pair are dropped before the transformer; the outputs equal those with the slots kept,
    whatever the padded tokens hold."""
    torch.manual_seed(0)
    dec = MaskDecoder(32, num_masks=3, depth=2, num_heads=2, mlp_dim=32).eval()
    image = torch.randn(4, 32, 4, 4)
    hires = dec.encode_hires(torch.rand(4, 3, 32, 32), (4, 4))
    sparse = torch.randn(4, 6, 32)
    pad = torch.tensor([[False, True, False, True, True, False]] * 4)
    pad[0, 1] = False  # slot 1 is used by one pair only: it stays
    with torch.no_grad():
        out = dec(image, torch.zeros_like(image), sparse, pad, hires)
        noisy = sparse.clone()
        noisy[pad] = 1e3  # padded slots' contents do not matter
        again = dec(image, torch.zeros_like(image), noisy, pad, hires)
        kept = dec(image, torch.zeros_like(image), sparse[:, [0, 1, 2, 5]], pad[:, [0, 1, 2, 5]], hires)
    for key in ("masks", "iou", "presence"):
        torch.testing.assert_close(out[key], again[key], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(out[key], kept[key])


def test_focal_dice_iou_values():
    logits = torch.tensor([[0.0, 0.0]]).view(1, 1, 2)
    target = torch.tensor([[1.0, 0.0]]).view(1, 1, 2)
    # p = 0.5: ce = log 2, (1 - p_t)^2 = 0.25, alpha 0.25 / 0.75
    expected = (0.25 + 0.75) * 0.25 * math.log(2) / 2
    assert sigmoid_focal_loss(logits, target).item() == pytest.approx(expected, rel=1e-5)
    assert dice_loss(logits, target).item() == pytest.approx(1 - (2 * 0.5 + 1) / (1.0 + 1 + 1))
    assert mask_iou(torch.tensor([[[1.0, -1.0], [1.0, 1.0]]]), torch.tensor([[[1.0, 1.0], [0.0, 1.0]]])).item() == \
        pytest.approx(2 / 4)
    assert mask_iou(-torch.ones(1, 2, 2), torch.zeros(1, 2, 2)).item() == 1.0


def test_tracking_losses_best_of_multimask():
    gt = torch.zeros(1, 1, 1, 8, 8, dtype=torch.bool)
    gt[..., 2:6, 2:6] = True
    good = torch.where(gt, 10.0, -10.0).float()
    bad = -good
    masks = torch.stack([bad, good], dim=3)  # [B, S, N, M=2, H, W]
    out = {"masks": masks, "iou": torch.tensor([[[[0.0, 1.0]]]]), "presence": torch.tensor([[[10.0]]])}
    losses = tracking_losses(out, gt, torch.ones(1, 1, 1, dtype=torch.bool), torch.ones(1, 1, dtype=torch.bool))
    assert losses["loss_focal"].item() < 1e-4 and losses["loss_dice"].item() < 1e-3
    assert losses["loss_iou"].item() == pytest.approx(0.0, abs=1e-6)
    assert losses["loss_presence"].item() < 1e-3
    swapped = {**out, "presence": torch.tensor([[[-10.0]]])}
    assert tracking_losses(swapped, gt, torch.ones(1, 1, 1, dtype=torch.bool),
                           torch.ones(1, 1, dtype=torch.bool))["loss_presence"].item() > 5


def test_prompt_map_channels():
    enc = PromptEncoder(32)
    h = w = 16
    points = torch.tensor([[[4.0, 5.0], [12.0, 12.0], [0.0, 0.0]], [[2.0, 3.0], [9.0, 10.0], [0.0, 0.0]]])
    labels = torch.tensor([[POSITIVE, NEGATIVE, PAD], [BOX_TL, BOX_BR, PAD]])
    masks = torch.zeros(2, h, w)
    masks[1, 0, 0] = 1  # present but not flagged: must not show
    maps = enc.prompt_map(points, labels, masks, torch.tensor([False, False]))
    assert maps.shape == (2, PromptEncoder.PROMPT_MAP_CHANNELS, h, w)
    mask_ch, pos, neg, box = maps.unbind(1)
    assert mask_ch.abs().sum() == 0
    assert pos[0, 5, 4] == pytest.approx(1.0) and pos[0].argmax() == 5 * w + 4
    assert neg[0, 12, 12] == pytest.approx(1.0) and neg[0, 5, 4] < 1e-3
    assert box[0].sum() == 0 and pos[1].sum() == 0  # no box on slot 0, no click on slot 1
    inside = torch.zeros(h, w)
    inside[3:11, 2:10] = 1
    assert torch.equal(box[1], inside)
    flagged = enc.prompt_map(points, labels, masks, torch.tensor([False, True]))
    assert flagged[1, 0, 0, 0] == 1
    assert enc.has_dense(labels, torch.tensor([False, False])).tolist() == [True, True]
    emb, resized = enc.embed_dense(points, labels, masks, torch.tensor([False, True]), (4, 4))
    assert emb.shape == (2, 32, 4, 4) and resized.shape == (2, PromptEncoder.PROMPT_MAP_CHANNELS, 16, 16)


def test_prompt_map_without_click_maps_keeps_only_the_mask():
    enc = PromptEncoder(32, click_maps=False)
    points = torch.tensor([[[4.0, 5.0]]])
    labels = torch.tensor([[POSITIVE]])
    masks = torch.ones(1, 8, 8)
    maps = enc.prompt_map(points, labels, masks, torch.tensor([True]))
    assert torch.equal(maps[:, 0], masks) and maps[:, 1:].abs().sum() == 0
    assert enc.has_dense(labels, torch.tensor([False])).tolist() == [False]


def test_proximity_maps_follow_the_geometry():
    enc = SpatialEncoder(32, proximity_sigmas=(0.05, 0.15))
    h = w = 8
    # view 0: every pixel at x = 0; view 1: left half at the anchor, right half 1 unit away
    wp = torch.zeros(1, 2, h, w, 3)
    wp[0, 1, :, w // 2:, 0] = 1.0
    anchors = torch.zeros(1, 2, 2, 3)
    anchors[0, 1, 1, 0] = 1.0  # object 1's negative anchor sits at x = 1
    positive = torch.tensor([[[True, False], [True, False]]])
    negative = torch.tensor([[[False, False], [False, True]]])
    maps = enc.proximity_maps(wp, anchors, positive, negative, torch.ones(1), (h, w))
    assert maps.shape == (1, 2, 2, 3, h, w)
    assert torch.allclose(maps[0, 0, :, :2], torch.ones(2, 2, h, w))  # every pixel of view 0 is at the anchor
    assert torch.allclose(maps[0, 1, 0, 0, :, : w // 2], torch.ones(h, w // 2))
    assert maps[0, 1, 0, 0, :, w // 2:].max() < 1e-6  # 1 unit = 20 sigma away
    assert maps[0, 1, 0, 1, :, w // 2:].max() == pytest.approx(math.exp(-1 / (2 * 0.15 ** 2)), abs=1e-6)
    assert torch.allclose(maps[0, 1, 1, 2, :, w // 2:], torch.ones(h, w // 2))  # object 1's negative map
    assert maps[0, :, 0, 2].abs().sum() == 0  # object 0 has no negative anchor


@pytest.mark.parametrize("product_elements", [SpatialEncoder.PRODUCT_ELEMENTS, 4000])
def test_proximity_maps_equal_a_brute_force_nearest_anchor(product_elements):
    """Many objects with different anchor counts (none of a kind for some), NaN points, more anchors than one
    chunk: the maps equal exp(-d^2 / 2 sigma^2) of the nearest anchor found by comparing every pair, with one
    product for all objects and with products over groups of objects (4000 elements: 1 or 2 objects at a time)."""
    g = torch.Generator().manual_seed(0)
    enc = SpatialEncoder(16)
    enc.PRODUCT_ELEMENTS = product_elements
    b, s, n, a, hw = 2, 3, 5, SpatialEncoder.ANCHOR_CHUNK + 9, 6
    wp = torch.randn(b, s, hw, hw, 3, generator=g)
    wp[0, 1, 2, 3] = float("nan")
    anchors = torch.randn(b, n, a, 3, generator=g) * 0.3
    positive = torch.rand(b, n, a, generator=g) < 0.5
    negative = torch.rand(b, n, a, generator=g) < 0.1
    positive[0, 2] = False  # no positive anchor at all
    negative[1] = False  # no negative anchor in the second clip
    scale = torch.tensor([1.0, 2.0])
    maps = enc.proximity_maps(wp, anchors, positive, negative, scale, (hw, hw))
    pts = torch.nan_to_num(wp).flatten(2, 3) / scale.view(b, 1, 1, 1)  # [B, S, P, 3]
    d2 = ((pts[:, :, None, :, None] - (anchors / scale.view(b, 1, 1, 1))[:, None, :, None]) ** 2).sum(-1)
    for kind, channels in ((positive, range(3)), (negative, [3])):
        nearest = torch.where(kind[:, None, :, None], d2, torch.full_like(d2, 1e6)).amin(-1).clamp(max=1e6)
        for c in channels:
            sigma = enc.proximity_sigmas[0 if c == 3 else c]
            expected = torch.exp(-nearest / (2 * sigma ** 2)).view(b, s, n, hw, hw)
            torch.testing.assert_close(maps[:, :, :, c], expected, atol=1e-4, rtol=0)
    assert maps[0, :, 2, :3].abs().sum() == 0 and maps[1, :, :, 3].abs().sum() == 0


def test_proximity_sigmas_set_the_map_channels():
    enc = SpatialEncoder(16)  # default: three positive scales and the negative map
    maps = enc.proximity_maps(torch.zeros(1, 1, 4, 4, 3), torch.zeros(1, 1, 1, 3),
                              torch.ones(1, 1, 1, dtype=torch.bool),
                              torch.zeros(1, 1, 1, dtype=torch.bool), torch.ones(1), (4, 4))
    assert maps.shape[3] == enc.num_proximity_maps == len(enc.proximity_sigmas) + 1 == 4
    # a pixel 0.03 from the anchor: sharp on the 0.015 map, still bright on the 0.15 one
    wp = torch.zeros(1, 1, 1, 1, 3)
    wp[..., 0] = 0.03
    near = enc.proximity_maps(wp, torch.zeros(1, 1, 1, 3), torch.ones(1, 1, 1, dtype=torch.bool),
                              torch.zeros(1, 1, 1, dtype=torch.bool), torch.ones(1), (1, 1))[0, 0, 0, :3, 0, 0]
    assert near[0] == pytest.approx(math.exp(-2.0), abs=1e-5) and near[2] > 0.97
    with pytest.raises(InputError, match="proximity_sigmas"):
        SpatialEncoder(16, proximity_sigmas=(0.05, 0.0))


def test_decoder_fuses_maps_at_its_upsampled_resolution():
    torch.manual_seed(0)
    dec = MaskDecoder(32, num_masks=2, depth=1, map_channels=3)
    image, pe = torch.randn(2, 32, 4, 4), torch.randn(2, 32, 4, 4)
    sparse, pad = torch.randn(2, 3, 32), torch.zeros(2, 3, dtype=torch.bool)
    hires = dec.encode_hires(torch.rand(2, 3, 32, 32), (4, 4))
    maps = torch.zeros(2, 3, 16, 16)
    base = dec(image, pe, sparse, pad, hires, maps)["masks"]
    maps[0, 0, 4:8, 4:8] = 1.0
    moved = dec(image, pe, sparse, pad, hires, maps)["masks"]
    assert base.shape == (2, 2, 16, 16)
    assert not torch.allclose(moved[0], base[0]) and torch.allclose(moved[1], base[1])
    with pytest.raises(ValueError, match="3-channel maps"):
        dec(image, pe, sparse, pad, hires)
    assert MaskDecoder(32, map_channels=0).map_proj is None


def test_a_mask_prompt_outlines_its_object_in_the_proximity_maps():
    """A long thin mask: 64 anchors cover it in the other view's proximity map, 2 anchors leave gaps."""
    from vision.tracking.prompts import Prompts

    torch.manual_seed(0)
    h = w = 32
    ys, xs = torch.meshgrid(torch.arange(h).float(), torch.arange(w).float(), indexing="ij")
    wp = torch.stack([xs, ys, torch.zeros(h, w)], -1) / 4.0  # one world frame; both views see the same points
    wp = wp.expand(1, 2, h, w, 3).clone()
    p = Prompts.empty(1, 1, (h, w), num_points=1, text_dim=384, memory_dim=16)
    p.valid[:] = True
    p.view[0, 0], p.has_mask[0, 0] = 0, True
    p.masks[0, 0, 14:18, 2:30] = 1.0
    feats = torch.randn(1, 2, 16, 4, 4)
    covered = {}
    for count in (2, 64):
        enc = SpatialEncoder(16, proximity_points=count, proximity_sigmas=(0.05, 0.15)).eval()
        with torch.no_grad():
            maps = enc(feats, wp, p, PromptEncoder(16), (h, w))["maps"]  # [1, 2, 1, 7, 16, 16]
        near = maps[0, 1, 0, 4]  # the 0.05-sigma map of view 1, at 16 x 16
        inside = torch.nn.functional.adaptive_avg_pool2d(p.masks[0, 0][None, None], (16, 16))[0, 0] > 0.5
        covered[count] = float((near[inside] > 0.5).float().mean())
    assert covered[64] > 0.9 and covered[2] < 0.5


def test_proximity_maps_in_float16_mark_objects_without_anchors():
    """In float16 (``--precision 16`` on a GPU) "no anchor" is float16's largest value, not an overflow: the maps
    equal float32's where they are defined and are 0 where an object has no anchor."""
    g = torch.Generator().manual_seed(1)
    enc = SpatialEncoder(16)
    wp = torch.randn(1, 2, 4, 4, 3, generator=g)
    anchors = torch.randn(1, 3, 5, 3, generator=g) * 0.3
    positive = torch.rand(1, 3, 5, generator=g) < 0.6
    positive[0, 1] = False  # object 1: no positive anchor
    negative = torch.zeros(1, 3, 5, dtype=torch.bool)
    scale = torch.ones(1)
    full = enc.proximity_maps(wp, anchors, positive, negative, scale, (4, 4))
    half = enc.proximity_maps(wp.half(), anchors.half(), positive, negative, scale.half(), (4, 4))
    assert half.dtype == torch.float16 and torch.isfinite(half).all()
    torch.testing.assert_close(half.float(), full, atol=2e-2, rtol=0)
    assert half[0, :, 1, :3].abs().sum() == 0 and half[0, :, :, 3].abs().sum() == 0


def test_gaussian_falloff_is_exp_then_exactly_zero_without_subnormals():
    from vision.tracking.layers import MAX_FALLOFF_EXPONENT, gaussian_falloff

    sigma = 0.05
    d2 = torch.linspace(0, 1, 2001) ** 2  # exponents 0 .. 200
    out = gaussian_falloff(d2, sigma)
    exponent = d2 / (2 * sigma ** 2)
    kept = exponent <= MAX_FALLOFF_EXPONENT
    torch.testing.assert_close(out[kept], torch.exp(-exponent[kept]), rtol=1e-6, atol=0)
    assert (out[~kept] == 0).all() and kept.any() and (~kept).any()
    tiny = torch.finfo(torch.float32).tiny  # the smallest normal float32: nothing between it and 0
    assert ((out == 0) | (out >= tiny)).all()
    assert gaussian_falloff(torch.tensor([float("inf")]), sigma).item() == 0.0
