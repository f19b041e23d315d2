"""The one resize rule (vision.data.resize): pixel-centre nearest neighbour, area to shrink, linear to enlarge."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from vision.data.resize import image_interpolation, nearest_indices, resize_image, resize_nearest
from vision.errors import InputError


def _grid(h: int, w: int) -> np.ndarray:
    """Index grid: pixel (i, j) holds i * 1000 + j."""
    return (np.arange(h)[:, None] * 1000 + np.arange(w)[None, :]).astype(np.int64)


def test_nearest_halving_takes_the_second_pixel_of_each_pair():
    # output pixel i's centre (i + 0.5) * 2 = 2i + 1 is the edge between source cells 2i and 2i + 1: the later one
    out = resize_nearest(_grid(8, 6), (4, 3))
    np.testing.assert_array_equal(out, _grid(8, 6)[1::2, 1::2])


def test_nearest_doubling_repeats_each_pixel_twice():
    grid = _grid(3, 5)
    np.testing.assert_array_equal(resize_nearest(grid, (6, 10)), np.repeat(np.repeat(grid, 2, 0), 2, 1))


def test_nearest_odd_sizes_follow_the_centre_formula():
    for src, dst in [(5, 3), (3, 5), (7, 2), (2, 7), (9, 4), (1, 6), (6, 1), (1080, 64)]:
        want = [int(np.floor((i + 0.5) * src / dst)) for i in range(dst)]
        assert nearest_indices(src, dst).tolist() == want, (src, dst)
    grid = _grid(5, 7)
    out = resize_nearest(grid, (3, 4))
    np.testing.assert_array_equal(out, grid[np.ix_([0, 2, 4], [0, 2, 4, 6])])  # floor((i+.5)*5/3), floor((j+.5)*7/4)


def test_nearest_differs_from_plain_inter_nearest_by_half_a_pixel():
    grid = _grid(8, 8).astype(np.float32)
    plain = cv2.resize(grid, (4, 4), interpolation=cv2.INTER_NEAREST)
    np.testing.assert_array_equal(plain, grid[::2, ::2])  # floor(i * 2): the cell corner, not its centre
    assert not np.array_equal(resize_nearest(grid, (4, 4)), plain)


def test_nearest_agrees_with_opencv_nearest_exact_off_cell_edges():
    # OpenCV's INTER_NEAREST_EXACT aims at the same index; it differs only where a centre lies on a cell edge
    for src, dst in [(64, 32), (37, 64), (1280, 518), (720, 518), (100, 64)]:
        row = np.arange(src, dtype=np.float32)[None]
        opencv = cv2.resize(row, (dst, 1), interpolation=cv2.INTER_NEAREST_EXACT)[0].astype(np.int64)
        i = np.arange(dst)
        on_edge = (2 * i + 1) * src % (2 * dst) == 0
        np.testing.assert_array_equal(opencv[~on_edge], nearest_indices(src, dst)[~on_edge])


@pytest.mark.parametrize("dtype", [bool, np.uint8, np.int32, np.int64, np.float32, np.float64])
def test_nearest_keeps_the_dtype_and_trailing_axes(dtype):
    rng = np.random.default_rng(0)
    array = (rng.random((6, 10, 2)) * 5).astype(dtype)
    out = resize_nearest(array, (9, 4))
    assert out.dtype == array.dtype and out.shape == (9, 4, 2)
    np.testing.assert_array_equal(out, array[nearest_indices(6, 9)][:, nearest_indices(10, 4)])


def test_nearest_identity_is_a_copy():
    array = _grid(4, 5)
    out = resize_nearest(array, (4, 5))
    np.testing.assert_array_equal(out, array)
    assert not np.shares_memory(out, array)


def test_area_to_shrink_linear_to_enlarge():
    assert image_interpolation((100, 100), (50, 50)) == cv2.INTER_AREA
    assert image_interpolation((50, 50), (100, 100)) == cv2.INTER_LINEAR
    # mixed: the pixel count decides
    assert image_interpolation((100, 30), (64, 64)) == cv2.INTER_LINEAR  # 3000 -> 4096 pixels
    assert image_interpolation((100, 60), (64, 64)) == cv2.INTER_AREA  # 6000 -> 4096 pixels
    assert image_interpolation((32, 128), (64, 64)) == cv2.INTER_LINEAR  # same count, another shape

    rng = np.random.default_rng(1)
    image = rng.integers(0, 256, (40, 60, 3), dtype=np.uint8)
    np.testing.assert_array_equal(resize_image(image, (20, 30)),
                                  cv2.resize(image, (30, 20), interpolation=cv2.INTER_AREA))
    np.testing.assert_array_equal(resize_image(image, (80, 90)),
                                  cv2.resize(image, (90, 80), interpolation=cv2.INTER_LINEAR))


def test_area_halving_averages_each_block_and_linear_doubling_is_centre_aligned():
    image = np.arange(16, dtype=np.float32).reshape(4, 4)
    np.testing.assert_allclose(resize_image(image, (2, 2)), image.reshape(2, 2, 2, 2).mean(axis=(1, 3)))
    row = np.array([[0.0, 4.0]], np.float32)
    # output centres at source x = -0.25, 0.25, 0.75, 1.25 (clamped at the borders)
    np.testing.assert_allclose(resize_image(row, (1, 4))[0], [0.0, 1.0, 3.0, 4.0])


def test_image_identity_is_a_copy_and_dst_is_filled():
    image = np.random.default_rng(2).integers(0, 256, (8, 6, 3), dtype=np.uint8)
    out = resize_image(image, (8, 6))
    np.testing.assert_array_equal(out, image)
    assert not np.shares_memory(out, image)
    dst = np.empty((4, 3, 3), np.uint8)
    assert resize_image(image, (4, 3), dst=dst) is dst
    np.testing.assert_array_equal(dst, resize_image(image, (4, 3)))
    with pytest.raises(InputError, match="dst must be"):
        resize_image(image, (4, 3), dst=np.empty((4, 4, 3), np.uint8))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32, np.float64])
def test_image_keeps_dtype_and_a_single_channel_axis(dtype):
    image = (np.random.default_rng(3).random((10, 12, 1)) * 200).astype(dtype)
    out = resize_image(image, (5, 6))
    assert out.dtype == image.dtype and out.shape == (5, 6, 1)
    np.testing.assert_array_equal(out[..., 0], resize_image(image[..., 0], (5, 6)))


def test_bad_arguments_raise():
    image = np.zeros((4, 4, 3), np.uint8)
    for size in [(0, 4), (4,), (4, 4.0), (True, 4), None]:
        with pytest.raises(InputError, match="size must be"):
            resize_image(image, size)
        with pytest.raises(InputError, match="size must be"):
            resize_nearest(image, size)
    with pytest.raises(InputError, match="resize_nearest"):
        resize_image(np.zeros((4, 4), bool), (2, 2))
    with pytest.raises(InputError, match="at least"):
        resize_nearest(np.zeros(4), (2, 2))
