"""The multiplexed mask decoder (vision.tracking.multiplex) and G2TAM with ``decoder_style="multiplex"``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vision.errors import InputError
from vision.tracking.model import G2TAM
from vision.tracking.multiplex import MultiplexDecoder
from vision.tracking.predictor import TrackerPredictor
from vision.tracking.propagation import WindowDecoder
from vision.tracking.task import TrackingConfig, build_model

from tests.tracking.test_propagation import _mixed_prompts


def _decoder_inputs(views: int, objects: int, tokens: int, dim: int = 32, channels: int = 8, grid: int = 4):
    gen = torch.Generator().manual_seed(0)
    pad = torch.rand(views, objects, tokens, generator=gen) < 0.3
    return (torch.randn(views, dim, grid, grid, generator=gen), torch.randn(views, dim, grid, grid, generator=gen),
            torch.randn(views, objects, tokens, dim, generator=gen), pad,
            torch.randn(views, dim // 2, 4 * grid, 4 * grid, generator=gen),
            torch.rand(views, objects, channels, 4 * grid, 4 * grid, generator=gen))


def test_decoder_shapes_and_bad_maps():
    torch.manual_seed(0)
    decoder = MultiplexDecoder(32, num_masks=3, map_channels=8)
    out = decoder(*_decoder_inputs(views=2, objects=5, tokens=7))
    assert out["masks"].shape == (2, 5, 3, 16, 16) and out["iou"].shape == (2, 5, 3)
    assert out["presence"].shape == (2, 5)
    assert all(torch.isfinite(v).all() for v in out.values())
    *args, maps = _decoder_inputs(views=2, objects=5, tokens=7)
    with pytest.raises(ValueError, match="reads maps"):
        decoder(*args, maps[:, :, :4])
    with pytest.raises(ValueError, match="reads maps"):
        decoder(*args, maps[..., :15, :15])
    # prompt tokens per clip: 2 clips of 1 view read once each equal per-view tokens
    image, pe, sparse, pad, hires, maps = _decoder_inputs(views=2, objects=5, tokens=7)
    shared = decoder(image, pe, sparse[:1].expand(2, -1, -1, -1), pad[:1].expand(2, -1, -1), hires, maps)
    once = decoder(image, pe, sparse[:1], pad[:1], hires, maps)
    torch.testing.assert_close(once["masks"], shared["masks"], atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="do not divide"):
        decoder(image, pe, torch.cat([sparse, sparse[:1]]), torch.cat([pad, pad[:1]]), hires, maps)
    with pytest.raises(ValueError, match="map_channels must be >= 1"):
        MultiplexDecoder(32, map_channels=0)


def test_an_object_with_no_prompt_token_and_all_padding_decodes_finite():
    decoder = MultiplexDecoder(32, map_channels=8)
    image, pe, sparse, _, hires, maps = _decoder_inputs(views=1, objects=2, tokens=3)
    pad = torch.ones(1, 2, 3, dtype=torch.bool)
    out = decoder(image, pe, sparse, pad, hires, torch.zeros_like(maps))
    assert all(torch.isfinite(v).all() for v in out.values())


def test_objects_never_write_into_the_shared_view_tokens():
    """An object's outputs do not depend on the other objects decoded with it (every prompt kind), so buckets of
    any size and a one-object correction give the joint decode's masks."""
    torch.manual_seed(0)
    model = G2TAM(image_size=32, dim=32, text_dim=8, decoder_style="multiplex").eval()
    with torch.no_grad():
        encoded = model.tracking_encoding(torch.rand(1, 3, 3, 32, 32))
        prompts = _mixed_prompts(model, 7, 32)
        together = model.decode(encoded, prompts)
        alone = [model.decode(encoded, prompts.select(slice(j, j + 1))) for j in range(7)]
        on_view = model.decode(encoded, prompts, [1])
        probs = {}
        for bucket in (None, 1, 3):
            decoder = WindowDecoder(model, torch.device("cpu"), mask_threshold=-1e9, presence_threshold=0.0,
                                    memory_points=6, refine=False, object_bucket=bucket)
            probs[bucket] = decoder.decode(encoded, prompts)[1]
    for j in range(7):
        assert torch.allclose(alone[j]["masks"][:, :, 0], together["masks"][:, :, j], atol=1e-4)
        assert torch.allclose(alone[j]["presence"][:, :, 0], together["presence"][:, :, j], atol=1e-5)
    assert torch.allclose(on_view["masks"][:, 0], together["masks"][:, 1], atol=1e-4)
    assert torch.allclose(probs[1], probs[None], atol=1e-6) and torch.allclose(probs[3], probs[None], atol=1e-6)
    # the objects' masks differ from each other: the decoder reads each object's own prompt
    assert (together["masks"][0, :, 0] - together["masks"][0, :, 1]).abs().max() > 1e-3


