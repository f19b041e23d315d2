"""OOVDet on held-out real frames: the open-set table against teacher labels, beside its references.

The split is a teacher-labelled test split of real video frames (``vision prepare real-detection``; by default
``datasets/real/real_voc_test.json``: frames of videos never used in training, every COCO-80 object the teacher
YOLOX-nano finds annotated, VOC's 20 classes known through ``info.vocabulary``, the other 60 unknown). Rows:

- each ``--detector NAME=CKPT`` (an OOV detector checkpoint or model folder), run with the split's vocabulary
  (VOC's names) by :class:`~vision.detection.predictor.DetectorPredictor`; OOV-rejected boxes are its unknowns;
- ``teacher`` (``--teacher``): YOLOX-nano itself restricted to VOC's names (its boxes of the other 60 classes
  dropped; score threshold ``--teacher-threshold``), the closed-set reference: its IV AP50 is bounded by its own
  labels (they are its boxes above the labelling threshold), and it has no unknown output (U-Recall 0).

Each row is scored by :func:`vision.evaluation.evaluate` (task ``detection``, the open-set figures of
:mod:`vision.evaluation.openset`): ``IV_AP50`` (COCO AP50 over the known classes), ``U-Recall`` (recall of the
unknown objects by the unknown boxes), ``WI`` (wilderness impact x100 at recall 0.8), ``A-OSE`` (known boxes on
unknown objects), and the AP50 of each known class with ground truth. The table is printed and written as
``OUT/table.json`` with every row's results file.

    .venv/bin/python benchmarks/bench_real_detection.py --teacher \
        --detector real=runs/detection/real_voc/checkpoints/last.ckpt \
        --detector synthetic=runs/detection/tiny/checkpoints/last.ckpt --out runs/bench_real_detection
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


from vision.data.coco import load_split  # noqa: E402
from vision.data.io import atomic_write_json  # noqa: E402
from vision.detection.results import UNKNOWN_CATEGORY_ID  # noqa: E402
from vision.evaluation.evaluate import evaluate  # noqa: E402
from vision.evaluation.detection import coco_ap  # noqa: E402

COLUMNS = ("IV_AP50", "U-Recall", "WI", "A-OSE", "num_unknown_gt")


def detector_results(checkpoint: str, split_path: str, threads: int) -> list[dict]:
    """COCO results of a detection checkpoint on every image of the split, with the split's vocabulary."""
    import torch

    from vision.detection.predictor import DetectorPredictor

    torch.set_num_threads(threads)
    split = load_split(split_path)
    names = list(split.dataset["info"]["vocabulary"])
    by_name = {c["name"]: cid for cid, c in split.categories.items()}
    predictor = DetectorPredictor.from_checkpoint(checkpoint, vocabulary=names,
                                                  category_ids=[by_name[n] for n in names])
    return predictor.predict_split(split_path)


def teacher_results(split_path: str, threshold: float, threads: int) -> list[dict]:
    """YOLOX-nano's boxes of the split's vocabulary classes (the others dropped) on every image."""
    from vision.weights.nets.onnx_models import COCO_CLASSES, YOLOXNano

    split = load_split(split_path)
    vocabulary = set(split.dataset["info"]["vocabulary"])
    by_name = {c["name"]: cid for cid, c in split.categories.items()}
    teacher = YOLOXNano(threads=threads)
    results = []
    for image_id in sorted(split.images):
        found = teacher.detect(split.load_image(split.images[image_id]), score_threshold=threshold)
        for box, score, cls in zip(found["boxes"], found["scores"], found["classes"]):
            name = COCO_CLASSES[int(cls)]
            if name not in vocabulary:
                continue
            x0, y0, x1, y1 = (float(v) for v in box)
            results.append({"image_id": int(image_id), "category_id": int(by_name[name]),
                            "bbox": [x0, y0, x1 - x0, y1 - y0], "score": float(score)})
    return results


