"""vision.data.masks: RLE round trips and the COCO box of a mask (pycocotools' toBbox), empty masks included;
vision.data.io.IMAGE_SUFFIXES: every listed kind is read by read_image."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from vision.data.io import IMAGE_SUFFIXES, image_size, read_image
from vision.data.masks import decode_rle, encode_mask, mask_to_bbox, rle_area, rle_areas, rle_intersections


def _reference_bbox(mask: np.ndarray) -> list[float]:
    """The COCO XYWH box by hand: first foreground pixel, sides in whole pixels; zeros when empty."""
    ys, xs = np.nonzero(mask)
    if len(xs) == 0:
        return [0.0, 0.0, 0.0, 0.0]
    return [float(xs.min()), float(ys.min()), float(xs.max() - xs.min() + 1), float(ys.max() - ys.min() + 1)]


def test_mask_to_bbox_matches_the_coco_convention_on_random_masks():
    rng = np.random.default_rng(0)
    for _ in range(300):
        h, w = (int(v) for v in rng.integers(1, 40, 2))
        mask = rng.random((h, w)) < rng.random() * 0.1
        assert mask_to_bbox(mask) == _reference_bbox(mask)


def test_single_pixel_and_empty_masks():
    mask = np.zeros((7, 9), bool)
    assert mask_to_bbox(mask) == [0.0, 0.0, 0.0, 0.0]
    mask[5, 3] = True
    assert mask_to_bbox(mask) == [3.0, 5.0, 1.0, 1.0]
    assert all(isinstance(v, float) for v in mask_to_bbox(mask))


def test_rle_round_trip_and_area():
    rng = np.random.default_rng(1)
    mask = rng.random((13, 17)) < 0.3
    rle = encode_mask(mask)
    assert isinstance(rle["counts"], str) and rle["size"] == [13, 17]
    np.testing.assert_array_equal(decode_rle(rle), mask)
    assert rle_area(rle) == int(mask.sum())


@pytest.mark.parametrize("fn", [encode_mask, mask_to_bbox])
def test_a_mask_that_is_not_2d_is_refused(fn):
    with pytest.raises(ValueError, match=r"2-D mask \[H, W\], got shape \(2, 3, 4\)"):
        fn(np.zeros((2, 3, 4), bool))


@pytest.mark.parametrize("suffix", IMAGE_SUFFIXES)
def test_every_image_suffix_is_readable(suffix, tmp_path):
    image = (np.arange(6 * 8 * 3) % 256).astype(np.uint8).reshape(6, 8, 3)
    path = tmp_path / f"frame{suffix}"
    params = [cv2.IMWRITE_WEBP_QUALITY, 101] if suffix == ".webp" else []
    assert cv2.imwrite(str(path), image, params)
    assert image_size(path) == (8, 6)
    rgb = read_image(path)
    assert rgb.shape == (6, 8, 3) and rgb.dtype == np.uint8
    if suffix not in (".jpg", ".jpeg"):  # lossless formats round-trip exactly
        np.testing.assert_array_equal(rgb, image[..., ::-1])


@pytest.mark.parametrize("count", [0, 1, 255, 256, 600])
def test_areas_and_intersections_of_any_number_of_masks(count):
    # pycocotools' batched area sizes a uint8 array by the count: 256 masks and more are measured in chunks
    rng = np.random.default_rng(count)
    masks = [rng.random((12, 9)) < rng.random() for _ in range(count)]
    rles = [encode_mask(m) for m in masks]
    expected = np.array([int(m.sum()) for m in masks], np.int64)
    assert rle_areas([{"size": r["size"], "counts": r["counts"].encode()} for r in rles]).tolist() == expected.tolist()
    area_a, area_b, inter = rle_intersections(rles, rles[:3])
    assert area_a.tolist() == expected.tolist() and area_b.tolist() == expected[:3].tolist()
    assert inter.tolist() == [[int((a & b).sum()) for b in masks[:3]] for a in masks]
