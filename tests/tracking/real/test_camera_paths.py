"""Camera-path clips (vision.tracking.real.camera_paths): the object's box follows the rendered view, it leaves
the view and comes back on an exit, an occluder hides it, and a follow clip keeps it in view."""

from __future__ import annotations

import numpy as np
import pytest
from skimage import data

from vision.errors import InputError
from vision.tracking.real.camera_paths import camera_path_clip

BOX = np.array([180.0, 60.0, 300.0, 210.0])  # the astronaut's face, photo pixels (x0, y0, x1, y1)


def _clip(event: str, seed: int = 0):
    return camera_path_clip(data.astronaut(), BOX, np.random.default_rng(seed), event, frames=40, size=(160, 120),
                            occluder=data.coffee(), move_share=0.0)


def test_exit_leaves_and_comes_back() -> None:
    clip = _clip("exit")
    assert clip.frames.shape == (40, 120, 160, 3) and clip.frames.dtype == np.uint8
    assert clip.visible[0] == 1.0 and clip.visible[-1] == 1.0
    gone = clip.visible == 0
    assert gone.any() and np.isnan(clip.boxes[gone]).all()
    first_gone, last_gone = np.flatnonzero(gone)[[0, -1]]
    assert (clip.visible[:first_gone] > 0).all() and (clip.visible[last_gone + 1:] > 0).all()


def test_box_matches_the_rendered_object() -> None:
    """Where the object moves by itself and the light drifts, the pixels in its box still are the object's."""
    import cv2

    clip = camera_path_clip(data.astronaut(), BOX, np.random.default_rng(0), "follow", frames=40, size=(160, 120),
                            move_share=1.0, max_move=0.3, turn_share=0.0)
    assert (clip.visible > 0.99).all()
    face = cv2.cvtColor(data.astronaut()[int(BOX[1]):int(BOX[3]), int(BOX[0]):int(BOX[2])], cv2.COLOR_RGB2GRAY)
    for t in (0, 20, 39):
        x, y, w, h = np.round(clip.boxes[t]).astype(int)
        crop = cv2.cvtColor(clip.frames[t][y:y + h, x:x + w], cv2.COLOR_RGB2GRAY)
        a = cv2.resize(crop, (30, 30), interpolation=cv2.INTER_AREA).astype(float).ravel()
        b = cv2.resize(face, (30, 30), interpolation=cv2.INTER_AREA).astype(float).ravel()
        assert np.corrcoef(a, b)[0, 1] > 0.8


def test_occlusion_hides_the_object() -> None:
    clip = _clip("occlusion")
    assert clip.visible[0] == 1.0 and clip.visible.min() == 0.0
    hidden = np.flatnonzero(clip.visible == 0)
    assert np.isfinite(clip.boxes[hidden]).all()  # in view, under the occluder


def test_walk_out_and_a_twin() -> None:
    """The object walks out of a still view and back; its twin stays where it was put, a look-alike."""
    clip = camera_path_clip(data.astronaut(), BOX, np.random.default_rng(1), "walk_out", frames=40, size=(160, 120),
                            twin_share=1.0, turn_share=0.0)
    assert clip.visible[0] == 1.0 and clip.visible.min() == 0.0 and clip.visible[-1] > 0.9
    turned = camera_path_clip(data.astronaut(), BOX, np.random.default_rng(2), "follow", frames=20, size=(160, 120),
                              move_share=0.0, twin_share=0.0, turn_share=1.0)
    still = camera_path_clip(data.astronaut(), BOX, np.random.default_rng(2), "follow", frames=20, size=(160, 120),
                             move_share=0.0, twin_share=0.0, turn_share=0.0)
    assert np.array_equal(turned.boxes, still.boxes) and not np.array_equal(turned.frames[-1], still.frames[-1])


def test_bad_requests() -> None:
    with pytest.raises(InputError, match="event"):
        _clip("spin")
    with pytest.raises(InputError, match="inside"):
        camera_path_clip(data.astronaut(), np.array([0, 0, 600, 10]), np.random.default_rng(0), "exit")
    with pytest.raises(InputError, match="too large"):
        camera_path_clip(data.astronaut(), np.array([0, 0, 500, 500]), np.random.default_rng(0), "exit")
