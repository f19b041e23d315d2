"""Evaluate a geometry backbone on a split: depth, cameras and point maps, beside trivial baselines.

For every clip of ``views`` images of the split (eval transform: a plain resize to ``image_size``):
- depth: AbsRel and delta<1.25 with median scaling per image (:func:`vision.evaluation.geometry.depth_metrics`);
  baseline: a constant depth (after median scaling, every pixel gets the image's median GT depth);
- cameras: relative rotation / translation-direction errors over all pairs i < j of each clip, pooled over clips,
  then RRA@k, RTA@k and AUC@30; baseline: identity poses for every view;
- point maps: Chamfer distance after a Umeyama similarity alignment, in units of the normalised GT scene (mean
  point norm 1 in camera 0's frame), on at most ``max_points`` valid pixels per clip;
- with a matching projection (a GeometryModule trained with ``match_weight`` > 0): the same pose metrics for
  cameras from learned patch matches and predicted depth (:func:`vision.geometry.matching.pose_from_matches`; a
  view it cannot register keeps the camera head's pose), as the ``match_pose`` row.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from vision.data.coco import load_split
from vision.data.datasets import MultiViewClipDataset, collate_clips
from vision.data.transforms import build_multiview_transform
from vision.evaluation.geometry import chamfer_metrics, depth_metrics, pose_auc, relative_pose_errors
from vision.geometry.losses import normalize_scene
from vision.geometry.matching import MatchProjection, pose_from_matches
from vision.geometry.model import GeometryBackbone

__all__ = ["evaluate_geometry", "format_geometry_table"]


def _pose_summary(rot: np.ndarray, trans: np.ndarray) -> dict[str, float]:
    out = {"AUC@30": pose_auc(rot, trans, 30)}
    for k in (5, 15, 30):
        out[f"RRA@{k}"] = float(np.mean(rot < k))
        out[f"RTA@{k}"] = float(np.mean(trans < k))
    return out


def _depth_summary(rows: Iterable[dict]) -> dict[str, float]:
    rows = list(rows)
    n = sum(r["num_images"] for r in rows)
    return {k: float(sum(r[k] * r["num_images"] for r in rows) / max(n, 1)) for k in ("abs_rel", "delta_1.25")}


@torch.no_grad()
def evaluate_geometry(model: GeometryBackbone, split_path: str | Path, views: int = 4, image_size: int = 64,
                      max_clips: int | None = None, max_points: int = 4000, seed: int = 0,
                      match: MatchProjection | None = None) -> dict[str, dict]:
    """Return ``{"model": {...}, "constant_depth": {...}, "identity_pose": {...}}`` metric dicts (see module doc),
    plus ``"match_pose"`` when ``match`` is given."""
    split = load_split(split_path)
    dataset = MultiViewClipDataset(split, views, transform=build_multiview_transform(image_size, train=False))
    device = next(model.parameters()).device
    model.eval()
    rng = np.random.default_rng(seed)
    depth_rows, const_rows, chamfers = [], [], []
    rot_all, trans_all, rot_id, trans_id, rot_match, trans_match = [], [], [], [], [], []
    if match is not None:
        match.eval()
    count = len(dataset) if max_clips is None else min(max_clips, len(dataset))
    for index in range(count):
        batch = collate_clips([dataset[index]])
        pred = model(batch["images"].to(device))
        gt_depth = batch["depth"][0].numpy()
        valid = batch["valid_depth"][0].numpy() & (gt_depth > 0)
        pred_depth = pred["depth"][0, ..., 0].float().cpu().numpy()
        row = depth_metrics(pred_depth, gt_depth, valid=valid, max_depth=1e6)
        const = depth_metrics(np.ones_like(gt_depth), gt_depth, valid=valid, max_depth=1e6)
        depth_rows.append({**row, "num_images": views})
        const_rows.append({**const, "num_images": views})

        gt_extr = batch["extrinsics"][0].numpy()
        rot, trans = relative_pose_errors(pred["extrinsics"][0].float().cpu().numpy(), gt_extr)
        rot_all.append(rot)
        trans_all.append(trans)
        if match is not None:
            features = match(pred["tokens"][-1][:, :, pred["patch_start_idx"]:])[0]
            extr, inliers = pose_from_matches(features.cpu(), pred["depth"][0, ..., 0].cpu(),
                                              pred["intrinsics"][0].cpu(), model.patch_size)
            head = pred["extrinsics"][0].cpu().to(extr.dtype)
            extr = torch.where((inliers > 0)[:, None, None] | (torch.arange(views) == 0)[:, None, None], extr, head)
            rot, trans = relative_pose_errors(extr.float().numpy(), gt_extr)
            rot_match.append(rot)
            trans_match.append(trans)
        identity = np.tile(np.eye(3, 4, dtype=np.float32), (views, 1, 1))
        rot0, trans0 = relative_pose_errors(identity, gt_extr)
        rot_id.append(rot0)
        trans_id.append(trans0)

        norm = normalize_scene(batch["extrinsics"], batch["intrinsics"], batch["depth"], None,
                               torch.from_numpy(valid)[None])
        gt_points = norm.world_points[0].numpy()[valid]
        pred_points = pred["world_points"][0].float().cpu().numpy()[valid]
        if len(gt_points) >= 3:
            pick = rng.choice(len(gt_points), size=min(max_points, len(gt_points)), replace=False)
            chamfers.append(chamfer_metrics(pred_points[pick], gt_points[pick])["chamfer"])
    rot_all, trans_all = np.concatenate(rot_all), np.concatenate(trans_all)
    model_row = {**_depth_summary(depth_rows), **_pose_summary(rot_all, trans_all),
                 "chamfer": float(np.mean(chamfers)) if chamfers else float("nan"), "clips": count}
    results = {
        "model": model_row,
        "constant_depth": {**_depth_summary(const_rows), "clips": count},
        "identity_pose": {**_pose_summary(np.concatenate(rot_id), np.concatenate(trans_id)), "clips": count},
    }
    if match is not None:
        results["match_pose"] = {**_pose_summary(np.concatenate(rot_match), np.concatenate(trans_match)),
                                 "clips": count}
    return results


def format_geometry_table(results: dict[str, dict[str, Any]]) -> str:
    """A fixed-width table: one row per method, one column per metric (blank where a method has none)."""
    cols = ["abs_rel", "delta_1.25", "AUC@30", "RRA@15", "RTA@15", "chamfer"]
    lines = [f"{'method':<16}" + "".join(f"{c:>12}" for c in cols)]
    for name, row in results.items():
        cells = "".join(f"{row[c]:>12.4f}" if c in row else f"{'-':>12}" for c in cols)
        lines.append(f"{name:<16}{cells}")
    return "\n".join(lines)
