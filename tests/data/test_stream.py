"""vision.data.stream: frames of a source read as they arrive — a finished file, a file still being written
(followed until it stops growing), a FIFO — the pixel limit applied from the header, and one-line errors (a FIFO
nobody writes to, a followed file that stops before its first frame: issue 46 item 5)."""

from __future__ import annotations

import io
import os
import threading
import time

import av
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vision.data.stream import open_stream
from vision.errors import VideoError


def encoded_bytes(frames: np.ndarray, container_format: str) -> bytes:
    """``frames`` (uint8 [T, H, W, 3] RGB) encoded with H.264 into a byte string of ``container_format``."""
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format=container_format) as container:
        stream = container.add_stream("libx264", rate=10)
        stream.width, stream.height, stream.pix_fmt = frames.shape[2], frames.shape[1], "yuv420p"
        for frame in frames:
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode(None))
    return buffer.getvalue()


def mpegts_bytes(frames: np.ndarray) -> bytes:
    """``frames`` encoded as an MPEG-TS byte string (H.264, a container written front to back)."""
    return encoded_bytes(frames, "mpegts")


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


def matroska_bytes(frames: np.ndarray) -> bytes:
    """``frames`` encoded as Matroska (H.264): its header gives the frame size before any frame."""
    return encoded_bytes(frames, "matroska")


def _write_fifo(path, data: bytes, chunk: int = 1000) -> threading.Thread:
    """A writer that opens the FIFO ``path``, writes ``data`` in chunks and closes it (in a thread)."""
    def write() -> None:
        with open(path, "wb") as fifo:
            for start in range(0, len(data), chunk):
                fifo.write(data[start:start + chunk])
                fifo.flush()
    thread = threading.Thread(target=write)
    thread.start()
    return thread


def test_a_fifo_streams_and_one_nobody_writes_to_is_one_line(tmp_path):
    """A FIFO is opened without waiting for a writer (a blocking open hung forever): with a writer its frames
    stream; with none, or one that closes it before a frame, the error names the FIFO and the cause."""
    fifo = tmp_path / "live.fifo"
    os.mkfifo(fifo)
    data = mpegts_bytes(_clip(6))
    writer = _write_fifo(fifo, data)
    assert len(list(open_stream(fifo, idle_timeout=5.0).frames())) == 6
    writer.join()
    started = time.monotonic()
    with pytest.raises(VideoError, match=r"live.fifo: nothing arrived: no program wrote to the FIFO within 0.2 s$"):
        open_stream(fifo, idle_timeout=0.2)
    assert time.monotonic() - started < 3
    writer = _write_fifo(fifo, b"")
    with pytest.raises(VideoError, match=r"live.fifo: nothing arrived: the FIFO's writer closed it without writing$"):
        open_stream(fifo, idle_timeout=5.0)
    writer.join()
    writer = _write_fifo(fifo, data[:700])
    with pytest.raises(VideoError, match=r"live.fifo: no frame arrived: the FIFO's writer closed it before its first "
                                         r"frame was complete$"):
        open_stream(fifo, idle_timeout=5.0)
    writer.join()
    with pytest.raises(VideoError, match=r"live.fifo: --follow follows a growing regular file, and this is a FIFO"):
        open_stream(fifo, follow=True)


def test_a_followed_file_that_stops_before_a_frame_names_the_file_and_the_cause(tmp_path):
    path = tmp_path / "live.mkv"
    path.write_bytes(b"")
    with pytest.raises(VideoError, match=r"live.mkv: nothing arrived: the file stayed empty for 0.05 s$"):
        open_stream(path, follow=True, idle_timeout=0.05)
    data = matroska_bytes(_clip(3))
    path.write_bytes(data[:700])  # the header (the frame size) and part of the first frame
    live = open_stream(path, follow=True, idle_timeout=0.05)
    assert (live.width, live.height) == (48, 32)
    with pytest.raises(VideoError, match=r"live.mkv: no frame arrived: the file stopped growing \(no new bytes for "
                                         r"0.05 s\) before its first frame was complete$"):
        list(live.frames())


_CLIP = _clip(4)
_TS = mpegts_bytes(_CLIP)
_MKV = matroska_bytes(_CLIP)


@settings(max_examples=30, deadline=None)
@given(data=st.sampled_from([_TS, _MKV]), fraction=st.floats(min_value=0.0, max_value=1.0))
def test_a_followed_file_cut_anywhere_gives_its_frames_or_one_line(tmp_path_factory, data, fraction):
    """Whatever point a writer stops at, following the file ends within a few waits: with the frames complete by
    then (at least one), or with one VideoError naming the file, never another exception or a hang."""
    path = tmp_path_factory.mktemp("cut") / "live.bin"
    path.write_bytes(data[:int(len(data) * fraction)])
    started = time.monotonic()
    try:
        frames = list(open_stream(path, follow=True, idle_timeout=0.02).frames())
    except VideoError as exc:
        message = str(exc)
        assert message.startswith(f"{path}: ") and "\n" not in message, message
        assert "nothing arrived" in message or "no frame arrived" in message, message
    else:
        assert 1 <= len(frames) <= len(_CLIP)
        assert all(frame.shape == (32, 48, 3) for frame in frames)
    assert time.monotonic() - started < 5
