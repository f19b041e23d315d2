"""Mosaic: four detection samples tiled 2 x 2, boxes and masks moved with their images; the dataset's switch."""

from __future__ import annotations

import numpy as np
import pytest

from vision.data.coco import Split
from vision.data.datasets import DetectionImageDataset
from vision.data.mosaic import mosaic
from vision.errors import InputError


def _sample(height: int, width: int, value: int, box: list[float], category: int, with_mask: bool) -> dict:
    image = np.full((height, width, 3), value, np.uint8)
    masks = np.zeros((1, height, width), bool)
    if with_mask:
        x0, y0, x1, y1 = (int(v) for v in box)
        masks[0, y0:y1, x0:x1] = True
    return {"image": image, "boxes": np.asarray([box], np.float32), "category_ids": np.asarray([category]),
            "masks": masks, "iscrowd": np.zeros(1, bool), "image_id": value}


def test_four_samples_tile_with_their_boxes_masks_and_fields():
    samples = [_sample(20, 40, 10, [0, 0, 10, 10], 1, True), _sample(20, 40, 20, [30, 10, 40, 20], 2, False),
               _sample(40, 80, 30, [0, 0, 80, 40], 3, False), _sample(20, 40, 40, [10, 5, 20, 15], 4, True)]
    out = mosaic(samples)
    assert out["image"].shape == (40, 80, 3) and out["image_id"] == 10
    # each quadrant holds its image (the third one resized from 40 x 80 to 20 x 40)
    assert (out["image"][:20, :40] == 10).all() and (out["image"][:20, 40:] == 20).all()
    assert (out["image"][20:, :40] == 30).all() and (out["image"][20:, 40:] == 40).all()
    np.testing.assert_allclose(out["boxes"], [[0, 0, 10, 10], [70, 10, 80, 20], [0, 20, 40, 40], [50, 25, 60, 35]])
    assert out["category_ids"].tolist() == [1, 2, 3, 4] and out["iscrowd"].tolist() == [False] * 4
    assert out["masks"].shape == (4, 40, 80)
    assert out["masks"][0, :10, :10].all() and out["masks"][0].sum() == 100
    assert out["masks"][3, 25:35, 50:60].all() and out["masks"][3].sum() == 100
    assert not out["masks"][1].any() and not out["masks"][2].any()   # box-only instances stay box-only


def test_a_sample_without_instances_tiles_too():
    empty = {"image": np.zeros((8, 8, 3), np.uint8), "boxes": np.zeros((0, 4), np.float32),
             "category_ids": np.zeros(0, np.int64), "masks": np.zeros((0, 8, 8), bool), "iscrowd": np.zeros(0, bool),
             "image_id": 1}
    out = mosaic([empty, empty, _sample(8, 8, 5, [1, 1, 3, 3], 7, False), empty])
    np.testing.assert_allclose(out["boxes"], [[1, 9, 3, 11]])
    assert out["masks"].shape == (1, 16, 16) and out["category_ids"].tolist() == [7]


def test_a_mosaic_needs_four_samples():
    with pytest.raises(InputError, match="4 samples, got 3"):
        mosaic([_sample(8, 8, 1, [0, 0, 2, 2], 1, False)] * 3)


def _split(tmp_path) -> Split:
    import cv2

    images, annotations = [], []
    for i in range(1, 6):
        cv2.imwrite(str(tmp_path / f"{i}.png"), np.full((16, 24, 3), 40 * i, np.uint8))
        images.append({"id": i, "file_name": f"{i}.png", "width": 24, "height": 16})
        annotations.append({"id": i, "image_id": i, "category_id": 1, "bbox": [2, 2, 6, 6], "area": 36,
                            "iscrowd": 0})
    return Split.from_dict({"images": images, "annotations": annotations,
                            "categories": [{"id": 1, "name": "thing"}]}, tmp_path)


def test_the_dataset_mosaics_with_its_probability_reproducibly_from_the_sample_seed(tmp_path):
    split = _split(tmp_path)
    plain = DetectionImageDataset(split)
    always = DetectionImageDataset(split, mosaic=1.0)
    assert plain[(0, 123)]["image"].shape == (16, 24, 3)       # mosaic 0: the image alone, as before
    first = always[(0, 123)]
    assert first["image"].shape == (32, 48, 3) and len(first["boxes"]) == 4
    again = always[(0, 123)]
    assert np.array_equal(first["image"], again["image"]) and np.array_equal(first["boxes"], again["boxes"])
    assert (first["image"][:16, :24] == 40).all()               # the sample itself is the first tile
    with pytest.raises(InputError, match="mosaic is a probability"):
        DetectionImageDataset(split, mosaic=1.5)
