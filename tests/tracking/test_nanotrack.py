"""NanoTracker (vision.tracking.nanotrack) against OpenCV's own cv2.TrackerNano on the registered v2 ONNX pair, on
a real clip: the blue-shirted player of ``mmaction2_basketball.mp4`` (426 x 240), frames 0-99, from one first-frame
box; v3 on the same clip; the search-crop rule against a direct transcription of OpenCV's ``getSubwindow``."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.errors import InputError
from vision.evaluation.openset import box_iou_xywh
from vision.tracking.nanotrack import NanoTracker, crop_square
from vision.tracking.nanotrack_opencv import OpenCVNanoTracker

CLIP = "mmaction2_basketball.mp4"
FRAMES = 100
#: the blue-shirted player in frame 0, (x, y, w, h) pixels
BOX = (222, 111, 46, 119)


@pytest.fixture(scope="module")
def frames(shared_footage: Path) -> list[np.ndarray]:
    """The clip's first frames, uint8 RGB."""
    capture = cv2.VideoCapture(str(shared_footage / CLIP))
    out = []
    while len(out) < FRAMES:
        ok, frame = capture.read()
        if not ok:
            break
        out.append(np.ascontiguousarray(frame[:, :, ::-1]))
    capture.release()
    assert len(out) == FRAMES, f"cannot read {FRAMES} frames of {CLIP}"
    return out


def _track(tracker, frames: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    tracker.init(frames[0], BOX)
    boxes, scores = zip(*(tracker.update(frame) for frame in frames[1:]))
    return np.array(boxes), np.array(scores)


@pytest.fixture(scope="module")
def opencv_track(pretrained_weights: Path, frames: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return _track(OpenCVNanoTracker(), frames)


@pytest.fixture(scope="module")
def v2_track(pretrained_weights: Path, frames: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return _track(NanoTracker("v2"), frames)


def _ious(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.array([box_iou_xywh(x, y)[0, 0] for x, y in zip(a, b)])


def test_v2_follows_opencv_tracker(opencv_track, v2_track) -> None:
    """Every one of the 99 boxes within IoU 0.98 of OpenCV's (its integer rectangle against ``np.trunc`` of ours:
    the two networks differ at float32 rounding, so a near tie could flip a cell), and the scores within 1e-3."""
    (cv_boxes, cv_scores), (boxes, scores) = opencv_track, v2_track
    ious = _ious(cv_boxes, np.trunc(boxes))
    assert ious.min() >= 0.98, f"IoU with OpenCV: min {ious.min():.4f} at frame {ious.argmin() + 1}"
    np.testing.assert_allclose(scores, cv_scores, atol=1e-3)
    # the player moves right across the court: the track is not standing still
    assert cv_boxes[-1, 0] - cv_boxes[0, 0] > 50


def test_v3_follows_the_same_object(pretrained_weights: Path, frames: list[np.ndarray], v2_track) -> None:
    """v3 (which OpenCV's TrackerNano cannot run from these files) stays on the player: mean IoU with the v2 track
    above 0.5, and above 0.5 on the last frame too."""
    boxes, scores = _track(NanoTracker("v3"), frames)
    ious = _ious(boxes, v2_track[0])
    assert ious.mean() > 0.5 and ious[-1] > 0.5, f"v3 vs v2 IoU: mean {ious.mean():.3f}, last {ious[-1]:.3f}"
    assert np.isfinite(scores).all() and (scores > 0).all()


def _opencv_subwindow(frame: np.ndarray, centre: tuple[float, float], side: int, out: int) -> np.ndarray:
    """OpenCV's ``getSubwindow`` as written: pad the whole frame with its mean colour, then crop and resize."""
    half = (side + 1) // 2
    x0, y0 = int(centre[0]) - half, int(centre[1]) - half
    h, w = frame.shape[:2]
    left, top = max(0, -x0), max(0, -y0)
    right, bottom = max(0, x0 + side - w), max(0, y0 + side - h)
    padded = cv2.copyMakeBorder(frame, top, bottom, left, right, cv2.BORDER_CONSTANT, value=cv2.mean(frame)[:3])
    return cv2.resize(padded[y0 + top:y0 + top + side, x0 + left:x0 + left + side], (out, out))


@pytest.mark.parametrize("centre, side", [((60.7, 40.2), 31), ((3.5, 2.9), 40), ((118.0, 78.9), 57),
                                          ((64.0, 40.0), 301)])
def test_crop_square_is_opencvs_subwindow(centre: tuple[float, float], side: int) -> None:
    frame = np.random.default_rng(0).integers(0, 256, (80, 120, 3), dtype=np.uint8)
    np.testing.assert_array_equal(crop_square(frame, centre, side, 127), _opencv_subwindow(frame, centre, side, 127))


def test_rejects_bad_input() -> None:
    from vision.weights.nets.nanotrack import NanoTrack

    tracker = NanoTracker(NanoTrack("v2"))
    with pytest.raises(InputError, match="before init"):
        tracker.update(np.zeros((64, 64, 3), np.uint8))
    with pytest.raises(InputError, match="uint8"):
        tracker.init(np.zeros((64, 64, 3), np.float32), (1, 1, 10, 10))
    with pytest.raises(InputError, match="w, h > 0"):
        tracker.init(np.zeros((64, 64, 3), np.uint8), (1, 1, 0, 10))
    with pytest.raises(InputError, match="network_channels"):
        NanoTracker(NanoTrack("v2"), network_channels="gbr")
