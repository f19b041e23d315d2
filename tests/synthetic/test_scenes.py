"""Tests of the synthetic scene generator (vision.synthetic.scenes): geometry, annotations, determinism, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.data.masks import decode_rle, mask_to_bbox
from vision.errors import InputError
from vision.synthetic.objects import NOMINAL_SIZE, TEXTURE_WORDS, category_mesh
from vision.synthetic.render import ROOM_HALF
from vision.synthetic.scenes import (CATEGORIES, COLOURS, DEFAULT_VOCAB, TEXTURES, ObjectSpec, caption_for,
                                     generate_scene, parse_vocab, render_scene, sample_scene_spec, scene_seed,
                                     write_split)

ROOT = Path(__file__).resolve().parents[2]
SIZE = 64


@pytest.fixture(scope="module")
def scenes() -> list:
    """Two video and two unordered scenes at 64 px, 4 views each."""
    return [generate_scene(scene_seed(11, "test", i), 4, SIZE, mode, threads=1)
            for i, mode in enumerate(["video", "video", "unordered", "unordered"])]


@pytest.fixture(scope="module")
def split_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("synthetic")
    write_split(out, "train", scenes=2, views=3, size=SIZE, mode="video", seed=7, threads=1)
    return out


def _camera_centre(ext: np.ndarray) -> np.ndarray:
    return -ext[:, :3].T @ ext[:, 3]


def _project(points: np.ndarray, K: np.ndarray, ext: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    cam = points @ ext[:, :3].T + ext[:, 3]
    uv = cam[:, :2] / cam[:, 2:3] @ K[:2, :2].T + K[:2, 2]
    return uv, cam[:, 2]


def test_library_has_enough_categories_colours_textures():
    assert len(CATEGORIES) >= 16 and len(set(CATEGORIES)) == len(CATEGORIES)
    assert len(COLOURS) >= 10
    assert len([t for t in TEXTURES if t != "plain"]) >= 3
    for name in ("mug", "table", "chair", "lamp", "snowman", "mushroom"):
        assert name in CATEGORIES
    for name in CATEGORIES:
        v, t = category_mesh(name)
        assert len(t) > 0 and t.max() < len(v)
        assert abs(v[:, 2].min()) < 1e-9  # rests on the floor
        assert np.isclose((v.max(0) - v.min(0)).max(), NOMINAL_SIZE[name])
    groups = parse_vocab(None)
    assert sorted(sum((list(g) for g in groups.values()), [])) == sorted(CATEGORIES)
    assert set(groups) == {"iv", "novel", "oov"} and all(groups[k] for k in groups)


def test_scene_arrays_have_documented_shapes(scenes):
    for sc in scenes:
        s = len(sc.extrinsics)
        assert sc.rgb.shape == (s, SIZE, SIZE, 3) and sc.rgb.dtype == np.uint8
        assert sc.depth.shape == (s, SIZE, SIZE) and sc.depth.dtype == np.float32
        assert sc.instance_ids.shape == (s, SIZE, SIZE) and sc.instance_ids.dtype == np.int32
        assert sc.K.shape == (s, 3, 3) and sc.extrinsics.shape == (s, 3, 4)
        assert 2 <= len(sc.objects) <= 8
        assert set(np.unique(sc.instance_ids)) <= set(range(len(sc.objects) + 1))
        assert (sc.depth >= 0).all() and (sc.depth > 0).mean() > 0.9
        rot = sc.extrinsics[:, :, :3]
        assert np.allclose(rot @ rot.transpose(0, 2, 1), np.eye(3), atol=1e-9)
        assert np.allclose(np.linalg.det(rot), 1.0)
        assert (sc.visibility >= 0).all() and (sc.visibility <= 1.0 + 1e-6).all()


def test_objects_rest_on_floor_without_interpenetration():
    for i in range(20):
        spec = sample_scene_spec(np.random.default_rng(i), views=1, size=32)
        assert 2 <= len(spec.objects) <= 8
        for a in spec.objects:
            for b in spec.objects:
                if a.instance_id < b.instance_id:
                    gap = np.hypot(a.position[0] - b.position[0], a.position[1] - b.position[1])
                    assert gap > a.radius + b.radius  # footprint discs are disjoint


def test_reprojection_lands_on_same_instance(scenes):
    """Unproject each pixel with its depth and camera, project into another view: same instance id."""
    agree = total = 0
    v, u = np.mgrid[0:SIZE, 0:SIZE].astype(np.float64)
    pix = np.stack([u.ravel(), v.ravel(), np.ones(SIZE * SIZE)], 1)
    for sc in scenes:
        s = len(sc.extrinsics)
        for i in range(s):
            z = sc.depth[i].ravel().astype(np.float64)
            valid = z > 0
            cam = (pix @ np.linalg.inv(sc.K[i]).T) * z[:, None]
            world = (cam - sc.extrinsics[i][:, 3]) @ sc.extrinsics[i][:, :3]
            for j in range(s):
                if j == i:
                    continue
                uv, zj = _project(world, sc.K[j], sc.extrinsics[j])
                uj, vj = np.round(uv[:, 0]).astype(int), np.round(uv[:, 1]).astype(int)
                inside = valid & (zj > 0) & (uj >= 0) & (uj < SIZE) & (vj >= 0) & (vj < SIZE)
                idx = np.flatnonzero(inside)
                dj = sc.depth[j][vj[idx], uj[idx]]
                covisible = idx[np.abs(dj - zj[idx]) < 0.02 + 0.01 * zj[idx]]
                ids_i = sc.instance_ids[i].ravel()[covisible]
                ids_j = sc.instance_ids[j][vj[covisible], uj[covisible]]
                agree += int((ids_i == ids_j).sum())
                total += len(covisible)
                # object pixels are checked too, not just the floor
                assert (ids_i > 0).sum() > 0
    assert total > 0.2 * SIZE * SIZE * 24
    assert agree / total >= 0.99


def test_unprojected_floor_pixels_lie_on_the_floor(scenes):
    """Pixel-centre convention: integer (u, v) with depth, unprojected, lands exactly on the plane z = 0."""
    v, u = np.mgrid[0:SIZE, 0:SIZE].astype(np.float64)
    pix = np.stack([u.ravel(), v.ravel(), np.ones(SIZE * SIZE)], 1)
    for sc in scenes:
        for i in range(len(sc.extrinsics)):
            z = sc.depth[i].ravel().astype(np.float64)
            world = ((pix @ np.linalg.inv(sc.K[i]).T) * z[:, None] - sc.extrinsics[i][:, 3]) @ sc.extrinsics[i][:, :3]
            inside_walls = np.abs(world[:, :2]).max(1) < ROOM_HALF - 0.05
            floor = (z > 0) & (sc.instance_ids[i].ravel() == 0) & inside_walls & (np.abs(world[:, 2]) < 0.1)
            assert floor.sum() > 100
            assert np.abs(world[floor, 2]).max() < 2e-3


def test_object_centre_projects_into_its_mask():
    """Camera convention: a sphere's centre, projected with K and the extrinsics, lies in its rendered mask."""
    for mode in ("video", "unordered"):
        spec = sample_scene_spec(np.random.default_rng(3), views=5, size=SIZE, mode=mode)
        template = spec.objects[0]
        v, _ = category_mesh("sphere")
        sphere = ObjectSpec(instance_id=1, category="sphere", colour_name="red", texture="plain",
                            position=(0.35, -0.2), yaw=0.3, scale=1.0, radius=float(np.abs(v[:, :2]).max()),
                            height=float(v[:, 2].max()), caption="the red sphere", style=template.style)
        sc = render_scene(replace(spec, objects=(sphere,)), threads=1)
        for i in range(5):
            uv, z = _project(sphere.centre[None], sc.K[i], sc.extrinsics[i])
            u, v_ = np.round(uv[0]).astype(int)
            assert z[0] > 0 and 0 <= u < SIZE and 0 <= v_ < SIZE
            assert sc.instance_ids[i, v_, u] == 1
            # the depth there is in front of the centre by about the radius
            assert 0.0 < z[0] - sc.depth[i, v_, u] < 0.2


