"""Rendered screen captures: each kind moves as it says (scrolls, types, grows), deterministically, and bad
arguments are refused."""

from __future__ import annotations

import numpy as np
import pytest

from vision.errors import InputError
from vision.prepare.screen import KINDS, screen_capture


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_changes_over_time_and_repeats_exactly(kind: str) -> None:
    clip = screen_capture(kind, 6, 128, seed=3)
    assert clip.shape == (6, 128, 128, 3) and clip.dtype == np.uint8
    assert np.array_equal(clip, screen_capture(kind, 6, 128, seed=3))
    assert not np.array_equal(clip, screen_capture(kind, 6, 128, seed=4))  # other words
    steps = [np.abs(clip[t + 1].astype(int) - clip[t]).mean() for t in range(5)]
    assert min(steps) > 0  # it moves every frame
    assert len(np.unique(clip[0].reshape(-1, 3), axis=0)) > 8  # text and drawing, not a flat page


def test_the_document_scrolls_up() -> None:
    clip = screen_capture("document", 2, 256, seed=0).astype(np.float32).mean(-1)
    body = slice(40, 200)  # below the title bar
    shifts = [np.abs(clip[1, body] - clip[0, body.start + s:body.stop + s]).mean() for s in range(0, 4)]
    assert int(np.argmin(shifts)) == 2  # 3 px a frame at 512, so round(1.5) px at 256


def test_bad_arguments_are_refused() -> None:
    with pytest.raises(InputError, match="kind must be one of"):
        screen_capture("desktop", 4, 128)
    with pytest.raises(InputError, match="side >= 64"):
        screen_capture("chart", 4, 32)
