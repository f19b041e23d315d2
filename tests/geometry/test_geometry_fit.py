"""The geometry backbone, its losses and its camera conventions fit together: trained on two unordered clips, the
tiny model learns their relative poses and depth (a wiring check: a sign or convention error between the pose
encoding, the normalised ground truth and the evaluation keeps the pose error at chance)."""

import pytest
import torch

from vision.data.coco import load_split
from vision.data.datasets import MultiViewClipDataset, collate_clips
from vision.synthetic.scenes import write_split
from vision.data.transforms import build_multiview_transform
from vision.geometry.results import evaluate_geometry
from vision.geometry.lightning import GeometryModule
from vision.geometry.losses import geometry_losses


@pytest.mark.slow  # 100 optimiser steps of the backbone
def test_tiny_backbone_fits_the_poses_and_depth_of_two_clips(tmp_path):
    torch.manual_seed(0)
    split = write_split(tmp_path, "fit", scenes=2, views=4, size=32, mode="unordered", seed=3, threads=1)
    dataset = MultiViewClipDataset(load_split(split), 4, transform=build_multiview_transform(32, train=False))
    batch = collate_clips([dataset[0], dataset[1]])
    module = GeometryModule(config={"size": "tiny", "image_size": 32})
    optimiser = torch.optim.AdamW(module.parameters(), lr=1e-3, weight_decay=0.0)
    before = evaluate_geometry(module.model, split, views=4, image_size=32)
    module.train()
    for _ in range(100):
        losses, _ = geometry_losses(module.model.backbone, batch)
        losses["loss"].backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        optimiser.step()
        optimiser.zero_grad()
    after = evaluate_geometry(module.model, split, views=4, image_size=32)
    assert before["clips"] == after["clips"] == 2
    assert after["camera_head/AUC@30"] > 0.5 > before["camera_head/AUC@30"] + 0.3  # the head learns the poses
    assert after["abs_rel"] < 0.5 * before["abs_rel"]
