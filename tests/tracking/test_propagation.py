"""Windows over the views, the views one propagation yields, and G2TAM's second pass (vision.tracking.propagation)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vision.errors import InputError
from vision.tracking import propagation
from vision.tracking.model import G2TAM
from vision.tracking.predictor import TrackerPredictor
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
