"""NanoTracker in PyTorch (vision.tracking.nanotrack, v2 and v3) against OpenCV's cv2.TrackerNano on the registered
v2 ONNX pair (vision.tracking.nanotrack_opencv), on the CPU, on one real clip at its own resolution.

    python benchmarks/bench_nanotrack.py [--threads 2] [--reps 3] [--frames 100] [--weights ../shared/weights]
        [--clip ../shared/footage/mmaction2_basketball.mp4] [--box 222 111 46 119]

Each tracker starts from the same first-frame box (default: the blue-shirted player of the basketball clip) and
follows it through the next ``--frames - 1`` frames, decoded once beforehand (RGB); a pass (init + every update) is
timed with ``time.perf_counter``. The trackers take turns pass by pass, ``--reps`` passes each after one warm-up
pass, with a pause between passes (a backend's idle threads keep spinning for a moment after its calls). Torch gets
``torch.set_num_threads(--threads)``, OpenCV ``cv2.setNumThreads(--threads)``. Printed: updates per second (best
and median pass), their ratio to OpenCV's, and the mean and min IoU of each track against OpenCV's (the torch box
truncated to ints as OpenCV truncates its own), with the load average before and after (the machine may be shared).
``--weights`` is a folder holding the registered files (it becomes ``VISION_WEIGHTS_DIR``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _read_frames(path: Path, count: int):
    import cv2
    import numpy as np

    capture = cv2.VideoCapture(str(path))
    frames = []
    while len(frames) < count:
        ok, frame = capture.read()
        if not ok:
            break
        frames.append(np.ascontiguousarray(frame[:, :, ::-1]))  # BGR -> RGB, the package's frames
    capture.release()
    if len(frames) < 2:
        raise SystemExit(f"cannot read frames from {path}")
    return frames


def _pass(tracker, frames, box):
    """One pass: init on frame 0, update on the rest. Returns (seconds of the updates, boxes)."""
    import numpy as np

    tracker.init(frames[0], box)
    start = time.perf_counter()
    boxes = [tracker.update(frame)[0] for frame in frames[1:]]
    return time.perf_counter() - start, np.array(boxes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--frames", type=int, default=100)
    parser.add_argument("--clip", type=Path, default=REPO.parent / "shared" / "footage" / "mmaction2_basketball.mp4")
    parser.add_argument("--box", type=int, nargs=4, default=(222, 111, 46, 119), metavar=("X", "Y", "W", "H"))
    parser.add_argument("--weights", default=None, help="a folder holding the registered files")
    args = parser.parse_args(argv)
    if args.weights:
        os.environ["VISION_WEIGHTS_DIR"] = args.weights

    import cv2
    import numpy as np
    import torch

    from vision.evaluation.openset import box_iou_xywh
    from vision.tracking.nanotrack import NanoTracker
    from vision.tracking.nanotrack_opencv import OpenCVNanoTracker

    torch.set_num_threads(args.threads)
    cv2.setNumThreads(args.threads)
    frames = _read_frames(args.clip, args.frames)
    box = tuple(args.box)
    trackers = {"opencv (onnx v2)": OpenCVNanoTracker(), "torch v2": NanoTracker("v2"),
                "torch v3": NanoTracker("v3")}
    tracks = {name: _pass(tracker, frames, box)[1] for name, tracker in trackers.items()}  # warm-up pass
    load_before = os.getloadavg()
    seconds: dict[str, list[float]] = {name: [] for name in trackers}
    for _ in range(args.reps):
        for name, tracker in trackers.items():
            time.sleep(0.2)  # the previous tracker's threads stop spinning
            seconds[name].append(_pass(tracker, frames, box)[0])
    load_after = os.getloadavg()

    updates = len(frames) - 1
    height, width = frames[0].shape[:2]
    reference = tracks["opencv (onnx v2)"]
    print(f"NanoTrack on {args.clip.name} ({width} x {height}), {updates} updates from box {list(box)}; "
          f"{args.threads} threads (torch {torch.__version__}, opencv {cv2.__version__}), {args.reps} passes after "
          f"a warm-up; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print(f"{'tracker':18s} {'best fps':>9s} {'median fps':>11s} {'/ opencv':>9s} {'mean IoU':>9s} {'min IoU':>8s}")
    opencv_median = updates / statistics.median(seconds["opencv (onnx v2)"])
    for name in trackers:
        best, median = updates / min(seconds[name]), updates / statistics.median(seconds[name])
        track = tracks[name] if name.startswith("opencv") else np.trunc(tracks[name])
        ious = np.array([box_iou_xywh(a, b)[0, 0] for a, b in zip(track, reference)])
        print(f"{name:18s} {best:9.1f} {median:11.1f} {median / opencv_median:9.2f} {ious.mean():9.4f} "
              f"{ious.min():8.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
