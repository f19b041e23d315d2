"""Point, mask and text prompts of the real tracker (vision.tracking.real.prompts) and its masks
(vision.tracking.real.masks), on real photographs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from skimage import data

from vision.errors import InputError
from vision.tracking.real.masks import BoxMasks
from vision.tracking.real.prompts import box_from_mask, box_from_points, box_from_text, head_phrase, text_class


@pytest.fixture(scope="module")
def astronaut(pretrained_weights: Path) -> np.ndarray:
    return data.astronaut()


def test_a_point_on_the_astronaut_gives_her_face_or_her_whole(astronaut: np.ndarray) -> None:
    x, y, w, h = box_from_points(astronaut, [[250, 150]], [1])  # on her face: the face
    assert x <= 250 <= x + w and y <= 150 <= y + h and w * h < 0.1 * 512 * 512
    x, y, w, h = box_from_points(astronaut, [[250, 420]], [1])  # on her suit: the person
    assert x <= 250 <= x + w and y <= 420 <= y + h and w * h > 0.2 * 512 * 512


def test_a_negative_point_inside_every_box_leaves_the_segmenter(astronaut: np.ndarray) -> None:
    with pytest.raises(InputError, match="no object found at the points"):
        box_from_points(astronaut[:200, 380:], [[10, 10]], [1])  # the plain background of the top-right corner
    with pytest.raises(InputError, match="outside the"):
        box_from_points(astronaut, [[600, 10]], [1])
    with pytest.raises(InputError, match="positive"):
        box_from_points(astronaut, [[10, 10]], [0])


def test_text_names_a_detector_class(astronaut: np.ndarray) -> None:
    assert text_class("a person") == "person" and text_class("the coffee cup") == "cup"
    assert head_phrase("the fair-haired woman in a black coat (she waves)") == "the fair-haired woman"
    assert text_class("the fair-haired woman in a black coat") == "person"  # through the aliases
    assert text_class("the woman's face") == "person" and text_class("the parked bike with a bag") == "bicycle"
    index, box = box_from_text([astronaut[:100, 450:], astronaut], "a person")
    assert index == 1 and box[2] * box[3] > 0.2 * 512 * 512
    with pytest.raises(InputError, match="names nothing the detector knows"):
        text_class("quantum chromodynamics")
    with pytest.raises(InputError, match="no giraffe found"):
        box_from_text([astronaut], "a giraffe")


def test_mask_prompt_and_masks(astronaut: np.ndarray) -> None:
    mask = np.zeros((40, 50), bool)
    mask[5:9, 10:30] = True
    assert np.array_equal(box_from_mask(mask), [10, 5, 20, 4])
    with pytest.raises(InputError, match="non-empty"):
        box_from_mask(np.zeros((4, 4), bool))
    box = np.array([140.0, 20.0, 330.0, 480.0])  # the astronaut, from her hair to the bottom
    as_box = BoxMasks("box").mask(astronaut, box)
    assert as_box.sum() == 330 * 480 and as_box[20:500, 140:470].all()
    person = BoxMasks("deeplab").mask(astronaut, box)
    assert person.sum() > 0.3 * as_box.sum() and not (person & ~as_box).any()
    assert person.sum() < as_box.sum()  # the flag behind her is not the person
    with pytest.raises(InputError, match="mask mode"):
        BoxMasks("sam")


def _discs() -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """A 240 x 320 frame of two flat-coloured discs on a noisy background: (frame, their boxes, their masks)."""
    import cv2

    rng = np.random.default_rng(0)
    frame = rng.integers(60, 140, (240, 320, 3)).astype(np.uint8)
    frame[..., 1] = 150  # a green, noisy background
    boxes, masks = [], []
    for (cx, cy, r, colour) in ((80, 120, 40, (220, 40, 40)), (230, 100, 30, (40, 40, 220))):
        disc = np.zeros((240, 320), np.uint8)
        cv2.circle(disc, (cx, cy), r, 1, -1)
        frame[disc > 0] = colour
        boxes.append(np.array([cx - r, cy - r, 2 * r + 1, 2 * r + 1], np.float64))
        masks.append(disc > 0)
    return frame, boxes, masks


def test_grabcut_cuts_an_object_no_segmenter_class_knows_out_of_its_box() -> None:
    frame, boxes, truths = _discs()
    masker = BoxMasks("grabcut")

    def iou(a: np.ndarray, b: np.ndarray) -> float:
        return float((a & b).sum() / (a | b).sum())

    for box, truth in zip(boxes, truths):
        as_box, cut = BoxMasks("box").mask(frame, box), masker.mask(frame, box)
        assert iou(cut, truth) > 0.9 > iou(as_box, truth)  # a disc fills pi/4 of its box
        assert np.array_equal(BoxMasks("deeplab").mask(frame, box), as_box)  # no VOC class: the box
        assert not (cut & ~as_box).any()
    both = masker.masks(frame, np.stack(boxes))  # one segmentation for both objects: each keeps its own
    assert all(iou(m, t) > 0.9 for m, t in zip(both, truths))
    whole = masker.mask(frame, np.array([0.0, 0.0, 320.0, 240.0]))  # no background left to learn from
    assert whole.all()


def test_a_text_naming_a_face_or_a_head_is_the_face_detectors(astronaut: np.ndarray) -> None:
    _, face = box_from_text([astronaut], "the astronaut's face")
    _, person = box_from_text([astronaut], "the woman")
    assert face[2] * face[3] < 0.25 * person[2] * person[3]  # the face, not the whole person
    x, y, w, h = face
    assert person[0] <= x and x + w <= person[0] + person[2] + 1
    with pytest.raises(InputError, match="no face found"):
        box_from_text([np.zeros((120, 160, 3), np.uint8)], "the head")
