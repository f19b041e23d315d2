"""vision.data.stream: frames of a source read as they arrive — a finished file, a file still being written
(followed until it stops growing) — the pixel limit applied from the header, and one-line errors."""

from __future__ import annotations

import io
import threading
import time

import av
import numpy as np
import pytest

from vision.data.stream import open_stream
from vision.errors import VideoError


def mpegts_bytes(frames: np.ndarray) -> bytes:
    """``frames`` encoded as an MPEG-TS byte string (H.264, a container written front to back)."""
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format="mpegts") as container:
        stream = container.add_stream("libx264", rate=10)
        stream.width, stream.height, stream.pix_fmt = frames.shape[2], frames.shape[1], "yuv420p"
        for frame in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode(None))
    return buffer.getvalue()


def _clip(count: int = 12) -> np.ndarray:
    ramp = np.linspace(0, 255, 32 * 48, dtype=np.float32).reshape(32, 48)
    return np.stack([np.stack([np.roll(ramp, 2 * i, 1)] * 3, -1).astype(np.uint8) for i in range(count)])


def test_a_finished_file_streams_frame_by_frame(tmp_path):
    path = tmp_path / "clip.ts"
    path.write_bytes(mpegts_bytes(_clip()))
    live = open_stream(path)
    assert (live.width, live.height) == (48, 32)
    frames = list(live.frames())
    assert len(frames) == 12 and frames[0].shape == (32, 48, 3) and frames[0].dtype == np.uint8
    assert len(list(open_stream(path).frames(max_frames=5))) == 5
    with pytest.raises(VideoError, match=r"clip.ts: frames of 48x32 .* over the limit"):
        open_stream(path, max_pixels=100)


@pytest.mark.slow
def test_a_growing_file_is_followed_until_it_stops_growing(tmp_path):
    data = mpegts_bytes(_clip(20))
    path = tmp_path / "live.ts"
    path.write_bytes(data[:4096])  # the writer has started: a header and the first packets

    def writer() -> None:
        for start in range(4096, len(data), 2048):
            time.sleep(0.05)
            with open(path, "ab") as f:
                f.write(data[start: start + 2048])

    thread = threading.Thread(target=writer)
    thread.start()
    frames = list(open_stream(path, follow=True, idle_timeout=1.0).frames())
    thread.join()
    assert len(frames) == 20  # every frame, although the file held a few of them when reading began
    assert len(list(open_stream(path).frames())) == 20


def test_sources_that_cannot_be_opened_are_one_line_errors(tmp_path):
    with pytest.raises(VideoError, match="cannot open the stream"):
        open_stream(tmp_path / "missing.ts")
    with pytest.raises(VideoError, match="must be an existing regular file"):
        open_stream(tmp_path / "missing.ts", follow=True)
    junk = tmp_path / "junk.ts"
    junk.write_bytes(b"not a video at all" * 10)
    with pytest.raises(VideoError, match="junk.ts"):
        open_stream(junk)
