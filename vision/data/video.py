"""Video I/O through PyAV: read and sample frames, probe a file, write browser-playable H.264 mp4.

Conventions:
    * Frames are ``uint8`` RGB arrays, one frame ``[H, W, 3]``, a clip ``[T, H, W, 3]``.
    * ``size`` selects an output size when reading: ``None`` keeps the file's size, ``(W, H)`` resizes to exactly
      that width and height, an ``int`` resizes so that the *shorter* side has that length and the aspect ratio
      is kept (the other side is rounded to the nearest pixel). Down-scaling uses area interpolation,
      up-scaling bilinear (OpenCV, pixel-centre aligned).
    * ``stride`` keeps every ``stride``-th decoded frame, starting at frame 0; ``max_frames`` caps the number of
      frames returned (after striding).

Every problem with a file (missing, empty, truncated, corrupt, no video stream, nothing decodable, frames over
the pixel limit, cannot be written) raises :class:`~vision.errors.VideoError` whose message names the file. Bad
arguments raise :class:`~vision.errors.InputError`.

The reading policy, the same for every task (every reader in the package goes through :func:`iter_frames` or
:func:`check_video`):

* frames larger than ``max_pixels`` (default :data:`vision.data.io.MAX_INPUT_PIXELS`) are refused from the
  stream's header, before anything is decoded;
* a file that holds fewer frames than its container declares is truncated and refused, also when only its first
  frames are read (``max_frames``): the rest of the file is then demuxed, not decoded, to count its packets. The
  count is the container's frame count (mp4, mov), else its duration times its frame rate (mkv, webm, avi; the
  container's duration is used only when the video is its one stream: with an audio track it may be the
  audio's). One frame fewer than declared is tolerated, as muxers round so in intact files (a camera mp4 that
  declares 456 frames and holds 455): :func:`check_video` then says so in :attr:`VideoInfo.note`;
* a packet that FFmpeg's demuxer marks corrupt (the file ends or breaks inside it: an mp4 missing its last bytes)
  is refused, whether or not its frame is decoded;
* ``max_frames`` caps what is decoded; callers that serve requests pass
  :data:`vision.data.io.MAX_INPUT_FRAMES` or less.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import av
import numpy as np

from vision.data.files import regular_file
from vision.data.io import MAX_INPUT_PIXELS, check_pixels, read_image, resize_frame
from vision.errors import InputError, VideoError

__all__ = [
    "FrameSource",
    "first_video_stream",
    "VideoInfo",
    "probe_video",
    "check_video",
    "iter_frames",
    "read_video",
    "write_video",
    "REPRODUCIBLE_X264",
    "read_frames_from_paths",
    "read_frames",
]

SizeArg = int | tuple[int, int] | None

# PyAV >= 17 converts frames to RGB with a pool of threads sized to the machine (its default, threads=0). Each frame
# is small work, and on a busy machine waiting for the pool costs more than the conversion (250 frames of 640x272,
# 2 busy cores: 0.6-1.1 s pooled, 0.06-0.18 s on the calling thread); one thread gives the same bytes. Older PyAV
# converts on the calling thread and has no such argument.
_RGB_ARGS: dict[str, int] = {"threads": 1} if int(av.__version__.split(".")[0]) >= 17 else {}


@dataclass(frozen=True)
class VideoInfo:
    """What :func:`probe_video` reads from a file's header without decoding it.

    Attributes:
        fps: average frame rate in frames per second.
        num_frames: frame count; exact when the container stores it (mp4 does), otherwise ``round(duration * fps)``.
        width: frame width in pixels.
        height: frame height in pixels.
        codec: decoder name, e.g. ``"h264"``.
        duration: length in seconds (0.0 when the container does not say).
        note: from :func:`check_video`: what the user should know about the file (a tolerated one-frame shortfall),
            else empty.
    """

    fps: float
    num_frames: int
    width: int
    height: int
    codec: str
    duration: float
    note: str = ""


# ----------------------------------------------------------------------------------------------------------------
# reading


def _open_for_reading(path: str | Path) -> tuple[av.container.InputContainer, av.video.stream.VideoStream]:
    """Open ``path`` and return the container and its first video stream, or raise :class:`VideoError`."""
    path = regular_file(path, what="video file", error=VideoError)
    if path.stat().st_size == 0:
        raise VideoError("video file is empty (0 bytes)", file=path)
    try:
        container = av.open(str(path), mode="r")
    except (av.error.FFmpegError, OSError, UnicodeDecodeError) as exc:
        raise VideoError(f"cannot open video (corrupt, truncated or not a video): {exc}", file=path) from exc
    stream = first_video_stream(container, path)
    stream.thread_type = "AUTO"
    return container, stream


def first_video_stream(container: av.container.InputContainer, name: str | Path) -> av.video.stream.VideoStream:
    """The first video stream of an opened ``container``; without one the container is closed and a
    :class:`VideoError` names ``name``."""
    if not container.streams.video:
        container.close()
        raise VideoError("the file or stream has no video", file=name)
    return container.streams.video[0]


def _target_size(width: int, height: int, size: SizeArg) -> tuple[int, int] | None:
    """Output ``(W, H)`` for a frame of ``width x height`` under the ``size`` policy (None: unchanged)."""
    if size is None:
        return None
    if isinstance(size, bool):
        raise InputError(f"size must be None, an int or a (W, H) pair; got {size!r}")
    if isinstance(size, (int, np.integer)):
        if size <= 0:
            raise InputError(f"size (shorter side) must be positive; got {size!r}")
        scale = float(size) / min(width, height)
        out = (max(1, int(round(width * scale))), max(1, int(round(height * scale))))
    elif isinstance(size, (tuple, list)) and len(size) == 2 and all(isinstance(v, (int, np.integer)) for v in size):
        out = (int(size[0]), int(size[1]))
        if out[0] <= 0 or out[1] <= 0:
            raise InputError(f"size (W, H) must be positive; got {size!r}")
    else:
        raise InputError(f"size must be None, an int (shorter side) or a (W, H) pair of ints; got {size!r}")
    return None if out == (width, height) else out


def _check_sampling(stride: int, max_frames: int | None) -> None:
    if isinstance(stride, bool) or not isinstance(stride, (int, np.integer)) or stride < 1:
        raise InputError(f"stride must be an int >= 1; got {stride!r}")
    if max_frames is not None and (isinstance(max_frames, bool) or not isinstance(max_frames, (int, np.integer))
                                   or max_frames < 1):
        raise InputError(f"max_frames must be None or an int >= 1; got {max_frames!r}")


def iter_frames(path: str | Path, stride: int = 1, max_frames: int | None = None, size: SizeArg = None,
                max_pixels: int | None = MAX_INPUT_PIXELS) -> Iterator[np.ndarray]:
    """Yield decoded frames of ``path`` one by one as ``uint8 [H, W, 3]`` RGB (the policy of the module docstring).

    Args:
        path: the video file.
        stride: keep frames 0, stride, 2*stride, ... of the decoded sequence.
        max_frames: stop after this many frames have been yielded (None: until the end); the rest of the file is
            still demuxed (not decoded) to find a truncation.
        size: output size policy (see the module docstring).
        max_pixels: refuse frames with more pixels, from the header (None: no limit).

    Raises:
        VideoError: the file is missing, empty, corrupt or truncated (the container declares more frames than
            the file holds), no frame at all could be decoded, or its frames are over ``max_pixels``.
        InputError: bad ``stride`` / ``max_frames`` / ``size``.
    """
    return _open_frames(path, stride, max_frames, size, max_pixels, None)


def _open_frames(path: str | Path, stride: int, max_frames: int | None, size: SizeArg, max_pixels: int | None,
                 buffer: _FrameBuffer | None) -> Iterator[np.ndarray]:
    """Check the arguments, open ``path`` and check its frame size; the frame generator (see :func:`iter_frames`)."""
    _check_sampling(stride, max_frames)
    _target_size(1, 1, size)  # validate the size argument before touching the file
    container, stream = _open_for_reading(path)  # errors about the file surface here, not at the first next()
    try:
        check_pixels(int(stream.codec_context.width), int(stream.codec_context.height), path, max_pixels)
    except VideoError:
        container.close()
        raise
    if buffer is not None:
        declared, _ = _expected_frames(container, stream)
        buffer.reserve(-(-declared // stride) if declared else 0, max_frames)
    return _decode_frames(path, container, stream, stride, max_frames, size, buffer)


class _FrameBuffer:
    """The ``[T, H, W, 3]`` array :func:`read_video` returns, filled frame by frame in place (each frame is resized
    straight into its slot: no per-frame copy and no final stack). Sized from the container's declared frame count
    (at most 1024 frames at first); it doubles when more frames come."""

    def __init__(self) -> None:
        self.capacity, self.count = 64, 0
        self.array: np.ndarray | None = None

    def reserve(self, expected: int, max_frames: int | None) -> None:
        if expected > 0:
            self.capacity = min(expected, 1024)
        if max_frames is not None:
            self.capacity = min(self.capacity, max_frames)
        self.capacity = max(self.capacity, 1)

    def slot(self, shape: tuple[int, ...]) -> np.ndarray:
        """The next frame's ``uint8`` slot of ``shape``; frames of another shape than the first raise ValueError
        (like ``np.stack``)."""
        if self.array is None:
            self.array = np.empty((self.capacity, *shape), np.uint8)
        elif tuple(shape) != self.array.shape[1:]:
            raise ValueError(f"all input arrays must have the same shape: frame {self.count} is {tuple(shape)}, "
                             f"frame 0 is {self.array.shape[1:]}")
        elif self.count == len(self.array):
            grown = np.empty((2 * len(self.array), *shape), np.uint8)
            grown[: self.count] = self.array
            self.array = grown
        self.count += 1
        return self.array[self.count - 1]

    def result(self) -> np.ndarray:
        if self.array is None:
            raise VideoError("no frame could be decoded")  # not reached: the decoder raises first
        return self.array[: self.count] if self.count < len(self.array) else self.array


def _is_data(packet: av.Packet) -> bool:
    """False for the empty packet that demuxing yields at the end of a stream (it only flushes the decoder)."""
    return packet.size > 0 or packet.dts is not None


#: Frames a file may hold fewer than its container declares and still count as complete (muxers round the last
#: frame's duration or count; PyAV decodes 455 of a camera mp4's declared 456).
MUXER_SLACK = 1


def _expected_frames(container: av.container.InputContainer, stream: av.video.stream.VideoStream) -> tuple[int, str]:
    """How many frames the file should hold, and where that comes from (for messages): the container's frame
    count, else its duration times the frame rate (the container's duration only when the video is its only
    stream); ``(0, "")`` when neither is known."""
    if stream.frames:
        return int(stream.frames), "the container declares"
    rate = stream.average_rate or stream.guessed_rate or stream.base_rate
    if not rate or float(rate) <= 0:
        return 0, ""
    if stream.duration is not None and stream.time_base is not None:
        duration = float(stream.duration * stream.time_base)
    elif container.duration is not None and len(container.streams) == 1:
        duration = float(container.duration) / av.time_base
    else:
        return 0, ""
    return max(int(round(duration * float(rate))), 0), "the container's duration implies"


class _Tally:
    """Packets of the video stream seen while demuxing: how many carry data, and the first one FFmpeg marks
    corrupt (0-based; None when none is)."""

    def __init__(self) -> None:
        self.packets = 0
        self.corrupt: int | None = None

    def add(self, packet: av.Packet) -> None:
        if not _is_data(packet):
            return
        if packet.is_corrupt and self.corrupt is None:
            self.corrupt = self.packets
        self.packets += 1


def _check_complete(path: str | Path, expected: tuple[int, str], found: int, corrupt: int | None,
                    detail: str = "") -> str:
    """The truncation rule shared by every reader: refuse a file holding more than :data:`MUXER_SLACK` frames
    fewer than ``expected`` (from :func:`_expected_frames`), or a corrupt packet; return a note when it holds
    fewer within the slack (else "")."""
    count, source = expected
    if count > 0 and found < count - MUXER_SLACK:
        raise VideoError(f"truncated or corrupt video: {source} {count} frames but only {found} could be "
                         f"read{detail}", file=path)
    if corrupt is not None:
        raise VideoError(f"truncated or corrupt video: packet {corrupt} of the video stream is damaged (the file "
                         f"ends or breaks inside it){detail}", file=path)
    if count > 0 and found < count:
        return (f"{Path(path).name}: {source} {count} frames and it holds {found}; a one-frame difference is a "
                f"common muxer rounding, so the file is read as complete")
    return ""


def _decode_frames(path: str | Path, container: av.container.InputContainer, stream: av.video.stream.VideoStream,
                   stride: int, max_frames: int | None, size: SizeArg,
                   buffer: _FrameBuffer | None = None) -> Iterator[np.ndarray]:
    """The generator behind :func:`iter_frames`; closes the container when done or when closed early. With
    ``buffer``, each frame is written into the buffer's next slot and that slot is yielded."""
    expected = _expected_frames(container, stream)
    out_wh: tuple[int, int] | None = None
    tally = _Tally()
    decoded = 0
    yielded = 0
    try:
        demuxed = container.demux(stream)
        try:
            for packet in demuxed:
                tally.add(packet)
                for frame in packet.decode():
                    decoded += 1
                    if (decoded - 1) % stride != 0:
                        continue
                    image = frame.to_ndarray(format="rgb24", **_RGB_ARGS)
                    if yielded == 0:
                        out_wh = _target_size(image.shape[1], image.shape[0], size)
                    dst = None
                    if buffer is not None:
                        dst = buffer.slot(image.shape if out_wh is None else (out_wh[1], out_wh[0], image.shape[2]))
                    yield resize_frame(image, out_wh, dst=dst)
                    yielded += 1
                    if max_frames is not None and yielded >= max_frames:
                        # enough frames: count the rest of the file's packets without decoding them
                        for rest in demuxed:
                            tally.add(rest)
                        _check_complete(path, expected, tally.packets, tally.corrupt)
                        return
        except (av.error.FFmpegError, OSError) as exc:
            _check_complete(path, expected, decoded, None, f" ({exc})")
            raise VideoError(f"decoding failed after {decoded} frame(s) (corrupt or truncated file): {exc}",
                             file=path) from exc
        if decoded == 0:
            raise VideoError("no frame could be decoded (empty, truncated or corrupt video)", file=path)
        _check_complete(path, expected, decoded, tally.corrupt)
    finally:
        container.close()


