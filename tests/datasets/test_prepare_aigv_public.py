"""``vision prepare aigv-public`` (vision/prepare/aigv_public.py): the shipped labels pin every clip by git blob,
a clip's bytes are read from a git object store and checked against its id, GIF and video outputs are cut alike,
real clips are written as decoded and through the GIF round trip, and a missing or altered blob is one error."""

from __future__ import annotations

import copy
import io
import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from vision.errors import InputError
from vision.prepare.aigv_public import (LABELS, cgi_films, check_labels, deal_sources, decode_clip, git_blob_id,
                                        gif_round_trip, load_labels, main, prepare, read_blob)


def test_the_shipped_labels_pin_every_clip() -> None:
    labels = load_labels()
    clips = labels["clips"]
    assert len(clips) >= 150 and len({c["blob"] for c in clips}) == len(clips)
    assert {c["generator"] for c in clips} == {r["generator"] for r in labels["repositories"].values()}
    assert len(labels["repositories"]) == 5


@pytest.mark.parametrize("change, message", [
    (lambda c: c.update(blob="xyz"), "40 lower-case hex"),
    (lambda c: c.update(repository="someone/else"), "is not in 'repositories'"),
    (lambda c: c.update(bytes=5 * 1024 * 1024), "must be a size"),
    (lambda c: c.update(format="avi"), "must be one of gif, mp4, webm"),
])
def test_a_broken_label_is_refused_naming_the_entry(change, message) -> None:
    labels = copy.deepcopy(load_labels())
    change(labels["clips"][3])
    with pytest.raises(InputError, match=rf"labels .*clips\[3\].*{message}"):
        check_labels(labels, "labels.json")


def _gif(frames: int, size: tuple[int, int] = (48, 40)) -> bytes:
    from PIL import Image

    rng = np.random.default_rng(0)
    images = [Image.fromarray(rng.integers(0, 255, (size[1], size[0], 3), dtype=np.uint8)) for _ in range(frames)]
    buffer = io.BytesIO()
    images[0].save(buffer, format="GIF", save_all=True, append_images=images[1:], duration=100, loop=0)
    return buffer.getvalue()


@pytest.fixture()
def mirror(tmp_path: Path) -> tuple[Path, dict]:
    """A git repository ``demo/gen`` under ``tmp_path/mirrors`` holding a 10-frame GIF, a 4-frame GIF and an mp4,
    and labels pinning the three."""
    from vision.data.video import write_video

    work = tmp_path / "work"
    (work / "out").mkdir(parents=True)
    (work / "out" / "long.gif").write_bytes(_gif(10))
    (work / "out" / "short.gif").write_bytes(_gif(4))
    frames = np.random.default_rng(1).integers(0, 255, (10, 48, 64, 3), dtype=np.uint8)
    write_video(work / "out" / "clip.mp4", frames, fps=8)
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t", "-C", str(work)]
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "outputs"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()
    (tmp_path / "mirrors" / "demo+gen").mkdir(parents=True)
    (work / ".git").rename(tmp_path / "mirrors" / "demo+gen" / "repo")
    clips = []
    for name, path, fmt in (("gen_long", "out/long.gif", "gif"), ("gen_short", "out/short.gif", "gif"),
                            ("gen_clip", "out/clip.mp4", "mp4")):
        data = (work / path).read_bytes()
        clips.append({"name": name, "generator": "gen", "model": "demo", "repository": "demo/gen", "commit": commit,
                      "path": path, "blob": git_blob_id(data), "bytes": len(data), "format": fmt, "note": ""})
    labels = {"description": "test", "repositories": {"demo/gen": {"generator": "gen", "licence": "MIT"}},
              "clips": clips}
    return tmp_path / "mirrors", labels


