"""vision/concept/export.py: drawing each instance in the colour of its id, labelled with its id and phrase."""

from __future__ import annotations

import numpy as np

from vision.concept.export import label_instances
from vision.tracking.export import object_colour


def test_instances_are_drawn_in_their_colour_with_id_and_phrase():
    frame = np.zeros((40, 80, 3), np.uint8)
    mask = np.zeros((40, 80), bool)
    mask[20:35, 5:30] = True
    drawn = label_instances(frame, [mask, np.zeros((10, 20), bool)], [3, 4], ["mug", "chair"])
    colour = np.array(object_colour(3))
    inside = drawn[28, 15].astype(int)
    assert np.abs(inside - colour // 2).max() <= 1  # blended at alpha 0.5
    label = drawn[8:19, 12:60].reshape(-1, 3)  # right of the id, above the mask: the phrase's text
    assert (np.abs(label.astype(int) - colour).max(axis=1) <= 40).sum() > 5
    assert not drawn[:, 40:].any()  # the empty mask draws nothing