def read_video(path: str | Path, stride: int = 1, max_frames: int | None = None, size: SizeArg = None,
               max_pixels: int | None = MAX_INPUT_PIXELS) -> np.ndarray:
    """Read a video into one array ``uint8 [T, H, W, 3]`` RGB; same arguments and errors as :func:`iter_frames`."""
    buffer = _FrameBuffer()
    for _ in _open_frames(path, stride, max_frames, size, max_pixels, buffer):
        pass  # each frame lands in the buffer
    return buffer.result()


def check_video(path: str | Path, max_pixels: int | None = MAX_INPUT_PIXELS) -> VideoInfo:
    """Check a video against the reading policy without decoding it, and return its :class:`VideoInfo`.

    Reads the header (:func:`probe_video`), refuses frames over ``max_pixels``, then demuxes every packet (no
    decoding: cheap, constant memory) and refuses the file when it holds fewer frames than its container declares
    (beyond :data:`MUXER_SLACK`) or a packet is corrupt; a tolerated shortfall is said in the returned info's
    ``note``. Call it before loading a model so that a bad input fails fast; the readers apply the same checks
    while decoding.

    Raises:
        VideoError: as :func:`iter_frames` (missing, empty, corrupt, truncated, over ``max_pixels``).
    """
    container, stream = _open_for_reading(path)  # one opening: the header, then every packet
    tally = _Tally()
    try:
        info = _header(container, stream, path)
        check_pixels(info.width, info.height, path, max_pixels)
        expected = _expected_frames(container, stream)
        for packet in container.demux(stream):
            tally.add(packet)
    except (av.error.FFmpegError, OSError) as exc:
        raise VideoError(f"cannot read the video's packets (corrupt or truncated file): {exc}", file=path) from exc
    finally:
        container.close()
    note = _check_complete(path, expected, tally.packets, tally.corrupt)
    return dataclasses.replace(info, note=note) if note else info


