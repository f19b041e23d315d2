"""Scoring detections: ``vision evaluate --task detection`` (bbox + segm) against pycocotools' ``COCOeval``.

    python benchmarks/bench_evaluate.py [--images 5000] [--annotations 36000] [--detections 107000] [--reps 3]
                                        [--out DIR] [--profile]

Generates, in ``--out`` (kept, and reused when it already holds files of the same sizes) or else in a temporary
folder (removed), a split sized like COCO val 2017 by default (5k images, 36k annotations with compressed-RLE
masks, 80 categories; :func:`bench_loading.generate`) and a results file of ``--detections`` detections with
boxes, compressed-RLE masks and scores: per image, jittered copies of its objects (some matched at high IoU, some
at low) and false positives, scores rounded to two decimals (many ties).

Each measurement runs in a fresh Python process that first imports both libraries, then times the whole scoring
of both IoU types from the two JSON files:

- ours: ``vision.cli.evaluate.main(["--split", ..., "--results", ..., "--task", "detection"])`` (reads and
  validates the split and every result, scores bbox and segm, prints the table);
- pycocotools: ``COCO(split)``, the results read with ``json``, ``loadRes`` and ``COCOeval`` ``evaluate`` /
  ``accumulate`` / ``summarize`` for ``bbox`` and for ``segm`` (its own printing silenced); for ``segm`` the results
  lose their ``bbox`` first, as detectron2 does, so that detection areas come from the masks (our convention).

The table gives the minimum and median over ``--reps`` runs and the ratio ours / pycocotools; the twelve figures
of both IoU types are compared (they must be identical). ``--profile`` prints cProfile's top lines of ours.

``--process`` times them as a user runs them instead: each run is a whole fresh process, started to finished, with
its imports, measured from outside (wall time, and peak RSS from ``os.wait4``): the ``vision evaluate`` console
script of this environment (``--split --results --task detection --out``; its default ``--processes``, and
``--processes 1`` beside it) against a pycocotools script (:data:`PYCOCOTOOLS_SCRIPT`, written next to the files:
the scoring above, its figures written as JSON). They run in turn within each repetition. ``--iou-workers`` times
faster-coco-eval's mask IoUs with its default thread pool and with the one thread our scorer uses.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench_loading import child_json, generate, profile_top  # run as a script, this folder is on the path

ROOT = Path(__file__).resolve().parents[1]


def _jittered_mask(rng: np.random.Generator, box: list[float], width: int, height: int) -> np.ndarray:
    """A filled ellipse inside ``box`` (XYWH), moved and scaled at random: ``uint8 [H, W]`` (Fortran order)."""
    x, y, w, h = box
    cx = x + w / 2 + rng.normal(0, 0.1 * w + 0.5)
    cy = y + h / 2 + rng.normal(0, 0.1 * h + 0.5)
    rx = max(w / 2 * math.exp(rng.normal(0, 0.15)), 1.0)
    ry = max(h / 2 * math.exp(rng.normal(0, 0.15)), 1.0)
    x0, x1 = max(int(cx - rx), 0), min(int(math.ceil(cx + rx)) + 1, width)
    y0, y1 = max(int(cy - ry), 0), min(int(math.ceil(cy + ry)) + 1, height)
    mask = np.zeros((height, width), np.uint8, order="F")
    if x1 > x0 and y1 > y0:
        ys, xs = np.ogrid[y0:y1, x0:x1]
        mask[y0:y1, x0:x1] = (((xs + 0.5 - cx) / rx) ** 2 + ((ys + 0.5 - cy) / ry) ** 2 <= 1.0)
    if not mask.any():
        mask[min(int(cy), height - 1), min(int(cx), width - 1)] = 1
    return mask


def make_results(split: Path, out: Path, n_detections: int, seed: int = 1) -> Path:
    """Write ``results.json``: for each ground-truth object one or two jittered copies (same or another category),
    the rest false positives on random images; reused when ``out`` already holds one of this size."""
    from pycocotools import mask as mask_utils

    path = out / "results.json"
    stamp = out / "results_size.json"
    wanted = {"detections": n_detections, "seed": seed, "split": split.name}
    if stamp.exists() and path.exists() and json.loads(stamp.read_text()) == wanted:
        return path
    gt = json.loads(split.read_text())
    images = {img["id"]: img for img in gt["images"]}
    anns = gt["annotations"]
    rng = np.random.default_rng(seed)
    results = []
    while len(results) < n_detections:
        if rng.random() < 0.75:  # a copy of an object, sometimes of another category
            ann = anns[int(rng.integers(len(anns)))]
            img = images[ann["image_id"]]
            category = ann["category_id"] if rng.random() < 0.8 else int(rng.integers(1, 81))
            box = ann["bbox"]
        else:  # a false positive anywhere
            img = images[int(rng.integers(1, len(images) + 1))]
            category = int(rng.integers(1, 81))
            w = math.exp(rng.uniform(math.log(4), math.log(0.5 * img["width"])))
            h = min(w * math.exp(rng.uniform(-0.7, 0.7)), 0.5 * img["height"])
            box = [rng.uniform(0, img["width"] - w), rng.uniform(0, img["height"] - h), w, h]
        mask = _jittered_mask(rng, box, img["width"], img["height"])
        rle = mask_utils.encode(mask)
        x, y, w, h = mask_utils.toBbox(rle).tolist()
        results.append({"image_id": img["id"], "category_id": category, "bbox": [x, y, w, h],
                        "score": round(float(rng.uniform(0.01, 1.0)), 2),
                        "segmentation": {"size": rle["size"], "counts": rle["counts"].decode("ascii")}})
        if len(results) % 20000 == 0:
            print(f"  generated {len(results)} / {n_detections} detections", file=sys.stderr)
    path.write_text(json.dumps(results, separators=(",", ":")))
    stamp.write_text(json.dumps(wanted))
    return path


def _ours(split: Path, results: Path) -> dict:
    from vision.cli.evaluate import main

    out = split.parent / "ours_metrics.json"
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["--split", str(split), "--results", str(results), "--task", "detection", "--out", str(out)])
    if code != 0:
        raise SystemExit(f"vision evaluate failed with code {code}")
    return json.loads(out.read_text())


#: What a user scoring with pycocotools runs (``python score.py SPLIT RESULTS OUT``); :func:`_pycocotools` runs the
#: same text in this process. Without the box, segm detection areas come from the masks (as detectron2).
PYCOCOTOOLS_SCRIPT = '''import contextlib, io, json, sys
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

split, results, out = sys.argv[1:4]
metrics = {}
with contextlib.redirect_stdout(io.StringIO()):
    gt = COCO(split)
    with open(results) as f:
        detections = json.load(f)
    for iou_type in ("bbox", "segm"):
        if iou_type == "segm":
            detections = [{k: v for k, v in d.items() if k != "bbox"} for d in detections]
        evaluator = COCOeval(gt, gt.loadRes(detections), iou_type)
        evaluator.evaluate()
        evaluator.accumulate()
        evaluator.summarize()
        metrics[iou_type] = [float(v) for v in evaluator.stats]
with open(out, "w") as f:
    json.dump(metrics, f)
'''


def _pycocotools(split: Path, results: Path) -> dict:
    """The pycocotools scoring, in this process: :data:`PYCOCOTOOLS_SCRIPT` run as ``__main__``."""
    out = split.parent / "pycocotools_metrics.json"
    argv = sys.argv
    sys.argv = ["score.py", str(split), str(results), str(out)]
    try:
        exec(compile(PYCOCOTOOLS_SCRIPT, "score.py", "exec"), {"__name__": "__main__"})
    finally:
        sys.argv = argv
    return json.loads(out.read_text())


def _timed_process(cmd: list[str], what: str) -> tuple[float, float]:
    """Run ``cmd`` as a fresh process: (wall seconds from start to exit, its peak RSS in MiB)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=str(ROOT))
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode != 0:
        raise SystemExit(f"{what} failed with code {proc.returncode}:\n{stderr[-3000:]}")
    return seconds, usage.ru_maxrss / 1024


