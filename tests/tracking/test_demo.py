"""The Track tab's logic without a model (vision/tracking/demo_handlers.py): click-to-prompt and the prompts drawn
on their frame."""

import numpy as np
import pytest

from vision.errors import InputError
from vision.tracking.demo_handlers import click_prompt, draw_prompts
from vision.tracking.export import object_colour


def test_clicks_make_prompt_lines_and_boxes_take_two_clicks():
    lines, pending = click_prompt("", "positive", 1, 2, 10.4, 5.6, None)
    assert lines == "object 1 frame 2 positive 10,6" and pending is None
    lines, pending = click_prompt(lines, "negative", 1, 2, 3, 4, None)
    lines, pending = click_prompt(lines, "box", 2, 2, 20, 18, None)
    assert pending == [20, 18] and lines.count("\n") == 1  # first corner only
    lines, pending = click_prompt(lines, "box", 2, 2, 4, 6, pending)
    assert pending is None and lines.splitlines()[-1] == "object 2 frame 2 box 4,6,20,18"
    with pytest.raises(InputError, match="click mode"):
        click_prompt(lines, "lasso", 1, 0, 1, 1, None)


def test_prompts_are_drawn_on_their_frame_in_the_object_colour():
    frame = np.zeros((40, 60, 3), np.uint8)
    lines = "object 1 frame 0 positive 10,10\nobject 2 frame 0 box 30,5,50,30\nobject 3 frame 1 positive 5,5"
    drawn = draw_prompts(frame, lines, view=0)
    assert tuple(drawn[10, 10]) == object_colour(1)
    assert tuple(drawn[5, 40]) == object_colour(2)  # the box's top edge
    assert not drawn[5, 5].any()  # object 3 is prompted on frame 1, not drawn here
    assert (draw_prompts(frame, "object 1 frame 0 positive nonsense", 0) == frame).all()  # bad text: no drawing
