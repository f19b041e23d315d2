"""Concept prompts on held-out real clips, answered by a detector trained on real frames: does it find what the
teacher finds, and do its ids persist?

The split is the test role of the teacher-labelled real frames (``vision prepare real-detection``; by default
``datasets/real/real_coco_test.json``): frames of videos never trained on (OpenCV's ``cup``, mmaction2's
``basketball`` and ``two_people``), sampled over each clip, every object YOLOX-nano finds annotated with one of the 80
COCO classes. Images carry ``video`` (the clip) and ``frame`` (its index in the source).

For every clip and every COCO name the teacher finds in it (or each of ``--phrases``), the concept predictor
(:class:`vision.concept.detector_only.DetectorConceptPredictor` for a detection checkpoint,
:class:`vision.concept.predictor.ConceptPredictor` for a concept one) runs on the clip's sampled frames in order with
that phrase alone (``--joint``: all of the clip's phrases in one pass) and its answer is scored against the teacher's
boxes of the class (:func:`vision.evaluation.concept_boxes.score_clip`): frames where the teacher finds the class,
frame recall (share of those where an answer box has IoU >= 0.5 with a teacher box; the issue's target is >= 0.8),
instance recall, false positives per frame, and id persistence (the teacher's boxes chained across consecutive
sampled frames by IoU; ID switches along the chains and distinct ids per chain). Every figure is measured.

The table is printed and written with the run's settings to ``OUT/table.json``.

    .venv/bin/python benchmarks/bench_concept_real.py \\
        [--ckpt runs/detection/real_coco/checkpoints/last.ckpt] [--split datasets/real/real_coco_test.json] \\
        [--phrases "person,sports ball"] [--joint] [--out runs/bench_concept_real]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np  # noqa: E402

from vision.data.coco import Split, load_split  # noqa: E402
from vision.data.io import atomic_write_json  # noqa: E402
from vision.evaluation.concept_boxes import score_clip  # noqa: E402

COLUMNS = ("frames", "frames_with_class", "frame_recall", "instance_recall", "false_positives_per_frame",
           "chains", "id_switches", "ids_per_chain", "answer_ids")
SHORT = {"frames": "frames", "frames_with_class": "w/ class", "frame_recall": "frame R", "instance_recall": "inst R",
         "false_positives_per_frame": "FP/frame", "chains": "chains", "id_switches": "ID sw",
         "ids_per_chain": "ids/chain", "answer_ids": "ids"}
TARGET = 0.8


def clips(split: Split) -> dict[str, list[dict]]:
    """The split's images by clip (``video``), in frame order."""
    found: dict[str, list[dict]] = defaultdict(list)
    for image in split.dataset["images"]:
        found[str(image.get("video", "images"))].append(image)
    return {name: sorted(images, key=lambda im: (int(im.get("frame", 0)), int(im["id"])))
            for name, images in sorted(found.items())}


def teacher_boxes(split: Split, images: list[dict], category_id: int) -> list[np.ndarray]:
    """The teacher's boxes ``[n, 4]`` XYXY of ``category_id`` on each image."""
    out = []
    for image in images:
        boxes = [a["bbox"] for a in split.annotations_by_image[image["id"]] if a["category_id"] == category_id
                 and not a.get("iscrowd", 0)]
        xywh = np.asarray(boxes, np.float64).reshape(-1, 4)
        out.append(np.concatenate([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]], 1))
    return out


def answers_of(predictor, state, phrases: list[str]) -> dict[str, list[tuple[list[int], np.ndarray]]]:
    """Each phrase's answer per frame ``(ids, boxes XYXY input pixels)`` for a state whose concepts are ``phrases``;
    a concept model's masks are turned into their tight boxes."""
    out: dict[str, list] = {p: [] for p in phrases}
    for view, ids, concepts, masks, scores in predictor.propagate(state):
        results = getattr(state, "results", None)
        for k, phrase in enumerate(phrases):
            keep = [n for n, c in enumerate(concepts) if c == k and masks[n].any()]
            if results is not None:  # the detector alone: its boxes
                boxes = results[view].boxes[keep]
            else:
                boxes = np.array([_tight_box(masks[n]) for n in keep], np.float64).reshape(-1, 4)
            out[phrase].append(([ids[n] for n in keep], boxes))
    return out


def _tight_box(mask: np.ndarray) -> list[float]:
    ys, xs = np.nonzero(mask)
    return [float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1)]


def load_predictor(checkpoint: str, device: str, precision: str, overrides: dict):
    """The concept predictor of a detection or a concept checkpoint (as ``vision predict --task concept``)."""
    from vision.concept.cli import load_concept_predictor

    predictor = load_concept_predictor(Path(checkpoint), device, precision)
    if overrides:
        predictor.config = dataclasses.replace(predictor.config, **overrides)  # each config checks its fields
    return predictor


