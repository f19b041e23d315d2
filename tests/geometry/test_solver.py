"""The camera solver: flow correspondences, PnP per pair of views, the spanning tree that places the views and the
fallback cameras it keeps, on exact geometry (shifted textures, rendered clips with their true depth and
intrinsics)."""

import numpy as np
import pytest
import torch

from vision.data.coco import load_split
from vision.data.datasets import MultiViewClipDataset, collate_clips
from vision.data.transforms import build_multiview_transform
from vision.errors import InputError
from vision.evaluation.geometry import relative_pose_errors
from vision.geometry.solver import CameraSolver, flow_correspondences, pnp_camera
from vision.synthetic.scenes import write_split


def _texture(h: int = 48, w: int = 64, seed: int = 0) -> np.ndarray:
    """A smooth random RGB texture (uint8 ``[h, w, 3]``) that optical flow can follow."""
    import cv2

    noise = np.random.default_rng(seed).random((h // 4, w // 4, 3)).astype(np.float32)
    return (cv2.resize(noise, (w, h), interpolation=cv2.INTER_CUBIC).clip(0, 1) * 255).astype(np.uint8)


def test_flow_correspondences_follow_a_two_pixel_shift():
    image = _texture(w=72)
    reference, target = image[:, 4:68], image[:, 2:66]  # the content moves 2 px to the right in the target
    ref, tgt = flow_correspondences(reference, target, upsample=4)
    assert len(ref) > 0.5 * 48 * 64
    inner = (ref[:, 0] > 4) & (ref[:, 0] < 58)
    np.testing.assert_allclose(np.median(tgt[inner] - ref[inner], axis=0), [2.0, 0.0], atol=0.1)


def test_pnp_recovers_a_camera_from_exact_correspondences():
    rng = np.random.default_rng(1)
    points = rng.uniform([-1, -1, 3], [1, 1, 5], size=(50, 3))
    k = np.array([[60.0, 0, 31.5], [0, 60.0, 31.5], [0, 0, 1]])
    angle = np.radians(10)
    rotation = np.array([[np.cos(angle), 0, np.sin(angle)], [0, 1, 0], [-np.sin(angle), 0, np.cos(angle)]])
    truth = np.concatenate([rotation, [[0.3], [-0.1], [0.2]]], axis=1)
    cam = points @ rotation.T + truth[:, 3]
    pixels = (cam[:, :2] / cam[:, 2:]) * 60.0 + 31.5
    camera, inliers = pnp_camera(points, pixels, k)
    assert inliers == 50
    np.testing.assert_allclose(camera, truth, atol=1e-6)
    assert pnp_camera(points[:5], pixels[:5], k) == (None, 0)


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    """A rendered video clip and a rendered unordered clip (4 views, 64 px) with their true depth and cameras."""
    root = tmp_path_factory.mktemp("solver")
    out = {}
    for mode in ("video", "unordered"):
        split = write_split(root, mode, scenes=1, views=4, size=64, mode=mode, seed=5, threads=1)
        dataset = MultiViewClipDataset(load_split(split), 4, transform=build_multiview_transform(64, train=False))
        out[mode] = collate_clips([dataset[0]])
    return out


def _solve(batch, fallback):
    images = (batch["images"][0].permute(0, 2, 3, 1).numpy() * 255).round().astype(np.uint8)
    depth = np.where(batch["valid_depth"][0].numpy(), batch["depth"][0].numpy(), 0.0)  # 0: no depth, not lifted
    return CameraSolver()(images, depth, batch["intrinsics"][0].numpy(), fallback)


def _relative_to_view0(extrinsics: np.ndarray) -> np.ndarray:
    """The clip's cameras in view 0's frame at view 0's depth scale (what the solver returns)."""
    r0, t0 = extrinsics[0, :, :3], extrinsics[0, :, 3]
    rotation = extrinsics[:, :, :3] @ r0.T
    translation = extrinsics[:, :, 3] - np.einsum("sij,j->si", rotation, t0)
    return np.concatenate([rotation, translation[..., None]], axis=2)


def test_a_video_clip_is_solved_from_its_depth(clips):
    batch = clips["video"]
    truth = _relative_to_view0(batch["extrinsics"][0].double().numpy())
    identity = np.tile(np.eye(3, 4), (4, 1, 1))
    extrinsics, share = _solve(batch, identity)
    assert share[0] == 1.0 and (share[1:] > CameraSolver().min_inliers).all()
    rotation, translation = relative_pose_errors(extrinsics, truth)
    # a 64 px flow is good to a fraction of a pixel: degrees of error, against 90 for the identity fallback's
    # translations
    assert rotation.max() < 3.0 and translation.max() < 15.0
    # the true depth fixes the scale: the translations come out near their length, not only their direction (a small
    # rotation and a sideways move trade off at 64 px, so within a quarter of the longest)
    baseline = np.linalg.norm(truth[1:, :, 3], axis=1).max()
    assert np.linalg.norm(extrinsics[:, :, 3] - truth[:, :, 3], axis=1).max() < 0.25 * baseline


def test_views_the_flow_cannot_follow_keep_their_fallback(clips):
    batch = clips["unordered"]
    fallback = _relative_to_view0(batch["extrinsics"][0].double().numpy())
    fallback[1:, :, 3] += 0.5  # a recognisable fallback
    extrinsics, share = _solve(batch, fallback)
    kept = share <= CameraSolver().min_inliers
    assert kept[1:].any()  # views 90-150 degrees apart give the flow nothing it can follow
    np.testing.assert_array_equal(extrinsics[kept], fallback[kept])
    np.testing.assert_array_equal(extrinsics[0], np.eye(3, 4))


def test_solve_outputs_solves_each_clip_of_a_batch_as_one_clip_alone(clips):
    """The batch form a backbone's outputs take (images in [0, 1], depth with a channel): each clip is solved as
    :meth:`CameraSolver.__call__` solves it alone, with its own fallback."""
    batches = [clips["video"], clips["unordered"]]
    fallback = np.stack([_relative_to_view0(b["extrinsics"][0].double().numpy()) for b in batches])
    fallback[:, 1:, :, 3] += 0.5
    depth = np.stack([np.where(b["valid_depth"][0].numpy(), b["depth"][0].numpy(), 0.0) for b in batches])
    outputs = {"images": torch.cat([b["images"] for b in batches]), "depth": torch.from_numpy(depth)[..., None],
               "intrinsics": torch.cat([b["intrinsics"] for b in batches])}
    solved = CameraSolver().solve_outputs(outputs, torch.from_numpy(fallback))
    assert solved.shape == (2, 4, 3, 4) and solved.dtype == torch.float64
    for b, batch in enumerate(batches):
        np.testing.assert_array_equal(solved[b].numpy(), _solve(batch, fallback[b])[0])


def test_the_flow_runs_near_flow_size_pixels():
    solver = CameraSolver()
    assert [solver.upsample_for(side, side) for side in (32, 64, 128, 518)] == [8, 4, 2, 1]
    assert CameraSolver(flow_size=64).upsample_for(48, 64) == 1


def _camera(angle_deg: float, translation: list[float]) -> np.ndarray:
    """A ``[3, 4]`` camera: a rotation about y by ``angle_deg``, then ``translation``."""
    a = np.radians(angle_deg)
    rotation = np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])
    return np.concatenate([rotation, np.array(translation, float)[:, None]], axis=1)