def _process_runs(split: Path, results: Path, reps: int) -> tuple[dict[str, list[tuple[float, float]]], dict, dict]:
    """``reps`` process runs of each tool, in turn: ``{tool: [(seconds, peak MiB)]}``, our metrics, theirs."""
    script = split.parent / "score_pycocotools.py"
    script.write_text(PYCOCOTOOLS_SCRIPT)
    ours_out, ref_out = split.parent / "process_ours.json", split.parent / "process_pycocotools.json"
    cli = [str(Path(sys.executable).parent / "vision"), "evaluate"]
    ours = [*cli, "--split", str(split), "--results", str(results), "--task", "detection", "--out", str(ours_out)]
    cmds = {"ours": ours, "ours, 1 process": ours + ["--processes", "1"],
            "pycocotools": [sys.executable, str(script), str(split), str(results), str(ref_out)]}
    runs: dict[str, list[tuple[float, float]]] = {tool: [] for tool in cmds}
    for _ in range(reps):
        for tool, cmd in cmds.items():
            runs[tool].append(_timed_process(cmd, tool))
    return runs, json.loads(ours_out.read_text()), json.loads(ref_out.read_text())


def _iou_workers(split: Path, results: Path, reps: int) -> None:
    """Seconds of faster-coco-eval's ``evaluate`` on the mask IoUs with its thread pool (8 workers, its default)
    and with one thread (what :func:`vision.evaluation.detection.coco_ap` uses), in turn within each repetition."""
    from faster_coco_eval import COCO, COCOeval_faster

    from vision.evaluation.detection import _results_for, coco_ground_truth
    from vision.evaluation.results import load_document, load_results

    gt, _ = load_document(split, dict, "a split must be a JSON object", "split")
    dets, _ = load_results(results)
    times: dict[int, list[float]] = {8: [], 1: []}
    for _ in range(reps):
        for workers in times:
            coco_gt = COCO(coco_ground_truth(gt, need_segmentation=True))
            evaluator = COCOeval_faster(coco_gt, coco_gt.loadRes(_results_for(dets, "segm")), "segm",
                                        print_function=lambda *a: None, rle_iou_max_workers=workers)
            start = time.perf_counter()
            evaluator.evaluate()
            times[workers].append(time.perf_counter() - start)
    print("faster-coco-eval segm evaluate(), seconds (min / median):")
    for workers, values in times.items():
        print(f"  rle_iou_max_workers={workers}: {min(values):.2f} / {statistics.median(values):.2f}")