def probe_video(path: str | Path) -> VideoInfo:
    """Read a video's header: frame rate, frame count (estimate when not stored), size, codec and duration.

    Raises:
        VideoError: the file is missing, empty, corrupt, has no video stream or no frame rate.
    """
    container, stream = _open_for_reading(path)
    try:
        return _header(container, stream, path)
    finally:
        container.close()


def _header(container: av.container.InputContainer, stream: av.video.stream.VideoStream,
            path: str | Path) -> VideoInfo:
    """The :class:`VideoInfo` of an opened video's header (see :func:`probe_video`)."""
    rate = stream.average_rate or stream.guessed_rate or stream.base_rate
    if not rate or float(rate) <= 0:
        raise VideoError("the video stream has no frame rate", file=path)
    fps = float(rate)
    if stream.duration is not None and stream.time_base is not None:
        duration = float(stream.duration * stream.time_base)
    elif container.duration is not None:
        duration = float(container.duration) / av.time_base
    else:
        duration = 0.0
    num_frames = int(stream.frames) if stream.frames else int(round(duration * fps))
    width = int(stream.codec_context.width)
    height = int(stream.codec_context.height)
    if width <= 0 or height <= 0:
        raise VideoError(f"the video stream has an invalid frame size {width}x{height}", file=path)
    return VideoInfo(fps=fps, num_frames=num_frames, width=width, height=height,
                     codec=str(stream.codec_context.name), duration=duration)