def test_blobs_become_clips_beside_real_clips_written_twice(mirror, tmp_path: Path) -> None:
    mirrors, labels = mirror
    (tmp_path / "labels.json").write_text(json.dumps(labels))
    notes: list[str] = []
    path = prepare(tmp_path / "corpus", mirrors, tmp_path / "labels.json", size=32, frames=8, real_per_source=1,
                   render_scenes=1, screens=1, real_strides=(1, 2), log=notes.append)
    videos = {v["name"]: v for v in json.loads(path.read_text())["videos"]}
    assert any("gen_short has 4 frames" in n for n in notes) and "gen_short" not in videos
    long, clip = videos["gen_long"], videos["gen_clip"]
    assert long["label"] == "generated" and long["generator"] == long["family"] == "gen"
    assert long["container"] == "gif" and clip["container"] == "video"
    assert long["blob"] == labels["clips"][0]["blob"] and long["source"] == "demo/gen:out/long.gif"
    real = [v for v in videos.values() if v["label"] == "real"]
    assert real and {v["container"] for v in real} == {"video", "gif"} and len(real) % 4 == 0
    assert {v["stride"] for v in real} == {1, 2}  # each window also every second frame
    strided = videos["real_bikes_0_s2"]
    assert strided["source_frames"] == [0, 15] and videos["real_bikes_0"]["source_frames"] == [0, 8]
    cgi = [v for v in videos.values() if v["label"] == "cgi"]  # films, a render and a screen, both containers
    assert {v["generator"] for v in cgi} == {"cgi", "render", "screen"}
    assert {v["container"] for v in cgi} == {"video", "gif"}
    films = {v["source"] for v in cgi if v["generator"] == "cgi"}
    assert "bigbuckbunny" in films and "Megamind" not in films  # no --opencv-samples: the note says so
    assert any("Megamind.avi is not in --opencv-samples" in n for n in notes)
    from vision.data.video import read_video

    for video in videos.values():
        frames = read_video(path.parent / video["file_name"])
        assert frames.shape == (8, 32, 32, 3)
    sides = {side: json.loads((path.parent / f"{side}.json").read_text())["videos"] for side in ("train", "val")}
    assert sorted(v["name"] for side in sides.values() for v in side) == sorted(videos)
    for side in sides.values():
        assert [v["id"] for v in side] == list(range(1, len(side) + 1))
    assert not ({v["footage"] for v in sides["train"] if v["label"] != "generated"}
                & {v["footage"] for v in sides["val"] if v["label"] != "generated"})


def test_sources_are_dealt_apart_and_generators_on_both_sides() -> None:
    videos = [{"id": k, "name": f"g{k:02d}", "label": "generated", "generator": "a" if k % 2 else "b",
               "footage": "repo"} for k in range(16)]
    videos += [{"id": 100 + k, "name": f"r{k:02d}", "label": "real", "generator": None,
                "footage": f"s{k // 2}"} for k in range(12)]
    videos += [{"id": 200 + k, "name": f"c{k:02d}", "label": "cgi", "generator": "cgi",
                "footage": f"film{k}"} for k in range(3)]
    train, val = deal_sources(videos, groups=3, every=4)
    assert len(train) + len(val) == len(videos)
    held = {v["footage"] for v in val if v["label"] != "generated"}
    assert held == {"s2", "s5", "film2"} and not held & {v["footage"] for v in train if v["label"] != "generated"}
    assert sorted(v["name"] for v in val if v["label"] == "generated") == ["g06", "g07", "g14", "g15"]


def test_other_splits_join_the_sides_copied_in(mirror, tmp_path: Path) -> None:
    from vision.data.coco import write_split
    from vision.data.video import read_video, write_video

    mirrors, labels = mirror
    (tmp_path / "labels.json").write_text(json.dumps(labels))
    other = tmp_path / "own"
    frames = np.random.default_rng(0).integers(0, 255, (8, 32, 32, 3), dtype=np.uint8)
    write_video(other / "videos" / "fake.mp4", frames, fps=25)
    write_split(other / "train.json", {"images": [], "annotations": [], "categories": [], "videos": [
        {"id": 7, "name": "fake", "file_name": "videos/fake.mp4", "label": "generated", "generator": "own",
         "family": "own", "source": "bikes", "width": 32, "height": 32}]})
    path = prepare(tmp_path / "corpus", mirrors, tmp_path / "labels.json", size=32, frames=8, real_per_source=1,
                   render_scenes=0, screens=0, real_strides=(1,), films=[], with_train=[other / "train.json"],
                   log=lambda _: None)
    train = json.loads((path.parent / "train.json").read_text())["videos"]
    joined = [v for v in train if v["name"] == "fake"]
    assert len(joined) == 1 and joined[0]["generator"] == "own" and joined[0]["origin"] == str(other / "train.json")
    assert np.array_equal(read_video(path.parent / joined[0]["file_name"]), read_video(other / "videos" / "fake.mp4"))
    assert "fake" not in {v["name"] for v in json.loads(path.read_text())["videos"]}  # all.json is the corpus alone
    with pytest.raises(InputError, match="no such split file"):
        prepare(tmp_path / "corpus2", mirrors, tmp_path / "labels.json", with_val=[tmp_path / "nope.json"])


