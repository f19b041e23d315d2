"""The viewpoint-change curriculum of training clips: strided video windows, view-angle limits, per-epoch limits."""

from __future__ import annotations

import lightning as L
import numpy as np
import pytest
import torch

from vision.data.coco import load_split
from vision.data.datamodule import MultiViewDataModule
from vision.data.datasets import MultiViewClipDataset
from vision.synthetic.scenes import write_split
from vision.errors import InputError


@pytest.fixture(scope="module")
def splits(tmp_path_factory):
    root = tmp_path_factory.mktemp("curriculum")
    video = write_split(root, "video", scenes=2, views=12, size=16, mode="video", seed=3, max_objects=2, threads=1)
    unordered = write_split(root, "unordered", scenes=2, views=8, size=16, mode="unordered", seed=3, max_objects=2,
                            threads=1)
    return video, unordered


def _spread(ds: MultiViewClipDataset, video_id: int, positions: list[int]) -> float:
    """Largest relative rotation (degrees) of a clip's views to its first view."""
    return max(ds.view_angles(video_id)[positions[0], p] for p in positions)


def test_view_angles_are_the_relative_rotations(splits):
    split = load_split(splits[1])
    ds = MultiViewClipDataset(split, views=4, random_window=True)
    video_id = ds.videos[0]
    frames = split.images_by_video[video_id]
    r = [split.camera(img)[1][:, :3].astype(np.float64) for img in frames]
    angles = ds.view_angles(video_id)
    expected = np.degrees(np.arccos(np.clip((np.trace(r[1] @ r[5].T) - 1) / 2, -1, 1)))
    assert angles[1, 5] == pytest.approx(expected, abs=1e-6)
    np.testing.assert_allclose(angles, angles.T, atol=1e-6)
    np.testing.assert_allclose(np.diag(angles), 0.0, atol=0.05)  # float32 rotations
    assert angles.max() > 60.0  # unordered sets spread over 90-150 degrees of azimuth


def test_strided_video_windows(splits):
    split = load_split(splits[0])
    ds = MultiViewClipDataset(split, views=4, random_window=True, max_stride=3)
    strides = set()
    for seed in range(60):
        clip = ds[(0, seed)]
        frame = {img["id"]: img["frame_index"] for img in split.images_by_video[ds.videos[0]]}
        idx = [frame[int(i)] for i in clip["image_ids"]]
        steps = set(np.diff(idx).tolist())
        assert len(steps) == 1 and 1 <= steps.pop() <= 3 and idx[-1] < 12
        strides.add(idx[1] - idx[0])
    assert strides == {1, 2, 3}
    assert ds[(0, 7)]["image_ids"].tolist() == ds[(0, 7)]["image_ids"].tolist()  # the key fixes the window
    with pytest.raises(InputError, match="max_stride"):
        MultiViewClipDataset(split, views=4, stride=2, max_stride=1)


@pytest.mark.parametrize("which", [0, 1])
def test_view_angle_limit_bounds_every_clip(splits, which):
    split = load_split(splits[which])
    ds = MultiViewClipDataset(split, views=3, random_window=True, max_stride=4)
    unlimited = max(_spread(ds, ds.videos[i % 2], _positions(ds, split, i % 2, seed)) for i, seed in
                    enumerate(range(40)))
    ds.max_view_angle = 25.0
    for i, seed in enumerate(range(40)):
        positions = _positions(ds, split, i % 2, seed)
        angles = ds.view_angles(ds.videos[i % 2])
        near = (angles[positions[0]] <= 25.0).sum() - 1
        if which == 0 or near >= 2:  # a video always has stride-1 windows within 25 degrees here
            assert _spread(ds, ds.videos[i % 2], positions) <= 25.0 + 1e-6
        assert len(set(positions)) == 3
    assert unlimited > 25.0  # the limit changed what is drawn
    with pytest.raises(InputError, match="max_view_angle"):
        ds.max_view_angle = 0.0


def test_too_small_a_limit_falls_back_to_the_nearest_views(splits):
    split = load_split(splits[1])
    ds = MultiViewClipDataset(split, views=4, random_window=True, max_view_angle=1e-3)
    positions = _positions(ds, split, 0, 5)
    angles = ds.view_angles(ds.videos[0])[positions[0]]
    others = sorted(angles[i] for i in range(8) if i != positions[0])
    assert sorted(angles[positions[1:]].tolist()) == pytest.approx(others[:3])
    split = load_split(splits[0])
    ds = MultiViewClipDataset(split, views=4, random_window=True, max_stride=3, max_view_angle=1e-3)
    positions = _positions(ds, split, 0, 5)
    assert np.diff(positions).tolist() == [1, 1, 1]  # stride-1 windows when no window fits


def _positions(ds: MultiViewClipDataset, split, index: int, seed: int) -> list[int]:
    clip = ds[(index, seed)]
    order = {img["id"]: k for k, img in enumerate(split.images_by_video[ds.videos[index]])}
    return [order[int(i)] for i in clip["image_ids"]]


class _Recorder(L.LightningModule):
    """Consumes batches and records the training clips' view-angle limit of every epoch."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(torch.zeros(()))
        self.limits: list[float | None] = []

    def on_train_epoch_start(self) -> None:
        parts = self.trainer.datamodule.train_dataset.datasets
        self.limits.append(parts[0].max_view_angle)
        assert all(p.max_view_angle == parts[0].max_view_angle for p in parts)

    def training_step(self, batch, batch_idx):
        return self.weight * batch["images"].mean()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def test_datamodule_curriculum_follows_the_epoch(splits):
    video, unordered = (str(p) for p in splits)
    dm = MultiViewDataModule([video, unordered], unordered, views=3, batch_size=2, augment=False, max_stride=2,
                             curriculum=[10, 40])
    module = _Recorder()
    trainer = L.Trainer(max_epochs=3, reload_dataloaders_every_n_epochs=1, logger=False, enable_checkpointing=False,
                        enable_progress_bar=False, enable_model_summary=False, limit_val_batches=0,
                        accelerator="cpu")
    trainer.fit(module, datamodule=dm)
    assert module.limits == [10.0, 40.0, 40.0]
    assert dm.view_angle_limit(0) == 10.0 and dm.view_angle_limit(7) == 40.0


def test_curriculum_needs_reloaded_loaders_and_valid_angles(splits):
    video = str(splits[0])
    dm = MultiViewDataModule(video, video, views=3, augment=False, curriculum=[10])
    trainer = L.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, limit_val_batches=0, accelerator="cpu")
    with pytest.raises(InputError, match="reload_dataloaders_every_n_epochs"):
        trainer.fit(_Recorder(), datamodule=dm)
    for bad in ([], [10, -1]):
        with pytest.raises(InputError, match="curriculum"):
            MultiViewDataModule(video, video, curriculum=bad)
    with pytest.raises(InputError, match="random_window"):
        MultiViewDataModule(video, video, curriculum=[10], random_window=False)