def test_video_path_is_smooth_and_unordered_spans_90_degrees():
    for seed in range(6):
        spec = sample_scene_spec(np.random.default_rng(seed), views=12, size=32, mode="video")
        rot = spec.extrinsics[:, :, :3]
        for a, b in zip(rot[:-1], rot[1:]):
            angle = np.degrees(np.arccos(np.clip((np.trace(b @ a.T) - 1) / 2, -1, 1)))
            assert angle < 6.0
        centres = np.stack([_camera_centre(e) for e in spec.extrinsics])
        assert np.linalg.norm(np.diff(centres, axis=0), axis=1).max() < 0.3
        spec = sample_scene_spec(np.random.default_rng(seed), views=6, size=32, mode="unordered")
        centres = np.stack([_camera_centre(e) for e in spec.extrinsics]) - np.array(spec.target)
        az = np.sort(np.degrees(np.arctan2(centres[:, 1], centres[:, 0])) % 360)
        gaps = np.diff(np.concatenate([az, az[:1] + 360]))
        assert 360 - gaps.max() >= 90.0
        for e in spec.extrinsics:  # every view looks at the scene centre
            _, z = _project(np.array([spec.target]), spec.K[0], e)
            assert z[0] > 0


def test_occlusions_happen(scenes):
    vis = np.concatenate([sc.visibility[sc.visible_area > 0] for sc in scenes])
    assert vis.min() < 0.9