def test_the_computer_made_films_are_those_at_hand(tmp_path: Path) -> None:
    """Big Buck Bunny always; gradio's demo films where gradio is installed; OpenCV's animated film where the samples
    folder holds it."""
    import importlib.util

    notes: list[str] = []
    (tmp_path / "Megamind.avi").write_bytes(b"film")
    films = dict((name, path) for path, name in cgi_films(tmp_path, notes.append))
    assert films["Megamind"] == tmp_path / "Megamind.avi" and films["bigbuckbunny"].is_file()
    if importlib.util.find_spec("gradio") is not None:
        assert {"gradio_title_card", "gradio_globe"} <= set(films) and not notes
    assert not [n for n in notes if "Megamind" in n]


def test_a_missing_or_altered_blob_is_one_error_line(mirror, tmp_path: Path, capsys) -> None:
    mirrors, labels = mirror
    store = mirrors / "demo+gen" / "repo"
    entry = labels["clips"][0]
    assert read_blob(store, entry["blob"], entry["bytes"])[:3] == b"GIF"
    with pytest.raises(InputError, match="not the pinned"):
        read_blob(store, entry["blob"], entry["bytes"] + 1)
    altered = copy.deepcopy(labels)
    altered["clips"][0]["blob"] = "0" * 40
    (tmp_path / "labels.json").write_text(json.dumps(altered))
    assert main(["--mirrors", str(mirrors), "--labels", str(tmp_path / "labels.json"), "--out",
                 str(tmp_path / "corpus")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"blob {'0' * 40} is not in" in err[0] and not (tmp_path / "corpus").exists()
    (tmp_path / "labels.json").write_text(json.dumps(labels))
    assert main(["--mirrors", str(tmp_path / "nowhere"), "--labels", str(tmp_path / "labels.json"), "--out",
                 str(tmp_path / "corpus")]) == 2
    assert "lacks demo/gen" in capsys.readouterr().err


def test_the_gif_round_trip_keeps_the_picture_in_256_colours() -> None:
    from skimage import data

    photo = data.astronaut()[::4, ::4]
    frames = np.stack([photo, np.roll(photo, 3, axis=1)])
    trip = gif_round_trip(frames)
    assert trip.shape == frames.shape
    assert all(len(np.unique(f.reshape(-1, 3), axis=0)) <= 256 for f in trip)
    assert len(np.unique(frames[0].reshape(-1, 3), axis=0)) > 256
    assert np.abs(trip.astype(int) - frames).mean() < 8
    assert np.array_equal(decode_clip(_gif(3), "gif", 2).shape, (2, 40, 48, 3))
    still = np.stack([photo, photo, photo, np.roll(photo, 3, axis=1)])  # the encoder merges the still frames
    trip = gif_round_trip(still)
    assert trip.shape == still.shape and np.array_equal(trip[0], trip[2]) and not np.array_equal(trip[2], trip[3])


def test_the_labels_file_is_the_package_data() -> None:
    assert LABELS.name == "aigv_public.json" and LABELS.is_file()


def test_a_run_that_fails_late_leaves_the_corpus_as_it_was(mirror, tmp_path: Path) -> None:
    """The second run fails while it copies a joined split's videos, after every clip is encoded: the corpus of
    the first run, and a file of the user's own beside it, stay exactly as they were, with no staging folder left."""
    from tests.datasets.staging import add_user_file, assert_left_as_it_was, snapshot
    from vision.data.coco import write_split

    mirrors, labels = mirror
    work = tmp_path / "mine"
    work.mkdir()
    (work / "labels.json").write_text(json.dumps(labels))
    out = tmp_path / "corpus"
    add_user_file(out)
    options = dict(size=32, frames=8, real_per_source=1, render_scenes=0, screens=0, real_strides=(1,), films=[],
                   log=lambda _: None)
    prepare(out, mirrors, work / "labels.json", **options)
    before = snapshot(out)
    broken = work / "broken.json"  # names a video file that is not there
    write_split(broken, {"images": [], "annotations": [], "categories": [], "videos": [
        {"id": 1, "name": "gone", "file_name": "videos/gone.mp4", "label": "real", "source": "bikes",
         "width": 32, "height": 32}]}, check_files=False)
    with pytest.raises(InputError, match="gone.mp4"):
        prepare(out, mirrors, work / "labels.json", with_train=[broken], **options)
    assert_left_as_it_was(out, before, {"corpus", "mine", "work", "mirrors"})
