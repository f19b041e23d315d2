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
    from vision.synthetic.scenes import write_split

    root = tmp_path_factory.mktemp("trk_data")
    path = write_split(root, "video", scenes=2, views=6, size=32, mode="video", seed=0, threads=1,
                       min_objects=2, max_objects=3)
    return path


@pytest.fixture(scope="session")
def unordered_split(tmp_path_factory):
    from vision.synthetic.scenes import write_split

    root = tmp_path_factory.mktemp("trk_data_u")
    return write_split(root, "unordered", scenes=2, views=4, size=32, mode="unordered", seed=1, threads=1,
                       min_objects=2, max_objects=3)


@pytest.fixture(scope="session")
def clip_batch(video_split):
    from vision.data.coco import load_split
    from vision.data.datasets import MultiViewClipDataset, collate_clips

    ds = MultiViewClipDataset(load_split(video_split), views=4)
    return collate_clips([ds[0], ds[1]])


def train_tiny_checkpoint(root, text_encoder: str | None = None, steps: int = 30):
    """A G2TAM TrackingModule (32 px, dim 32) trained for ``steps`` steps on one batch of a 2-scene video split
    rendered into ``root``, saved as ``root/last.ckpt`` (also used by the demo and CLI tests); returns the path.
    The default is enough for the tracker to put some pixels on the objects it was shown, which the end-to-end
    tests follow into masks, point clouds and .ply files."""
    import lightning as L

    from vision.data.coco import load_split
    from vision.data.datasets import MultiViewClipDataset, collate_clips
    from vision.synthetic.objects import CATEGORIES
    from vision.synthetic.scenes import write_split
    from vision.tracking.lightning import TrackingModule

    split = write_split(root, "video", scenes=2, views=4, size=32, mode="video", seed=0, threads=1,
                        min_objects=2, max_objects=3)
    ds = MultiViewClipDataset(load_split(split), views=4)
    loader = torch.utils.data.DataLoader([collate_clips([ds[0], ds[1]])], batch_size=None)
    torch.manual_seed(0)
    module = TrackingModule(config={"image_size": 32, "dim": 32, "text_encoder": text_encoder}, max_objects=2, lr=2e-3,
                            warmup_steps=1, negative_names=CATEGORIES)  # a bare loader: no datamodule to name them
    trainer = L.Trainer(max_steps=steps, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, limit_val_batches=0, accelerator="cpu")
    trainer.fit(module, loader)
    path = root / "last.ckpt"
    trainer.save_checkpoint(path)
    return path
