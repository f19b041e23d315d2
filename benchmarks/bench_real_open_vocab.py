"""Real-frame detectors on the hand-checked frames (``vision prepare real-checked``): COCO names, open-vocabulary
names, absent names, and frames per second, every row in one run.

The splits (``--splits DIR``, default ``datasets/real_checked``) hold real frames of sources never trained on, with
boxes checked by eye (datasets/README.md): ``coco.json`` (the 80 COCO names) and ``open.json`` (everyday names:
synonyms of COCO names and names outside COCO-80, each frame listing the names it holds, every object of them boxed,
and three names verified absent, LVIS's ``neg_category_ids``). Per row:

- ``COCO AP50``: COCO AP50 on ``coco.json`` with the 80 names as the vocabulary (:func:`vision.evaluation.evaluate`,
  pycocotools underneath).
- ``open AP50``: each frame is run with its own vocabulary, the names it holds plus its three absent names; a name's
  AP50 is pycocotools' over the frames whose vocabulary holds it (the federated rule of LVIS: a frame that does not
  list a name says nothing of it), and the figure is the mean over the names with a box.
- ``absent boxed``: of the (frame, absent name) checks, how many got a box of that name at score >= ``--shown``
  (0.3, what the demo draws and ``vision predict`` draws on videos).
- ``frames/s``: the detector on ``--speed-frames`` frames of ``coco.json`` with a 20-name vocabulary, after a
  warm-up, ``--threads`` torch threads (the input side is the checkpoint's, 416 for the YOLOX-nano body).

Rows: ``composition`` (``--composition``): YOLOX-nano (onnxruntime, the registered file) with each of its 80 classes
mapped to the vocabulary name MiniLM finds most similar when the cosine of their prompts is at least
``--similarity`` (else the box is dropped): the simplest way to give YOLOX a vocabulary. ``untrained body``
(``--untrained``): the detector on the YOLOX-nano body before any training (its embeddings the COCO names' text rows
weighted by YOLOX's class probabilities; the OOV prompt random), without competitors and with them (the COCO names
no vocabulary name explains at ``--competitor-similarity`` join the OOV column). And each ``--detector NAME=CKPT``.

    .venv/bin/python benchmarks/bench_real_open_vocab.py --composition --untrained \
        --detector trained=runs/detection/real/checkpoints/last.ckpt
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402

from vision.data.coco import load_split  # noqa: E402

#: A detector as the benchmark runs it: (frame uint8 [H, W, 3] RGB, vocabulary names[, exemplars]) -> (boxes XYXY
#: px [n, 4], scores [n], names [n]); exemplars (only for a detector that takes them): (name, frame, box XYXY px).
Detect = Callable[..., tuple[np.ndarray, np.ndarray, list[str]]]

#: twenty everyday names for the speed row's vocabulary
SPEED_VOCABULARY = ["person", "car", "chair", "cup", "bottle", "dog", "cat", "bicycle", "tv", "laptop", "book",
                    "phone", "lamp", "table", "bag", "shoe", "ball", "door", "window", "plant"]


def predictor_detect(predictor: Any) -> Detect:
    """A :class:`~vision.detection.predictor.DetectorPredictor` as a :data:`Detect` (the vocabulary set per call;
    its text rows are cached by the encoder)."""
    def detect(frame: np.ndarray, names: list[str],
               exemplars: list[tuple[str, np.ndarray, np.ndarray]] = ()) -> tuple[np.ndarray, np.ndarray, list[str]]:
        if predictor.vocabulary != names:
            predictor.set_vocabulary(names)
        if predictor.exemplars is not None:
            predictor.exemplars.clear()
        for name, image, box in exemplars:
            predictor.add_exemplar(name, image, box)
        result = predictor.predict(frame)
        return result["boxes"], result["scores"], list(result["labels"])
    return detect


def composition_detect(similarity: float, threads: int) -> Detect:
    """YOLOX-nano's boxes (score >= 0.001, its own NMS) with each COCO class renamed to the most similar vocabulary
    name (MiniLM cosine of the prompts ``"a {}"``) when that cosine is at least ``similarity``."""
    from vision.detection.vocabulary import encode_vocabulary
    from vision.weights.nets.onnx_models import COCO_CLASSES, YOLOXNano

    net = YOLOXNano(threads=threads)
    coco = encode_vocabulary(list(COCO_CLASSES)).numpy()

    def detect(frame: np.ndarray, names: list[str]) -> tuple[np.ndarray, np.ndarray, list[str]]:
        text = encode_vocabulary(names).numpy()
        cosine = coco @ text.T                                     # [80, K]
        best = cosine.argmax(axis=1)
        found = net.detect(frame, score_threshold=0.001, nms_threshold=0.45)
        keep = [i for i, c in enumerate(found["classes"]) if cosine[c, best[c]] >= similarity]
        return (found["boxes"][keep].reshape(-1, 4), found["scores"][keep],
                [names[best[found["classes"][i]]] for i in keep])
    return detect


def coco_ap50(detect: Detect, split_path: Path) -> float:
    """COCO AP50 (x100) on ``coco.json`` with its 80 names as the vocabulary."""
    from vision.evaluation.evaluate import evaluate

    split = load_split(split_path)
    names = list(split.dataset["info"]["vocabulary"])
    by_name = {c["name"]: cid for cid, c in split.categories.items()}
    results = []
    for image_id in sorted(split.images):
        boxes, scores, labels = detect(split.load_image(split.images[image_id]), names)
        for box, score, label in zip(boxes, scores, labels):
            if label in by_name:
                x0, y0, x1, y1 = (float(v) for v in box)
                results.append({"image_id": image_id, "category_id": by_name[label],
                                "bbox": [x0, y0, x1 - x0, y1 - y0], "score": float(score)})
    with contextlib.redirect_stdout(io.StringIO()):
        metrics = evaluate(str(split_path), results, "detection")
    return 100.0 * float(metrics["AP50"])


def source_of(image: dict) -> str:
    """The video or photograph a frame of the hand-checked splits comes from."""
    return str(image.get("video", image.get("file_name", image["id"])))


def exemplar_choice(split: Any) -> dict[tuple[int, int], tuple[int, list[float]]]:
    """For every (frame, listed name) with a box of that name on another frame: the exemplar ``(image id, box XYXY
    px)``, the first box of that name (by image id, then annotation id) on a frame of another source, else on
    another frame of the same source. Absent names get one too when another frame holds them."""
    boxes: dict[int, list[tuple[int, int, list[float]]]] = {}
    for image_id in sorted(split.images):
        for a in sorted(split.annotations_by_image[image_id], key=lambda a: a["id"]):
            if not a.get("iscrowd", 0):
                x, y, w, h = a["bbox"]
                boxes.setdefault(a["category_id"], []).append((image_id, a["id"], [x, y, x + w, y + h]))
    chosen = {}
    for image_id in sorted(split.images):
        image = split.images[image_id]
        listed = {a["category_id"] for a in split.annotations_by_image[image_id]}
        listed |= {int(c) for c in image.get("neg_category_ids", [])}
        for cid in sorted(listed):
            others = [b for b in boxes.get(cid, []) if b[0] != image_id]
            other_source = [b for b in others if source_of(split.images[b[0]]) != source_of(image)]
            if others:
                first = (other_source or others)[0]
                chosen[(image_id, cid)] = (first[0], first[2])
    return chosen


def open_vocabulary(detect: Detect, split_path: Path, shown: float, exemplars: bool = False) -> dict[str, Any]:
    """The open-vocabulary figures of the module docstring on ``open.json``; with ``exemplars`` each listed name
    also gets the exemplar box of :func:`exemplar_choice` (from another frame) where there is one."""
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    split = load_split(split_path)
    names = {cid: c["name"] for cid, c in split.categories.items()}
    by_name = {n: cid for cid, n in names.items()}
    listed: dict[int, set[int]] = {cid: set() for cid in names}    # category -> the frames whose vocabulary holds it
    results, checks, boxed = [], 0, []
    chosen = exemplar_choice(split) if exemplars else {}
    exemplar_images: dict[int, np.ndarray] = {}                    # each exemplar's frame, read once
    for image_id in sorted(split.images):
        image = split.images[image_id]
        present = sorted({a["category_id"] for a in split.annotations_by_image[image_id]})
        absent = [int(c) for c in image.get("neg_category_ids", [])]
        vocabulary = [names[c] for c in present + absent]
        for cid in present + absent:
            listed[cid].add(image_id)
        given = []
        for c in present + absent:
            if (image_id, c) in chosen:
                owner, box = chosen[image_id, c]
                if owner not in exemplar_images:
                    exemplar_images[owner] = split.load_image(split.images[owner])
                given.append((names[c], exemplar_images[owner], box))
        boxes, scores, labels = detect(split.load_image(image), vocabulary, *([given] if exemplars else []))
        for box, score, label in zip(boxes, scores, labels):
            if label not in by_name:
                continue  # "unknown"
            x0, y0, x1, y1 = (float(v) for v in box)
            results.append({"image_id": image_id, "category_id": by_name[label],
                            "bbox": [x0, y0, x1 - x0, y1 - y0], "score": float(score)})
        for cid in absent:
            checks += 1
            if any(label == names[cid] and score >= shown for label, score in zip(labels, scores)):
                boxed.append(f"{names[cid]}@{image.get('video', image_id)}:{image.get('frame', '')}")
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(str(split_path))
        dt = gt.loadRes(results) if results else None
    per_name = {}
    for cid, images in listed.items():
        if not any(a["category_id"] == cid and not a.get("iscrowd", 0) for i in images
                   for a in split.annotations_by_image[i]):
            continue
        if dt is None:
            per_name[names[cid]] = 0.0
            continue
        with contextlib.redirect_stdout(io.StringIO()):
            ev = COCOeval(gt, dt, "bbox")
            ev.params.catIds = [cid]
            ev.params.imgIds = sorted(images)
            ev.evaluate()
            ev.accumulate()
        precision = ev.eval["precision"][0, :, 0, 0, 2]             # IoU 0.5, all recalls, all areas, 100 dets
        valid = precision[precision > -1]
        per_name[names[cid]] = 100.0 * float(valid.mean()) if valid.size else 0.0
    return {"open_AP50": float(np.mean(list(per_name.values()))) if per_name else -1.0, "per_name": per_name,
            "checks": checks, "absent_boxed": boxed}


def frames_per_second(detect: Detect, split_path: Path, count: int) -> float:
    split = load_split(split_path)
    frames = [split.load_image(split.images[i]) for i in sorted(split.images)[:count]]
    detect(frames[0], SPEED_VOCABULARY)                             # warm-up (and the text rows)
    start = time.perf_counter()
    for frame in frames:
        detect(frame, SPEED_VOCABULARY)
    return len(frames) / (time.perf_counter() - start)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--splits", type=Path, default=Path("datasets/real_checked"),
                        help="folder of coco.json and open.json (vision prepare real-checked)")
    parser.add_argument("--detector", action="append", default=[], metavar="NAME=CKPT",
                        help="a detection checkpoint or model folder (repeatable)")
    parser.add_argument("--composition", action="store_true", help="the YOLOX-nano + name-similarity row")
    parser.add_argument("--similarity", type=float, default=0.5, help="the composition's least cosine")
    parser.add_argument("--untrained", action="store_true",
                        help="the YOLOX-nano body before training, without and with competitors")
    parser.add_argument("--competitor-similarity", type=float, default=0.62,
                        help="the untrained competitors row's DetectionConfig.competitor_similarity")
    parser.add_argument("--shown", type=float, default=0.3, help="the score at which a box counts as shown")
    parser.add_argument("--exemplars", action="store_true",
                        help="each --detector also with exemplar boxes from other frames (its own open row)")
    parser.add_argument("--speed-frames", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    for name in ("coco.json", "open.json"):
        if not (args.splits / name).is_file():
            print(f"error: {args.splits / name} is absent (vision prepare real-checked --out {args.splits})",
                  file=sys.stderr)
            return 2
    rows: list[tuple[str, Detect]] = []
    if args.composition:
        rows.append((f"composition (cos >= {args.similarity:g})", composition_detect(args.similarity, args.threads)))
    from vision.detection.predictor import DetectorPredictor

    if args.untrained:
        from vision.detection.task import DetectionConfig, build_model

        for similarity in (None, args.competitor_similarity):
            torch.manual_seed(0)
            config = DetectionConfig(body="yolox-nano", body_weights="yolox-nano", image_size=416,
                                     score_threshold=0.001, competitor_similarity=similarity)
            predictor = DetectorPredictor(build_model(config).eval(), SPEED_VOCABULARY, config.image_size,
                                          competitor_similarity=similarity)
            name = "untrained body" + ("" if similarity is None else f", competitors {similarity:g}")
            rows.append((name, predictor_detect(predictor)))
    exemplar_rows = set()
    for spec in args.detector:
        name, _, path = spec.partition("=")
        exemplar_rows.add(name)
        if not path:
            parser.error(f"--detector {spec!r}: expected NAME=CKPT")
        rows.append((name, predictor_detect(DetectorPredictor.from_checkpoint(path, vocabulary=SPEED_VOCABULARY))))
    if not rows:
        parser.error("no row: give --composition, --untrained or --detector")
    print(f"{'row':28s} {'COCO AP50':>10s} {'open AP50':>10s} {'absent boxed':>13s} {'frames/s':>9s}")
    for name, detect in rows:
        coco = coco_ap50(detect, args.splits / "coco.json")
        opened = open_vocabulary(detect, args.splits / "open.json", args.shown)
        fps = frames_per_second(detect, args.splits / "coco.json", args.speed_frames)
        boxed = f"{len(opened['absent_boxed'])} of {opened['checks']}"
        print(f"{name:28s} {coco:10.1f} {opened['open_AP50']:10.1f} {boxed:>13s} {fps:9.1f}", flush=True)
        print("    per name: " + ", ".join(f"{n} {v:.0f}" for n, v in sorted(opened["per_name"].items())))
        if opened["absent_boxed"]:
            print("    absent names boxed: " + ", ".join(opened["absent_boxed"]))
        if args.exemplars and name in exemplar_rows:
            opened = open_vocabulary(detect, args.splits / "open.json", args.shown, exemplars=True)
            boxed = f"{len(opened['absent_boxed'])} of {opened['checks']}"
            print(f"{name + ' + exemplars':28s} {'-':>10s} {opened['open_AP50']:10.1f} {boxed:>13s} {'-':>9s}",
                  flush=True)
            print("    per name: " + ", ".join(f"{n} {v:.0f}" for n, v in sorted(opened["per_name"].items())))
            if opened["absent_boxed"]:
                print("    absent names boxed: " + ", ".join(opened["absent_boxed"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
