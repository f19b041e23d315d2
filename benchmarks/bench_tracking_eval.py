"""Scoring video object segmentation at DAVIS-val size: ``vision evaluate --task tracking`` against PyPI
``vos-benchmark`` on the same masks.

    python benchmarks/bench_tracking_eval.py [--videos 30] [--frames 67] [--objects 2] [--reps 3] [--out DIR]

Generates, in ``--out`` (kept, and reused when it holds files of the same sizes) or else in a temporary folder, a
DAVIS-2017-val-sized case: ``--videos`` videos of ``--frames`` 854 x 480 frames, ``--objects`` moving ellipses each
(30 x 67 x 2: 2,010 frames, 60 objects; some enter late, leave early or overlap), as palette PNGs of object ids
(``gt/<video>/<frame>.png``) and a prediction of each (``pred/...``: the ellipses moved, resized, sometimes missed).
The same masks are written as a COCO-video split and a results file (RLE; what ``vision prepare vos`` and the
tracker's predictions give).

Each measurement runs in a fresh process that first imports both libraries (imports are not timed):

- vos-benchmark: ``benchmark([gt], [pred], num_processes=N)`` on the PNG folders (``--processes``, default 1: one
  worker process; its own default is one per core), first and last frames skipped (its default);
- ours: ``vision.cli.evaluate.main(["--split", ..., "--results", ..., "--task", "tracking",
  "--skip-first-and-last"])``: reads and validates both JSON files and scores with vos-benchmark's protocol.

The table gives min and median over ``--reps`` runs (the tools in turn within each) and the ratio ours /
vos-benchmark; J, F and J&F of both are compared (vos-benchmark prints percent: divided by 100).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_loading import child_json  # run as a script, this folder is on the path

HEIGHT, WIDTH = 480, 854


def _ellipse(cx: float, cy: float, rx: float, ry: float) -> np.ndarray:
    ys, xs = np.ogrid[:HEIGHT, :WIDTH]
    return ((xs + 0.5 - cx) / rx) ** 2 + ((ys + 0.5 - cy) / ry) ** 2 <= 1.0


def generate(out: Path, videos: int, frames: int, objects: int, seed: int = 0) -> tuple[Path, Path, Path, Path]:
    """Write the PNG folders, the split and the results (reused when ``out`` holds a case of these sizes):
    (gt folder, pred folder, split, results)."""
    from PIL import Image

    from vision.data.masks import encode_mask, mask_to_bbox

    gt_root, pred_root = out / "gt", out / "pred"
    split_path, results_path, stamp = out / "split.json", out / "results.json", out / "size.json"
    wanted = {"videos": videos, "frames": frames, "objects": objects, "seed": seed}
    if stamp.exists() and json.loads(stamp.read_text()) == wanted:
        return gt_root, pred_root, split_path, results_path
    rng = np.random.default_rng(seed)
    palette = (np.arange(256 * 3) * 37 % 256).astype(np.uint8).tolist()
    split = {"videos": [], "images": [], "annotations": [], "tracks": [], "categories": [{"id": 1, "name": "object"}]}
    results = []
    image_id = ann_id = 0
    for v in range(videos):
        name = f"video{v:03d}"
        split["videos"].append({"id": v + 1, "name": name, "width": WIDTH, "height": HEIGHT, "ordered": True})
        paths = {}
        tracks = []
        for o in range(objects):
            track = v * objects + o + 1
            tracks.append((track, o + 1, rng.uniform(100, 750), rng.uniform(80, 400), rng.normal(0, 4, 2),
                           rng.uniform(30, 120), rng.uniform(30, 100),
                           int(rng.integers(0, frames // 3)) if o else 0,  # later objects may enter late
                           frames - (int(rng.integers(0, frames // 4)) if rng.random() < 0.3 else 0)))
            split["tracks"].append({"id": track, "video_id": v + 1, "category_id": 1, "object_id": o + 1})
        for kind in ("gt", "pred"):
            paths[kind] = out / kind / name
            paths[kind].mkdir(parents=True, exist_ok=True)
        for t in range(frames):
            image_id += 1
            split["images"].append({"id": image_id, "video_id": v + 1, "frame_index": t, "width": WIDTH,
                                    "height": HEIGHT, "file_name": f"{name}/{t:05d}.jpg"})
            ids = {kind: np.zeros((HEIGHT, WIDTH), np.uint8) for kind in ("gt", "pred")}
            for track, oid, x, y, step, rx, ry, enter, leave in tracks:
                if not enter <= t < leave:
                    continue
                cx, cy = x + step[0] * t, y + step[1] * t
                ids["gt"][_ellipse(cx, cy, rx, ry)] = oid
                if rng.random() > 0.05:  # the prediction misses the object in some frames
                    ids["pred"][_ellipse(cx + rng.normal(0, 6), cy + rng.normal(0, 6), rx * rng.uniform(0.85, 1.15),
                                         ry * rng.uniform(0.85, 1.15))] = oid
            for kind in ("gt", "pred"):
                png = Image.fromarray(ids[kind], mode="P")
                png.putpalette(palette)
                png.save(paths[kind] / f"{t:05d}.png")
            for track, oid, *_ in tracks:
                for kind in ("gt", "pred"):
                    mask = ids[kind] == oid
                    if not mask.any():
                        continue
                    rle = encode_mask(mask)
                    if kind == "gt":
                        ann_id += 1
                        split["annotations"].append({"id": ann_id, "image_id": image_id, "category_id": 1,
                                                     "track_id": track, "segmentation": rle, "iscrowd": 0,
                                                     "area": int(mask.sum()), "bbox": mask_to_bbox(mask)})
                    else:
                        results.append({"video_id": v + 1, "track_id": track, "image_id": image_id,
                                        "category_id": 1, "segmentation": rle, "score": 1.0})
        print(f"  generated {v + 1} / {videos} videos", file=sys.stderr)
    split_path.write_text(json.dumps(split))
    results_path.write_text(json.dumps(results))
    stamp.write_text(json.dumps(wanted))
    return gt_root, pred_root, split_path, results_path


def _measure(tool: str, gt: str, pred: str, split: str, results: str, processes: str) -> None:
    """Child process: import both libraries, then time one scoring; print JSON (J, F, J&F on the 0-1 scale)."""
    import vos_benchmark.benchmark

    import vision.cli.evaluate
    import vision.evaluation.tracking  # noqa: F401  (imports are not timed)

    start = time.perf_counter()
    if tool == "vos-benchmark":
        with contextlib.redirect_stdout(io.StringIO()):
            jf, j, f = (values[0] / 100 for values in vos_benchmark.benchmark.benchmark(
                [gt], [pred], num_processes=int(processes), verbose=False)[:3])
    else:
        out = Path(split).parent / "ours_metrics.json"
        with contextlib.redirect_stdout(io.StringIO()):
            code = vision.cli.evaluate.main(["--split", split, "--results", results, "--task", "tracking",
                                             "--skip-first-and-last", "--out", str(out)])
        if code != 0:
            raise SystemExit(f"vision evaluate failed with code {code}")
        metrics = json.loads(out.read_text())
        jf, j, f = metrics["J&F"], metrics["J"], metrics["F"]
    print(json.dumps({"seconds": time.perf_counter() - start, "J&F": jf, "J": j, "F": f}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--videos", type=int, default=30)
    parser.add_argument("--frames", type=int, default=67)
    parser.add_argument("--objects", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--processes", type=int, default=1, help="vos-benchmark's worker processes")
    parser.add_argument("--out", type=Path, default=None, help="keep the generated files here (and reuse them)")
    parser.add_argument("--_measure", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._measure:
        _measure(*args._measure)
        return
    out = args.out or Path(tempfile.mkdtemp(prefix="bench_tracking_eval_"))
    try:
        files = [str(p) for p in generate(out, args.videos, args.frames, args.objects)]
        runs: dict[str, list[dict]] = {"ours": [], "vos-benchmark": []}
        for _ in range(args.reps):
            for tool in runs:
                runs[tool].append(child_json([sys.executable, __file__, "--_measure", tool, *files,
                                              str(args.processes)], f"{tool} measurement"))
        print(f"{args.videos} videos x {args.frames} frames ({args.videos * args.frames} frames) at {WIDTH} x "
              f"{HEIGHT}, {args.videos * args.objects} objects; vos-benchmark with {args.processes} worker "
              f"process(es); first and last frames skipped")
        print(f"{'tool':<15}{'min s':>8}{'median s':>10}{'J&F':>8}{'J':>8}{'F':>8}")
        seconds = {tool: [r["seconds"] for r in rs] for tool, rs in runs.items()}
        for tool, rs in runs.items():
            print(f"{tool:<15}{min(seconds[tool]):>8.2f}{statistics.median(seconds[tool]):>10.2f}"
                  f"{rs[0]['J&F']:>8.4f}{rs[0]['J']:>8.4f}{rs[0]['F']:>8.4f}")
        worst = max(abs(runs["ours"][0][k] - runs["vos-benchmark"][0][k]) for k in ("J&F", "J", "F"))
        print(f"ratio ours / vos-benchmark: min {min(seconds['ours']) / min(seconds['vos-benchmark']):.3f}, median "
              f"{statistics.median(seconds['ours']) / statistics.median(seconds['vos-benchmark']):.3f} "
              f"(target <= 1.0); largest difference of J, F, J&F: {worst:.2e}")
    finally:
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
