"""Frames/s of G2TAM on real video at 480p for 1 and 8 objects, with and without masks, beside NanoTrack alone
(OpenCV's ``cv2.TrackerNano``, one object) in the same run.

    python benchmarks/bench_tracking_real_speed.py --ckpt runs/tracking/real/checkpoints/last.ckpt \\
        [--video ../shared/footage/mmaction2_basketball.mp4] [--frames 150] [--threads 2]

The clip's first ``--frames`` frames are decoded and resized to 640 x 480 beforehand (not timed). Objects: boxes of
``--objects`` sizes spread over the first frame (a 4 x 2 grid of 80 x 120 boxes), each prompted on frame 0. The
time counts the whole tracker (the real-perception backbone once per frame, every object, and the masks where
asked), on ``--threads`` torch, OpenCV and onnxruntime threads.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def grid_boxes(count: int, width: int = 640, height: int = 480) -> list[list[float]]:
    """``count`` (at most 8) 80 x 120 boxes on a 4 x 2 grid over the frame."""
    boxes = [[width * (0.1 + 0.22 * (k % 4)), height * (0.15 + 0.4 * (k // 4)), 80.0, 120.0] for k in range(8)]
    return boxes[:count]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ckpt", default="runs/tracking/real/checkpoints/last.ckpt")
    parser.add_argument("--video", default="../shared/footage/mmaction2_basketball.mp4")
    parser.add_argument("--frames", type=int, default=150)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    import cv2
    import torch

    from vision.data.video import read_video
    from vision.tracking.nanotrack_opencv import OpenCVNanoTracker
    from vision.tracking.real.masks import MASK_MODES
    from vision.tracking.real.predictor import RealTrackerPredictor

    torch.set_num_threads(args.threads)
    cv2.setNumThreads(args.threads)
    frames = read_video(args.video, max_frames=args.frames)
    frames = np.stack([cv2.resize(f, (640, 480), interpolation=cv2.INTER_LINEAR) for f in frames])
    rows = []
    tracker = OpenCVNanoTracker()
    start = time.perf_counter()
    tracker.init(frames[0], tuple(grid_boxes(1)[0]))
    for frame in frames[1:]:
        tracker.update(frame)
    rows.append(("nanotrack-opencv", 1, "none", len(frames) / (time.perf_counter() - start)))
    for masks in MASK_MODES:
        predictor = RealTrackerPredictor.from_checkpoint(args.ckpt, masks=masks)
        for count in (1, 8):
            prompts = {k + 1: (0, np.array(b)) for k, b in enumerate(grid_boxes(count))}
            start = time.perf_counter()
            for _ in predictor.run(frames, prompts):
                pass
            rows.append((predictor.name, count, masks, len(frames) / (time.perf_counter() - start)))
    print(f"{len(frames)} frames of {args.video} at 640x480, {args.threads} thread(s)")
    print("| tracker | objects | masks | frames/s |")
    print("|---|---:|---|---:|")
    for name, count, masks, fps in rows:
        print(f"| {name} | {count} | {masks} | {fps:.1f} |")


if __name__ == "__main__":
    main()
