"""Shared fixtures: tiny synthetic splits rendered once per session, 32 px, few views."""

from __future__ import annotations

import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")


@pytest.fixture(scope="session", autouse=True)
def _threads():
    torch.set_num_threads(1)


@pytest.fixture(scope="session")
def video_split(tmp_path_factory):
    from vision.data.synthetic import write_split

    root = tmp_path_factory.mktemp("trk_data")
    path = write_split(root, "video", scenes=2, views=6, size=32, mode="video", seed=0, threads=1,
                       min_objects=2, max_objects=3)
    return path


@pytest.fixture(scope="session")
def unordered_split(tmp_path_factory):
    from vision.data.synthetic import write_split

    root = tmp_path_factory.mktemp("trk_data_u")
    return write_split(root, "unordered", scenes=2, views=4, size=32, mode="unordered", seed=1, threads=1,
                       min_objects=2, max_objects=3)


@pytest.fixture(scope="session")
def clip_batch(video_split):
    from vision.data.coco import load_split
    from vision.data.datasets import MultiViewClipDataset, collate_clips

    ds = MultiViewClipDataset(load_split(video_split), views=4)
    return collate_clips([ds[0], ds[1]])