# ----------------------------------------------------------------------------------------------------------------
# writing


def _check_frame(frame: np.ndarray, index: int, shape: tuple[int, ...] | None) -> np.ndarray:
    frame = np.asarray(frame)
    if frame.dtype != np.uint8:
        raise InputError(f"frames[{index}] must be uint8 RGB; got dtype {frame.dtype}")
    if frame.ndim != 3 or frame.shape[2] != 3 or frame.shape[0] < 1 or frame.shape[1] < 1:
        raise InputError(f"frames[{index}] must have shape [H, W, 3]; got {tuple(frame.shape)}")
    if shape is not None and frame.shape != shape:
        raise InputError(f"frames[{index}] has shape {tuple(frame.shape)} but frames[0] has {shape}; "
                         f"all frames of a video must have the same size")
    return frame


def _pad_to_even(frame: np.ndarray) -> np.ndarray:
    """Pad a frame with an odd width/height by one replicated column/row on the right/bottom (yuv420p needs even)."""
    pad_h = frame.shape[0] % 2
    pad_w = frame.shape[1] % 2
    if pad_h == 0 and pad_w == 0:
        return frame
    return np.pad(frame, ((0, pad_h), (0, pad_w), (0, 0)), mode="edge")


def _as_rate(fps: float | int | Fraction) -> Fraction:
    if isinstance(fps, bool) or not isinstance(fps, (int, float, Fraction, np.integer, np.floating)):
        raise InputError(f"fps must be a positive number; got {fps!r}")
    if not np.isfinite(float(fps)) or float(fps) <= 0:
        raise InputError(f"fps must be a positive number; got {fps!r}")
    return Fraction(fps).limit_denominator(1001) if not isinstance(fps, Fraction) else fps