def run(args: argparse.Namespace) -> dict:
    import torch

    from vision.concept.cli import describe_answer

    torch.set_num_threads(args.threads)
    split = load_split(args.split)
    by_name = {c["name"]: cid for cid, c in split.categories.items()}
    wanted = [p.strip() for p in args.phrases.split(",") if p.strip()] if args.phrases else None
    unknown = [p for p in wanted or [] if p not in by_name]
    if unknown:
        raise SystemExit(f"error: --phrases names categories the split lacks: {unknown}")
    predictor = load_predictor(args.ckpt, args.device, args.precision, dict(args.set or []))
    from vision.detection.vocabulary import shared_text_encoder

    shared_text_encoder()  # loaded before the clock starts: the seconds per frame are the model's
    rows, seconds, frames_run = [], 0.0, 0
    for clip, images in clips(split).items():
        if args.clips and clip not in args.clips:
            continue
        found = {split.categories[a["category_id"]]["name"] for im in images
                 for a in split.annotations_by_image[im["id"]]}
        phrases = wanted if wanted is not None else sorted(found, key=lambda n: by_name[n])
        if not phrases:
            continue
        state = predictor.init_state([split.image_path(im) for im in images], ordered=True)
        groups = [phrases] if args.joint else [[p] for p in phrases]
        for group in groups:
            state.concepts = []  # the frames (and the concept model's cached encodings) stay
            state.invalidate()
            for phrase in group:
                predictor.add_concept(state, phrase)
            start = time.perf_counter()
            answered = answers_of(predictor, state, group)
            seconds += time.perf_counter() - start
            frames_run += len(images)
            for phrase in group:
                figures = score_clip(teacher_boxes(split, images, by_name[phrase]), answered[phrase],
                                     iou=args.iou, chain_iou=args.chain_iou)
                rows.append({"clip": clip, "phrase": phrase, **figures})
                print(_line(rows[-1]), flush=True)
    scored = [r for r in rows if r["frame_recall"] is not None]
    weighted = sum(r["frame_recall"] * r["frames_with_class"] for r in scored)
    summary = {
        "rows": len(rows),
        "rows_meeting_target": sum(r["frame_recall"] >= TARGET for r in scored),
        "rows_with_class": len(scored),
        "frame_recall_weighted": weighted / max(1, sum(r["frames_with_class"] for r in scored)),
        "id_switches": sum(r["id_switches"] for r in rows),
        "seconds_per_frame": seconds / max(1, frames_run),
    }
    return {"checkpoint": str(args.ckpt), "split": str(args.split),
            "answered_by": describe_answer(predictor, Path(args.ckpt)),
            "config": dataclasses.asdict(predictor.config), "iou": args.iou, "chain_iou": args.chain_iou,
            "joint": args.joint, "target_frame_recall": TARGET, "rows": rows, "summary": summary}


def _cell(value) -> str:
    if value is None:
        return "-"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _line(row: dict) -> str:
    return f"{row['clip']:<22} {row['phrase']:<16} " + " ".join(f"{_cell(row[c]):>9}" for c in COLUMNS)


def print_table(table: dict) -> None:
    print()
    for line in table["answered_by"]:
        print(line)
    print(f"{'clip':<22} {'phrase':<16} " + " ".join(f"{SHORT[c]:>9}" for c in COLUMNS))
    for row in table["rows"]:
        print(_line(row))
    s = table["summary"]
    print(f"frame recall >= {TARGET:g} on {s['rows_meeting_target']} of {s['rows_with_class']} (clip, phrase) rows; "
          f"frames-weighted frame recall {s['frame_recall_weighted']:.3f}; {s['id_switches']} ID switches; "
          f"{s['seconds_per_frame'] * 1000:.1f} ms per frame and phrase group")


def _setting(text: str) -> tuple[str, object]:
    key, _, value = text.partition("=")
    if not key or not value:
        raise argparse.ArgumentTypeError(f"--set takes KEY=VALUE, got {text!r}")
    for cast in (int, float):
        try:
            return key, cast(value)
        except ValueError:
            pass
    return key, {"true": True, "false": False}.get(value.lower(), value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ckpt", default="runs/detection/real_coco/checkpoints/last.ckpt",
                        help="a detection checkpoint (the detector alone) or a concept checkpoint")
    parser.add_argument("--split", default="datasets/real/real_coco_test.json")
    parser.add_argument("--phrases", help="comma-separated COCO names (default: every name the teacher finds in "
                                          "each clip)")
    parser.add_argument("--clips", nargs="*", help="only these clips (the images' video)")
    parser.add_argument("--joint", action="store_true", help="all phrases of a clip in one pass")
    parser.add_argument("--set", type=_setting, action="append", metavar="KEY=VALUE",
                        help="a setting of the predictor's config (e.g. birth_score=0.3); repeatable")
    parser.add_argument("--iou", type=float, default=0.5, help="an answer box finds a teacher box at this IoU")
    parser.add_argument("--chain-iou", type=float, default=0.3, help="teacher boxes chain across frames at this IoU")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="32")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("runs/bench_concept_real"))
    args = parser.parse_args(argv)
    for path, what in ((args.ckpt, "--ckpt"), (args.split, "--split")):
        if not Path(path).exists():
            print(f"error: {what} {path} does not exist", file=sys.stderr)
            return 2
    table = run(args)
    print_table(table)
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(args.out / "table.json", table, indent=1)
    print(f"wrote {args.out / 'table.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
