#!/usr/bin/env python
"""How far apart two views can be and still be related by correspondences: every ordered pair of views of every clip
of a split, binned by the true rotation between them, with the rotation error of the pair's relative camera from

- ``flow``: the camera solver's own pair cameras (:meth:`vision.geometry.solver.CameraSolver.pair_cameras`: dense DIS
  flow both ways, view i's consistent pixels lifted by its predicted depth, PnP in view j), and the share of view j's
  pixels among its inliers (the solver's spanning tree joins a pair only above ``min_inliers``);
- ``ALIKE``: a real pretrained local-feature matcher (ALIKE-N, the registered ``alike-n`` weights, on the views
  upsampled ``--upsample`` times, mutual nearest neighbours), view i's keypoints lifted by its predicted depth, the
  same PnP (:func:`vision.geometry.solver.pnp_camera`, 1 px).

Per bin: the number of pairs, the median inlier share (flow) and count (ALIKE), and the fraction of pairs whose
rotation error is under 10 degrees (a failed PnP counts as a miss); then the same for the pairs the solver's tree may
join (flow share above ``min_inliers``).

``python benchmarks/bench_camera_pairs.py --ckpt runs/geometry/tiny/checkpoints/last.ckpt --split datasets/synthetic/geometry_val.json``
"""

from __future__ import annotations

import argparse

import cv2
import numpy as np
import torch

from vision.data.coco import load_split
from vision.data.datasets import MultiViewClipDataset, collate_clips
from vision.data.transforms import build_multiview_transform
from vision.evaluation.geometry import relative_pose_errors
from vision.geometry.solver import CameraSolver, lift_pixels, pnp_camera
from vision.geometry.task import load

BINS = ((0, 20), (20, 40), (40, 60), (60, 90), (90, 180))


def pair_rotation_error(camera: np.ndarray | None, truth: np.ndarray, i: int, j: int) -> float:
    """The rotation error (degrees, as the geometry table scores pairs) of ``camera [3, 4]``, view i's camera frame
    to view j's, against camera-from-world ``truth [S, 3, 4]``; inf without a camera. With the identity for
    ``camera``: the true rotation between the views."""
    if camera is None:
        return np.inf
    rotation, _ = relative_pose_errors(np.stack([np.eye(3, 4), camera]), truth[[i, j]])
    return float(rotation[0])


def alike_pairs(matcher, images: np.ndarray, depth: np.ndarray, intrinsics: np.ndarray,
                upsample: int) -> dict[tuple[int, int], tuple[np.ndarray, int]]:
    """``{(i, j): (camera [3, 4] from view i's frame to view j's, inlier count)}`` from ALIKE matches and PnP."""
    from vision.weights.nets.alike import mutual_matches

    features = [matcher.detect(cv2.resize(im, None, fx=upsample, fy=upsample, interpolation=cv2.INTER_LINEAR),
                               top_k=1024, score_threshold=0.05) for im in images]
    out = {}
    for i in range(len(images)):
        for j in range(len(images)):
            if i == j:
                continue
            pairs = mutual_matches(features[i]["descriptors"], features[j]["descriptors"], 0.7)
            if len(pairs) < 6:
                continue
            # keypoints on the upsampled grid -> input pixels (pixel centres kept)
            pi = (features[i]["keypoints"][pairs[:, 0]].astype(np.float64) - (upsample - 1) / 2) / upsample
            pj = (features[j]["keypoints"][pairs[:, 1]].astype(np.float64) - (upsample - 1) / 2) / upsample
            camera, count = pnp_camera(lift_pixels(pi, depth[i], intrinsics[i]), pj, intrinsics[j], 1.0, 1000)
            if camera is not None:
                out[(i, j)] = (camera, count)
    return out


@torch.no_grad()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ckpt", default="runs/geometry/tiny/checkpoints/last.ckpt")
    parser.add_argument("--split", default="datasets/synthetic/geometry_val.json")
    parser.add_argument("--views", type=int, default=4)
    parser.add_argument("--upsample", type=int, default=4, help="ALIKE reads each view upsampled this many times")
    args = parser.parse_args()
    from vision.weights.nets.alike import load_alike

    model, config = load(args.ckpt)
    solver = model.solver or CameraSolver()
    matcher = load_alike("alike-n")
    dataset = MultiViewClipDataset(load_split(args.split), args.views,
                                   transform=build_multiview_transform(config.image_size, train=False))
    rows = []  # (true angle, flow share, flow error, ALIKE inliers, ALIKE error); error inf: no camera
    for index in range(len(dataset)):
        batch = collate_clips([dataset[index]])
        outputs = model(batch["images"])
        truth = batch["extrinsics"][0].double().numpy()
        images = (batch["images"][0].permute(0, 2, 3, 1).numpy() * 255).round().astype(np.uint8)
        depth = outputs["depth"][0, ..., 0].double().numpy()
        intrinsics = outputs["intrinsics"][0].double().numpy()
        flow = solver.pair_cameras(images, depth, intrinsics)
        alike = alike_pairs(matcher, images, depth, intrinsics, args.upsample)
        for i in range(len(images)):
            for j in range(len(images)):
                if i == j:
                    continue
                camera, share = flow.get((i, j), (None, 0.0))
                flow_error = pair_rotation_error(camera, truth, i, j)
                camera, count = alike.get((i, j), (None, 0))
                alike_error = pair_rotation_error(camera, truth, i, j)
                rows.append((pair_rotation_error(np.eye(3, 4), truth, i, j), share, flow_error, count, alike_error))
    rows = np.array(rows)
    print(f"{args.split}: {len(dataset)} clips of {args.views} views, {len(rows)} ordered pairs; {args.ckpt}; "
          f"{solver}")
    print(f"{'true rotation':<16}{'pairs':>7}{'flow share':>12}{'flow <10deg':>13}{'ALIKE inliers':>15}"
          f"{'ALIKE <10deg':>14}")
    for low, high in BINS:
        part = rows[(rows[:, 0] >= low) & (rows[:, 0] < high)]
        if len(part):
            label = f"{low}-{high} deg"
            print(f"{label:<16}{len(part):>7}{np.median(part[:, 1]):>12.3f}{np.mean(part[:, 2] < 10):>13.2f}"
                  f"{np.median(part[:, 3]):>15.0f}{np.mean(part[:, 4] < 10):>14.2f}")
    joined = rows[rows[:, 1] > solver.min_inliers]
    print(f"pairs the tree may join (flow share > {solver.min_inliers}): {len(joined)} of {len(rows)}, "
          f"rotation error < 10 deg for {np.mean(joined[:, 2] < 10):.2f}, median true rotation "
          f"{np.median(joined[:, 0]):.1f} deg")


if __name__ == "__main__":
    main()
