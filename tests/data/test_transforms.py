"""Augmentations: multi-view geometry stays consistent (checked on a ray-cast scene), detection boxes follow masks."""

from __future__ import annotations

import numpy as np
import open3d as o3d
import pytest

from vision.data.resize import crop_resize_intrinsics, resize_image, resize_nearest
from vision.data.transforms import (build_detection_transform, build_multiview_transform, flip_extrinsics,
                                    flip_intrinsics)
from vision.errors import InputError

# ----------------------------------------------------------------------------------------------------------------
# a small ray-cast scene: a floor (id 4) and three boxes (ids 1, 2, 3) seen by three cameras

FLOOR_ID = 4
BOXES = [  # (id, min corner, size) in world metres, z up
    (1, (-1.2, -0.6, 0.0), (0.6, 0.6, 0.8)),
    (2, (0.3, -0.9, 0.0), (0.5, 0.9, 0.5)),
    (3, (-0.2, 0.6, 0.0), (0.7, 0.4, 1.1)),
]


def _meshes(mirror: bool) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(instance id, vertices [V, 3], triangles [F, 3]) of the scene; ``mirror`` maps x -> -x (a mirrored world)."""
    items = [(FLOOR_ID, (-4.0, -4.0, -0.05), (8.0, 8.0, 0.05))] + BOXES
    meshes = []
    for instance, corner, size in items:
        box = o3d.geometry.TriangleMesh.create_box(*size)
        vertices = np.asarray(box.vertices) + np.asarray(corner)
        if mirror:
            vertices = vertices * np.array([-1.0, 1.0, 1.0])
        meshes.append((instance, vertices.astype(np.float32), np.asarray(box.triangles).astype(np.uint32)))
    return meshes


def _look_at(eye: np.ndarray, target: np.ndarray) -> np.ndarray:
    """OpenCV camera-from-world [R | t] for a camera at ``eye`` looking at ``target`` (world z up)."""
    forward = (target - eye) / np.linalg.norm(target - eye)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    down = np.cross(forward, right)
    R = np.stack([right, down, forward])
    return np.concatenate([R, -R @ eye[:, None]], axis=1)


def _render(K: np.ndarray, E: np.ndarray, width: int, height: int, mirror: bool = False
            ) -> tuple[np.ndarray, np.ndarray]:
    """Ray-cast depth (metres along the optical axis, 0 = miss) and instance ids of one view."""
    scene = o3d.t.geometry.RaycastingScene()
    ids_of_geometry = {}
    for instance, vertices, triangles in _meshes(mirror):
        geometry = scene.add_triangles(o3d.core.Tensor(vertices), o3d.core.Tensor(triangles))
        ids_of_geometry[geometry] = instance
    us, vs = np.meshgrid(np.arange(width), np.arange(height))
    pixels = np.stack([us, vs, np.ones_like(us)], axis=-1).reshape(-1, 3).astype(np.float64)
    directions_cam = pixels @ np.linalg.inv(K).T  # z = 1, so the ray parameter t is the depth
    R, t = E[:, :3], E[:, 3]
    directions = directions_cam @ R  # R^T d for each row
    origins = np.broadcast_to(-R.T @ t, directions.shape)
    rays = np.concatenate([origins, directions], axis=1).astype(np.float32)
    hits = scene.cast_rays(o3d.core.Tensor(rays))
    t_hit = hits["t_hit"].numpy().reshape(height, width)
    geometry = hits["geometry_ids"].numpy().reshape(height, width)
    hit = np.isfinite(t_hit)
    depth = np.where(hit, t_hit, 0.0).astype(np.float32)
    lookup = np.vectorize(lambda g: ids_of_geometry.get(int(g), 0))
    ids = np.where(hit, lookup(geometry), 0).astype(np.int32)
    return depth, ids


def _scene_sample(width: int = 160, height: int = 120) -> dict:
    K = np.array([[140.0, 0.0, 79.3], [0.0, 144.0, 60.1], [0.0, 0.0, 1.0]])
    target = np.array([0.0, 0.0, 0.4])
    eyes = [np.array([3.5 * np.cos(a), 3.5 * np.sin(a), 2.2]) for a in np.deg2rad([-110.0, -60.0, -15.0])]
    extrinsics = np.stack([_look_at(eye, target) for eye in eyes])
    depth, ids = zip(*[_render(K, E, width, height) for E in extrinsics])
    depth, ids = np.stack(depth), np.stack(ids)
    rng = np.random.default_rng(0)
    images = rng.integers(0, 255, (3, height, width, 3), dtype=np.uint8)
    # instance id k in the maps is slot k - 1 of track_ids (the datasets' convention); the track ids differ
    track_ids = np.array([101, 102, 103, 100 + FLOOR_ID], np.int64)
    slots = np.array([1, 2, 3, FLOOR_ID])
    return {
        "images": images, "depth": depth, "valid_depth": depth > 0,
        "intrinsics": np.repeat(K[None], 3, axis=0).astype(np.float32), "extrinsics": extrinsics.astype(np.float32),
        "has_camera": True, "instance_ids": ids, "track_ids": track_ids,
        "captions": ["the left box", "a flat box", "the tall box", "the floor"],
        "category_ids": np.array([1, 1, 1, 2], np.int64),
        "visible": np.stack([np.isin(slots, ids[v]) for v in range(3)]),
        "image_ids": np.array([10, 11, 12], np.int64), "video_id": 7,
    }


@pytest.fixture(scope="module")
def scene() -> dict:
    return _scene_sample()


def _cross_view_agreement(sample: dict) -> tuple[float, float]:
    """Unproject every valid pixel of view i with its depth and camera, project into view j (i != j).

    Returns (fraction of in-view points that are co-visible, i.e. not occluded, and fraction of co-visible points
    that land on a pixel with the same instance id).
    """
    depth, ids, K, E = sample["depth"], sample["instance_ids"], sample["intrinsics"], sample["extrinsics"]
    num_views, height, width = depth.shape
    in_view = covisible = agree = 0
    for i in range(num_views):
        vs, us = np.nonzero(sample["valid_depth"][i])
        z = depth[i, vs, us]
        cam = np.linalg.inv(K[i].astype(np.float64)) @ np.stack([us, vs, np.ones_like(us)]).astype(np.float64) * z
        world = E[i, :, :3].T.astype(np.float64) @ (cam - E[i, :, 3:].astype(np.float64))
        for j in range(num_views):
            if j == i:
                continue
            cam_j = E[j, :, :3].astype(np.float64) @ world + E[j, :, 3:].astype(np.float64)
            proj = K[j].astype(np.float64) @ cam_j
            u = np.rint(proj[0] / proj[2]).astype(int)
            v = np.rint(proj[1] / proj[2]).astype(int)
            inside = (proj[2] > 0) & (u >= 0) & (u < width) & (v >= 0) & (v < height)
            in_view += int(inside.sum())
            u, v, zj, src_ids = u[inside], v[inside], cam_j[2, inside], ids[i, vs[inside], us[inside]]
            seen = np.abs(depth[j, v, u] - zj) < 0.03 * zj
            covisible += int(seen.sum())
            agree += int((ids[j, v[seen], u[seen]] == src_ids[seen]).sum())
    return covisible / max(in_view, 1), agree / max(covisible, 1)


# ----------------------------------------------------------------------------------------------------------------
# multi-view


def test_scene_itself_is_consistent(scene: dict) -> None:
    covisible, agree = _cross_view_agreement(scene)
    assert covisible > 0.5 and agree > 0.99
    assert set(np.unique(scene["instance_ids"])) >= {1, 2, 3, FLOOR_ID}


@pytest.mark.parametrize("seed, flip_prob", [(0, 0.0), (1, 1.0), (2, 0.5), (3, 1.0)])
def test_train_transform_keeps_cross_view_geometry(scene: dict, seed: int, flip_prob: float) -> None:
    transform = build_multiview_transform(96, train=True, scale=(0.3, 0.8), flip_prob=flip_prob, seed=seed)
    out = transform(scene)
    assert out["images"].shape == (3, 96, 96, 3) and out["images"].dtype == np.uint8
    assert out["depth"].shape == (3, 96, 96) and out["depth"].dtype == np.float32
    assert out["valid_depth"].dtype == bool and out["instance_ids"].dtype == np.int32
    assert out["intrinsics"].dtype == np.float32 and out["extrinsics"].dtype == np.float32
    np.testing.assert_array_equal(out["valid_depth"], out["depth"] > 0)
    covisible, agree = _cross_view_agreement(out)
    assert covisible > 0.5
    assert agree >= 0.99
    # the rotations stay proper rotations, focal lengths stay positive
    for R in out["extrinsics"][:, :, :3]:
        np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-5)
        assert np.linalg.det(R) == pytest.approx(1.0, abs=1e-5)
    assert (out["intrinsics"][:, 0, 0] > 0).all() and (out["intrinsics"][:, 1, 1] > 0).all()
    # the input is not modified
    assert scene["images"].shape == (3, 120, 160, 3)
    # visibility follows what is left in each crop
    for v in range(3):
        slots = np.arange(1, len(out["track_ids"]) + 1)
        np.testing.assert_array_equal(out["visible"][v], np.isin(slots, out["instance_ids"][v]))


def test_wrong_intrinsics_are_detected(scene: dict) -> None:
    """Negative control: keeping the old intrinsics after a crop breaks the agreement the test relies on."""
    out = build_multiview_transform(96, train=True, scale=(0.3, 0.6), flip_prob=0.0, seed=5)(scene)
    broken = dict(out, intrinsics=scene["intrinsics"])
    covisible, agree = _cross_view_agreement(broken)
    assert covisible < 0.5 or agree < 0.9


@pytest.mark.parametrize("flip_prob", [0.0, 1.0])
def test_transformed_cameras_rerender_the_transformed_maps(scene: dict, flip_prob: float) -> None:
    """Ray-casting the scene (mirrored when flipped) with the new cameras reproduces the transformed id maps."""
    out = build_multiview_transform(40, train=True, scale=(0.4, 0.9), flip_prob=flip_prob, seed=11)(scene)
    for view in range(3):
        depth, ids = _render(out["intrinsics"][view].astype(np.float64), out["extrinsics"][view].astype(np.float64),
                             40, 40, mirror=flip_prob == 1.0)
        assert (ids == out["instance_ids"][view]).mean() > 0.95
        both = (depth > 0) & out["valid_depth"][view] & (ids == out["instance_ids"][view])
        relative = np.abs(depth[both] - out["depth"][view][both]) / depth[both]
        assert np.median(relative) < 0.02


def test_flip_swaps_left_right_in_captions(scene: dict) -> None:
    out = build_multiview_transform(32, train=True, flip_prob=1.0, seed=0)(scene)
    assert out["captions"][0] == "the right box"
    kept = build_multiview_transform(32, train=True, flip_prob=0.0, seed=0)(scene)
    assert kept["captions"][0] == "the left box"


def test_eval_transform_is_a_deterministic_resize(scene: dict) -> None:
    transform = build_multiview_transform(40, train=False)
    first, second = transform(scene), transform(scene)
    for key in ("images", "depth", "valid_depth", "instance_ids", "intrinsics", "extrinsics"):
        np.testing.assert_array_equal(first[key], second[key])
    np.testing.assert_array_equal(first["extrinsics"], scene["extrinsics"])
    K = scene["intrinsics"][0]
    sx, sy = 40 / 160, 40 / 120
    np.testing.assert_allclose(first["intrinsics"][0], [[K[0, 0] * sx, 0, (K[0, 2] + 0.5) * sx - 0.5],
                                                       [0, K[1, 1] * sy, (K[1, 2] + 0.5) * sy - 0.5],
                                                       [0, 0, 1]], rtol=1e-6)
    covisible, agree = _cross_view_agreement(first)
    assert covisible > 0.5 and agree >= 0.99


def test_eval_transform_resizes_by_the_one_rule(scene: dict) -> None:
    """Images by resize_image (area to shrink, linear to enlarge), depth / validity / ids by pixel-centre nearest."""
    for size in (40, 200):
        out = build_multiview_transform(size, train=False)(scene)
        for view in range(len(scene["images"])):
            np.testing.assert_array_equal(out["images"][view], resize_image(scene["images"][view], (size, size)))
            for key in ("depth", "valid_depth", "instance_ids"):
                np.testing.assert_array_equal(out[key][view], resize_nearest(scene[key][view], (size, size)))


def test_photometric_is_drawn_per_view(scene: dict) -> None:
    same = dict(scene)
    for key in ("images", "depth", "valid_depth", "instance_ids", "intrinsics", "extrinsics"):
        same[key] = np.repeat(scene[key][:1], 4, axis=0)
    same["visible"] = np.repeat(scene["visible"][:1], 4, axis=0)
    out = build_multiview_transform(32, train=True, scale=(1.0, 1.0), ratio=(1.0, 1.0), flip_prob=0.0,
                                    seed=3)(same)
    # identical geometry in, identical geometry out ...
    for view in range(1, 4):
        np.testing.assert_array_equal(out["depth"][view], out["depth"][0])
        np.testing.assert_array_equal(out["intrinsics"][view], out["intrinsics"][0])
    # ... but every view gets its own colours
    images = out["images"].astype(np.int32)
    for a in range(4):
        for b in range(a + 1, 4):
            assert np.abs(images[a] - images[b]).mean() > 0.5


def test_views_get_independent_crops(scene: dict) -> None:
    out = build_multiview_transform(32, train=True, scale=(0.3, 0.8), flip_prob=0.0, seed=4)(scene)
    principal = out["intrinsics"][:, :2, 2]
    assert len({tuple(np.round(p, 3)) for p in principal}) == 3


def test_camera_update_formulas() -> None:
    K = np.array([[50.0, 0.3, 31.0], [0.0, 55.0, 22.0], [0.0, 0.0, 1.0]])
    point = np.array([0.4, -0.2, 2.0])
    u = K @ point
    u = u[:2] / u[2]
    crop, out_size = (7, 5, 47, 35), (80, 45)
    K2 = crop_resize_intrinsics(K, crop, out_size)
    u2 = K2.astype(np.float64) @ point
    sx, sy = 80 / 40, 45 / 30
    np.testing.assert_allclose(u2[:2] / u2[2], [(u[0] - 7 + 0.5) * sx - 0.5, (u[1] - 5 + 0.5) * sy - 0.5],
                               rtol=1e-5)
    # flip: the mirrored world point seen by the mirrored camera lands at W - 1 - u
    E = np.concatenate([np.eye(3), np.array([[0.1], [0.0], [0.5]])], axis=1)
    K3, E3 = flip_intrinsics(K, 64), flip_extrinsics(E)
    mirrored = point * np.array([-1.0, 1.0, 1.0])
    original = K @ (E[:, :3] @ point + E[:, 3])
    flipped = K3.astype(np.float64) @ (E3[:, :3].astype(np.float64) @ mirrored + E3[:, 3])
    np.testing.assert_allclose(flipped[0] / flipped[2], 63 - original[0] / original[2], rtol=1e-5)
    np.testing.assert_allclose(flipped[1] / flipped[2], original[1] / original[2], rtol=1e-5)
    assert flipped[2] == pytest.approx(original[2])  # depth is unchanged
    assert K3[0, 0] == pytest.approx(50.0) and K3[0, 2] == pytest.approx(63 - 31.0)


def test_multiview_errors(scene: dict) -> None:
    transform = build_multiview_transform(32, train=True, seed=0)
    with pytest.raises(InputError, match="images"):
        transform({k: v for k, v in scene.items() if k != "images"})
    with pytest.raises(InputError, match="uint8"):
        transform(dict(scene, images=scene["images"].astype(np.float32)))
    with pytest.raises(InputError, match="depth"):
        transform(dict(scene, depth=scene["depth"][:, :10]))
    with pytest.raises(InputError, match="intrinsics"):
        transform(dict(scene, intrinsics=scene["intrinsics"][:2]))
    with pytest.raises(InputError, match="image_size"):
        build_multiview_transform(0, train=True)
    with pytest.raises(InputError, match="scale"):
        build_multiview_transform(32, train=True, scale=(0.0, 1.0))


# ----------------------------------------------------------------------------------------------------------------
# detection


def _detection_sample() -> dict:
    height, width = 60, 90
    image = np.zeros((height, width, 3), np.uint8)
    image[:] = np.linspace(60, 160, width).astype(np.uint8)[None, :, None]  # a grey ramp behind the objects
    rects = [(5, 5, 30, 25), (40, 10, 88, 30), (10, 35, 35, 58), (70, 45, 90, 60)]  # x0, y0, x1, y1 (exclusive)
    colours = [(255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 0)]
    masks = np.zeros((len(rects), height, width), bool)
    for i, (x0, y0, x1, y1) in enumerate(rects):
        masks[i, y0:y1, x0:x1] = True
        image[y0:y1, x0:x1] = colours[i]
    masks[1, 10:20, 40:50] = False  # a notch: the mask is not its box
    return {"image": image, "boxes": np.array(rects, np.float32), "category_ids": np.array([3, 5, 7, 9], np.int64),
            "masks": masks, "iscrowd": np.array([False, False, True, False]), "image_id": 42,
            "colours": colours}


def _check_detection(out: dict, size: int) -> None:
    n = len(out["boxes"])
    assert out["image"].shape == (size, size, 3) and out["image"].dtype == np.uint8
    assert out["boxes"].shape == (n, 4) and out["boxes"].dtype == np.float32
    assert out["masks"].shape == (n, size, size) and out["masks"].dtype == bool
    assert out["category_ids"].shape == (n,) and out["category_ids"].dtype == np.int64
    assert out["iscrowd"].shape == (n,) and out["iscrowd"].dtype == bool
    assert out["image_id"] == 42
    boxes = out["boxes"]
    assert (boxes >= 0).all() and (boxes[:, [0, 2]] <= size).all() and (boxes[:, [1, 3]] <= size).all()
    assert (boxes[:, 2] > boxes[:, 0]).all() and (boxes[:, 3] > boxes[:, 1]).all()
    for box, mask in zip(boxes, out["masks"]):
        ys, xs = np.nonzero(mask)
        assert len(xs) > 0
        np.testing.assert_array_equal(box, [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1])


def test_detection_train_keeps_boxes_masks_labels_together() -> None:
    sample = _detection_sample()
    colour_of = dict(zip(sample["category_ids"].tolist(), sample["colours"]))
    crowd_of = dict(zip(sample["category_ids"].tolist(), sample["iscrowd"].tolist()))
    transform = build_detection_transform(48, train=True, scale=(0.1, 0.5), photometric=False, seed=0)
    dropped = 0
    for _ in range(20):
        out = transform(sample)
        _check_detection(out, 48)
        dropped += len(out["boxes"]) < 4
        for category, mask, crowd in zip(out["category_ids"], out["masks"], out["iscrowd"]):
            # each mask still covers its own object's colour, and the labels travelled with it
            median = np.median(out["image"][mask].astype(np.float64), axis=0)
            nearest = min(sample["colours"], key=lambda c: float(np.abs(median - np.array(c)).sum()))
            assert nearest == colour_of[int(category)]
            assert crowd == crowd_of[int(category)]
    assert dropped > 0  # small crops lose objects, and their masks and labels go with them
    assert np.array_equal(sample["masks"].shape, (4, 60, 90))  # input untouched


def test_detection_eval_is_resize() -> None:
    sample = _detection_sample()
    out = build_detection_transform(45, train=False)(sample)
    _check_detection(out, 45)
    np.testing.assert_array_equal(out["category_ids"], sample["category_ids"])
    scale = np.array([45 / 90, 45 / 60, 45 / 90, 45 / 60])
    np.testing.assert_allclose(out["boxes"], sample["boxes"] * scale, atol=1.0)
    again = build_detection_transform(45, train=False)(sample)
    np.testing.assert_array_equal(out["image"], again["image"])


def test_detection_keep_aspect_resizes_the_longer_side() -> None:
    """With keep_aspect the 90 x 60 image becomes 45 x 30 (YOLOX's letterbox size, unpadded): one scale for both
    axes, masks and boxes following; a random crop keeps its own aspect too."""
    sample = _detection_sample()
    out = build_detection_transform(45, train=False, keep_aspect=True)(sample)
    assert out["image"].shape == (30, 45, 3)
    assert out["masks"].shape[1:] == (30, 45)
    np.testing.assert_allclose(out["boxes"], sample["boxes"] * 0.5, atol=1.0)
    train = build_detection_transform(45, train=True, keep_aspect=True, seed=0)(sample)
    assert max(train["image"].shape[:2]) == 45


def test_detection_train_photometric_and_flip() -> None:
    sample = _detection_sample()
    out = build_detection_transform(48, train=True, scale=(1.0, 1.0), ratio=(1.0, 1.0), flip_prob=1.0, seed=1)(sample)
    _check_detection(out, 48)
    assert len(out["boxes"]) == 4
    # the whole image is kept and mirrored: object 0 (x in [5, 30) of 90, y in [5, 25) of 60) moves to the right
    first = int(np.nonzero(out["category_ids"] == 3)[0][0])
    np.testing.assert_allclose(out["boxes"][first], [(90 - 30) * 48 / 90, 5 * 0.8, (90 - 5) * 48 / 90, 25 * 0.8],
                               atol=1.0)
    # photometric noise changed the colours
    plain = build_detection_transform(48, train=True, scale=(1.0, 1.0), ratio=(1.0, 1.0), flip_prob=1.0,
                                      photometric=False, seed=1)(sample)
    np.testing.assert_array_equal(plain["boxes"], out["boxes"])
    noisy = build_detection_transform(48, train=True, scale=(1.0, 1.0), ratio=(1.0, 1.0), flip_prob=1.0, seed=1)
    changes = [np.abs(plain["image"].astype(int) - noisy(sample)["image"].astype(int)).mean() for _ in range(5)]
    assert max(changes) > 1.0


def test_detection_boxes_only_and_empty() -> None:
    sample = _detection_sample()
    boxes_only = {k: v for k, v in sample.items() if k != "masks"}
    out = build_detection_transform(48, train=True, scale=(0.2, 0.5), seed=3)(boxes_only)
    assert "masks" not in out and len(out["boxes"]) == len(out["category_ids"]) == len(out["iscrowd"])
    assert (out["boxes"] >= 0).all() and (out["boxes"] <= 48).all()
    empty = dict(sample, boxes=np.zeros((0, 4), np.float32), category_ids=np.zeros(0, np.int64),
                 masks=np.zeros((0, 60, 90), bool), iscrowd=np.zeros(0, bool))
    out = build_detection_transform(48, train=True, seed=3)(empty)
    assert out["boxes"].shape == (0, 4) and out["masks"].shape == (0, 48, 48)


def test_detection_errors() -> None:
    sample = _detection_sample()
    transform = build_detection_transform(32, train=True, seed=0)
    with pytest.raises(InputError, match="boxes"):
        transform(dict(sample, boxes=np.array([[10, 10, 5, 20]] * 4, np.float32)))
    with pytest.raises(InputError, match="boxes"):
        transform(dict(sample, boxes=np.full((4, 4), np.nan, np.float32)))
    with pytest.raises(InputError, match="category_ids"):
        transform(dict(sample, category_ids=np.array([1, 2], np.int64)))
    with pytest.raises(InputError, match="masks"):
        transform(dict(sample, masks=sample["masks"][:, :10]))


def test_new_process_reseeds(monkeypatch: pytest.MonkeyPatch) -> None:
    """A forked DataLoader worker (a new pid) must not repeat the parent's draws; a seed stays reproducible."""
    import copy
    import os

    import vision.data.transforms as transforms

    sample = _detection_sample()
    parent = build_detection_transform(48, train=True, scale=(0.2, 0.6), seed=7)
    first = parent(sample)
    child = copy.deepcopy(parent)  # what a fork copies
    in_parent = parent(sample)
    real_pid = os.getpid()
    monkeypatch.setattr(transforms.os, "getpid", lambda: real_pid + 1)
    in_child = child(sample)
    assert not np.array_equal(in_child["image"], in_parent["image"])
    # the child's first draw equals any fresh transform's first draw with that seed and worker id
    fresh = build_detection_transform(48, train=True, scale=(0.2, 0.6), seed=7)(sample)
    np.testing.assert_array_equal(in_child["image"], fresh["image"])
    np.testing.assert_array_equal(first["image"], fresh["image"])