#: The encoder options of ``write_video(..., reproducible=True)``: one thread (x264's thread count otherwise follows
#: the machine's cores, and the bytes follow the thread count) and no SIMD code (``asm=0``: x264's C code, the same
#: on every CPU; its AVX-512 code gives different bytes run to run).
REPRODUCIBLE_X264: dict[str, str] = {"threads": "1", "x264-params": "asm=0"}


def write_video(path: str | Path, frames: np.ndarray | Iterable[np.ndarray], fps: float | Fraction = 30.0,
                crf: int = 18, preset: str = "medium", reproducible: bool = False) -> Path:
    """Write frames as an H.264 mp4 that browsers play, atomically.

    The stream is libx264, pixel format yuv420p, with ``+faststart`` (the index is placed before the data so a
    browser can start playing while downloading). yuv420p needs even width and height: a frame with an odd
    width or height is padded by one replicated column (right) and/or row (bottom), so reading the file back
    gives ``W + W % 2`` by ``H + H % 2`` frames. The video is written to a temporary file in the target folder
    and renamed over ``path`` only when complete, so a failure never leaves a half-written file at ``path``.

    Args:
        path: target ``.mp4`` file; its folder is created if missing.
        frames: ``uint8 [T, H, W, 3]`` RGB array, or an iterable of ``uint8 [H, W, 3]`` RGB frames of one size.
        fps: frame rate (a float such as 29.97 is stored as a fraction with denominator <= 1001).
        crf: x264 constant rate factor (0 = lossless luma, 18 = visually lossless, 23 = x264 default).
        preset: x264 speed/size preset (``"ultrafast"`` ... ``"veryslow"``).
        reproducible: encode on one thread with x264's portable C code (:data:`REPRODUCIBLE_X264`), so that the
            same frames give the same bytes on every run and every machine with the same x264 build, at some
            speed: x264 otherwise picks its SIMD code by CPU (different code, different bytes), its AVX-512 code
            gives different bytes run to run for the same frames, and its thread count follows the cores.

    Returns:
        The path written.

    Raises:
        InputError: bad frames (dtype, shape, sizes differ, none given), fps, crf or a non-.mp4 path.
        VideoError: the encoder or the file system failed (names the file).
    """
    path = Path(path)
    if path.suffix.lower() != ".mp4":
        raise InputError(f"write_video writes H.264 .mp4 files; got path {str(path)!r}")
    rate = _as_rate(fps)
    if isinstance(crf, bool) or not isinstance(crf, (int, np.integer)) or not 0 <= crf <= 51:
        raise InputError(f"crf must be an int in [0, 51]; got {crf!r}")
    if isinstance(frames, np.ndarray):
        if frames.ndim != 4:
            raise InputError(f"frames must be uint8 [T, H, W, 3] or an iterable of [H, W, 3]; "
                             f"got an array of shape {tuple(frames.shape)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp.mp4", dir=path.parent)
        os.close(fd)
    except OSError as exc:
        raise VideoError(f"cannot create the output file: {exc}", file=path) from exc
    tmp = Path(tmp_name)
    try:
        count = _encode(tmp, path, frames, rate, int(crf), preset, reproducible)
        if count == 0:
            raise InputError(f"write_video got no frames to write to {path}")
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
    return path


