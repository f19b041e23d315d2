"""bf16 against float32 on the CPU with the trained tiny checkpoints (``make train``), on their synthetic
validation / test splits: what a user loses to ``--precision bf16`` (mixed precision, :mod:`vision.device`).

    python benchmarks/bench_precision.py [--runs runs] [--data datasets/synthetic] [--clips 8]

Rows, per task of the registry (:data:`MEASURED`): the geometry backbone's depth / point-map / pose-encoding
differences relative to each output's largest magnitude (the first ``--clips`` 4-view clips of ``geometry_val``);
the detector's AP50 and score differences on ``oov_test``; the tracker's point-prompt J&F (the protocol of
:mod:`vision.tracking.inference`) on ``tracking_val``; a task without a measurement here gets a row saying so. Both
precisions run in this process on the same inputs; every figure is measured here.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from vision.tasks import task_names

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


Row = tuple[str, str, str]  # (what, float32, bf16)


def geometry_rows(ckpt: Path, split: Path, clips: int) -> list[Row]:
    from vision.data.coco import load_split
    from vision.data.datasets import MultiViewClipDataset, collate_clips
    from vision.device import autocast
    from vision.geometry.task import load

    model, _ = load(ckpt)
    dataset = MultiViewClipDataset(load_split(split), views=4)
    gaps = {"depth": 0.0, "world_points": 0.0, "pose_enc": 0.0}
    with torch.no_grad():
        for i in range(min(clips, len(dataset))):
            images = collate_clips([dataset[i]])["images"]
            full = model.backbone(images)
            with autocast("cpu", torch.bfloat16):
                half = model.backbone(images)
            for key in gaps:
                gap = float((full[key] - half[key].float()).abs().max() / full[key].abs().max())
                gaps[key] = max(gaps[key], gap)
    return [(f"geometry: {key}, largest difference / largest value ({clips} clips)", "-", f"{gap:.3g}")
            for key, gap in gaps.items()]


def detection_rows(ckpt: Path, split: Path, clips: int) -> list[Row]:
    from vision.detection.predictor import DetectorPredictor
    from vision.detection.results import UNKNOWN_CATEGORY_ID
    from vision.evaluation.evaluate import evaluate

    scores, results = {}, {}
    for precision in ("32", "bf16"):
        predictor = DetectorPredictor.from_checkpoint(ckpt, precision=precision)
        results[precision] = predictor.predict_split(split)
        scores[precision] = evaluate(split, results[precision], "detection", unknown_category_id=UNKNOWN_CATEGORY_ID)
    key = "IV_AP50" if "IV_AP50" in scores["32"] else "AP50"
    # the same detections in both: the largest score difference over each image's five best
    best = {p: {} for p in results}
    for p, rows in results.items():
        for r in rows:
            best[p].setdefault(r["image_id"], []).append(r["score"])
    gap = max(abs(a - b) for image in best["32"]
              for a, b in zip(sorted(best["32"][image])[-5:], sorted(best["bf16"].get(image, []))[-5:]))
    return [(f"detection: {key} ({split.name})", f"{scores['32'][key]:.4f}", f"{scores['bf16'][key]:.4f}"),
            ("detection: largest difference of the k-th best score of an image, k <= 5", "-", f"{gap:.3g}")]


def tracking_rows(ckpt: Path, split: Path, clips: int) -> list[Row]:
    from vision.data.coco import load_split
    from vision.evaluation.evaluate import evaluate
    from vision.tracking.inference import MAX_ANCHORS, WINDOW_SIZE, track_split, tracking_options
    from vision.tracking.predictor import TrackerPredictor

    loaded = load_split(split)
    figures = {}
    for precision in ("32", "bf16"):
        predictor = TrackerPredictor.from_checkpoint(ckpt, text_encoder=None, window_size=WINDOW_SIZE,
                                                     max_anchors=MAX_ANCHORS, precision=precision)
        results = track_split(predictor, loaded, ["point"])
        figures[precision] = evaluate(split, results, "tracking", **tracking_options(split))
    key = next(k for k in figures["32"] if "J&F" in k)
    return [(f"tracking: point-prompt {key} ({split.name})", f"{figures['32'][key]:.4f}",
             f"{figures['bf16'][key]:.4f}")]


#: Per registered task, its rows (``rows(checkpoint, split, clips)``; only geometry reads ``clips``) and the split of
#: ``--data`` they run on. A registered task missing here is listed as not measured; a name here that is not
#: registered is an error.
MEASURED: dict[str, tuple[Callable[[Path, Path, int], list[Row]], str]] = {
    "geometry": (geometry_rows, "geometry_val.json"), "detection": (detection_rows, "oov_test.json"),
    "tracking": (tracking_rows, "tracking_val.json")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, default=Path("runs"))
    parser.add_argument("--data", type=Path, default=Path("datasets/synthetic"))
    parser.add_argument("--clips", type=int, default=8)
    args = parser.parse_args(argv)
    torch.set_num_threads(max(1, (os.cpu_count() or 2) // 2))
    unknown = sorted(set(MEASURED) - set(task_names()))
    if unknown:
        print(f"error: MEASURED names tasks that are not registered: {', '.join(unknown)}", file=sys.stderr)
        return 2
    ckpt = {t: args.runs / t / "tiny" / "checkpoints" / "last.ckpt" for t in MEASURED}
    missing = [str(p) for p in ckpt.values() if not p.is_file()]
    if missing:
        print(f"error: no checkpoint at {', '.join(missing)}: run `make train` first", file=sys.stderr)
        return 2
    started = time.perf_counter()
    rows: list[Row] = []
    for task in task_names():
        if task not in MEASURED:
            rows.append((f"{task}: not measured (no bf16 comparison for it in this benchmark)", "-", "-"))
            continue
        measure, split = MEASURED[task]
        rows += measure(ckpt[task], args.data / split, args.clips)
    print(f"CPU, torch {torch.__version__}, {time.perf_counter() - started:.0f} s\n")
    print("| what | float32 | bf16 |\n|---|---|---|")
    for what, full, half in rows:
        print(f"| {what} | {full} | {half} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
