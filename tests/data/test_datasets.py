"""Datasets, collate functions and DataModules over the fixture split."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.data.conftest import H, W, depth_of
from vision.data.coco import load_split
from vision.data.datamodule import DetectionDataModule, MultiViewDataModule
from vision.data.datasets import (
    DetectionImageDataset,
    LabelledVideoDataset,
    MultiViewClipDataset,
    clip_to_tensors,
    collate_clips,
    collate_detection,
    collate_videos,
    default_intrinsics,
)
from vision.errors import DataError, InputError


@pytest.fixture(scope="module")
def split(split_path):
    return load_split(split_path)


def test_windows_of_ordered_and_unordered_videos(split):
    ds = MultiViewClipDataset(split, views=2)
    assert ds.windows == [(1, [0, 1]), (1, [2, 3]), (2, [0, 1])]
    ds = MultiViewClipDataset(split, views=3, stride=2)
    assert ds.windows == [(1, [0, 2, 4]), (2, [0, 1, 2])]
    ds = MultiViewClipDataset(split, views=2, step=1)
    assert [w for v, w in ds.windows if v == 1] == [[0, 1], [1, 2], [2, 3], [3, 4]]
    ds = MultiViewClipDataset(split, views=4)
    assert ds.windows == [(1, [0, 1, 2, 3])]  # the 3-image set is too small
    with pytest.raises(DataError, match="enough images"):
        MultiViewClipDataset(split, views=6)
    with pytest.raises(InputError):
        MultiViewClipDataset(split, views=0)


def test_clip_sample_contract(split):
    sample = MultiViewClipDataset(split, views=2)[0]  # video 1, images 1 and 2
    assert sample["images"].dtype == np.uint8 and sample["images"].shape == (2, H, W, 3)
    assert np.array_equal(sample["images"][1], split.load_image(split.images[2]))
    assert sample["depth"].dtype == np.float32 and sample["depth"].shape == (2, H, W)
    assert np.allclose(sample["depth"][0], depth_of(1).astype(np.float32))
    assert sample["valid_depth"].dtype == bool and not sample["valid_depth"][0, 0, 0] and sample["valid_depth"][0, 1, 1]
    assert sample["has_camera"] is True
    assert sample["intrinsics"].shape == (2, 3, 3) and sample["intrinsics"][0, 0, 0] == 20.0
    assert sample["extrinsics"].shape == (2, 3, 4) and np.isclose(sample["extrinsics"][1, 0, 3], 0.1)
    assert sample["track_ids"].dtype == np.int64 and sample["track_ids"].tolist() == [10, 11]
    assert sample["captions"] == ["a red cube", "ball"]  # empty caption -> category name
    assert sample["category_ids"].tolist() == [1, 2]
    assert sample["visible"].tolist() == [[True, False], [True, True]]
    assert sample["image_ids"].tolist() == [1, 2] and sample["video_id"] == 1
    ids = sample["instance_ids"]
    assert ids.dtype == np.int32 and ids.shape == (2, H, W)
    # the small ball (track 11 -> id 2) is drawn on top of the larger cube (track 10 -> id 1)
    assert np.all(ids[1, 4:7, 4:7] == 2)
    assert np.count_nonzero(ids[1] == 1) == 80 - 9 and np.count_nonzero(ids[0] == 1) == 80
    assert ids[0, 0, 0] == 0 and ids[0, 11, 15] == 0


def test_clip_without_cameras_and_png_depth(split):
    sample = MultiViewClipDataset(split, views=2)[2]  # unordered set: images 6 and 7
    assert sample["image_ids"].tolist() == [6, 7] and sample["video_id"] == 2
    assert sample["has_camera"] is False
    assert np.allclose(sample["intrinsics"][1], default_intrinsics(H, W))
    assert np.allclose(sample["extrinsics"][1], np.eye(3, 4))
    assert np.allclose(sample["depth"][0, :, 4:], 1.5) and not sample["valid_depth"][1].any()
    assert sample["track_ids"].tolist() == [20] and sample["visible"].tolist() == [[True], [False]]
    assert sample["captions"] == ["a blue mug"]


def test_random_windows_are_valid_and_follow_torch_seed(split):
    ds = MultiViewClipDataset(split, views=3, random_window=True)
    assert len(ds) == 2
    torch.manual_seed(0)
    first = [ds[0]["image_ids"].tolist() for _ in range(6)]
    torch.manual_seed(0)
    again = [ds[0]["image_ids"].tolist() for _ in range(6)]
    assert first == again
    for ids in first:
        assert ids[1] == ids[0] + 1 and ids[2] == ids[0] + 2  # consecutive frames of video 1 (ids follow frames)
    subset = ds[1]["image_ids"].tolist()
    assert subset == [6, 7, 8]


def test_sample_keys_fix_the_window_and_the_augmentation(split):
    from vision.data.transforms import build_multiview_transform

    ds = MultiViewClipDataset(split, views=3, random_window=True, transform=build_multiview_transform(16, train=True))
    torch.manual_seed(0)
    first = ds[(0, 5)]
    torch.manual_seed(1)  # neither the global RNG nor earlier draws matter
    ds[(0, 6)]
    again = ds[(0, 5)]
    for key in ("images", "intrinsics", "image_ids"):
        assert np.array_equal(first[key], again[key]), key
    draws = {ds[(0, s)]["images"].tobytes() for s in range(6)}
    assert len(draws) > 1  # other seeds draw other windows / augmentations


def test_transform_is_applied_last(split):
    def flip(sample):
        out = dict(sample)
        out["images"] = sample["images"][:, :, ::-1].copy()
        return out

    plain = MultiViewClipDataset(split, views=2)[0]
    flipped = MultiViewClipDataset(split, views=2, transform=flip)[0]
    assert np.array_equal(flipped["images"], plain["images"][:, :, ::-1])


def test_clip_to_tensors_and_collate_pads_tracks(split):
    ds = MultiViewClipDataset(split, views=2)
    t = clip_to_tensors(ds[0])
    assert t["images"].shape == (2, 3, H, W) and t["images"].dtype == torch.float32
    assert 0.0 <= float(t["images"].min()) and float(t["images"].max()) <= 1.0
    assert torch.allclose(t["images"][0, :, 3, 5] * 255, torch.from_numpy(ds[0]["images"][0, 3, 5]).float())
    assert t["instance_ids"].dtype == torch.int64 and t["video_id"].item() == 1
    batch = collate_clips([ds[0], ds[2]])
    assert batch["images"].shape == (2, 2, 3, H, W)
    assert batch["track_ids"].tolist() == [[10, 11], [20, -1]]
    assert batch["track_valid"].tolist() == [[True, True], [True, False]]
    assert batch["category_ids"].tolist() == [[1, 2], [3, -1]]
    assert batch["visible"].shape == (2, 2, 2) and not batch["visible"][1, :, 1].any()
    assert batch["has_camera"].tolist() == [True, False]
    assert batch["captions"] == [["a red cube", "ball"], ["a blue mug"]]
    assert batch["intrinsics"].shape == (2, 2, 3, 3) and batch["image_ids"].tolist() == [[1, 2], [6, 7]]
    with pytest.raises(InputError):
        collate_clips([])


def test_detection_dataset(split):
    ds = DetectionImageDataset(split)
    assert len(ds) == 9
    sample = ds[8]  # image 100
    assert sample["image_id"] == 100 and sample["image"].shape == (H, W, 3)
    assert sample["boxes"].dtype == np.float32
    assert sample["boxes"].tolist() == [[1.0, 1.0, 5.0, 5.0], [8.0, 2.0, 14.0, 9.0]]
    assert sample["category_ids"].tolist() == [3, 1] and sample["iscrowd"].tolist() == [False, True]
    assert sample["masks"].shape == (2, H, W) and sample["masks"][1].sum() == 42
    empty = ds[6]  # image 7 has no annotations
    assert empty["boxes"].shape == (0, 4) and empty["masks"].shape == (0, H, W) and empty["category_ids"].shape == (0,)
    iv_only = DetectionImageDataset(split, categories=split.category_ids(("iv",)))[8]
    assert iv_only["category_ids"].tolist() == [1] and iv_only["boxes"].shape == (1, 4)
    with pytest.raises(InputError):
        DetectionImageDataset(split, categories=[99])


def test_collate_detection_pads_images():
    def sample(h, w, n, image_id):
        return {"image": np.full((h, w, 3), 255, np.uint8), "boxes": np.ones((n, 4), np.float32),
                "category_ids": np.arange(n, dtype=np.int64), "masks": np.zeros((n, h, w), bool),
                "iscrowd": np.zeros(n, bool), "image_id": image_id}

    batch = collate_detection([sample(4, 6, 2, 1), sample(5, 3, 0, 2)])
    assert batch["images"].shape == (2, 3, 5, 6)
    assert batch["image_sizes"].tolist() == [[4, 6], [5, 3]]
    assert batch["images"][0, :, 4].sum() == 0 and batch["images"][0, :, :4].min() == 1.0
    assert batch["images"][1, :, :, 3:].sum() == 0
    assert [t["boxes"].shape[0] for t in batch["targets"]] == [2, 0]
    assert batch["targets"][0]["masks"].shape == (2, 4, 6) and batch["image_ids"].tolist() == [1, 2]


def test_labelled_videos(split, fixture_dir):
    ds = LabelledVideoDataset(split)
    items = [ds[i] for i in range(len(ds))]
    assert [it["label"] for it in items] == [0, 1]
    assert [it["generator"] for it in items] == [None, "toygen"]
    assert items[1]["video_path"] == (fixture_dir / "videos/fake.mp4").resolve()
    batch = collate_videos(items)
    assert batch["label"].tolist() == [0, 1] and batch["video_id"].tolist() == [3, 4]
    assert all(isinstance(p, Path) for p in batch["video_path"])


def test_multiview_datamodule(split_path):
    dm = MultiViewDataModule(str(split_path), str(split_path), views=2, batch_size=2, augment=False)
    dm.setup("fit")
    batch = next(iter(dm.train_dataloader()))
    assert batch["images"].shape == (2, 2, 3, H, W)
    val = list(dm.val_dataloader())
    assert sum(b["images"].shape[0] for b in val) == 3
    with pytest.raises(InputError):
        MultiViewDataModule(str(split_path), str(split_path), views=0)


def test_multiview_datamodule_concatenates_train_splits(split_path):
    one = MultiViewDataModule(str(split_path), str(split_path), views=2, augment=False)
    two = MultiViewDataModule([str(split_path), str(split_path)], str(split_path), views=2, augment=False)
    one.setup("fit")
    two.setup("fit")
    assert len(two.train_dataset) == 2 * len(one.train_dataset) > 0
    assert two.hparams.train_split == [str(split_path)] * 2
    for bad in ([], [str(split_path), 3]):
        with pytest.raises(InputError, match="train_split"):
            MultiViewDataModule(bad, str(split_path))


def test_detection_datamodule(split_path):
    dm = DetectionDataModule(str(split_path), str(split_path), batch_size=3, augment=False,
                             train_category_splits=["iv"])
    dm.setup("fit")
    batches = list(dm.train_dataloader())
    cats = torch.cat([t["category_ids"] for b in batches for t in b["targets"]])
    assert set(cats.tolist()) == {1}
    val = next(iter(dm.val_dataloader()))
    assert val["images"].shape == (3, 3, H, W) and len(val["targets"]) == 3


def test_datamodules_with_augmentation_resize_to_image_size(split_path):
    pytest.importorskip("vision.data.transforms")
    torch.manual_seed(0)
    mv = MultiViewDataModule(str(split_path), str(split_path), views=2, batch_size=2, image_size=8, augment=True)
    mv.setup("fit")
    batch = next(iter(mv.train_dataloader()))
    assert batch["images"].shape[:3] == (2, 2, 3) and max(batch["images"].shape[-2:]) == 8
    assert batch["instance_ids"].shape[-2:] == batch["images"].shape[-2:]
    assert int(batch["instance_ids"].max()) <= batch["track_ids"].shape[1]
    val = next(iter(mv.val_dataloader()))
    assert max(val["images"].shape[-2:]) == 8
    det = DetectionDataModule(str(split_path), str(split_path), batch_size=3, image_size=8, augment=True)
    det.setup("fit")
    dbatch = next(iter(det.train_dataloader()))
    assert max(dbatch["images"].shape[-2:]) == 8 and len(dbatch["targets"]) == 3
    for target in dbatch["targets"]:
        assert target["boxes"].shape[0] == target["masks"].shape[0] == target["category_ids"].shape[0]


def test_test_and_predict_splits_default_to_the_one_before(split_path):
    other = split_path.parent / "other.json"  # beside it: the split names its files relative to its folder
    other.write_text(split_path.read_text())
    dm = MultiViewDataModule(str(split_path), str(split_path), views=2)
    assert dm.split_path("validate") == dm.split_path("test") == dm.split_path("predict") == str(split_path)
    dm = DetectionDataModule(str(split_path), str(split_path), test_split=str(other))
    assert dm.split_path("validate") == str(split_path)
    assert dm.split_path("test") == dm.split_path("predict") == str(other)
    assert len(dm.eval_dataset("test")) == len(dm.eval_dataset("validate"))
    batch = next(iter(dm.predict_dataloader()))
    assert batch["images"].shape[0] == 2