def _encode(tmp: Path, target: Path, frames: np.ndarray | Iterable[np.ndarray], rate: Fraction, crf: int,
            preset: str, reproducible: bool = False) -> int:
    """Encode ``frames`` into the temporary file ``tmp`` (``reproducible``: with :data:`REPRODUCIBLE_X264`);
    return the number of frames written."""
    try:
        container = av.open(str(tmp), mode="w", format="mp4", options={"movflags": "+faststart"})
    except (av.error.FFmpegError, OSError) as exc:
        raise VideoError(f"cannot open the output file for writing: {exc}", file=target) from exc
    count = 0
    try:
        stream = None
        shape: tuple[int, ...] | None = None
        for index, frame in enumerate(frames):
            frame = _check_frame(frame, index, shape)
            if stream is None:
                shape = frame.shape
                even = _pad_to_even(frame)
                stream = container.add_stream("libx264", rate=rate)
                stream.width = even.shape[1]
                stream.height = even.shape[0]
                stream.pix_fmt = "yuv420p"
                stream.options = {"crf": str(crf), "preset": preset, **(REPRODUCIBLE_X264 if reproducible else {})}
            av_frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(_pad_to_even(frame)), format="rgb24")
            for packet in stream.encode(av_frame):
                container.mux(packet)
            count += 1
        if stream is not None:
            for packet in stream.encode(None):
                container.mux(packet)
    except (av.error.FFmpegError, OSError) as exc:
        raise VideoError(f"encoding failed at frame {count}: {exc}", file=target) from exc
    finally:
        container.close()
    return count


