"""Reading and writing splits; the Split indexes and helpers."""

from __future__ import annotations

import json

import cv2
import numpy as np
import pytest

from tests.data.conftest import H, W, build_split, depth_of
from vision.data.coco import Split, load_split, write_split
from vision.errors import DataError


def test_round_trip_preserves_the_dict_and_bytes_are_deterministic(tmp_path):
    dataset = build_split(tmp_path)
    write_split(tmp_path / "a.json", dataset)
    write_split(tmp_path / "b.json", dataset)
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    split = load_split(tmp_path / "a.json")
    assert split.dataset == dataset
    write_split(tmp_path / "c.json", split.dataset)
    assert (tmp_path / "c.json").read_bytes() == (tmp_path / "a.json").read_bytes()


def test_write_normalises_numpy_and_bytes_counts(tmp_path):
    dataset = build_split(tmp_path)
    original = json.loads(json.dumps(dataset))
    ann = dataset["annotations"][0]
    ann["segmentation"] = dict(ann["segmentation"], counts=ann["segmentation"]["counts"].encode("ascii"))
    ann["bbox"] = np.asarray(ann["bbox"], np.float32)
    ann["id"] = np.int64(ann["id"])
    dataset["images"][0]["camera"]["K"] = np.asarray(dataset["images"][0]["camera"]["K"])
    write_split(tmp_path / "s.json", dataset)
    back = load_split(tmp_path / "s.json").dataset
    assert isinstance(back["annotations"][0]["segmentation"]["counts"], str)
    assert back == original
    assert isinstance(dataset["annotations"][0]["segmentation"]["counts"], bytes)  # caller's dict untouched


def test_write_refuses_invalid_split_and_writes_nothing(tmp_path):
    dataset = build_split(tmp_path)
    dataset["annotations"][0]["image_id"] = 12345
    with pytest.raises(DataError, match=r"annotations\[0\]\.image_id"):
        write_split(tmp_path / "bad.json", dataset)
    assert not (tmp_path / "bad.json").exists()
    dataset["annotations"][0]["image_id"] = 1
    dataset["info"]["obj"] = object()
    with pytest.raises(DataError, match=r"info\.obj"):
        write_split(tmp_path / "bad.json", dataset)


def test_indexes(split_path):
    split = load_split(split_path)
    assert len(split.images) == 9 and set(split.videos) == {1, 2, 3, 4}
    assert [img["id"] for img in split.images_by_video[1]] == [1, 2, 3, 4, 5]
    assert [img["frame_index"] for img in split.images_by_video[2]] == [0, 3, 7]
    assert split.images_by_video[3] == []
    assert [a["track_id"] for a in split.annotations_by_image[2]] == [10, 11]
    assert split.annotations_by_image[7] == []
    assert split.category_by_name["mug"]["id"] == 3 and split.categories[2]["name"] == "ball"
    assert split.tracks[20]["caption"] == "a blue mug"
    assert "9 images" in repr(split)


def test_image_path_and_load_image(split_path, fixture_dir):
    split = load_split(split_path)
    img = split.images[1]
    assert split.image_path(img) == (fixture_dir / "images/0001.png").resolve()
    rgb = split.load_image(img)
    bgr = cv2.imread(str(fixture_dir / "images/0001.png"))
    assert rgb.shape == (H, W, 3) and rgb.dtype == np.uint8
    assert np.array_equal(rgb, bgr[:, :, ::-1])


def test_load_image_checks_size(tmp_path):
    dataset = build_split(tmp_path)
    cv2.imwrite(str(tmp_path / "images/0001.png"), np.zeros((5, 5, 3), np.uint8))
    write_split(tmp_path / "s.json", dataset)
    split = load_split(tmp_path / "s.json")
    with pytest.raises(DataError, match="5x5"):
        split.load_image(split.images[1])
    (tmp_path / "images/0002.png").write_bytes(b"not a png")
    with pytest.raises(DataError, match="cannot read image"):
        split.load_image(split.images[2])


def test_depth_npz_png_and_absent(split_path):
    split = load_split(split_path)
    depth = split.depth(split.images[3])
    assert depth.dtype == np.float32 and depth.shape == (H, W)
    assert np.allclose(depth, depth_of(3).astype(np.float32))
    assert depth[0, 0] == 0
    png = split.depth(split.images[6])
    assert np.allclose(png[:, 4:], 1.5) and np.all(png[:, :4] == 0)
    assert np.all(split.depth(split.images[7]) == 0)


def test_depth_errors(tmp_path):
    dataset = build_split(tmp_path)
    write_split(tmp_path / "s.json", dataset)
    split = load_split(tmp_path / "s.json")
    np.savez(tmp_path / "depth/0001.npz", other=np.zeros((H, W), np.float16))
    with pytest.raises(DataError, match="no key 'depth'"):
        split.depth(split.images[1])
    np.savez(tmp_path / "depth/0001.npz", depth=np.zeros((3, 3), np.float16))
    with pytest.raises(DataError, match="shape"):
        split.depth(split.images[1])
    bad = np.full((H, W), np.nan, np.float16)
    bad[1, 1] = -2.0
    bad[2, 2] = 3.0
    np.savez(tmp_path / "depth/0001.npz", depth=bad)
    d = split.depth(split.images[1])
    assert d[2, 2] == 3.0 and np.count_nonzero(d) == 1  # NaN and negative become invalid (0)
    cv2.imwrite(str(tmp_path / "depth/0006.png"), np.zeros((H, W), np.uint8))
    with pytest.raises(DataError, match="16-bit"):
        split.depth(split.images[6])
    (tmp_path / "depth/0001.npz").write_bytes(b"corrupt")
    with pytest.raises(DataError, match="cannot read depth"):
        split.depth(split.images[1])