def per_class_ap50(split_path: str, results: list[dict]) -> dict[str, float]:
    """COCO AP50 of each known class that has ground truth in the split."""
    split = load_split(split_path)
    gt = split.dataset
    vocabulary = set(gt["info"]["vocabulary"])
    present = {a["category_id"] for a in gt["annotations"]}
    out = {}
    for cid, category in sorted(split.categories.items()):
        if category["name"] not in vocabulary or cid not in present:
            continue
        one = {**gt, "annotations": [a for a in gt["annotations"] if a["category_id"] == cid],
               "categories": [category]}
        mine = [r for r in results if r["category_id"] == cid]
        out[category["name"]] = float(coco_ap(one, mine)["AP50"]) if mine else 0.0
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="datasets/real/real_voc_test.json")
    parser.add_argument("--detector", action="append", default=[], metavar="NAME=CKPT",
                        help="an OOV detector checkpoint to score (repeatable)")
    parser.add_argument("--teacher", action="store_true", help="add YOLOX-nano restricted to the vocabulary")
    parser.add_argument("--teacher-threshold", type=float, default=0.01)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="runs/bench_real_detection")
    args = parser.parse_args(argv)
    if not Path(args.split).is_file():
        print(f"error: split {args.split} does not exist (make data-real builds it)", file=sys.stderr)
        return 2
    rows: list[tuple[str, str]] = []
    for item in args.detector:
        name, sep, path = item.partition("=")
        if not sep or not name or not Path(path).exists():
            print(f"error: --detector {item!r} must be NAME=CKPT with an existing checkpoint", file=sys.stderr)
            return 2
        rows.append((name, path))
    if args.teacher:
        rows.append(("teacher", "yolox-nano"))
    if not rows:
        print("error: nothing to score: give --detector NAME=CKPT and/or --teacher", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    split = load_split(args.split)
    print(f"split {args.split}: {len(split.images)} frames, {len(split.dataset['annotations'])} teacher boxes; "
          f"known: {', '.join(split.dataset['info']['vocabulary'])}")
    table = {}
    for name, path in rows:
        start = time.perf_counter()
        results = (teacher_results(args.split, args.teacher_threshold, args.threads) if name == "teacher"
                   and path == "yolox-nano" else detector_results(path, args.split, args.threads))
        seconds = time.perf_counter() - start
        atomic_write_json(out / f"{name}_results.json", results)
        metrics = evaluate(args.split, results, "detection", unknown_category_id=UNKNOWN_CATEGORY_ID,
                            category_ids="vocabulary")
        row = {key: float(metrics[key]) for key in COLUMNS}
        row["unknown_boxes"] = sum(r["category_id"] == UNKNOWN_CATEGORY_ID for r in results)
        row["per_class_AP50"] = per_class_ap50(args.split, results)
        row["model"] = path
        row["seconds_per_frame"] = seconds / max(1, len(split.images))
        table[name] = row
    header = f"{'row':22s}{'IV AP50':>9s}{'U-Recall':>10s}{'WI':>8s}{'A-OSE':>8s}{'unk boxes':>11s}"
    print(header)
    for name, row in table.items():
        recall = row["U-Recall"]
        print(f"{name:22s}{100 * row['IV_AP50']:9.1f}{(100 * recall if recall >= 0 else -1):10.1f}"
              f"{row['WI']:8.2f}{row['A-OSE']:8.0f}{row['unknown_boxes']:11d}")
    print("per-class AP50 (classes with ground truth):")
    for name, row in table.items():
        print(f"  {name}: " + ", ".join(f"{k} {100 * v:.1f}" for k, v in row["per_class_AP50"].items()))
    atomic_write_json(out / "table.json", {"split": args.split, "rows": table,
                                           "num_unknown_gt": int(next(iter(table.values()))["num_unknown_gt"])})
    print(f"wrote {out / 'table.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
