"""Scoring concept results from masks: ``evaluate_concept`` (every figure of the concept scorer) against what a user
runs for its HOTA figures with the references, pycocotools' mask IoU on the RLEs plus PyPI trackeval, on the same
split and results, at several image sizes, in one run.

    python benchmarks/bench_concept_eval.py [--sizes 128 256 480] [--videos 8] [--frames 30] [--reps 9]
                                            [--command-reps 5]

The case (seeded, made in memory): ``--videos`` videos of ``--frames`` square frames of each size; each video
queries three of four phrases, two present (two or three moving ellipses each, entering late or leaving early) and
one absent; the predictions follow every object with a jittered ellipse (sometimes missed, an id switch on some
tracks), plus false positives, some on the absent phrase. The split and the results are the same RLE JSON objects
at every size, drawn at the size's scale.

- ours: ``vision.evaluation.concept.evaluate_concept(split, results)`` on results already validated (validation is
  :func:`vision.evaluation.tasks.concept.validate_concept_results`, a separate step, not timed): HOTA and its parts,
  IDSW, phrase-HOTA, video mask AP, cgF1 / pmF1 / IL_MCC per frame and per video, presence MCC and the outside
  acceptance.
- reference: the same HOTA figures and IDSW computed as a user would with the references: the records grouped by
  (video, phrase, frame), ``pycocotools.mask.iou`` on the RLEs of each (frame, phrase), ``trackeval.metrics.HOTA``
  and ``CLEAR`` ``eval_sequence`` per (video, phrase), ``combine_sequences`` per phrase and
  ``HOTA.combine_classes_class_averaged`` over the queried phrases (``ignore_empty_classes=True``, the scorer's
  rule; every phrase of this case has detections).

The first table gives the minimum and median over ``--reps`` runs (the two in turn within each) of the CPU time of
this process (``time.process_time``: both are single-threaded, and other load on the machine does not count) and the
ratio ours / reference of the minima and of the medians; the HOTA figures and IDSW of both are compared (they must
agree to 1e-9).

The second and third tables time the whole evaluation on the split and results written as JSON files, the two in
turn:

- ours: ``vision.evaluation.evaluate.evaluate(S, R, "concept")``, what ``vision-evaluate --split S --results R
  --task concept`` runs: reads both files, checks the split and validates every result (each RLE's runs sum to
  its image's pixels), scores every figure;
- reference: reads both files with ``json`` and computes the HOTA figures and IDSW as above, with no validation.

The second in this process (``--reps`` runs after one of each, imports done); the third as the commands a user
types, each run a fresh process (``--command-reps`` runs; the CPU time, user + system, the process used, imports
included): ``vision-evaluate ... --out M`` against ``python benchmarks/bench_concept_eval.py --reference-files S R``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict

import numpy as np

PHRASES = {1: "mug", 2: "bowl", 3: "cube", 4: "chair"}
HOTA_KEYS = ("HOTA", "DetA", "AssA", "LocA", "DetRe", "DetPr", "AssRe", "AssPr")


def _ellipse(size: int, cx: float, cy: float, rx: float, ry: float) -> np.ndarray:
    ys, xs = np.ogrid[:size, :size]
    return ((xs + 0.5 - cx) / rx) ** 2 + ((ys + 0.5 - cy) / ry) ** 2 <= 1.0


def make_case(size: int, videos: int, frames: int, seed: int = 0) -> tuple[dict, list[dict]]:
    """The split and its results (see the module docstring), masks drawn at ``size`` x ``size``."""
    from vision.data.masks import encode_mask, mask_to_bbox

    rng = np.random.default_rng(seed)
    split: dict = {"images": [], "annotations": [], "videos": [], "tracks": [],
                   "categories": [{"id": k, "name": v} for k, v in PHRASES.items()]}
    results: list[dict] = []
    track_id = 0
    for vid in range(1, videos + 1):
        phrases = rng.permutation(list(PHRASES))[:3].tolist()
        present, absent = phrases[:2], phrases[2]
        split["videos"].append({"id": vid, "name": f"v{vid}", "concepts": sorted(phrases)})
        for f in range(frames):
            split["images"].append({"id": 1000 * vid + f, "width": size, "height": size, "video_id": vid,
                                    "frame_index": f, "file_name": f"{vid}/{f}.png"})
        for category in present:
            for _ in range(int(rng.integers(2, 4))):
                track_id += 1
                gt_id, pred_id = track_id, track_id + 100000
                start = int(rng.integers(0, frames // 3)) if rng.random() < 0.5 else 0
                stop = frames - int(rng.integers(0, frames // 3)) if rng.random() < 0.5 else frames
                x0, y0 = rng.uniform(0.2, 0.8, 2) * size
                vx, vy = rng.normal(0, 0.01, 2) * size
                rx, ry = rng.uniform(0.05, 0.15, 2) * size
                switch = int(rng.integers(frames // 2, frames)) if rng.random() < 0.3 else frames
                split["tracks"].append({"id": gt_id, "video_id": vid, "category_id": category})
                for f in range(start, stop):
                    cx, cy = x0 + vx * f, y0 + vy * f
                    m = _ellipse(size, cx, cy, rx, ry)
                    if not m.any():
                        continue
                    split["annotations"].append({"id": len(split["annotations"]) + 1, "image_id": 1000 * vid + f,
                                                 "track_id": gt_id, "category_id": category,
                                                 "segmentation": encode_mask(m), "bbox": mask_to_bbox(m),
                                                 "area": float(m.sum()), "iscrowd": 0})
                    if rng.random() < 0.1:
                        continue  # missed on this frame
                    jx, jy = rng.normal(0, 0.01, 2) * size
                    p = _ellipse(size, cx + jx, cy + jy, rx * rng.uniform(0.85, 1.15), ry * rng.uniform(0.85, 1.15))
                    if not p.any():
                        continue  # off the image: no record (an empty mask is a detection for cgF1 only)
                    results.append({"video_id": vid, "image_id": 1000 * vid + f,
                                    "track_id": pred_id + (200000 if f >= switch else 0), "category_id": category,
                                    "phrase": PHRASES[category], "segmentation": encode_mask(p),
                                    "bbox": mask_to_bbox(p), "score": float(rng.uniform(0.3, 1.0))})
        for k in range(3):  # false positives: short tracks, one on the absent phrase
            category = absent if k == 0 else present[k % 2]
            cx, cy = rng.uniform(0.1, 0.9, 2) * size
            start = int(rng.integers(0, frames - 2))
            for f in range(start, min(frames, start + int(rng.integers(2, 8)))):
                p = _ellipse(size, cx, cy, 0.06 * size, 0.05 * size)
                results.append({"video_id": vid, "image_id": 1000 * vid + f, "track_id": 900000 + 10 * vid + k,
                                "category_id": category, "phrase": PHRASES[category],
                                "segmentation": encode_mask(p), "bbox": mask_to_bbox(p),
                                "score": float(rng.uniform(0.2, 0.9))})
    return split, results


def reference(split: dict, results: list[dict]) -> dict:
    """HOTA figures (class-averaged over the queried phrases with a detection) and IDSW with pycocotools' mask IoU
    and trackeval."""
    from pycocotools import mask as mask_utils
    from trackeval.metrics import CLEAR, HOTA

    hota, clear = HOTA(), CLEAR({"PRINT_CONFIG": False})
    frames = defaultdict(list)
    for im in split["images"]:
        frames[im["video_id"]].append((im["frame_index"], im["id"]))
    gts, preds = defaultdict(list), defaultdict(list)  # (image, phrase) -> [(track, rle)]
    for ann in split["annotations"]:
        gts[(ann["image_id"], ann["category_id"])].append((ann["track_id"], ann["segmentation"]))
    for r in results:
        preds[(r["image_id"], r["category_id"])].append((r["track_id"], r["segmentation"]))
    classes, switches = {}, 0
    for category in sorted({c for v in split["videos"] for c in v["concepts"]}):
        sequences = {}
        for video in (v for v in split["videos"] if category in v["concepts"]):
            gt_ids, tr_ids, sims = [], [], []
            for _, image_id in sorted(frames[video["id"]]):
                g, p = gts[(image_id, category)], preds[(image_id, category)]
                iou = mask_utils.iou([x[1] for x in p], [x[1] for x in g], [0] * len(g)) if g and p else []
                sims.append(np.asarray(iou, float).reshape(len(p), len(g)).T)
                gt_ids.append([x[0] for x in g])
                tr_ids.append([x[0] for x in p])
            gt_u = {t: i for i, t in enumerate(sorted({t for ids in gt_ids for t in ids}))}
            tr_u = {t: i for i, t in enumerate(sorted({t for ids in tr_ids for t in ids}))}
            data = {"num_timesteps": len(sims), "similarity_scores": sims,
                    "gt_ids": [np.array([gt_u[t] for t in ids], int) for ids in gt_ids],
                    "tracker_ids": [np.array([tr_u[t] for t in ids], int) for ids in tr_ids],
                    "num_gt_ids": len(gt_u), "num_tracker_ids": len(tr_u),
                    "num_gt_dets": sum(map(len, gt_ids)), "num_tracker_dets": sum(map(len, tr_ids))}
            sequences[video["id"]] = hota.eval_sequence(data)
            switches += clear.eval_sequence(data)["IDSW"]
        classes[category] = hota.combine_sequences(sequences)
    res = hota.combine_classes_class_averaged(classes, ignore_empty_classes=True)
    return {**{k: float(np.mean(res[k])) for k in HOTA_KEYS}, "IDSW": int(switches)}


def _child_cpu(argv: list[str]) -> float:
    """Run ``argv`` as a process (its output discarded) and return the CPU seconds (user + system) it used; a
    failure ends the benchmark with its error output."""
    import os
    import subprocess

    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    error = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv[:4])} ... failed: {error.strip()}")
    return usage.ru_utime + usage.ru_stime


def _reference_files(split_file: str, results_file: str) -> dict:
    """The reference on files: both read with ``json``, then :func:`reference`."""
    import json

    with open(split_file) as f, open(results_file) as g:
        return reference(json.load(f), json.load(g))


def whole_evaluation(size: int, split: dict, results: list[dict], reps: int, command_reps: int
                     ) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """CPU seconds of the whole evaluation (see the module docstring) on the case written to files: ``reps`` runs
    in this process, ``command_reps`` as fresh processes; the figures of both are compared as in the first table."""
    import json
    import sys
    import tempfile
    from pathlib import Path

    from vision.evaluation.evaluate import evaluate

    with tempfile.TemporaryDirectory() as folder:
        split_file, results_file, metrics = (Path(folder) / n for n in ("split.json", "results.json", "m.json"))
        split_file.write_text(json.dumps(split))
        results_file.write_text(json.dumps(results))
        inside: dict[str, list[float]] = {"ours": [], "reference": []}
        evaluate(split_file, results_file, "concept")  # a first run of each, not timed
        _reference_files(str(split_file), str(results_file))
        for _ in range(reps):
            start = time.process_time()
            evaluate(split_file, results_file, "concept")
            inside["ours"].append(time.process_time() - start)
            start = time.process_time()
            _reference_files(str(split_file), str(results_file))
            inside["reference"].append(time.process_time() - start)
        ours = [sys.executable, "-c", "import sys; from vision.cli.evaluate import main; sys.exit(main())",
                "--split", str(split_file), "--results", str(results_file), "--task", "concept",
                "--out", str(metrics)]
        ref = [sys.executable, __file__, "--reference-files", str(split_file), str(results_file)]
        processes: dict[str, list[float]] = {"ours": [], "reference": []}
        for _ in range(command_reps):
            processes["ours"].append(_child_cpu(ours))
            processes["reference"].append(_child_cpu(ref))
        scored = json.loads(metrics.read_text())
    for key, value in reference(split, results).items():
        if abs(scored[key] - value) > 1e-9:
            raise SystemExit(f"{size}: {key} differs: vision-evaluate {scored[key]} reference {value}")
    return inside, processes


def _ratio_row(label: str, frames: int, gt_masks: int, records: int, s: dict[str, list[float]]) -> str:
    return (f"| {label} | {frames} | {gt_masks} | {records} | {min(s['ours']):.3f} / "
            f"{statistics.median(s['ours']):.3f} | {min(s['reference']):.3f} / "
            f"{statistics.median(s['reference']):.3f} | {min(s['ours']) / min(s['reference']):.2f}x "
            f"| {statistics.median(s['ours']) / statistics.median(s['reference']):.2f}x |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[128, 256, 480])
    parser.add_argument("--videos", type=int, default=8)
    parser.add_argument("--frames", type=int, default=30)
    parser.add_argument("--reps", type=int, default=9)
    parser.add_argument("--command-reps", type=int, default=5)
    parser.add_argument("--reference-files", nargs=2, metavar=("SPLIT", "RESULTS"),
                        help="be the reference command of the second table on these files, and exit")
    args = parser.parse_args()
    if args.reference_files:
        _reference_files(*args.reference_files)
        return

    from vision.evaluation.concept import evaluate_concept
    from vision.evaluation.tasks.concept import validate_concept_results

    rows = []
    for size in args.sizes:
        split, results = make_case(size, args.videos, args.frames)
        validate_concept_results(results, split)
        seconds: dict[str, list[float]] = {"ours": [], "reference": []}
        ours = ref = {}
        for _ in range(args.reps):
            start = time.process_time()
            ours = evaluate_concept(split, results)
            seconds["ours"].append(time.process_time() - start)
            start = time.process_time()
            ref = reference(split, results)
            seconds["reference"].append(time.process_time() - start)
        for key, value in ref.items():
            if abs(ours[key] - value) > 1e-9:
                raise SystemExit(f"{size}: {key} differs: ours {ours[key]} reference {value}")
        rows.append((size, len(split["images"]), len(split["annotations"]), len(results), seconds,
                     *whole_evaluation(size, split, results, args.reps, args.command_reps)))
    print(f"concept scoring, {args.videos} videos x {args.frames} frames, {args.reps} reps; HOTA figures and IDSW "
          "of ours and the reference agree to 1e-9")
    print("| size | frames | gt masks | records | ours min / median (CPU s) | reference min / median (CPU s) "
          "| ratio min | ratio median |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for size, frames, gt_masks, records, s, _, _ in rows:
        print(_ratio_row(f"{size}x{size}", frames, gt_masks, records, s))
    for k, title in ((5, f"the whole evaluation in this process ({args.reps} reps): read the files, check the split, "
                         "validate the results, every figure; against reading the files and the HOTA figures with "
                         "pycocotools + trackeval"),
                     (6, f"the whole command, a fresh process each ({args.command_reps} runs, imports included): "
                         "vision-evaluate --task concept against the reference's process; the figures agree to "
                         "1e-9")):
        print()
        print(title)
        print("| size | frames | gt masks | records | ours min / median (CPU s) | reference min / median (CPU s) "
              "| ratio min | ratio median |")
        print("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for row in rows:
            print(_ratio_row(f"{row[0]}x{row[0]}", *row[1:4], row[k]))


if __name__ == "__main__":
    main()