def test_camera_video_path_and_masks(split_path, fixture_dir):
    split = load_split(split_path)
    K, E = split.camera(split.images[2])
    assert K.shape == (3, 3) and E.shape == (3, 4) and K.dtype == np.float32
    assert split.camera(split.images[7]) is None
    assert split.video_path(split.videos[4]) == (fixture_dir / "videos/fake.mp4").resolve()
    with pytest.raises(DataError, match="no file_name"):
        split.video_path(split.videos[1])
    rle_ann = split.annotations_by_image[1][0]
    mask = split.annotation_mask(rle_ann)
    assert mask.dtype == bool and mask.shape == (H, W) and mask.sum() == 80 and mask[2:10, 2:12].all()
    poly_ann, crowd_ann = split.annotations_by_image[100]
    poly = split.annotation_mask(poly_ann)
    assert poly[2:5, 2:5].all() and not poly[8:, 8:].any()
    box_ann = dict(crowd_ann)
    box_ann.pop("segmentation")
    box = split.annotation_mask(box_ann)
    assert np.array_equal(box, split.annotation_mask(crowd_ann))


def test_vocabulary(split_path):
    split = load_split(split_path)
    assert split.vocabulary() == ["cube"]
    assert split.vocabulary(("iv", "novel")) == ["cube", "ball"]
    assert split.vocabulary(("oov",)) == ["mug"]
    assert split.category_ids(("iv", "novel")) == [1, 2]
    assert split.given_vocabulary() == ["cube", "ball"]
    with pytest.raises(DataError, match="unknown vocabulary split"):
        split.vocabulary(("seen",))


def test_category_without_split_counts_as_iv(tmp_path):
    dataset = build_split(tmp_path)
    dataset["categories"][2].pop("split")
    dataset.pop("info")
    write_split(tmp_path / "s.json", dataset)
    split = load_split(tmp_path / "s.json")
    assert split.vocabulary() == ["cube", "mug"] == split.given_vocabulary()


def test_uncompressed_rle_is_accepted(tmp_path):
    dataset = build_split(tmp_path)
    mask = np.zeros((H, W), bool)
    mask[3:6, 1:4] = True
    col_major = mask.flatten(order="F")
    runs, current, count = [], False, 0
    for v in col_major:
        if v != current:
            runs.append(count)
            current, count = v, 0
        count += 1
    runs.append(count)
    ann = dataset["annotations"][0]
    ann["segmentation"] = {"size": [H, W], "counts": runs}
    write_split(tmp_path / "s.json", dataset)
    split = load_split(tmp_path / "s.json")
    assert np.array_equal(split.annotation_mask(split.dataset["annotations"][0]), mask)
    assert split.annotation_mask(split.dataset["annotations"][0]).sum() == 9


def test_split_copy_is_independent(split_path):
    split = load_split(split_path)
    other = split.copy()
    other.dataset["images"][0]["width"] = 1
    assert split.dataset["images"][0]["width"] == W
    assert isinstance(other, Split)


def test_from_dict_validates(split_dict, fixture_dir):
    split = Split.from_dict(split_dict, fixture_dir)
    assert len(split.images) == 9
    split_dict["images"][0]["width"] = -1
    with pytest.raises(DataError, match=r"images\[0\]\.width"):
        Split.from_dict(split_dict, fixture_dir)


def _npz_claiming(path, shape: tuple[int, int]) -> None:
    """An .npz whose ``depth.npy`` header claims ``shape`` (float16) but holds a few bytes: what a hostile or
    broken file looks like to a reader that trusts the header."""
    import io
    import zipfile

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f2", "fortran_order": False, "shape": shape})
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("depth.npy", header.getvalue() + b"\x00" * 64)


def test_a_depth_file_claiming_a_huge_array_is_refused_from_its_header(tmp_path):
    """46341 x 46341 float16 would take 4.3 GB to load; the shape is read from the .npy header and refused before
    any of it is allocated (a few hundred kB at most are traced)."""
    import tracemalloc

    dataset = build_split(tmp_path)
    write_split(tmp_path / "s.json", dataset)
    split = load_split(tmp_path / "s.json")
    _npz_claiming(tmp_path / "depth/0001.npz", (46341, 46341))
    tracemalloc.start()
    try:
        with pytest.raises(DataError, match=r"depth has shape \(46341, 46341\)") as info:
            split.depth(split.images[1])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20 and "depth/0001.npz" in str(info.value)
    big = np.zeros((H * 2, W * 2), np.uint16)
    cv2.imwrite(str(tmp_path / "depth/0006.png"), big)
    with pytest.raises(DataError, match=r"depth has shape \(24, 32\)"):
        split.depth(split.images[6])


def test_a_depth_file_that_is_a_fifo_is_refused_without_blocking(tmp_path):
    import os

    dataset = build_split(tmp_path)
    write_split(tmp_path / "s.json", dataset)
    split = load_split(tmp_path / "s.json")
    (tmp_path / "depth/0001.npz").unlink()
    os.mkfifo(tmp_path / "depth/0001.npz")
    with pytest.raises(DataError, match="depth file is a FIFO") as info:
        split.depth(split.images[1])
    assert info.value.file == str(tmp_path / "s.json") and info.value.field == "images[id=1].depth_file"
    (tmp_path / "images/0001.png").unlink()
    os.mkfifo(tmp_path / "images/0001.png")
    with pytest.raises(DataError, match="image file is a FIFO"):
        split.load_image(split.images[1])