# ----------------------------------------------------------------------------------------------------------------
# image sequences


def read_frames_from_paths(paths: Sequence[str | Path], size: SizeArg = None,
                           max_pixels: int | None = MAX_INPUT_PIXELS) -> np.ndarray:
    """Read a list of image files into ``uint8 [T, H, W, 3]`` RGB with :func:`vision.data.io.read_image`.

    Each image's header is checked against ``max_pixels`` before it is decoded. Grey images are expanded to three
    channels and 16-bit images reduced to 8 bits (OpenCV ``IMREAD_COLOR``). Without ``size`` all images must have
    the same size; with ``size`` each is resized by the same policy as :func:`read_video` (with an ``int`` shorter
    side, images of different aspect ratios still cannot be stacked).

    Raises:
        InputError: ``paths`` is empty or not a list of paths.
        VideoError: a file is missing, unreadable or over ``max_pixels``, or image sizes differ (names the file).
    """
    if isinstance(paths, (str, Path)) or not isinstance(paths, Sequence):
        raise InputError(f"paths must be a list of image paths; got {type(paths).__name__}")
    if len(paths) == 0:
        raise InputError("paths is empty; give at least one image path")
    frames: list[np.ndarray] = []
    for index, item in enumerate(paths):
        if not isinstance(item, (str, Path)):
            raise InputError(f"paths[{index}] must be a str or Path; got {item!r}")
        file = Path(item)
        image = read_image(file, max_pixels=max_pixels)
        image = resize_frame(image, _target_size(image.shape[1], image.shape[0], size))
        if frames and image.shape != frames[0].shape:
            raise VideoError(f"image size {image.shape[1]}x{image.shape[0]} differs from the first image's "
                             f"{frames[0].shape[1]}x{frames[0].shape[0]}", file=file, field=f"paths[{index}]")
        frames.append(image)
    return np.stack(frames, axis=0)


class FrameSource:
    """A checked input whose frames are decoded once: a video file (its first ``max_frames`` frames) or image files,
    of ``width`` x ``height`` pixels (the pixels of prompts and results).

    The first :meth:`read` decodes every frame used a single time and resizes each decoded frame both to the size
    asked for (a model's input: what :func:`read_frames` hands a predictor) and to ``keep`` (the size the caller
    draws on, :meth:`kept`), with the same resize as :func:`read_video`, so the frames equal those of two separate
    reads. Later reads at the same size return the same frames; another size is resized from a new pass.

    Args:
        video: the video file, or None for ``images`` (sorted as the caller wants them, one size).
        width, height: the input's frame size (read from its header by the caller's check).
        max_frames: the frames used, the first ones; max_pixels: frames with more pixels are refused.
        keep: ``(W, H)`` of the kept frames (None: the input's size).
    """

    def __init__(self, video: Path | None, images: Sequence[Path], width: int, height: int, max_frames: int,
                 max_pixels: int | None, keep: tuple[int, int] | None = None) -> None:
        self.video, self.images = video, list(images)
        self.width, self.height = int(width), int(height)
        self.max_frames, self.max_pixels, self.keep = max_frames, max_pixels, keep
        self._read: dict[tuple[int, int] | None, np.ndarray] = {}

    def _decoded(self) -> Iterator[np.ndarray]:
        """Each frame used, decoded at the input's size."""
        if self.video is not None:
            yield from iter_frames(self.video, max_frames=self.max_frames, max_pixels=self.max_pixels)
        else:
            for path in self.images:
                yield read_image(path, max_pixels=self.max_pixels)

    def _pass(self, sizes: Sequence[tuple[int, int] | None]) -> None:
        """One decoding pass that stores the frames at each of ``sizes`` (``(W, H)``; None: the input's)."""
        frames: dict[tuple[int, int] | None, list[np.ndarray]] = {size: [] for size in sizes}
        for image in self._decoded():
            for size, out in frames.items():
                out.append(resize_frame(image, _target_size(image.shape[1], image.shape[0], size)))
        for size, out in frames.items():
            self._read[size] = np.stack(out, axis=0)

    def read(self, size: SizeArg = None) -> tuple[np.ndarray, tuple[int, int]]:
        """The frames at ``size`` (the policy of :func:`read_video`), uint8 ``[T, H', W', 3]`` RGB, and the input's
        ``(height, width)``; the first call also keeps the frames at ``keep``."""
        out = _target_size(self.width, self.height, size)
        if out not in self._read:
            self._pass([out] + ([self.keep] if self.keep not in self._read and self.keep != out else []))
        return self._read[out], (self.height, self.width)

    def kept(self) -> np.ndarray:
        """The frames at ``keep`` (decoded now unless a :meth:`read` already did)."""
        if self.keep not in self._read:
            self._pass([self.keep])
        return self._read[self.keep]


