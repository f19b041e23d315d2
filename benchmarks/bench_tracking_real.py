"""Trackers on real clips with box tracks checked by eye (``vision prepare real-tracks``), scored by
``vision evaluate --task tracking --protocol boxes``, with each tracker's frames/s, in one run.

    vision prepare real-tracks --out datasets/real_tracks --footage ../shared/footage
    python benchmarks/bench_tracking_real.py [--split datasets/real_tracks/real_tracks.json] \\
        [--trackers nanotrack-opencv nanotrack-v3] [--threads 1] [--out runs/bench_tracking_real] \\
        [--real-ckpt g2tam-real=runs/tracking/real/checkpoints/last.ckpt \\
         --real-ckpt g2tam-real-2d=runs/tracking/real_2d/checkpoints/last.ckpt] \\
        [--tracking-ckpt g2tam-tiny=runs/tracking/tiny/checkpoints/last.ckpt \\
         --tracking-ckpt control=runs/tracking/baseline_tiny/checkpoints/last.ckpt]

Each tracker is prompted with the box of the track's first labelled frame and run on every following frame of its
clip (the frames as stored, RGB). Rows:

- ``nanotrack-opencv``: OpenCV's ``cv2.TrackerNano`` on the registered NanoTrack v2 ONNX pair (the control the
  issue names: "NanoTrack alone");
- ``nanotrack-v2`` / ``nanotrack-v3``: :class:`vision.tracking.nanotrack.NanoTracker` on the torch networks;
- ``proximity-3d``: the learning-free 3D-proximity tracker on the real-perception backbone
  (:class:`vision.tracking.real.proximity.ProximityTracker`);
- ``NAME`` of ``--real-ckpt NAME=CKPT``: G2TAM on real video (:class:`vision.tracking.real.model.RealG2TAM`, ``make
  train-real-tracking``: ``runs/tracking/real`` with the 3D memory, ``runs/tracking/real_2d`` its 2D-memory
  control), prompted as the others; its records say present or absent by its own decision; ``--real-prompts box
  point text mask`` adds the rows ``NAME[point]`` (a click at the first box's centre), ``NAME[text]`` (the track's
  caption, through YOLOX-nano's classes) and ``NAME[mask]`` (the mask drawn on the first frame, where one is);
- ``NAME`` of ``--tracking-ckpt NAME=CKPT``: a tracking checkpoint through
  :class:`vision.tracking.predictor.TrackerPredictor` as ``vision predict --task tracking --box`` runs it (the
  whole clip, the box on its first frame); its box is the tight box of its mask, and an empty mask (presence under
  the predictor's threshold) says "absent". ``make train-tracking`` trains today's tiny G2TAM
  (``runs/tracking/tiny``) and its 2D memory-bank control (``runs/tracking/baseline_tiny``) on synthetic renders.

Masks: where the split has hand-drawn masks (``masks`` in the labels), every row's ``J&F`` is its box filled (the
box-as-mask baseline), and ``--masks MODE ...`` adds a table of each tracker's boxes masked by
:class:`vision.tracking.real.masks.BoxMasks` in each mode (``box``; ``deeplab``, DeepLabV3 inside the box; ...),
scored on those frames (``OUT/<tracker>@<mode>.json``).

NanoTrack has no notion of absence: it always answers with a box, so its records say "present" on every frame
(``score`` 1; its own confidence is kept as ``tracker_score``), and its absent accuracy is 0 wherever the clips
have absent frames. frames/s counts the tracker's calls only (frames decoded beforehand), on ``--threads`` torch
and OpenCV threads. The results of each tracker are written to ``OUT/<tracker>.json``, so ``vision evaluate
--task tracking --protocol boxes --split SPLIT --results OUT/<tracker>.json`` gives the same figures.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

TRACKERS = ("nanotrack-opencv", "nanotrack-v2", "nanotrack-v3", "proximity-3d")
FIGURES = ("success@0.5", "mIoU", "success_auc", "absent_accuracy", "after_event/success@0.5", "J&F")


def make_tracker(name: str):
    """A fresh tracker of ``name`` with ``init(frame, box)`` and ``update(frame) -> (box, score)``."""
    if name == "nanotrack-opencv":
        from vision.tracking.nanotrack_opencv import OpenCVNanoTracker

        return OpenCVNanoTracker()
    if name == "proximity-3d":
        from vision.geometry.real_backbone import RealPerception
        from vision.tracking.real.proximity import ProximityTracker

        return ProximityTracker(RealPerception())
    from vision.tracking.nanotrack import NanoTracker

    return NanoTracker(name.split("-")[1])


def clips(split: dict, root: Path) -> list[dict]:
    """Per track: its video, its frames' image ids and paths in order, and the prompt (first labelled frame)."""
    images = defaultdict(list)
    for im in split["images"]:
        images[im["video_id"]].append(im)
    from vision.data.masks import decode_rle

    boxes = {(a["track_id"], a["image_id"]): a["bbox"] for a in split["annotations"]}
    masks = {(a["track_id"], a["image_id"]): a["segmentation"] for a in split["annotations"] if "segmentation" in a}
    out = []
    for track in split["tracks"]:
        frames = sorted(images[track["video_id"]], key=lambda im: im["frame_index"])
        prompt = next(i for i, im in enumerate(frames) if (track["id"], im["id"]) in boxes)
        mask = masks.get((track["id"], frames[prompt]["id"]))
        out.append({"track": track, "frames": frames[prompt:], "paths": [root / im["file_name"] for im in
                                                                          frames[prompt:]],
                    "box": boxes[(track["id"], frames[prompt]["id"])],
                    "mask": None if mask is None else decode_rle(mask)})
    return out


