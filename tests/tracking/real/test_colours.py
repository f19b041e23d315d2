"""Colour words of text prompts: the colours that describe the object itself (not those in parentheses or relative
clauses), how much of a box shows them, and the text prompt's choice among several objects of its class."""

from __future__ import annotations

import numpy as np

from vision.tracking.real.colours import colour_share, colour_words
from vision.tracking.real.prompts import box_from_text


def test_the_colours_of_the_object_itself() -> None:
    assert colour_words("the player in a blue shirt (behind the player in white)") == ["blue"]
    assert colour_words("the man in the dark top who hugs the man in red") == ["black"]
    assert colour_words("a Gray cat; the red one is its twin") == ["grey"]
    assert colour_words("the fair-haired woman") == [] and colour_words("bluebell") == []


def test_colour_share_reads_the_centre_of_the_box() -> None:
    frame = np.zeros((100, 200, 3), np.uint8)
    frame[:, :100] = (30, 60, 200)  # blue on the left
    frame[:, 100:] = (240, 240, 240)  # white on the right
    assert colour_share(frame, np.array([0, 0, 100, 100]), ["blue"]) == 1.0
    assert colour_share(frame, np.array([0, 0, 100, 100]), ["white"]) == 0.0
    assert colour_share(frame, np.array([90, 0, 100, 100]), ["white", "blue"]) == 1.0
    assert colour_share(frame, np.array([300, 0, 10, 10]), ["blue"]) == 0.0


class TwoPeople:
    """A detector that finds two persons, the white one scored higher."""

    def detect(self, frame: np.ndarray, score_threshold: float = 0.3) -> dict:
        return {"boxes": np.array([[110.0, 10.0, 190.0, 90.0], [10.0, 10.0, 90.0, 90.0]]),
                "scores": np.array([0.9, 0.8]), "classes": np.array([0, 0])}


def test_a_text_with_a_colour_picks_the_object_that_shows_it() -> None:
    frame = np.zeros((100, 200, 3), np.uint8)
    frame[:, :100] = (30, 60, 200)
    frame[:, 100:] = (240, 240, 240)
    _, box = box_from_text([frame], "the player in a blue shirt", detector=TwoPeople())
    assert np.allclose(box, [10, 10, 80, 80])
    _, box = box_from_text([frame], "the player", detector=TwoPeople())  # no colour: the higher score
    assert np.allclose(box, [110, 10, 80, 80])
    _, box = box_from_text([frame], "the player in a blue shirt", detector=TwoPeople(), use_colours=False)
    assert np.allclose(box, [110, 10, 80, 80])
