"""Demo helpers without a model: upload checks, the evidence graph picture, the configuration's limits and
checkpoints."""

import cv2
import numpy as np
import pytest

from vision.data.video import write_video
from vision.demo.graph import draw_evidence_graph
from vision.demo.uploads import check_file, load_media
from vision.errors import InputError, VideoError


def _frames(t=5, h=24, w=32):
    return (np.random.default_rng(0).random((t, h, w, 3)) * 255).astype(np.uint8)


def test_upload_checks_name_the_problem(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(InputError, match="'notes.txt' is a .txt file; this input takes .mp4"):
        check_file(text, (".mp4",), 10)
    big = tmp_path / "big.mp4"
    big.write_bytes(b"0" * 3_000_000)
    with pytest.raises(InputError, match="'big.mp4' is 3 MB, over the 2 MB upload limit"):
        check_file(big, (".mp4",), 2)
    with pytest.raises(InputError, match="no file given"):
        load_media([], 10, 10)
    with pytest.raises(VideoError):  # a file named .mp4 that is not a video
        load_media([big], 10, 10)
    video = write_video(tmp_path / "v.mp4", _frames())
    with pytest.raises(InputError, match="either one video or a set of images"):
        load_media([video, video], 10, 10)


def test_images_of_every_accepted_kind_load_tiff_included(tmp_path):
    """The demo accepts the image kinds of vision.data.io.IMAGE_SUFFIXES, the same as vision predict."""
    frames = _frames(t=2)
    paths = [tmp_path / "a.tif", tmp_path / "b.png"]
    for path, frame in zip(paths, frames):
        assert cv2.imwrite(str(path), cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    media = load_media([str(p) for p in paths], max_frames=10, max_mb=10)
    assert not media.is_video and media.name == "a.tif"
    np.testing.assert_array_equal(media.frames, frames)


def test_frame_caps_are_reported(tmp_path):
    video = write_video(tmp_path / "v.mp4", _frames(t=5), fps=5)
    media = load_media([str(video)], max_frames=3, max_mb=10)
    assert media.frames.shape[0] == 3 and media.is_video and media.fps == 5
    assert "first 3 are used" in media.note
    images = []
    for i, frame in enumerate(_frames(t=4)):
        images.append(tmp_path / f"{3 - i}.png")
        cv2.imwrite(str(images[-1]), frame)
    media = load_media(images, max_frames=2, max_mb=10)
    assert media.frames.shape == (2, 24, 32, 3) and not media.is_video and media.name == "0.png"
    assert "4 images were given; the first 2 by name are used" == media.note


def test_evidence_graph_picture():
    node = {"tool": "spectrum", "statistic": "spectrum.hf_ratio", "direction": "generated", "weight": 0.8}
    report = {"verdict": {"verdict": "generated", "probability": 0.9},
              "graph": {"nodes": [node, dict(node, tool="codec", direction="real", weight=0.3)],
                        "edges": [{"source": 0, "target": 1, "kind": "contradict"}]}}
    image = draw_evidence_graph(report)
    assert image.shape == (480, 720, 3) and image.dtype == np.uint8
    reds = (image[..., 0] > 180) & (image[..., 1] < 80) & (image[..., 2] < 80)
    assert reds.sum() > 50  # the generated node and its legend disc are drawn
    empty = draw_evidence_graph({"verdict": {"verdict": "insufficient evidence", "probability": None},
                                 "graph": {"nodes": [], "edges": []}})
    assert (empty < 250).any()


def test_a_missing_checkpoint_names_the_make_target(tmp_path):
    from vision.demo.handlers import DemoConfig, Models

    models = Models(DemoConfig(checkpoints={"tracking": tmp_path / "none.ckpt"}, work_dir=tmp_path))
    with pytest.raises(InputError, match="run `make train-tracking`"):
        models.get("tracking")


# ---------------------------------------------------------------------------------------------------------------
# input limits: the demo reads uploads with the package's one reading policy and bounded decoded sizes


def _png_claiming(path, width, height):
    """A 100-byte PNG whose header claims ``width x height`` RGB pixels (its pixel data is missing)."""
    import struct
    import zlib

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\0" * 64))
                     + chunk(b"IEND", b""))
    return path


def _cut_to_a_tenth(tmp_path):
    """A 100-frame faststart mp4 cut to its first 10 % of bytes: it opens and its first 7 frames decode."""
    full = write_video(tmp_path / "full.mp4", _frames(t=100, h=32, w=32), fps=10, preset="ultrafast")
    cut = tmp_path / "tenth.mp4"
    cut.write_bytes(full.read_bytes()[: full.stat().st_size // 10])
    return cut


def test_uploads_over_the_working_size_are_downscaled_and_over_the_cap_refused(tmp_path):
    from vision.data.io import MAX_WORKING_PIXELS

    large = tmp_path / "large.png"
    cv2.imwrite(str(large), np.full((1800, 2400, 3), 90, np.uint8))
    media = load_media([large], max_frames=2, max_mb=10)
    t, h, w, _ = media.frames.shape
    assert t == 1 and h * w <= MAX_WORKING_PIXELS and abs(w / h - 4 / 3) < 0.01
    assert f"2400x1800 frames are shown and processed at {w}x{h}" in media.note
    with pytest.raises(VideoError, match=r"huge\.png: frames of 10000x10000 .* over the limit of 4096x4096"):
        load_media([_png_claiming(tmp_path / "huge.png", 10000, 10000)], max_frames=2, max_mb=10)


def test_a_truncated_upload_is_refused_though_only_its_first_frames_are_used(tmp_path):
    with pytest.raises(VideoError, match=r"tenth\.mp4: .*declares 100 frames but only \d+ could be read"):
        load_media([_cut_to_a_tenth(tmp_path)], max_frames=3, max_mb=10)


def test_the_demo_frame_limits_stay_within_the_package_limit(tmp_path):
    from vision.demo.handlers import DemoConfig
    from vision.data.io import MAX_INPUT_FRAMES

    defaults = DemoConfig()
    assert 1 <= defaults.max_track_frames <= MAX_INPUT_FRAMES and 1 <= defaults.max_detect_frames <= MAX_INPUT_FRAMES
    with pytest.raises(InputError, match=f"max_detect_frames .* 1 to {MAX_INPUT_FRAMES}"):
        DemoConfig(max_detect_frames=MAX_INPUT_FRAMES + 1)
    with pytest.raises(InputError, match="max_track_frames"):
        DemoConfig(max_track_frames=0)


def test_the_demo_prefers_the_train_long_checkpoints(tmp_path):
    from vision.demo.handlers import preferred_checkpoint

    tiny = tmp_path / "tracking" / "tiny" / "checkpoints" / "last.ckpt"
    assert preferred_checkpoint("tracking", tmp_path) == tiny  # nothing trained yet: make train's path
    long = tmp_path / "tracking" / "long" / "checkpoints" / "last.ckpt"
    long.parent.mkdir(parents=True)
    long.write_bytes(b"")
    assert preferred_checkpoint("tracking", tmp_path) == long
    assert preferred_checkpoint("detection", tmp_path).parts[-3] == "tiny"
