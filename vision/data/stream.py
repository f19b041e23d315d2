"""Frames from a live source, read as they arrive: anything PyAV (FFmpeg) opens by name — a file, an ``rtsp://`` /
``http://`` / ``udp://`` URL, a capture device with its format (``/dev/video0`` with ``fmt="v4l2"``) —, a FIFO (named
pipe) another program writes a stream into, or a file that is still being written (``follow=True``: at its end the
reader waits for more bytes, and stops after ``idle_timeout`` seconds without growth). A growing file must be in a
container written front to back (MPEG-TS, Matroska / WebM, fragmented MP4); a plain MP4 writes its index last and
cannot be read before it is finished.

A FIFO is read without blocking forever: opening one for reading would wait for a writer, so it is opened
non-blocking and each read waits at most ``idle_timeout`` seconds (:class:`PipeFile`); the stream ends when the writer
closes it or sends nothing for that long. A followed file or a FIFO from which no frame arrives before the wait runs
out is one :class:`~vision.errors.VideoError` naming it and the cause (nothing arrived, the header came but no
frame); a followed file or FIFO that ends in the middle of a frame after some frames ends there (the writer
stopped).

:func:`open_stream` checks the frame size against ``max_pixels`` from the stream's header, before decoding, and
returns a :class:`LiveStream`: the size, the frame rate when the source says it, and :meth:`LiveStream.frames`,
which decodes one frame at a time (``uint8 [H, W, 3]`` RGB); nothing is buffered beyond FFmpeg's own.
"""

from __future__ import annotations

import io
import os
import select
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import av
import numpy as np

from vision.data.io import MAX_INPUT_PIXELS, check_pixels
from vision.data.video import first_video_stream
from vision.errors import VideoError

__all__ = ["IDLE_TIMEOUT", "FollowFile", "LiveStream", "PipeFile", "open_stream"]

#: seconds a followed file may stay the same size, or a FIFO stay silent, before its end is reported (the default of
#: :func:`open_stream`'s ``idle_timeout``, read when it is called)
IDLE_TIMEOUT = 5.0


class FollowFile(io.RawIOBase):
    """A read-only file that, at its current end, waits for the writer: it polls every ``poll`` seconds and
    reports the end only after ``idle_timeout`` seconds without new bytes (``tail -f`` for a demuxer). Once the
    end was reported, later reads at the end report it at once (the demuxer reads again while probing), unless the
    file grew meanwhile.

    Attributes:
        received: bytes read so far. ended: whether the end was reported (the file stopped growing).
    """

    def __init__(self, path: str | Path, idle_timeout: float = IDLE_TIMEOUT, poll: float = 0.05) -> None:
        super().__init__()
        self._file = open(path, "rb")  # noqa: SIM115 (closed by close())
        self.idle_timeout, self.poll = float(idle_timeout), float(poll)
        self.received, self.ended = 0, False

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
                self.received += count
                return count
            if self.ended or waited >= self.idle_timeout:
                self.ended = True
                return 0
            time.sleep(self.poll)
            waited += self.poll

    def close(self) -> None:
        self._file.close()
        super().close()


class PipeFile(io.RawIOBase):
    """A FIFO (named pipe) read without blocking forever: opened non-blocking (a blocking open waits for a writer
    that may never come), each read waits at most ``idle_timeout`` seconds for bytes. The end is the writer closing
    the FIFO, or ``idle_timeout`` seconds without bytes (then every later read reports the end at once).

    Attributes:
        received: bytes read so far. ended: whether the end was reported. timed_out: whether it was reported
            because nothing came for ``idle_timeout`` seconds (else the writer closed the FIFO).
    """

    def __init__(self, path: str | Path, idle_timeout: float = IDLE_TIMEOUT) -> None:
        super().__init__()
        self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        self._poll = select.poll()
        # POLLIN: bytes to read; POLLHUP: a writer came and closed it (Linux reports no hang-up before a writer)
        self._poll.register(self._fd, select.POLLIN | select.POLLHUP)
        self.idle_timeout = float(idle_timeout)
        self.received, self.ended, self.timed_out = 0, False, False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def readinto(self, buffer: Any) -> int:
        if self.ended:
            return 0
        deadline = time.monotonic() + self.idle_timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not self._poll.poll(left * 1000):
                self.ended = self.timed_out = True
                return 0
            try:
                count = os.readv(self._fd, [buffer])
            except BlockingIOError:  # woken without bytes (another reader took them): wait on
                continue
            if count == 0:
                self.ended = True  # the writer closed the FIFO
            self.received += count
            return count

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


def _end_cause(reader: FollowFile | PipeFile | None, idle_timeout: float) -> str | None:
    """Why a followed file or a FIFO ended, in words (None for any other source, or one that has not ended)."""
    if isinstance(reader, FollowFile) and reader.ended:
        return f"the file stopped growing (no new bytes for {idle_timeout:g} s)"
    if isinstance(reader, PipeFile) and reader.ended:
        nothing = "nothing" if reader.received == 0 else "nothing more"
        return (f"the FIFO's writer sent {nothing} for {idle_timeout:g} s" if reader.timed_out else
                "the FIFO's writer closed it")
    return None