def run_predictor(predictor, clip: dict, frames: list[np.ndarray]) -> tuple[list[dict], float]:
    """``(records, seconds)`` of a :class:`~vision.tracking.predictor.TrackerPredictor` on one clip: the box prompt
    on its first frame, the whole clip propagated; a record per frame with a non-empty mask (its tight box)."""
    from vision.data.masks import mask_to_bbox

    x, y, w, h = (float(v) for v in clip["box"])
    start = time.perf_counter()
    state = predictor.init_state(np.stack(frames))
    predictor.add_prompt(state, view=0, obj_id=1, box=[x, y, x + w, y + h])
    records = []
    for view, _, masks, scores in predictor.propagate(state):
        if view == 0 or not masks[0].any():
            continue
        image = clip["frames"][view]
        records.append({"video_id": clip["track"]["video_id"], "image_id": image["id"],
                        "track_id": clip["track"]["id"], "bbox": mask_to_bbox(masks[0]), "score": 1.0,
                        "tracker_score": float(scores[0])})
    return records, time.perf_counter() - start


def real_prompt(predictor, clip: dict, frames: list[np.ndarray], kind: str) -> dict:
    """The real tracker's prompt of kind ``box`` (the first labelled box), ``point`` (that box's centre, one
    positive click), ``text`` (the track's caption) or ``mask`` (the mask labelled on the first frame; the box
    where none is), as ``{1: (frame, box)}`` (:meth:`~vision.tracking.real.predictor.RealTrackerPredictor.boxes`)."""
    from vision.tracking.prompt_text import ObjectPromptSpec

    x, y, w, h = (float(v) for v in clip["box"])
    if kind == "mask" and clip.get("mask") is not None:
        return predictor.boxes(np.stack(frames), [ObjectPromptSpec(1, 0, mask="labelled")], masks={1: clip["mask"]})
    if kind in ("box", "mask"):
        spec = ObjectPromptSpec(1, 0, box=[x, y, x + w, y + h])
    elif kind == "point":
        spec = ObjectPromptSpec(1, 0, points=[[x + w / 2, y + h / 2]], labels=[1])
    else:
        spec = ObjectPromptSpec(1, None, text=clip["track"]["caption"])
    return predictor.boxes(np.stack(frames), [spec])


