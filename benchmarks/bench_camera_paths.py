#!/usr/bin/env python
"""Which camera path solves a trained geometry backbone's clips: relative pose AUC@30, RRA@15 and RTA@15 of every
way the package can get cameras for the same clips, side by side.

Rows (each pooled over every camera pair i < j of every clip of the split, as the geometry table pools them):

- ``solver (default)``: the geometry model's default cameras (:class:`vision.geometry.solver.CameraSolver`: dense
  flow between every two views, PnP on the predicted depth, a maximum spanning tree of the pairs from view 0, the
  learned matches' camera where the flow relates nothing; the ``model`` row of the geometry table).
- ``camera head``: the backbone's camera head (the geometry table's ``camera_head`` row).
- ``learned matches``: the backbone's matching features, mutual nearest neighbours with view 0 lifted by the
  predicted depth and registered by RANSAC over similarity fits (:func:`vision.geometry.matching.pose_from_matches`;
  the ``match_pose`` row of the geometry table).
- ``point map``: each view registered to its own world point map (the point head): the similarity between the
  view's depth-head points in its camera frame and its world points (:func:`vision.alignment.umeyama_batch`, on the
  more confident half of the pixels by the product of the two heads' confidences); the camera a VGGT-style point map
  implies.
- ``ALIKE + essential matrix``: a real pretrained local-feature matcher (ALIKE-N, the registered ``alike-n`` weights,
  on each view upsampled ``--upsample`` times) matched to view 0, an essential matrix by RANSAC and its pose
  (OpenCV ``findEssentialMat`` / ``recoverPose``) with the backbone's predicted intrinsics; a view with fewer than
  8 matches keeps the identity. With ``--true-intrinsics`` the split's intrinsics instead (the matcher's ceiling).
- ``identity``: every camera at the origin (chance).

``python benchmarks/bench_camera_paths.py --ckpt runs/geometry/tiny/checkpoints/last.ckpt --split datasets/synthetic/geometry_val.json``
(and ``datasets/synthetic/geometry_val_video.json``): 4-view clips at the model's image size, as the geometry table.
``--solver-flow-size``, ``--solver-reprojection`` and ``--solver-min-inliers`` set the solver's parameters; with
``--max-clips N`` on a training split (``geometry_train_video.json``, ``geometry_train.json``) they are chosen on
clips the validation splits do not hold.
"""

from __future__ import annotations

import argparse

import cv2
import numpy as np
import torch

from vision.alignment import umeyama_batch
from vision.data.coco import load_split
from vision.data.datasets import MultiViewClipDataset, collate_clips
from vision.data.transforms import build_multiview_transform
from vision.evaluation.geometry import pose_auc, relative_pose_errors
from vision.geometry.camera import depth_to_camera_points
from vision.geometry.results import model_cameras
from vision.geometry.solver import CameraSolver
from vision.geometry.task import load

ROWS = ("solver (default)", "camera head", "learned matches", "point map", "ALIKE + essential matrix", "identity")


def extrinsics_from_fit(rotation: np.ndarray, translation: np.ndarray) -> np.ndarray:
    """Camera-from-world ``[3, 4]`` of a camera whose points map to the world as ``x_w = s R x_c + t``."""
    return np.concatenate([rotation.T, (-rotation.T @ translation)[:, None]], axis=1)


