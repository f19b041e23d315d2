"""Seeded fixtures for the evaluation tests: blob masks, a COCO detection split with noisy detections,
and a COCO-video tracking split with noisy tracking results."""

from __future__ import annotations

import contextlib
import copy
import io

import numpy as np
import pytest
from pycocotools.coco import COCO as PyCOCO
from pycocotools.cocoeval import COCOeval as PyCOCOeval
from scipy import ndimage

from vision.cli import evaluate as evaluate_cli  # noqa: F401  (the entry point the tests call as evaluate_cli.main)
from vision.data.masks import encode_mask, mask_to_bbox
from vision.evaluation.detection import coco_ground_truth


def ellipse(h: int, w: int, cy: float, cx: float, ry: float, rx: float) -> np.ndarray:
    """Boolean ellipse mask [h, w]."""
    yy, xx = np.mgrid[0:h, 0:w]
    return ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1.0


def blob(rng: np.random.Generator, h: int, w: int, min_r: int = 4, max_r: int = 18) -> np.ndarray:
    """A random non-empty blob: an ellipse with a smooth random boundary perturbation."""
    while True:
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        ry, rx = rng.uniform(min_r, max_r), rng.uniform(min_r, max_r)
        noise = ndimage.gaussian_filter(rng.standard_normal((h, w)), 3) * 6
        yy, xx = np.mgrid[0:h, 0:w]
        m = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 + noise <= 1.0
        if m.any():
            return m