class _GivenPairs(CameraSolver):
    """The solver's tree on given pair cameras (what :meth:`CameraSolver.pair_cameras` measures from flow)."""

    pairs: dict = {}

    def pair_cameras(self, images, depth, intrinsics):
        return self.pairs


def test_the_tree_places_each_view_from_its_strongest_placed_pair_and_composes_the_cameras():
    t10, t21, t20 = _camera(10, [0.2, 0, 0]), _camera(15, [0, 0.1, 0]), _camera(-40, [5, 5, 5])
    solver = _GivenPairs()
    # view 2 is placed through view 1 (0.30 beats view 0's direct 0.20); view 3's best pair (0.04) is under the floor
    solver.pairs = {(0, 1): (t10, 0.5), (1, 2): (t21, 0.3), (0, 2): (t20, 0.2), (2, 3): (_camera(5, [1, 0, 0]), 0.04)}
    fallback = np.tile(_camera(0, [7, 7, 7]), (4, 1, 1))
    images, depth, k = np.zeros((4, 8, 8, 3), np.uint8), np.ones((4, 8, 8)), np.tile(np.eye(3), (4, 1, 1))
    extrinsics, share = solver(images, depth, k, fallback)
    np.testing.assert_allclose(extrinsics[0], np.eye(3, 4))
    np.testing.assert_allclose(extrinsics[1], t10)
    # world -> view 1 -> view 2
    np.testing.assert_allclose(extrinsics[2, :, :3], t21[:, :3] @ t10[:, :3], atol=1e-12)
    np.testing.assert_allclose(extrinsics[2, :, 3], t21[:, :3] @ t10[:, 3] + t21[:, 3], atol=1e-12)
    np.testing.assert_array_equal(extrinsics[3], fallback[3])
    np.testing.assert_allclose(share, [1.0, 0.5, 0.3, 0.04])
    # without the bridge, view 2 comes from view 0's weaker pair
    solver.pairs = {key: value for key, value in solver.pairs.items() if key != (1, 2)}
    np.testing.assert_allclose(solver(images, depth, k, fallback)[0][2], t20)


def test_bad_input_is_refused_with_its_shapes():
    solver = CameraSolver()
    images = np.zeros((2, 8, 8, 3), np.uint8)
    with pytest.raises(InputError, match="uint8"):
        solver(images.astype(np.float32), np.ones((2, 8, 8)), np.tile(np.eye(3), (2, 1, 1)), np.zeros((2, 3, 4)))
    with pytest.raises(InputError, match=r"fallback\s+\[S, 3, 4\]"):
        solver(images, np.ones((2, 8, 8)), np.tile(np.eye(3), (2, 1, 1)), np.zeros((3, 3, 4)))
    with pytest.raises(InputError, match=r"depth \[S, H, W\] = \(2, 8, 8\)"):
        solver(images, np.ones((8, 8)), np.tile(np.eye(3), (2, 1, 1)), np.zeros((2, 3, 4)))
    with pytest.raises(InputError, match="one size"):
        flow_correspondences(images[0], np.zeros((8, 9, 3), np.uint8))

