"""The 3D memory carried between windows (vision.tracking.memory3d)."""

from __future__ import annotations

import numpy as np
import torch

from vision.tracking.memory3d import lift, update_memory
from vision.tracking.session import TrackerState


def _world_points(v: int = 2, s: int = 8) -> np.ndarray:
    grid = np.stack(np.meshgrid(np.arange(s), np.arange(s), indexing="xy"), -1).astype(np.float32)
    return np.stack([np.concatenate([grid, np.full((s, s, 1), z, np.float32)], -1) for z in range(v)])


def test_lift_takes_evenly_spaced_points_under_the_masks_and_their_mean_feature():
    wp = _world_points()
    masks = np.zeros((2, 8, 8), bool)
    masks[0, :4, :4] = True  # the top-left quarter of view 0: feature cell (0, 0) of a 2 x 2 grid
    feats = torch.zeros(2, 3, 2, 2)
    feats[0, :, 0, 0] = torch.tensor([1.0, 2.0, 3.0])
    feats[1] = 9.0  # under no mask
    pts, feat = lift(masks, wp, feats, None, memory_points=4)
    under = wp[masks]
    np.testing.assert_array_equal(pts, under[np.linspace(0, len(under) - 1, 4).round().astype(int)])
    np.testing.assert_allclose(feat, [1.0, 2.0, 3.0])


def test_lift_puts_the_carried_points_first_and_skips_non_finite_points():
    wp = _world_points(1)
    wp[0, 0, 0] = np.nan
    masks = np.zeros((1, 8, 8), bool)
    masks[0, 0, :2] = True  # one NaN point, one finite
    carried = (np.full((3, 3), 7.0, np.float32), np.ones(3, np.float32))
    pts, _ = lift(masks, wp, torch.zeros(1, 3, 2, 2), carried, memory_points=10)
    np.testing.assert_array_equal(pts, np.concatenate([carried[0], wp[0, 0, 1:2]]))


def test_lift_of_nothing_keeps_the_carried_feature_or_gives_none():
    wp = _world_points(1)
    empty = np.zeros((1, 8, 8), bool)
    assert lift(empty, wp, torch.zeros(1, 3, 2, 2), None, memory_points=4) is None
    carried = (np.zeros((2, 3), np.float32), np.array([4.0, 5.0, 6.0], np.float32))
    pts, feat = lift(empty, wp, torch.zeros(1, 3, 2, 2), carried, memory_points=4)
    np.testing.assert_array_equal(pts, carried[0])
    np.testing.assert_array_equal(feat, carried[1])


def test_update_memory_grows_capped_clouds_from_the_yielded_views_only():
    wp = _world_points(3)
    frames = np.full((3, 8, 8, 3), 255, np.uint8)
    state = TrackerState(frames=frames, height=8, width=8, ordered=True)
    state.clouds = {1: np.zeros((0, 3), np.float32)}
    state.cloud_colors = {1: np.zeros((0, 3), np.float32)}
    masks = torch.ones(3, 1, 8, 8, dtype=torch.bool)
    memory: dict = {}
    update_memory(state, [1], window=[0, 1, 2], emit=[1], masks=masks, wp=wp, feats=torch.zeros(3, 4, 2, 2),
                  memory=memory, memory_points=5, max_cloud_points=20)
    assert len(state.clouds[1]) == 20 and set(state.clouds[1][:, 2]) == {1.0}  # view 1's points, evenly capped
    np.testing.assert_array_equal(state.cloud_colors[1], np.ones((20, 3), np.float32))
    assert len(memory[1][0]) == 5 and set(memory[1][0][:, 2]) <= {0.0, 1.0, 2.0}  # memory from every view


def test_mean_features_of_all_objects_equal_each_object_pooled_alone():
    """One product for every object gives each object's mask-weighted mean feature (masks pooled to their coverage
    of each cell), and says which objects' masks cover nothing."""
    import torch.nn.functional as F

    from vision.tracking.memory3d import mean_features

    gen = np.random.default_rng(0)
    masks = gen.random((3, 4, 16, 16)) < 0.2
    masks[:, 2] = False  # an object found nowhere
    feats = torch.from_numpy(gen.standard_normal((3, 8, 4, 4)).astype(np.float32))
    feat, covered = mean_features(masks, feats)
    assert feat.shape == (4, 8) and covered.tolist() == [True, True, False, True]
    for j in (0, 1, 3):
        grid = F.adaptive_avg_pool2d(torch.from_numpy(masks[:, j]).float()[:, None], (4, 4))
        expected = ((feats * grid).sum(dim=(0, 2, 3)) / grid.sum()).numpy()
        np.testing.assert_allclose(feat[j], expected, rtol=1e-5, atol=1e-6)
