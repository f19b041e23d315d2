"""Frames from a live source, read as they arrive: anything PyAV (FFmpeg) opens by name — a file, an ``rtsp://`` /
``http://`` / ``udp://`` URL, a capture device with its format (``/dev/video0`` with ``fmt="v4l2"``) — or a file that
is still being written (``follow=True``: at its end the reader waits for more bytes, and stops after ``idle_timeout``
seconds without growth). A growing file must be in a container written front to back (MPEG-TS, Matroska /
WebM, fragmented MP4); a plain MP4 writes its index last and cannot be read before it is finished.

:func:`open_stream` checks the frame size against ``max_pixels`` from the stream's header, before decoding, and
returns a :class:`LiveStream`: the size, the frame rate when the source says it, and :meth:`LiveStream.frames`,
which decodes one frame at a time (``uint8 [H, W, 3]`` RGB); nothing is buffered beyond FFmpeg's own.
"""

from __future__ import annotations

import io
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import av
import numpy as np

from vision.data.io import MAX_INPUT_PIXELS, check_pixels
from vision.data.video import first_video_stream
from vision.errors import VideoError

__all__ = ["FollowFile", "LiveStream", "open_stream"]


class FollowFile(io.RawIOBase):
    """A read-only file that, at its current end, waits for the writer: it polls every ``poll`` seconds and
    reports the end only after ``idle_timeout`` seconds without new bytes (``tail -f`` for a demuxer)."""

    def __init__(self, path: str | Path, idle_timeout: float = 5.0, poll: float = 0.05) -> None:
        super().__init__()
        self._file = open(path, "rb")  # noqa: SIM115 (closed by close())
        self.idle_timeout, self.poll = float(idle_timeout), float(poll)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def readinto(self, buffer: Any) -> int:
        waited = 0.0
        while True:
            count = self._file.readinto(buffer)
            if count:
                return count
            if waited >= self.idle_timeout:
                return 0
            time.sleep(self.poll)
            waited += self.poll

    def close(self) -> None:
        self._file.close()
        super().close()


@dataclass
class LiveStream:
    """An opened source: ``width`` x ``height``, ``fps`` (None when the source does not say), ``name``."""

    name: str
    width: int
    height: int
    fps: float | None
    _container: Any
    _stream: Any

    def frames(self, max_frames: int | None = None) -> Iterator[np.ndarray]:
        """Decode the frames one by one (``uint8 [H, W, 3]`` RGB), at most ``max_frames``; the source is closed
        at the end (or when the iterator is closed). A frame whose size changes mid-stream is a
        :class:`VideoError`."""
        count = 0
        try:
            for packet in self._container.demux(self._stream):
                for frame in packet.decode():
                    if (frame.width, frame.height) != (self.width, self.height):
                        raise VideoError(f"frame {count} is {frame.width}x{frame.height}, the stream started at "
                                         f"{self.width}x{self.height}", file=self.name)
                    yield frame.to_ndarray(format="rgb24")
                    count += 1
                    if max_frames is not None and count >= max_frames:
                        return
        except av.error.FFmpegError as exc:
            raise VideoError(f"reading the stream failed after {count} frames: {exc}", file=self.name) from exc
        finally:
            self._container.close()


def open_stream(source: str | Path, fmt: str | None = None, follow: bool = False, idle_timeout: float = 5.0,
                max_pixels: int | None = MAX_INPUT_PIXELS, options: dict[str, str] | None = None) -> LiveStream:
    """Open ``source`` (see the module docstring); ``fmt`` forces FFmpeg's input format (``v4l2``, ``mpegts``,
    ...), ``options`` are FFmpeg's input options (e.g. ``{"rtsp_transport": "tcp"}``).

    Raises:
        VideoError: the source cannot be opened, has no video stream, or its frames are over ``max_pixels``
            (one line naming it).
    """
    name = str(source)
    try:
        if follow:
            if not os.path.isfile(name):
                raise VideoError("a followed (growing) file must be an existing regular file", file=name)
            container = av.open(FollowFile(name, idle_timeout), mode="r", format=fmt, options=options or {})
        else:
            container = av.open(name, mode="r", format=fmt, options=options or {}, timeout=idle_timeout)
    except (av.error.FFmpegError, OSError, ValueError) as exc:
        raise VideoError(f"cannot open the stream: {exc}", file=name) from exc
    stream = first_video_stream(container, name)
    width, height = int(stream.codec_context.width), int(stream.codec_context.height)
    try:
        check_pixels(width, height, name, max_pixels)
    except VideoError:
        container.close()
        raise
    rate = stream.average_rate or stream.base_rate
    fps = float(rate) if rate else None
    return LiveStream(name, width, height, fps, container, stream)
