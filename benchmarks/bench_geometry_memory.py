"""How far can geometry alone carry an object from one view to the others? The learning-free 3D-proximity
tracker, run on predicted point maps beside ground-truth ones: the ceiling G2TAM's geometry memory gives it.

    python benchmarks/bench_geometry_memory.py --ckpt runs/geometry/tiny/checkpoints/last.ckpt \
        --split datasets/synthetic/tracking_val.json --split runs/tracking/eval/val_video.json [--views 4]

For every clip of ``--views`` views (eval transform, 64 px) and every object visible in view 0 with at least 5
pixels, the object's ground-truth mask on view 0 is lifted to 3D through the point map; on every other view where
the object is visible (at least 5 pixels), the predicted mask is the set of pixels whose 3D point lies within
``r`` of one of those points (``r`` in units of the clip's mean point norm, as the backbone's normalisation). The
table gives the mean IoU with the object's ground-truth mask over such (object, view) pairs, per radius, with the
backbone's predicted world points (``predicted``, the point head's: what G2TAM's memory reads), with its depth
unprojected by its default cameras (``depth+cameras``: :func:`vision.geometry.results.model_cameras`, the camera
solver's) and with the ground-truth points (depth unprojected with the ground-truth cameras, in camera 0's frame).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from vision.data.coco import load_split
from vision.data.datasets import MultiViewClipDataset, collate_clips
from vision.data.transforms import build_multiview_transform
from vision.geometry.camera import depth_to_world_points
from vision.geometry.losses import normalize_scene
from vision.geometry.results import model_cameras
from vision.geometry.task import load

RADII = (0.0125, 0.025, 0.05, 0.1)  # around the scales of SpatialEncoder.DEFAULT_PROXIMITY_SIGMAS
MIN_PIXELS = 5
SOURCES = ("predicted", "depth+cameras", "ground truth")


def proximity_iou(points: torch.Tensor, ids: torch.Tensor, radius: float) -> list[float]:
    """IoUs of the learning-free tracker (see the module docstring) for one clip.

    Args:
        points: ``[S, H, W, 3]`` world points of the clip; ids: ``[S, H, W]`` instance ids (0 = background).
    """
    scale = points.norm(dim=-1).mean()
    s, h, w = ids.shape
    flat = points.reshape(s, h * w, 3)
    out = []
    for k in ids.unique().tolist():
        source = ids[0] == k
        if k == 0 or int(source.sum()) < MIN_PIXELS:
            continue
        lifted = points[0][source]
        for v in range(1, s):
            gt = ids[v] == k
            if int(gt.sum()) < MIN_PIXELS:
                continue
            near = (torch.cdist(flat[v], lifted).amin(1) / scale < radius).view(h, w)
            out.append(float((near & gt).sum()) / max(1.0, float((near | gt).sum())))
    return out


@torch.no_grad()
def evaluate(model: torch.nn.Module, split: str, views: int, image_size: int) -> dict[str, list[float]]:
    dataset = MultiViewClipDataset(load_split(split), views, transform=build_multiview_transform(image_size,
                                                                                                  train=False))
    ious: dict[str, list[float]] = {}
    for index in range(len(dataset)):
        batch = collate_clips([dataset[index]])
        outputs = model(batch["images"])
        pred = outputs["world_points"][0]
        solved = depth_to_world_points(outputs["depth"][..., 0], model_cameras(model, outputs)["extrinsics"],
                                       outputs["intrinsics"])[0]
        valid = batch["valid_depth"] & (batch["depth"] > 0)
        gt = normalize_scene(batch["extrinsics"], batch["intrinsics"], batch["depth"], None, valid).world_points[0]
        for source, points in zip(SOURCES, (pred, solved, gt)):
            for r in RADII:
                ious.setdefault(f"{source}@{r}", []).extend(proximity_iou(points, batch["instance_ids"][0], r))
    return ious


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt", required=True, help="GeometryModule checkpoint")
    ap.add_argument("--split", action="append", required=True, help="split JSON with depth, cameras and masks")
    ap.add_argument("--views", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model, config = load(args.ckpt)
    print(f"{'split':40s}{'points':>14s}" + "".join(f"{'r=' + str(r):>9s}" for r in RADII) + f"{'pairs':>8s}")
    for split in args.split:
        ious = evaluate(model, split, args.views, config.image_size)
        for source in SOURCES:
            row = [ious[f"{source}@{r}"] for r in RADII]
            cells = "".join(f"{sum(v) / max(1, len(v)):>9.3f}" for v in row)
            print(f"{Path(split).name:40s}{source:>14s}{cells}{len(row[0]):>8d}")


if __name__ == "__main__":
    main()