def perturb(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """A noisy copy of a mask: shifted by a few pixels and grown or shrunk."""
    out = np.roll(mask, (int(rng.integers(-3, 4)), int(rng.integers(-3, 4))), axis=(0, 1))
    op = rng.integers(0, 3)
    if op == 1:
        out = ndimage.binary_dilation(out, iterations=int(rng.integers(1, 3)))
    elif op == 2:
        out = ndimage.binary_erosion(out, iterations=1)
    return out


def make_detection_case(seed: int = 0, num_images: int = 36) -> tuple[dict, list[dict]]:
    """A split (with extra keys and no ``info``) and detections with bboxes, masks and scores.

    Images of varying size, three categories, 0-5 objects per image (some empty), crowd regions,
    some images without detections, noisy and false-positive detections with random scores."""
    rng = np.random.default_rng(seed)
    images, annotations, results = [], [], []
    categories = [{"id": c, "name": n, "split": s} for c, n, s in ((1, "mug", "iv"), (2, "box", "iv"),
                                                                   (5, "cone", "novel"))]
    ann_id = 0  # deliberately start at id 0: the evaluator must renumber
    for image_id in range(1, num_images + 1):
        h, w = int(rng.integers(60, 220)), int(rng.integers(60, 220))
        images.append({"id": image_id, "width": w, "height": h, "file_name": f"{image_id}.png",
                       "video_id": 1, "frame_index": image_id, "camera": {"K": np.eye(3).tolist()}})
        n_obj = 0 if image_id % 7 == 0 else int(rng.integers(0, 6))
        for _ in range(n_obj):
            m = blob(rng, h, w, 3, max(4, min(h, w) // 2))
            cat = int(rng.choice([1, 2, 5]))
            crowd = int(rng.random() < 0.1)
            rle = encode_mask(m)
            annotations.append({"id": ann_id, "image_id": image_id, "category_id": cat, "bbox": mask_to_bbox(m),
                                "area": float(m.sum()), "iscrowd": crowd, "segmentation": rle,
                                "track_id": ann_id + 100})
            ann_id += 1
            if image_id % 5 == 0 or rng.random() < 0.15:
                continue  # missed object / image without detections
            pm = perturb(rng, m)
            if not pm.any():
                pm = m
            pcat = cat if rng.random() < 0.85 else int(rng.choice([1, 2, 5]))
            results.append({"image_id": image_id, "category_id": pcat, "bbox": mask_to_bbox(pm),
                            "score": float(rng.random()), "segmentation": encode_mask(pm)})
        if image_id % 5 != 0:
            for _ in range(int(rng.integers(0, 3))):  # false positives
                fm = blob(rng, h, w, 3, 12)
                results.append({"image_id": image_id, "category_id": int(rng.choice([1, 2, 5])),
                                "bbox": mask_to_bbox(fm), "score": float(rng.random() * 0.6),
                                "segmentation": encode_mask(fm)})
    split = {"images": images, "annotations": annotations, "categories": categories,
             "videos": [{"id": 1, "name": "v", "width": 0, "height": 0, "ordered": False}],
             "tracks": []}
    return split, results


@pytest.fixture(scope="session")
def detection_case() -> tuple[dict, list[dict]]:
    return make_detection_case()


def label_sequence(rng: np.random.Generator, frames: int, h: int, w: int, objects: int) -> np.ndarray:
    """Label maps [T, H, W] (uint8, 0 = background) of moving, non-overlapping blobs, every object visible in
    every frame but with some frames where later objects occlude earlier ones."""
    maps = np.zeros((frames, h, w), dtype=np.uint8)
    starts = [(rng.uniform(0.25 * h, 0.75 * h), rng.uniform(0.25 * w, 0.75 * w)) for _ in range(objects)]
    vel = [(rng.uniform(-2, 2), rng.uniform(-2, 2)) for _ in range(objects)]
    radii = [(rng.uniform(5, 12), rng.uniform(5, 12)) for _ in range(objects)]
    for t in range(frames):
        for k in range(objects):
            cy = starts[k][0] + vel[k][0] * t
            cx = starts[k][1] + vel[k][1] * t
            maps[t][ellipse(h, w, cy, cx, *radii[k])] = k + 1
    return maps


def noisy_labels(rng: np.random.Generator, gt: np.ndarray) -> np.ndarray:
    """Predicted label maps: per object a perturbed mask (painted in order), some frames dropping an object."""
    pred = np.zeros_like(gt)
    for t in range(len(gt)):
        for k in np.unique(gt[t]):
            if k == 0 or rng.random() < 0.1:
                continue
            pred[t][perturb(rng, gt[t] == k)] = k
    return pred


def pycocotools_stats(split: dict, results: list[dict], iou_type: str, cat_ids=None,
                      max_dets=(1, 10, 100), use_cats: bool = True) -> dict:
    """The reference: plain pycocotools on the stripped ground truth (segm: masks only, as detectron2 does), with
    categories or, without ``use_cats``, class-agnostic (``params.useCats = 0``: every object and detection pooled per
    image). Empty results (which pycocotools' loadRes cannot read) become a result set without annotations."""
    gt = coco_ground_truth(split)
    dts = []
    for r in results:
        d = {"image_id": r["image_id"], "category_id": r["category_id"], "score": r["score"]}
        if iou_type == "bbox":
            d["bbox"] = list(r["bbox"])
        else:
            d["segmentation"] = copy.deepcopy(r["segmentation"])
        dts.append(d)
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = PyCOCO()
        coco_gt.dataset = copy.deepcopy(gt)
        coco_gt.createIndex()
        if dts:
            coco_dt = coco_gt.loadRes(dts)
        else:
            coco_dt = PyCOCO()
            coco_dt.dataset = {"images": copy.deepcopy(gt["images"]), "annotations": [],
                               "categories": copy.deepcopy(gt["categories"])}
            coco_dt.createIndex()
        ev = PyCOCOeval(coco_gt, coco_dt, iou_type)
        ev.params.maxDets = list(max_dets)
        ev.params.useCats = int(use_cats)
        if cat_ids is not None:
            ev.params.catIds = list(cat_ids)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    keys = ["AP", "AP50", "AP75", "APs", "APm", "APl", *(f"AR{m}" for m in max_dets), "ARs", "ARm", "ARl"]
    return dict(zip(keys, [float(v) for v in ev.stats]))
