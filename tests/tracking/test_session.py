"""Session state: prompt conversion to model pixels, the encoding cache, object removal (vision.tracking.session)."""

from __future__ import annotations

import numpy as np
import pytest

from vision.errors import InputError
from vision.tracking.prompts import NEGATIVE, POSITIVE
from vision.tracking.session import TrackerState, object_prompt


def _state(t: int = 3, height: int = 20, width: int = 40, size: int = 10) -> TrackerState:
    return TrackerState(frames=np.zeros((t, size, size, 3), np.uint8), height=height, width=width, ordered=True)


def test_prompts_are_scaled_to_model_pixels():
    state = _state()
    prompt = object_prompt(state, 1, points=[[20, 10], [4, 2]], labels=[1, 0], box=[0, 0, 40, 20])
    assert prompt.view == 1 and state.size == 10
    np.testing.assert_allclose(prompt.points[:2], [[5, 5], [1, 1]])  # x * 10 / 40, y * 10 / 20
    assert prompt.labels[:2].tolist() == [POSITIVE, NEGATIVE] and len(prompt.points) == 4  # box: two corners
    np.testing.assert_allclose(prompt.points[2:], [[0, 0], [10, 10]])
    text = object_prompt(state, None, text="a mug")
    assert text.view is None and text.text == "a mug" and text.text_embedding is None
    mask = np.zeros((20, 40), bool)
    mask[:10, :20] = True  # the top-left quarter
    assert object_prompt(state, 0, mask=mask).mask.sum() == 25


def test_prompt_errors_name_the_problem():
    state = _state()
    with pytest.raises(InputError, match="needs points"):
        object_prompt(state, 0)
    with pytest.raises(InputError, match="out of range"):
        object_prompt(state, 3, points=[[1, 1]])
    with pytest.raises(InputError, match="off the image"):
        object_prompt(state, 0, box=[0, 0, 41, 5])
    with pytest.raises(InputError, match="view must be an int"):
        object_prompt(state, True, points=[[1, 1]])


def test_the_encoding_cache_keeps_the_most_recent_windows_within_its_bound():
    state = _state(t=8)
    calls = []

    def encoder(window):
        return lambda: calls.append(tuple(window)) or {"window": tuple(window)}

    for window in ([0, 1, 2], [0, 3, 4], [0, 5, 6]):
        state.cached_encoding(window, encoder(window), cache_views=6)
    assert list(state.encodings) == [(0, 3, 4), (0, 5, 6)]  # the oldest window dropped
    assert state.cached_encoding([0, 3, 4], encoder([0, 3, 4]), 6) == {"window": (0, 3, 4)}
    assert list(state.encodings) == [(0, 5, 6), (0, 3, 4)] and len(calls) == 3  # a hit: most recent, no encode
    state.cached_encoding([1, 2, 3, 4, 5, 6, 7], encoder([1]), cache_views=6)
    assert list(state.encodings) == [(1, 2, 3, 4, 5, 6, 7)]  # a window over the bound still stays alone
    state.cached_encoding([0, 1], encoder([0, 1]), cache_views=0)
    assert (0, 1) not in state.encodings


def test_remove_and_clear():
    state = _state()
    state.prompts[1] = object_prompt(state, 0, points=[[1, 1]])
    state.prompts[2] = object_prompt(state, None, text="x")
    assert state.prompted_views == [0] and state.obj_ids == [1, 2]
    state.remove(2)
    assert state.obj_ids == [1]
    with pytest.raises(InputError, match="unknown object id 2"):
        state.remove(2)
    state.clear()
    assert state.obj_ids == [] and state.extrinsics is None
