"""The geometry backbone, its losses and its camera conventions fit together: trained on two unordered clips, the
tiny model learns their relative poses and depth (a wiring check: a sign or convention error between the pose
encoding, the normalised ground truth and the evaluation keeps the pose error at chance)."""

import numpy as np
import torch

from vision.data.coco import load_split
from vision.data.datasets import MultiViewClipDataset, collate_clips
from vision.data.synthetic import write_split
from vision.data.transforms import build_multiview_transform
from vision.evaluation.geometry import depth_metrics, pose_auc, relative_pose_errors
from vision.training.geometry import GeometryModule, geometry_losses


def _scores(module, batch):
    module.eval()
    with torch.no_grad():
        pred = module.model(batch["images"])
    module.train()
    rot, trans = [], []
    for b in range(batch["images"].shape[0]):
        r, t = relative_pose_errors(pred["extrinsics"][b].numpy(), batch["extrinsics"][b].numpy())
        rot.append(r)
        trans.append(t)
    valid = batch["valid_depth"].numpy() & (batch["depth"].numpy() > 0)
    pred_depth, gt_depth = pred["depth"][..., 0].numpy(), batch["depth"].numpy()
    abs_rel = np.mean([depth_metrics(pred_depth[b], gt_depth[b], valid=valid[b], max_depth=1e6)["abs_rel"]
                       for b in range(len(gt_depth))])
    return pose_auc(np.concatenate(rot), np.concatenate(trans)), abs_rel


def test_tiny_backbone_fits_the_poses_and_depth_of_two_clips(tmp_path):
    torch.manual_seed(0)
    split = write_split(tmp_path, "fit", scenes=2, views=4, size=32, mode="unordered", seed=3, threads=1)
    dataset = MultiViewClipDataset(load_split(split), 4, transform=build_multiview_transform(32, train=False))
    batch = collate_clips([dataset[0], dataset[1]])
    module = GeometryModule(size="tiny", image_size=32)
    optimiser = torch.optim.AdamW(module.parameters(), lr=1e-3, weight_decay=0.0)
    auc_before, abs_rel_before = _scores(module, batch)
    for _ in range(100):
        losses, _ = geometry_losses(module.model, batch)
        losses["loss"].backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        optimiser.step()
        optimiser.zero_grad()
    auc_after, abs_rel_after = _scores(module, batch)
    assert auc_after > 0.5 > auc_before + 0.3
    assert abs_rel_after < 0.5 * abs_rel_before