def test_plain_objects_show_their_colour():
    channel = {"red": 0, "green": 1, "blue": 2}
    checked = 0
    for seed in range(8):
        sc = generate_scene(seed, 1, SIZE, threads=1)
        for obj in sc.objects:
            mask = sc.instance_ids[0] == obj.instance_id
            if obj.texture == "plain" and obj.colour_name in channel and mask.sum() > 30:
                mean = sc.rgb[0][mask].astype(float).mean(0)
                assert int(np.argmax(mean)) == channel[obj.colour_name]
                checked += 1
    assert checked > 0


def test_split_annotations_match_rendered_masks(split_dir):
    data = json.loads((split_dir / "train.json").read_text())
    assert {"info", "videos", "images", "annotations", "tracks", "categories"} <= set(data)
    assert data["info"]["arguments"]["seed"] == 7
    assert all(v["ordered"] is True for v in data["videos"])
    tracks = {t["id"]: t for t in data["tracks"]}
    by_image: dict[int, list] = {}
    for ann in data["annotations"]:
        by_image.setdefault(ann["image_id"], []).append(ann)
    for index, video in enumerate(data["videos"]):
        sc = generate_scene(scene_seed(7, "train", index), 3, SIZE, "video")
        images = sorted((im for im in data["images"] if im["video_id"] == video["id"]),
                        key=lambda im: im["frame_index"])
        assert [im["frame_index"] for im in images] == [0, 1, 2]
        for i, im in enumerate(images):
            assert not Path(im["file_name"]).is_absolute() and not Path(im["depth_file"]).is_absolute()
            rgb = cv2.imread(str(split_dir / im["file_name"]))[..., ::-1]
            assert np.array_equal(rgb, sc.rgb[i])
            depth = cv2.imread(str(split_dir / im["depth_file"]), cv2.IMREAD_UNCHANGED)
            assert depth.dtype == np.uint16
            assert np.abs(depth / 1000.0 - sc.depth[i]).max() <= 0.0005 + 1e-6
            assert np.allclose(im["camera"]["K"], sc.K[i], atol=1e-6)
            assert np.allclose(im["camera"]["extrinsics"], sc.extrinsics[i], atol=1e-6)
            anns = by_image.get(im["id"], [])
            visible = {k + 1 for k in range(len(sc.objects)) if sc.visible_area[i, k] > 0}
            assert {tracks[a["track_id"]]["instance_id"] for a in anns} == visible
            for ann in anns:
                mask = decode_rle(ann["segmentation"])
                obj = sc.objects[tracks[ann["track_id"]]["instance_id"] - 1]
                assert np.array_equal(mask, sc.instance_ids[i] == obj.instance_id)
                assert ann["bbox"] == mask_to_bbox(mask)
                assert ann["area"] == int(mask.sum()) > 0 and ann["iscrowd"] == 0
                assert ann["category_id"] == CATEGORIES.index(obj.category) + 1


