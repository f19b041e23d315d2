"""The geometry model's outputs as the task's results, and the evaluation of a model on a split through them.

:func:`clip_results` turns the model's outputs on a batch of clips into the geometry task's results (one entry per
image of each clip, format: :func:`vision.evaluation.tasks.geometry.validate_geometry_results`), keyed by the clip's image
ids: what ``GeometryModule``'s validation, test and predict steps collect and ``tools/train.py predict`` writes.
:func:`evaluate_geometry` runs a model over a split without a Trainer and scores the results with
:func:`vision.evaluation.evaluate.evaluate` (task ``"geometry"``): the figures ``tools/train.py test`` prints for the
same model and split.

With a matching projection (``GeometryConfig.match_dim``) each result also carries ``match_extrinsics``: the cameras
registered from learned patch matches and predicted depth (:func:`vision.geometry.matching.pose_from_matches`; a
view it cannot register keeps the camera head's pose), scored as the ``match_pose`` row. With the camera solver
(``GeometryConfig.camera_solver``, the default) a result's ``extrinsics`` are the solved cameras
(:class:`vision.geometry.solver.CameraSolver`, falling back to the matches' cameras, else the head's) and
``head_extrinsics`` the camera head's, scored as the ``camera_head`` row. With a ray head
(``GeometryConfig.ray_head``) each result carries ``ray_extrinsics``: the cameras fitted to the predicted ray map
(:func:`vision.geometry.rays.rays_to_cameras`, weighted by ``rays_conf``), scored as the ``ray_pose`` row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from vision.data.coco import load_split
from vision.data.datasets import MultiViewClipDataset, collate_clips
from vision.data.transforms import build_multiview_transform
from vision.evaluation.evaluate import evaluate
from vision.evaluation.results import encode_array
from vision.geometry.matching import pose_from_matches
from vision.geometry.rays import rays_to_cameras
from vision.geometry.task import GeometryModel

__all__ = ["to_results", "clip_results", "evaluate_geometry", "model_cameras"]


def _match_extrinsics(model: GeometryModel, outputs: dict[str, Any]) -> torch.Tensor:
    """``[B, S, 3, 4]`` cameras from learned matches (view 0 and unregistered views keep the head's)."""
    features = model.match_features(outputs)
    extrinsics = []
    for b in range(features.shape[0]):
        extr, inliers = pose_from_matches(features[b].cpu(), outputs["depth"][b, ..., 0].cpu(),
                                          outputs["intrinsics"][b].cpu(), model.patch_size)
        head = outputs["extrinsics"][b].cpu().to(extr.dtype)
        first = (torch.arange(len(extr)) == 0)[:, None, None]
        extrinsics.append(torch.where((inliers > 0)[:, None, None] | first, extr, head))
    return torch.stack(extrinsics)


@torch.no_grad()
def model_cameras(model: GeometryModel, outputs: dict[str, Any]) -> dict[str, torch.Tensor]:
    """Every camera path of ``model`` on ``outputs`` (``model(images)``), float32 ``[B, S, 3, 4]`` on the CPU, by
    results field: ``extrinsics`` (the model's cameras: solved when it has a solver, else the head's),
    ``head_extrinsics`` (with a solver), ``match_extrinsics`` (with a matching projection) and ``ray_extrinsics``
    (with a ray map)."""
    head = outputs["extrinsics"].float().cpu()
    cameras = {"extrinsics": head}
    if model.match is not None:
        cameras["match_extrinsics"] = _match_extrinsics(model, outputs).float()
    if model.solver is not None:
        fallback = cameras.get("match_extrinsics", head).double()
        cameras["extrinsics"] = model.solver.solve_outputs(outputs, fallback).float()
        cameras["head_extrinsics"] = head
    if "ray_origins" in outputs:
        cameras["ray_extrinsics"] = rays_to_cameras(outputs["ray_origins"].float(), outputs["ray_directions"].float(),
                                                    outputs["rays_conf"].float())[0].float().cpu()
    return cameras


@torch.no_grad()
def clip_results(model: GeometryModel, outputs: dict[str, Any],
                 image_ids: torch.Tensor) -> list[tuple[tuple[int, ...], list[dict]]]:
    """Results of a batch of B clips: ``[(clip image ids, [one entry per view])]``.

    Args:
        model: the model that produced ``outputs`` (its matching projection, if any, adds ``match_extrinsics``; its
            camera solver, if any, solves ``extrinsics`` and adds the head's as ``head_extrinsics``).
        outputs: ``model(images)`` for ``images [B, S, 3, H, W]`` (a ray map, ``ray_origins``, adds
            ``ray_extrinsics``).
        image_ids: ``[B, S]`` the clips' image ids (``collate_clips``' ``image_ids``).
    """
    depth = outputs["depth"][..., 0].float().cpu()
    points = outputs["world_points"].float().cpu()
    cameras = model_cameras(model, outputs)
    out = []
    for b, ids in enumerate(image_ids.tolist()):
        clip = tuple(int(i) for i in ids)
        entries = []
        for s, image_id in enumerate(clip):
            entry = {"image_id": image_id, "clip": list(clip), "depth": encode_array(depth[b, s].numpy()),
                     "world_points": encode_array(points[b, s].numpy())}
            entries.append({**entry, **{field: camera[b, s].tolist() for field, camera in cameras.items()}})
        out.append((clip, entries))
    return out


@torch.no_grad()
def evaluate_geometry(model: GeometryModel, split_path: str | Path, views: int = 4, image_size: int = 64,
                      max_clips: int | None = None, **options: Any) -> dict[str, Any]:
    """Run ``model`` on every clip of ``views`` images of a split (eval transform: a plain resize to
    ``image_size``; at most ``max_clips`` clips) and score the results: the flat metrics of
    :func:`vision.evaluation.geometry.evaluate_geometry_results` (``options``: its ``max_points``, ``seed``)."""
    split = load_split(split_path)
    dataset = MultiViewClipDataset(split, views, transform=build_multiview_transform(image_size, train=False))
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    results = []
    count = len(dataset) if max_clips is None else min(max_clips, len(dataset))
    for index in range(count):
        batch = collate_clips([dataset[index]])
        outputs = model(batch["images"].to(device))
        results += [entry for _, entries in clip_results(model, outputs, batch["image_ids"]) for entry in entries]
    model.train(was_training)
    return evaluate(split_path, results, "geometry", **options)

#: model outputs -> the task's results (the registry's fixed name, vision.tasks.PARTS)
to_results = clip_results