def _first_frame_missing(reader: FollowFile | PipeFile | None, idle_timeout: float) -> str:
    """The message for a source that ended before its first frame: what arrived, and why it ended."""
    if isinstance(reader, FollowFile) and reader.ended and reader.received == 0:
        return f"nothing arrived: the file stayed empty for {idle_timeout:g} s"
    if isinstance(reader, PipeFile) and reader.ended and reader.received == 0:
        return (f"nothing arrived: no program wrote to the FIFO within {idle_timeout:g} s" if reader.timed_out else
                "nothing arrived: the FIFO's writer closed it without writing")
    cause = _end_cause(reader, idle_timeout)
    if cause is None:
        return "no frame arrived: the stream ended before its first frame"
    return f"no frame arrived: {cause} before its first frame was complete"


@dataclass
class LiveStream:
    """An opened source: ``width`` x ``height``, ``fps`` (None when the source does not say), ``name``."""

    name: str
    width: int
    height: int
    fps: float | None
    _container: Any
    _stream: Any
    _reader: FollowFile | PipeFile | None = None  # what a followed file or a FIFO is read through
    _idle_timeout: float = IDLE_TIMEOUT

    def frames(self, max_frames: int | None = None) -> Iterator[np.ndarray]:
        """Decode the frames one by one (``uint8 [H, W, 3]`` RGB), at most ``max_frames``; the source is closed
        at the end (or when the iterator is closed).

        Raises:
            VideoError: naming the source: a frame whose size changes mid-stream, a source that ends before its
                first frame (for a followed file or a FIFO: it stopped growing, or its writer went quiet or closed
                it, said so), or one FFmpeg cannot read. A followed file or FIFO that ends in the middle of a frame
                after some frames ends there: its writer stopped mid-frame.
        """
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
            cause = _end_cause(self._reader, self._idle_timeout)
            if cause is not None and count > 0:
                return  # the writer stopped in the middle of a frame: the frames before it are the stream
            if cause is not None:
                raise VideoError(f"{_first_frame_missing(self._reader, self._idle_timeout)} ({exc})",
                                 file=self.name) from exc
            raise VideoError(f"reading the stream failed after {count} frames: {exc}", file=self.name) from exc
        finally:
            self._container.close()
            if self._reader is not None:
                self._reader.close()
        if count == 0:
            raise VideoError(_first_frame_missing(self._reader, self._idle_timeout), file=self.name)


def _is_fifo(name: str) -> bool:
    try:
        return stat.S_ISFIFO(os.stat(name).st_mode)
    except (OSError, ValueError):  # not a local path (a URL), or not one that can be reached: FFmpeg says why
        return False


def open_stream(source: str | Path, fmt: str | None = None, follow: bool = False, idle_timeout: float | None = None,
                max_pixels: int | None = MAX_INPUT_PIXELS, options: dict[str, str] | None = None) -> LiveStream:
    """Open ``source`` (see the module docstring); ``fmt`` forces FFmpeg's input format (``v4l2``, ``mpegts``,
    ...), ``options`` are FFmpeg's input options (e.g. ``{"rtsp_transport": "tcp"}``). ``idle_timeout`` (None:
    :data:`IDLE_TIMEOUT`) is how long a followed file may stop growing or a FIFO stay silent before it ends, and
    a network source's timeout.

    Raises:
        VideoError: one line naming the source: it cannot be opened (``follow`` on what is not a regular file; a
            followed file or a FIFO from which nothing, or no frame size, arrived in time: said so), has no video
            stream, or its frames are over ``max_pixels``.
    """
    name = str(source)
    idle = IDLE_TIMEOUT if idle_timeout is None else float(idle_timeout)
    if follow and _is_fifo(name):
        raise VideoError("--follow follows a growing regular file, and this is a FIFO (named pipe); stream it "
                         "without --follow", file=name)
    if follow and not os.path.isfile(name):
        raise VideoError("a followed (growing) file must be an existing regular file", file=name)
    reader: FollowFile | PipeFile | None = None
    try:
        if follow:
            reader = FollowFile(name, idle)
        elif _is_fifo(name):
            reader = PipeFile(name, idle)
        if reader is not None:
            container = av.open(reader, mode="r", format=fmt, options=options or {})
        else:
            container = av.open(name, mode="r", format=fmt, options=options or {}, timeout=idle)
    except (av.error.FFmpegError, OSError, ValueError) as exc:
        cause = _end_cause(reader, idle)
        if reader is not None:
            reader.close()
        message = f"cannot open the stream: {exc}" if cause is None else _first_frame_missing(reader, idle)
        raise VideoError(message, file=name) from exc
    try:
        stream = first_video_stream(container, name)
        width, height = int(stream.codec_context.width), int(stream.codec_context.height)
        if width <= 0 or height <= 0:
            cause = _first_frame_missing(reader, idle) if _end_cause(reader, idle) is not None else \
                "no frame arrived: the stream's header gives no frame size"
            raise VideoError(cause, file=name)
        check_pixels(width, height, name, max_pixels)
    except VideoError:
        container.close()
        if reader is not None:
            reader.close()
        raise
    rate = stream.average_rate or stream.base_rate
    fps = float(rate) if rate else None
    return LiveStream(name, width, height, fps, container, stream, reader, idle)
