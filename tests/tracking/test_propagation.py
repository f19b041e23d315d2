"""Windows over the views, the views one propagation yields, and G2TAM's second pass (vision.tracking.propagation)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vision.errors import InputError
from vision.tracking import propagation
from vision.tracking.baseline import MemoryBankTracker
from vision.tracking.model import G2TAM
from vision.tracking.predictor import TrackerPredictor
from vision.tracking.prompts import BOX_BR, BOX_TL, Prompts
from vision.tracking.propagation import WindowDecoder, propagation_views, windows


def test_windows_open_with_the_anchors_and_yield_every_view_once():
    views = list(range(10))
    spans = windows([6, 2, 8], views, window_size=4, max_anchors=2)
    assert all(window[:2] == [2, 6] and len(window) <= 4 for window, _ in spans)
    emitted = [v for _, emit in spans for v in emit]
    assert sorted(emitted) == views and len(emitted) == len(views)
    assert spans[0][1][-2:] == [2, 6]  # the anchors are yielded by the first window
    assert windows([], views, 4, 2)[0][0][0] == 0  # nothing prompted: the first view anchors
    # an anchor outside the views still opens every window but is not yielded
    spans = windows([0], [5, 4, 3], window_size=3, max_anchors=1)
    assert spans == [([0, 5, 4], [5, 4]), ([0, 3], [3])]


def test_propagation_views_order_and_bounds():
    assert propagation_views(5, None, False, None) == [0, 1, 2, 3, 4]
    assert propagation_views(5, None, True, 2) == [4, 3]
    assert propagation_views(5, 2, True, None) == [2, 1, 0]
    assert propagation_views(5, 1, False, 3) == [1, 2, 3]
    for bad in (dict(start_view=5), dict(start_view=-1), dict(max_views=0), dict(start_view=1.0)):
        args = {"start_view": None, "max_views": None, **bad}
        with pytest.raises(InputError):
            propagation_views(5, args["start_view"], False, args["max_views"])


def test_second_pass_lifts_the_prompted_view_into_memory(monkeypatch):
    model = G2TAM(image_size=32, dim=32)
    frames = (torch.rand(4, 32, 32, 3) * 255).to(torch.uint8).numpy()
    original = WindowDecoder.decode
    outputs = {}
    for refine in (False, True):
        seen = []

        def spy(self, encoded, prompts, views=None, seen=seen):
            seen.append((bool(prompts.memory_valid.any()), views))
            return original(self, encoded, prompts, views)

        monkeypatch.setattr(WindowDecoder, "decode", spy)
        pred = TrackerPredictor(model, text_encoder=None, refine=refine, presence_threshold=0.0)
        state = pred.init_state(frames, ordered=True)
        pred.add_prompt(state, 0, 1, points=[[10, 12]], labels=[1])
        outputs[refine] = [m for _, _, m, _ in pred.propagate(state)]
        # the first pass decodes only the prompted view, the one the second pass lifts from
        assert seen == ([(False, [0]), (True, None)] if refine else [(False, None)])
    assert len(outputs[True]) == len(outputs[False]) == 4


def test_text_only_objects_lift_their_surest_view(monkeypatch):
    """A text-only object's second pass lifts its first-pass mask on the view of highest presence; below the
    presence threshold on every view it keeps its first pass."""
    torch.manual_seed(0)  # a fixed untrained model and clip: the surest view must not be a near tie
    model = G2TAM(image_size=32, dim=32, text_dim=8)
    frames = (torch.rand(3, 32, 32, 3) * 255).to(torch.uint8).numpy()
    original_decode, original_lift = WindowDecoder.decode, propagation.lift
    for threshold, passes in ((0.0, 2), (1.01, 1)):
        decoded, lifted_from = [], []

        def spy_decode(self, encoded, prompts, views=None, decoded=decoded):
            assert views is None  # a text-only object needs every view's presence
            out = original_decode(self, encoded, prompts, views)
            decoded.append((bool(prompts.memory_valid.any()), out[1].cpu()))
            return out

        def spy_lift(masks, wp, feats, carried, memory_points, lifted_from=lifted_from):
            lifted_from.append(wp.copy())
            return original_lift(masks, wp, feats, carried, memory_points)

        monkeypatch.setattr(WindowDecoder, "decode", spy_decode)
        monkeypatch.setattr(propagation, "lift", spy_lift)
        pred = TrackerPredictor(model, text_encoder=lambda texts: torch.ones(len(texts), 8), refine=True,
                                presence_threshold=threshold)
        state = pred.init_state(frames, ordered=True)
        pred.add_prompt(state, None, 1, text="the red mug")
        assert len(list(pred.propagate(state))) == 3
        assert [memory for memory, _ in decoded] == [False, True][:passes]
        if passes == 2:
            surest = int(decoded[0][1][:, 0].argmax())
            with torch.no_grad():
                wp = model.encode(torch.from_numpy(frames).permute(0, 3, 1, 2).float()[None] / 255)["world_points"]
            assert np.allclose(lifted_from[0][0], wp[0, surest].numpy(), atol=1e-5)
        else:
            assert lifted_from == []


def _mixed_prompts(model: G2TAM, objects: int, size: int) -> Prompts:
    """``objects`` slots of every prompt kind in turn (click, box, mask, text, carried 3D memory) on 3 views."""
    gen = torch.Generator().manual_seed(0)
    p = Prompts.empty(1, objects, (size, size), num_points=2, num_memory=6, text_dim=model.text_dim,
                      memory_dim=model.dim)
    for j in range(objects):
        p.valid[0, j] = True
        kind = j % 5
        if kind < 3:
            p.view[0, j] = j % 3
        if kind == 0:
            p.points[0, j, 0] = torch.rand(2, generator=gen) * size
            p.labels[0, j, 0] = 1
        elif kind == 1:
            p.points[0, j] = torch.tensor([[4.0, 5.0], [20.0, 25.0]])
            p.labels[0, j] = torch.tensor([BOX_TL, BOX_BR])
        elif kind == 2:
            p.masks[0, j, 8:20, 6:18] = 1
            p.has_mask[0, j] = True
        elif kind == 3:
            p.text[0, j] = torch.nn.functional.normalize(torch.randn(model.text_dim, generator=gen), dim=0)
            p.has_text[0, j] = True
        else:
            p.memory_points[0, j, :4] = torch.randn(4, 3, generator=gen)
            p.memory_valid[0, j, :4] = True
            p.memory_feat[0, j] = torch.randn(model.dim, generator=gen)
    return p


@pytest.mark.parametrize("views", [None, [1]])
def test_object_buckets_decode_what_one_object_per_call_decodes(views):
    """Objects decoded in buckets (one decoder call per bucket, over the one encoding) give each object's masks and
    presence of decoding it alone, up to float rounding, for every prompt kind."""
    torch.manual_seed(0)
    model = G2TAM(image_size=32, dim=32, text_dim=8).eval()
    with torch.no_grad():
        encoded = model.tracking_encoding(torch.rand(1, 3, 3, 32, 32))
        prompts = _mixed_prompts(model, 7, 32)
        logits = {}
        for bucket in (None, 1, 3):
            decoder = WindowDecoder(model, torch.device("cpu"), mask_threshold=-1e9, presence_threshold=0.0,
                                    memory_points=6, refine=False, object_bucket=bucket)
            masks, prob = decoder.decode(encoded, prompts, views)
            assert masks.shape == (1 if views else 3, 7, 32, 32) and prob.shape == masks.shape[:2]
            logits[bucket] = prob
        together = model.decode(encoded, prompts, views)
        alone = [model.decode(encoded, prompts.select(slice(j, j + 1)), views) for j in range(7)]
    assert torch.allclose(logits[1], logits[None], atol=1e-6) and torch.allclose(logits[3], logits[None], atol=1e-6)
    for j in range(7):  # the raw logits of one object alone against all objects in one call
        assert torch.allclose(alone[j]["masks"][:, :, 0], together["masks"][:, :, j], atol=1e-4)
        assert torch.allclose(alone[j]["presence"][:, :, 0], together["presence"][:, :, j], atol=1e-5)


@pytest.mark.parametrize("architecture", [G2TAM, MemoryBankTracker])
def test_predictor_buckets_bound_the_objects_per_decoder_call(monkeypatch, architecture):
    """Every call of the model's decoder holds at most ``object_bucket`` objects, and the masks are the per-object
    loop's (``object_bucket=1``) and the all-in-one call's, for G2TAM and the control."""
    torch.manual_seed(0)
    model = architecture(image_size=32, dim=32)
    frames = (torch.rand(5, 32, 32, 3) * 255).to(torch.uint8).numpy()
    original = architecture.decode
    results = {}
    for bucket in (1, 2, None):
        sizes = []

        def spy(self, encoded, prompts, views=None, sizes=sizes, **kwargs):
            sizes.append(prompts.num_objects)
            return original(self, encoded, prompts, views, **kwargs)

        monkeypatch.setattr(architecture, "decode", spy)
        pred = TrackerPredictor(model, text_encoder=None, window_size=3, presence_threshold=0.0, object_bucket=bucket)
        state = pred.init_state(frames, ordered=True)
        for o in range(5):
            pred.add_prompt(state, o % 2, 10 + o, points=[[3 + 5 * o, 25 - 4 * o]])
        results[bucket] = np.stack([m for _, _, m, _ in pred.propagate(state)])
        assert max(sizes) == (5 if bucket is None else bucket)
        # every decode of a window (G2TAM: both passes) in ceil(5 / bucket) calls
        assert len(sizes) % (1 if bucket is None else -(-5 // bucket)) == 0
    assert results[1].shape == (5, 5, 32, 32)
    assert (results[2] != results[1]).mean() <= 1e-3 and (results[None] != results[1]).mean() <= 1e-3


def test_object_bucket_must_be_a_positive_integer():
    model = G2TAM(image_size=32, dim=32)
    for bad in (0, -1, 2.0, True):
        with pytest.raises(InputError, match="object_bucket"):
            TrackerPredictor(model, text_encoder=None, object_bucket=bad)