def run_real(predictor, clip: dict, frames: list[np.ndarray], kind: str = "box") -> tuple[list[dict], float]:
    """``(records, seconds)`` of a :class:`~vision.tracking.real.predictor.RealTrackerPredictor`'s tracker on one
    clip, prompted on its first frame (:func:`real_prompt`; a text prompt where the detector first finds its class):
    ``score`` 1 where it says present, 0 where absent (its presence kept as ``tracker_score``); the frames before a
    later prompt have no record (absent)."""
    from vision.errors import InputError

    start = time.perf_counter()
    records = []
    try:
        prompts = real_prompt(predictor, clip, frames, kind)
    except InputError as exc:  # the prompt finds nothing: every frame unanswered, and the reason printed
        print(f"{clip['track']['caption']!r}: {kind} prompt refused ({exc})")
        return [], time.perf_counter() - start
    for t, _, answers in predictor.model.track(frames, prompts):
        if t == 0 or 1 not in answers:
            continue
        answer, image = answers[1], clip["frames"][t]
        records.append({"video_id": clip["track"]["video_id"], "image_id": image["id"],
                        "track_id": clip["track"]["id"], "bbox": [float(v) for v in answer.box],
                        "score": 1.0 if answer.present else 0.0, "tracker_score": answer.presence})
    return records, time.perf_counter() - start


def run_tracker(name: str, clip: dict, frames: list[np.ndarray]) -> tuple[list[dict], float]:
    """``(records, seconds of tracker calls)`` of tracker ``name`` on one clip."""
    tracker = make_tracker(name)
    start = time.perf_counter()
    tracker.init(frames[0], tuple(float(v) for v in clip["box"]))
    records = []
    for image, frame in zip(clip["frames"][1:], frames[1:]):
        box, score = tracker.update(frame)
        x, y, w, h = (float(v) for v in box)
        present = getattr(tracker, "present", True)  # NanoTrack always answers "present"
        records.append({"video_id": clip["track"]["video_id"], "image_id": image["id"],
                        "track_id": clip["track"]["id"], "bbox": [x, y, w, h], "score": 1.0 if present else 0.0,
                        "tracker_score": float(score)})
    return records, time.perf_counter() - start