def test_every_parameter_learns_and_no_dense_embedding_is_built():
    """Every parameter outside the backbone gets a gradient from the mask outputs (DDP needs no unused
    parameters); the per-pair dense embeddings are not built."""
    torch.manual_seed(0)
    model = G2TAM(image_size=32, dim=32, text_dim=8, decoder_style="multiplex")
    prompts = _mixed_prompts(model, 5, 32)
    out = model(torch.rand(1, 3, 3, 32, 32), prompts)
    (out["masks"].mean() + out["iou"].mean() + out["presence"].mean()).backward()
    unused = [n for n, p in model.named_parameters() if p.grad is None and not n.startswith("backbone.")]
    assert unused == []
    assert model.spatial_encoder.proximity_embed is None and model.prompt_encoder.mask_downscale is None


def test_config_checks():
    assert isinstance(build_model(TrackingConfig(decoder_style="multiplex")).decoder, MultiplexDecoder)
    with pytest.raises(InputError, match="hires_maps"):
        TrackingConfig(decoder_style="multiplex", hires_maps=False)
    with pytest.raises(InputError, match="needs architecture 'g2tam'"):
        TrackingConfig(decoder_style="multiplex", architecture="memory_bank")
    with pytest.raises(InputError, match="map_attention"):
        TrackingConfig(map_attention=False)  # an option of the multiplexed decoder only
    assert build_model(TrackingConfig(decoder_style="multiplex", map_attention=False)).decoder.map_bias is None
    with pytest.raises(ValueError, match="needs hires_maps"):
        G2TAM(image_size=32, dim=32, decoder_style="multiplex", hires_maps=False)


def test_predictor_tracks_and_corrects_with_the_multiplexed_decoder(monkeypatch):
    """The predictor runs a multiplexed G2TAM through its windows; a correcting click on one object then decodes
    from the cached encodings (the backbone does not run again), changes that object's masks and leaves the
    others' as they were."""
    torch.manual_seed(0)
    model = G2TAM(image_size=32, dim=32, decoder_style="multiplex").eval()
    frames = (torch.rand(4, 32, 32, 3) * 255).to(torch.uint8).numpy()
    pred = TrackerPredictor(model, text_encoder=None, window_size=4, presence_threshold=0.0, mask_threshold=0.0)
    state = pred.init_state(frames, ordered=True)
    for o in range(3):
        pred.add_prompt(state, 0, o, points=[[4 + 10 * o, 6 + 8 * o]])
    encodings = []
    original = G2TAM.tracking_encoding

    def spy(self, images):
        encodings.append(images.shape)
        return original(self, images)

    monkeypatch.setattr(G2TAM, "tracking_encoding", spy)
    first = np.stack([m for _, _, m, _ in pred.propagate(state)])
    assert first.shape == (4, 3, 32, 32) and len(encodings) == 1
    pred.add_prompt(state, 0, 1, points=[[4, 6], [20, 20], [25, 8]], labels=[1, 0, 1])
    second = np.stack([m for _, _, m, _ in pred.propagate(state)])
    assert len(encodings) == 1  # decoded from the cached encoding
    assert (second[:, [0, 2]] == first[:, [0, 2]]).all() and (second[:, 1] != first[:, 1]).any()


def test_the_predictor_decodes_once_with_the_multiplexed_decoder_unless_told():
    """``refine=None`` follows the model's ``second_pass``: the default decoder decodes each window twice, the
    multiplexed one once (measured: it scores lower on memory lifted from its own first pass)."""
    default = G2TAM(image_size=32, dim=32)
    multiplex = G2TAM(image_size=32, dim=32, decoder_style="multiplex")
    assert default.second_pass and not multiplex.second_pass
    assert TrackerPredictor(default, text_encoder=None).refine
    assert not TrackerPredictor(multiplex, text_encoder=None).refine
    assert TrackerPredictor(multiplex, text_encoder=None, refine=True).refine
