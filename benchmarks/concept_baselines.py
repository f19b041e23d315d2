"""The concept baselines of issue 29 (item 6), timed on a split: (a) detect-then-track and (b) the tracker's text
prompt, one object per phrase (:mod:`vision.concept.baselines`, where they live and are tested; this script
re-exports them for the concept benchmark, which imports its siblings as ``from concept_baselines import ...``).

    python benchmarks/concept_baselines.py --split datasets/synthetic/val.json \
        --detector runs/detection/tiny/checkpoints/last.ckpt --tracker runs/tracking/tiny/checkpoints/last.ckpt \
        [--baselines detect_then_track,text_prompt] [--max-videos N] [--out DIR] [--threads N] [--repeat 3]

Each baseline runs on every video of the split (the first ``--max-videos``) with the phrases queried on it; the
tracker is the tracking protocol's (:func:`vision.tracking.inference.protocol_predictor`: windows of 8 views, one
anchor, G2TAM's second pass), the detector the checkpoint's with the phrases as vocabulary. Each baseline first
runs once on the first video untimed (lazy loads: the text encoder), then ``--repeat`` timed runs over the split.
Printed per baseline: videos, views, the median wall-clock seconds of the timed runs, views per second at that
median, instance records and tracks; ``--out`` writes each
baseline's results to ``DIR/<baseline>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
import torch

from vision.concept.baselines import BASELINES, detect_then_track, run_baseline, text_prompt_tracker
from vision.data.coco import load_split
from vision.detection.predictor import DetectorPredictor
from vision.tracking.inference import protocol_predictor
from vision.tracking.predictor import TrackerPredictor
from vision.tracking.task import load as load_tracker

__all__ = ["BASELINES", "detect_then_track", "text_prompt_tracker", "run_baseline", "load_predictors"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def load_predictors(detector: str | Path, tracker: str | Path,
                    device: str = "cpu") -> tuple[DetectorPredictor, TrackerPredictor]:
    """The detector (its training vocabulary until a baseline sets the phrases) and the protocol's tracker."""
    model, config = load_tracker(tracker, device=device)
    return (DetectorPredictor.from_checkpoint(detector, device=device),
            protocol_predictor(model, config.text_encoder, device=device))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", required=True, help="a COCO-video split JSON")
    ap.add_argument("--detector", required=True, help="an OOVDet checkpoint")
    ap.add_argument("--tracker", required=True, help="a G2TAM checkpoint")
    ap.add_argument("--baselines", default=",".join(BASELINES), help=f"comma-separated, of {', '.join(BASELINES)}")
    ap.add_argument("--max-videos", type=int, default=None)
    ap.add_argument("--out", type=Path, default=None, help="write DIR/<baseline>.json")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per baseline; the median is printed")
    args = ap.parse_args()
    names = [n for n in args.baselines.split(",") if n]
    unknown = [n for n in names if n not in BASELINES]
    if unknown:
        ap.error(f"unknown baseline {unknown[0]!r}; baselines: {', '.join(BASELINES)}")
    if args.repeat < 1:
        ap.error(f"--repeat must be >= 1, got {args.repeat}")
    if args.threads:
        torch.set_num_threads(args.threads)
    split = load_split(args.split)
    detector, tracker = load_predictors(args.detector, args.tracker)
    videos = sorted(split.videos)[:args.max_videos]
    views = sum(len(split.images_by_video[v]) for v in videos)
    print(f"split {args.split}: {len(videos)} videos, {views} views; torch threads {torch.get_num_threads()}")
    print(f"{'baseline':20s} {'videos':>6s} {'views':>6s} {'seconds':>8s} {'views/s':>8s} {'instances':>9s} "
          f"{'tracks':>6s}")
    for name in names:
        run_baseline(name, split, detector, tracker, max_videos=1)  # untimed: lazy loads (the text encoder)
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            records = run_baseline(name, split, detector, tracker, max_videos=args.max_videos)
            times.append(time.perf_counter() - start)
        seconds = float(np.median(times))
        instances = [r for r in records if "track_id" in r]
        tracks = len({(r["video_id"], r["track_id"]) for r in instances})
        print(f"{name:20s} {len(videos):6d} {views:6d} {seconds:8.2f} {views / seconds:8.2f} {len(instances):9d} "
              f"{tracks:6d}")
        if args.out is not None:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"{name}.json").write_text(json.dumps(records))


if __name__ == "__main__":
    main()