def _measure(tool: str, split: str, results: str) -> None:
    """Child process: import both libraries, then time one scoring; print JSON."""
    import pycocotools.cocoeval  # noqa: F401  (imports are not timed)

    import vision.cli.evaluate  # noqa: F401

    run = _ours if tool == "ours" else _pycocotools
    start = time.perf_counter()
    metrics = run(Path(split), Path(results))
    print(json.dumps({"seconds": time.perf_counter() - start, "metrics": metrics}))


def _run_child(tool: str, split: Path, results: Path) -> dict:
    return child_json([sys.executable, __file__, "--_measure", tool, str(split), str(results)],
                      f"{tool} measurement")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=5000)
    parser.add_argument("--annotations", type=int, default=36000)
    parser.add_argument("--detections", type=int, default=107000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None, help="keep the generated files here (and reuse them)")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top lines of ours")
    parser.add_argument("--process", action="store_true",
                        help="time whole fresh processes, imports included (vision evaluate against a script)")
    parser.add_argument("--iou-workers", action="store_true",
                        help="time faster-coco-eval's mask IoUs with its thread pool and with one thread")
    parser.add_argument("--_measure", nargs=3, metavar=("TOOL", "SPLIT", "RESULTS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._measure:
        _measure(*args._measure)
        return
    if args.reps < 1:
        parser.error("--reps must be >= 1")
    out = args.out or Path(tempfile.mkdtemp(prefix="bench_evaluate_"))
    try:
        split = generate(out, args.images, args.annotations, ["rle"])["rle"]
        results = make_results(split, out, args.detections)
        print(f"split: {args.images} images, {args.annotations} annotations (RLE masks); results: "
              f"{args.detections} detections (boxes + RLE masks), bbox + segm")
        if args.iou_workers:
            _iou_workers(split, results, args.reps)
            return
        if args.process:
            timed, ours, ref = _process_runs(split, results, args.reps)
            seconds = {tool: [t for t, _ in rs] for tool, rs in timed.items()}
            print("each run a fresh process with its imports, timed from outside; peak RSS from os.wait4")
            print(f"{'tool':<18}{'min s':>9}{'median s':>10}{'peak MiB, max':>15}")
            for tool, rs in timed.items():
                print(f"{tool:<18}{min(seconds[tool]):>9.2f}{statistics.median(seconds[tool]):>10.2f}"
                      f"{max(m for _, m in rs):>15.0f}")
        else:
            runs: dict[str, list[dict]] = {"ours": [], "pycocotools": []}
            for _ in range(args.reps):
                for tool in runs:
                    runs[tool].append(_run_child(tool, split, results))
            ours, ref = runs["ours"][0]["metrics"], runs["pycocotools"][0]["metrics"]
            print(f"{'tool':<14}{'min s':>9}{'median s':>10}")
            seconds = {tool: [r["seconds"] for r in rs] for tool, rs in runs.items()}
            for tool, values in seconds.items():
                print(f"{tool:<14}{min(values):>9.2f}{statistics.median(values):>10.2f}")
        print(f"ratio ours / pycocotools: min {min(seconds['ours']) / min(seconds['pycocotools']):.3f}, median "
              f"{statistics.median(seconds['ours']) / statistics.median(seconds['pycocotools']):.3f} "
              f"(target <= 0.25)")
        keys = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]
        worst = 0.0
        for iou_type, prefix in (("bbox", ""), ("segm", "segm_")):
            for key, value in zip(keys, ref[iou_type]):
                worst = max(worst, abs(ours[prefix + key] - value))
        print(f"largest difference over the 24 figures (bbox + segm): {worst:.2e}; "
              f"AP bbox {ours['AP']:.4f} / {ref['bbox'][0]:.4f}, segm {ours['segm_AP']:.4f} / {ref['segm'][0]:.4f}")
        if args.profile:
            print(profile_top(lambda: _ours(split, results), 20))
    finally:
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