def masked(results: list[dict], split: dict, frames_of: dict[int, np.ndarray], mode: str) -> list[dict]:
    """``results`` with a ``segmentation`` (RLE) on each present record of an image with a labelled mask: the
    record's box masked in ``mode`` (:class:`~vision.tracking.real.masks.BoxMasks`)."""
    from vision.data.masks import encode_mask
    from vision.tracking.real.masks import BoxMasks

    masker = BoxMasks(mode)
    labelled = {int(a["image_id"]) for a in split["annotations"] if "segmentation" in a}
    out = []
    for r in results:
        if int(r["image_id"]) in labelled and r["score"] >= 0.5:
            frame = frames_of[int(r["image_id"])]
            r = {**r, "segmentation": encode_mask(masker.mask(frame, np.asarray(r["bbox"])))}
        out.append(r)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="datasets/real_tracks/real_tracks.json")
    parser.add_argument("--trackers", nargs="+", default=list(TRACKERS), choices=TRACKERS)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default="runs/bench_tracking_real")
    parser.add_argument("--real-ckpt", action="append", default=[], metavar="NAME=CKPT",
                        help="a real tracker's checkpoint row (make train-real-tracking); repeatable")
    parser.add_argument("--real-prompts", nargs="+", default=["box"], choices=("box", "point", "text", "mask"),
                        help="the real trackers' prompt kinds, a row each (NAME[kind] beside box)")
    parser.add_argument("--tracking-ckpt", action="append", default=[], metavar="NAME=CKPT",
                        help="a tracking checkpoint's row, through TrackerPredictor; repeatable")
    parser.add_argument("--masks", nargs="*", default=[], metavar="MODE",
                        help="mask modes scored on each tracker's boxes where masks are labelled (BoxMasks' modes)")
    args = parser.parse_args()
    checkpoints = dict(item.split("=", 1) for item in args.tracking_ckpt)
    real = {}
    for item in args.real_ckpt:
        name, path = item.split("=", 1)
        for kind in args.real_prompts:
            real[name if kind == "box" else f"{name}[{kind}]"] = (path, kind)

    import cv2
    import torch

    from vision.data.io import read_image
    from vision.evaluation.evaluate import evaluate

    torch.set_num_threads(args.threads)
    cv2.setNumThreads(args.threads)
    split_path = Path(args.split)
    split = json.loads(split_path.read_text())
    todo = clips(split, split_path.parent)
    decoded = [[read_image(p) for p in clip["paths"]] for clip in todo]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows, mask_rows = [], []
    frames_of = {im["id"]: frame for clip, frames in zip(todo, decoded) for im, frame in zip(clip["frames"], frames)}
    for name in [*args.trackers, *real, *checkpoints]:
        predictor = model = None
        if name in real:
            from vision.tracking.real.predictor import RealTrackerPredictor

            model = RealTrackerPredictor.from_checkpoint(real[name][0], masks="box")
        elif name in checkpoints:
            from vision.tracking.predictor import TrackerPredictor

            predictor = TrackerPredictor.from_checkpoint(checkpoints[name])
        results, seconds, calls = [], 0.0, 0
        for clip, frames in zip(todo, decoded):
            if model is not None:
                records, took = run_real(model, clip, frames, real[name][1])
            elif predictor is not None:
                records, took = run_predictor(predictor, clip, frames)
            else:
                records, took = run_tracker(name, clip, frames)
            results += records
            seconds += took
            calls += len(frames)
        (out / f"{name}.json").write_text(json.dumps(results))
        metrics = evaluate(split_path, out / f"{name}.json", "tracking", protocol="boxes")
        rows.append((name, metrics, calls / seconds))
        for mode in args.masks:
            (out / f"{name}@{mode}.json").write_text(json.dumps(masked(results, split, frames_of, mode)))
            mask_rows.append((name, mode, evaluate(split_path, out / f"{name}@{mode}.json", "tracking",
                                                   protocol="boxes")))
    videos = [v["name"] for v in split["videos"]]
    print(f"{len(todo)} tracks, {sum(len(c['frames']) for c in todo)} frames; "
          f"{rows[0][1]['num_present_frames']} labelled present, {rows[0][1]['num_absent_frames']} labelled absent "
          f"(prompt frames left out); {args.threads} thread(s)")
    print("| tracker | " + " | ".join(FIGURES) + " | frames/s |")
    print("|---|" + "---:|" * (len(FIGURES) + 1))
    for name, m, fps in rows:
        print(f"| {name} | " + " | ".join(f"{m[k]:.3f}" for k in FIGURES) + f" | {fps:.1f} |")
    print()
    print("success@0.5 per clip")
    print("| tracker | " + " | ".join(videos) + " |")
    print("|---|" + "---:|" * len(videos))
    for name, m, _ in rows:
        print(f"| {name} | " + " | ".join(f"{m[f'{v}/success@0.5']:.2f}" for v in videos) + " |")
    if mask_rows:
        masked_videos = [v for v in videos if f"{v}/J&F" in mask_rows[0][2]]
        print()
        print(f"masks on {mask_rows[0][2]['num_mask_frames']} labelled frames of {len(masked_videos)} tracks "
              "(J&F per clip after the mean)")
        print("| tracker | masks | J | F | J&F | " + " | ".join(masked_videos) + " |")
        print("|---|---|---:|---:|---:|" + "---:|" * len(masked_videos))
        for name, mode, m in mask_rows:
            print(f"| {name} | {mode} | {m['J']:.3f} | {m['F']:.3f} | {m['J&F']:.3f} | "
                  + " | ".join(f"{m[f'{v}/J&F']:.2f}" for v in masked_videos) + " |")


if __name__ == "__main__":
    main()