def point_map_cameras(outputs: dict) -> np.ndarray:
    """``[S, 3, 4]``: each view's camera registered to its own world point map (the more confident half of its
    pixels, by the product of the depth and point confidences)."""
    cam = depth_to_camera_points(outputs["depth"][0, ..., 0].double(), outputs["intrinsics"][0].double()).numpy()
    world = outputs["world_points"][0].double().numpy()
    conf = (outputs["depth_conf"][0] * outputs["world_points_conf"][0]).double().numpy()
    cameras = []
    for i in range(len(cam)):
        src, dst, weight = cam[i].reshape(-1, 3), world[i].reshape(-1, 3), conf[i].reshape(-1)
        keep = np.argsort(-weight)[: len(weight) // 2]
        _, rotation, translation = umeyama_batch(src[keep][None], dst[keep][None])
        cameras.append(extrinsics_from_fit(rotation[0], translation[0]))
    return np.stack(cameras)


def essential_cameras(matcher, images: np.ndarray, intrinsics: np.ndarray, upsample: int) -> np.ndarray:
    """``[S, 3, 4]`` from ALIKE matches of each view with view 0 and an essential matrix (identity where it fails).
    ``images`` uint8 ``[S, H, W, 3]``; ``intrinsics [S, 3, 3]`` at that size (pixel-centre convention)."""
    from vision.weights.nets.alike import mutual_matches

    scale = np.diag([upsample, upsample, 1.0])
    shift = np.array([[1, 0, (upsample - 1) / 2], [0, 1, (upsample - 1) / 2], [0, 0, 1]])
    features = [matcher.detect(cv2.resize(im, None, fx=upsample, fy=upsample, interpolation=cv2.INTER_LINEAR),
                               top_k=1024, score_threshold=0.05) for im in images]
    cameras = [np.eye(3, 4)]
    for i in range(1, len(images)):
        camera = np.eye(3, 4)
        pairs = mutual_matches(features[0]["descriptors"], features[i]["descriptors"], 0.7)
        if len(pairs) >= 8:
            p0 = features[0]["keypoints"][pairs[:, 0]].astype(np.float64)
            pi = features[i]["keypoints"][pairs[:, 1]].astype(np.float64)
            # one camera matrix for the pair: view 0's (recoverPose takes one), pixel centres kept when upsampling
            k = shift @ scale @ intrinsics[0].astype(np.float64)
            essential, inliers = cv2.findEssentialMat(p0, pi, k, method=cv2.RANSAC, prob=0.999,
                                                      threshold=0.5 * upsample)
            if essential is not None and essential.shape == (3, 3):
                _, rotation, translation, _ = cv2.recoverPose(essential, p0, pi, k, mask=inliers)
                camera = np.concatenate([rotation, translation], axis=1)
        cameras.append(camera)
    return np.stack(cameras)


def summary(rotation: np.ndarray, translation: np.ndarray) -> dict[str, float]:
    return {"AUC@30": pose_auc(rotation, translation, 30), "RRA@15": float(np.mean(rotation < 15)),
            "RTA@15": float(np.mean(translation < 15))}


@torch.no_grad()
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ckpt", default="runs/geometry/tiny/checkpoints/last.ckpt")
    parser.add_argument("--split", default="datasets/synthetic/geometry_val.json")
    parser.add_argument("--views", type=int, default=4)
    parser.add_argument("--upsample", type=int, default=4, help="ALIKE reads each view upsampled this many times")
    parser.add_argument("--solver-flow-size", type=int, default=CameraSolver.flow_size)
    parser.add_argument("--solver-reprojection", type=float, default=CameraSolver.reprojection_px)
    parser.add_argument("--solver-min-inliers", type=float, default=CameraSolver.min_inliers)
    parser.add_argument("--max-clips", type=int, default=None,
                        help="score this many clips drawn at random (seed 0) instead of all (for training splits)")
    parser.add_argument("--true-intrinsics", action="store_true",
                        help="the essential matrix with the split's intrinsics instead of the predicted ones")
    args = parser.parse_args()
    from vision.weights.nets.alike import load_alike

    model, config = load(args.ckpt)
    # the solver's row even for a model configured without it, with the parameters asked for
    model.solver = CameraSolver(flow_size=args.solver_flow_size, reprojection_px=args.solver_reprojection,
                                min_inliers=args.solver_min_inliers)
    matcher = load_alike("alike-n")
    dataset = MultiViewClipDataset(load_split(args.split), args.views,
                                   transform=build_multiview_transform(config.image_size, train=False))
    errors: dict[str, tuple[list, list]] = {row: ([], []) for row in ROWS}
    clips = range(len(dataset))
    if args.max_clips is not None and args.max_clips < len(dataset):
        clips = sorted(np.random.default_rng(0).choice(len(dataset), args.max_clips, replace=False).tolist())
    for index in clips:
        item = dataset[index]
        batch = collate_clips([item])
        outputs = model(batch["images"])
        truth = batch["extrinsics"][0].double().numpy()
        images = (batch["images"][0].permute(0, 2, 3, 1).numpy() * 255).round().astype(np.uint8)
        intrinsics = (batch["intrinsics"][0] if args.true_intrinsics else outputs["intrinsics"][0]).double().numpy()
        # the solver, the head and the learned matches as the geometry table scores them (model_cameras)
        paths = {field: camera[0].double().numpy() for field, camera in model_cameras(model, outputs).items()}
        cameras = {"solver (default)": paths["extrinsics"], "camera head": paths["head_extrinsics"],
                   "point map": point_map_cameras(outputs),
                   "ALIKE + essential matrix": essential_cameras(matcher, images, intrinsics, args.upsample),
                   "identity": np.tile(np.eye(3, 4), (len(truth), 1, 1))}
        if "match_extrinsics" in paths:
            cameras["learned matches"] = paths["match_extrinsics"]
        for row, extrinsics in cameras.items():
            rotation, translation = relative_pose_errors(extrinsics, truth)
            errors[row][0].append(rotation)
            errors[row][1].append(translation)
    print(f"{args.split}: {len(clips)} clips of {args.views} views; {args.ckpt}; {model.solver}"
          + (" (essential matrix with the true intrinsics)" if args.true_intrinsics else ""))
    print(f"{'camera path':<28}{'AUC@30':>10}{'RRA@15':>10}{'RTA@15':>10}")
    for row in ROWS:
        if errors[row][0]:
            figures = summary(np.concatenate(errors[row][0]), np.concatenate(errors[row][1]))
            print(f"{row:<28}" + "".join(f"{figures[k]:>10.4f}" for k in ("AUC@30", "RRA@15", "RTA@15")))


if __name__ == "__main__":
    main()