def test_captions_and_vocabulary(split_dir):
    data = json.loads((split_dir / "train.json").read_text())
    names = {c["id"]: c["name"] for c in data["categories"]}
    for cat in data["categories"]:
        assert cat["split"] in ("iv", "novel", "oov")
        assert cat["name"] in DEFAULT_VOCAB[cat["split"]]
    assert set(data["info"]["vocabulary"]) == set(DEFAULT_VOCAB["iv"] + DEFAULT_VOCAB["novel"])
    assert data["tracks"]
    for t in data["tracks"]:
        assert t["caption"].startswith("the ")
        assert t["color"] in t["caption"] and names[t["category_id"]] in t["caption"]
        if t["texture"] != "plain":
            assert TEXTURE_WORDS[t["texture"]] in t["caption"]
    assert caption_for("red", "plain", "mug") == "the red mug"
    assert caption_for("red", "stripes", "mug") == "the red striped mug"


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_same_seed_same_bytes_and_splits_differ(tmp_path):
    args = dict(scenes=2, views=2, size=48, mode="unordered", seed=5, vocab="iv=cube,mug;novel=chair;oov=lamp",
                threads=1)
    write_split(tmp_path / "a", "train", **args)
    write_split(tmp_path / "b", "train", **args)
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert a.keys() == b.keys() and len(a) == 1 + 2 * 2 * 2
    assert all(a[k] == b[k] for k in a)
    write_split(tmp_path / "a", "val", **args)
    train = json.loads(a["train.json"])
    val = json.loads((tmp_path / "a" / "val.json").read_text())
    assert (tmp_path / "a" / "train/scene_00000/00000.png").read_bytes() != \
        (tmp_path / "a" / "val/scene_00000/00000.png").read_bytes()
    assert train["images"][0]["camera"] != val["images"][0]["camera"]
    assert all(v["ordered"] is False for v in val["videos"])
    used = {c["name"] for c in train["categories"]}
    assert used == {"cube", "mug", "chair", "lamp"}
    assert train["info"]["vocabulary"] == ["cube", "mug", "chair"]


def test_scene_seeds_are_stable_and_distinct():
    a = scene_seed(0, "train", 0).generate_state(4)
    assert np.array_equal(a, scene_seed(0, "train", 0).generate_state(4))
    assert not np.array_equal(a, scene_seed(0, "val", 0).generate_state(4))
    assert not np.array_equal(a, scene_seed(0, "train", 1).generate_state(4))
    assert not np.array_equal(a, scene_seed(1, "train", 0).generate_state(4))


@pytest.mark.parametrize("kwargs", [dict(mode="orbit"), dict(size=0), dict(views=0), dict(scenes=0),
                                    dict(seed=-1), dict(vocab="iv=cube;oov=cube"), dict(vocab="iv=teapot"),
                                    dict(vocab="known=cube"), dict(split_name="../escape")])
def test_bad_arguments_raise_input_error(tmp_path, kwargs):
    args = dict(out_dir=tmp_path, split_name="train", scenes=1, views=1, size=16, mode="video", seed=0)
    args.update(kwargs)
    with pytest.raises(InputError):
        write_split(**args)


@pytest.mark.slow
def test_cli_writes_a_split(tmp_path):
    cmd = [str(Path(sys.executable).parent / "vision"), "synthetic", "--out", str(tmp_path), "--split", "val",
           "--scenes", "1", "--views", "2", "--size", "32", "--mode", "unordered", "--seed", "3", "--no-progress",
           "--vocab", "iv=sphere,cube;novel=torus;oov=cone"]
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0, res.stderr
    data = json.loads((tmp_path / "val.json").read_text())
    assert len(data["images"]) == 2 and data["videos"][0]["ordered"] is False
    assert all((tmp_path / im["file_name"]).is_file() and (tmp_path / im["depth_file"]).is_file()
               for im in data["images"])
    assert data["info"]["arguments"]["mode"] == "unordered"
    bad = subprocess.run(cmd[:-1] + ["iv=teapot"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert bad.returncode == 2 and "teapot" in bad.stderr