def read_frames(source: object, size: SizeArg = None, stride: int = 1, max_frames: int | None = None,
                max_pixels: int | None = MAX_INPUT_PIXELS) -> tuple[np.ndarray, tuple[int, int]]:
    """Read a model's input, whatever its form, into ``uint8 [T, H', W', 3]`` RGB under the ``size`` policy.

    ``source``: a video path (:func:`read_video`, with ``stride`` and ``max_frames``), a list of image paths
    (:func:`read_frames_from_paths`), a :class:`FrameSource` (decoded once, under its own limits; ``stride`` must
    be 1), frames ``uint8 [T, H, W, 3]`` RGB, or a torch float tensor ``[T, 3, H, W]`` in [0, 1] (rounded to
    uint8); files with frames over ``max_pixels`` are refused before decoding. Returns the
    frames and the input's ``(height, width)`` (the video's, the first image's, the frames'), the pixels prompts
    and results are given in.

    Raises:
        InputError: an empty list, frames of another dtype or shape. VideoError: as the readers above.
    """
    if isinstance(source, FrameSource):
        if stride != 1:
            raise InputError(f"a FrameSource is read whole: stride must be 1, got {stride!r}")
        return source.read(size)
    if isinstance(source, (str, Path)):
        info = probe_video(source)
        frames = read_video(source, stride=stride, max_frames=max_frames, size=size, max_pixels=max_pixels)
        return frames, (int(info.height), int(info.width))
    if isinstance(source, (list, tuple)):
        if not source:
            raise InputError("got an empty list of image paths")
        from vision.data.io import image_size

        width, height = image_size(source[0])
        return read_frames_from_paths(list(source), size=size, max_pixels=max_pixels), (int(height), int(width))
    torch = sys.modules.get("torch")  # a tensor can only come from an imported torch
    if torch is not None and isinstance(source, torch.Tensor):
        if source.ndim != 4 or source.shape[1] != 3 or not source.is_floating_point():
            raise InputError(f"frames tensor must be float [T, 3, H, W] in [0, 1], got "
                             f"{source.dtype} {tuple(source.shape)}")
        source = (source.clamp(0, 1) * 255).round().byte().permute(0, 2, 3, 1).cpu().numpy()
    arr = np.asarray(source)
    if arr.ndim != 4 or arr.shape[-1] != 3 or arr.dtype != np.uint8 or arr.shape[0] == 0:
        raise InputError(f"frames must be uint8 [T, H, W, 3] RGB, got {arr.dtype} {arr.shape}")
    height, width = arr.shape[1:3]
    out = _target_size(width, height, size)
    frames = arr.copy() if out is None else np.stack([resize_frame(f, out) for f in arr])
    return frames, (int(height), int(width))
