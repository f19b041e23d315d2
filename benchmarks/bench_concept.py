"""Concept prompts: the concept tracker against two baselines and its own ablations, on the same splits, one table.

``python benchmarks/bench_concept.py [--concept runs/concept/tiny/checkpoints/last.ckpt]
[--detector runs/detection/tiny/checkpoints/last.ckpt] [--tracker runs/tracking/tiny/checkpoints/last.ckpt]
[--splits datasets/synthetic/concept_val_{video,unordered,occlusion,near}.json] [--max-videos N] [--threads 2]``

Methods (every one queried with each video's phrases, :func:`vision.concept.records.queried_phrases`):

- ``(a) detect+ByteTrack``: the detector on every view, ByteTrack, masks from the tracker's box prompt
  (:func:`vision.concept.baselines.detect_then_track`);
- ``(b) text prompt``: the tracker's single-object text prompt, one object per phrase
  (:func:`vision.concept.baselines.text_prompt_tracker`);
- ``(c) concept``: the concept tracker (:mod:`vision.concept.inference`), and its ablations, each one part
  switched off: ``-rejection`` (the competitors and the OOV column), ``-presence`` (the learned presence head: the
  best proposal's score instead), ``-association`` (the learned association head: the 3D-distance rule instead);
  ``+fill`` switches on the tracker's masks on views where an instance has no proposal (``fill_missed``, off by
  default), ``solved cameras`` gives the association the tracker's depth head on the camera solver's cameras in
  place of its point head (``ConceptPredictor(solve_cameras=True)``), and ``known geometry`` is the oracle: the
  split's ground-truth depth and cameras in place of the backbone's point maps (what better geometry would give the
  association).

Columns: the ``concept`` scorer's figures (``vision.evaluation.evaluate(split, results, "concept")``) and views/s
(every view of every video, detector, tracker and association included, measured in this run). Then the cost of
several phrases: the concept tracker on the first split with all of each video's phrases in one pass, against one
pass per phrase (views/s). Then the issue's targets, each met or missed.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Callable

import torch

from vision.concept.baselines import run_baseline
from vision.concept.inference import concept_records, score_concept, track_split
from vision.concept.predictor import ConceptPredictor
from vision.concept.records import queried_phrases
from vision.data.coco import Split, load_split
from vision.detection.predictor import DetectorPredictor
from vision.tracking.inference import protocol_predictor, video_frames
from vision.tracking.task import load as load_tracker

COLUMNS = ("HOTA", "DetA", "AssA", "LocA", "IDSW", "AP", "cgF1", "IL_MCC", "presence_MCC", "near_accepted",
           "outside_accepted")
ABLATIONS = {"(c) concept": {}, "(c) -rejection": {"rejection": False}, "(c) -presence": {"learned_presence": False},
             "(c) -association": {"learned_association": False}}


def _views(split: Split, max_videos: int | None) -> int:
    videos = sorted(split.videos)[:max_videos] if max_videos else sorted(split.videos)
    return sum(len(video_frames(split, v)) for v in videos)


def _run(method: Callable[[], list[dict]], split_path: Path, views: int) -> dict:
    start = time.perf_counter()
    results = method()
    seconds = time.perf_counter() - start
    metrics = score_concept(split_path, results)
    return {**metrics, "views/s": views / seconds}


def one_by_one(predictor: ConceptPredictor, split: Split, max_videos: int | None) -> list[dict]:
    """The concept tracker with one pass per phrase (each phrase's ids offset to stay unique in the video)."""
    out = []
    videos = sorted(split.videos)[:max_videos] if max_videos else sorted(split.videos)
    for vid in videos:
        frames = video_frames(split, vid)
        images = torch.stack([torch.from_numpy(split.load_image(im)) for im in frames]).numpy()
        offset = 0
        for category_id, name in queried_phrases(split, vid).items():
            state = predictor.init_state(images, ordered=bool(split.videos[vid].get("ordered", True)))
            predictor.add_concept(state, name)
            records = concept_records(predictor.propagate(state), state, vid, [int(im["id"]) for im in frames],
                                      [category_id])
            for r in records:
                if "track_id" in r:
                    r["track_id"] += offset
            offset += max([0] + [r["track_id"] for r in records if "track_id" in r])
            out += records
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concept", default="runs/concept/tiny/checkpoints/last.ckpt")
    parser.add_argument("--detector", default="runs/detection/tiny/checkpoints/last.ckpt")
    parser.add_argument("--tracker", default="runs/tracking/tiny/checkpoints/last.ckpt")
    parser.add_argument("--splits", nargs="+", default=[f"datasets/synthetic/concept_val_{m}.json"
                                                        for m in ("video", "unordered", "occlusion", "near")])
    parser.add_argument("--max-videos", type=int, default=None)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    tracker_model, tracker_config = load_tracker(args.tracker)
    tracker = protocol_predictor(tracker_model, tracker_config.text_encoder)
    detector = DetectorPredictor.from_checkpoint(args.detector)
    predictors = {name: ConceptPredictor.from_checkpoint(args.concept, config_overrides=overrides)
                  for name, overrides in ABLATIONS.items()}
    predictors["(c) +fill"] = ConceptPredictor.from_checkpoint(args.concept, fill_missed=True)
    predictors["(c) solved cameras"] = ConceptPredictor.from_checkpoint(args.concept, solve_cameras=True)
    warm = load_split(Path(args.splits[0]))  # the first call pays for loading the text encoder: not timed
    run_baseline("detect_then_track", warm, detector, tracker, 1)
    track_split(predictors["(c) concept"], warm, 1)

    table: dict[tuple[str, str], dict] = {}
    for split_file in args.splits:
        path = Path(split_file)
        split = load_split(path)
        views = _views(split, args.max_videos)
        name = path.stem.removeprefix("concept_val_")
        for baseline, label in (("detect_then_track", "(a) detect+ByteTrack"), ("text_prompt", "(b) text prompt")):
            table[name, label] = _run(lambda: run_baseline(baseline, split, detector, tracker, args.max_videos),
                                      path, views)
        for label, predictor in predictors.items():
            table[name, label] = _run(lambda: track_split(predictor, split, args.max_videos), path, views)
        table[name, "(c) known geometry"] = _run(
            lambda: track_split(predictors["(c) concept"], split, args.max_videos, known_geometry=True), path, views)
        print(f"{name}: done", flush=True)

    header = f"{'split':<10} {'method':<22}" + "".join(f"{c:>14}" for c in COLUMNS + ("views/s",))
    print("\n" + header)
    for (split_name, label), m in table.items():
        cells = "".join(f"{m.get(c, float('nan')):>14.4f}" if c != "IDSW" else f"{m.get(c, 0):>14d}"
                        for c in COLUMNS + ("views/s",))
        print(f"{split_name:<10} {label:<22}{cells}")

    first = Path(args.splits[0])
    split = load_split(first)
    views = _views(split, args.max_videos)
    together = _run(lambda: track_split(predictors["(c) concept"], split, args.max_videos), first, views)
    apart = _run(lambda: one_by_one(predictors["(c) concept"], split, args.max_videos), first, views)
    print(f"\nseveral phrases on {first.stem}: one pass {together['views/s']:.3f} views/s (HOTA "
          f"{together['HOTA']:.4f}), one pass per phrase {apart['views/s']:.3f} views/s (HOTA {apart['HOTA']:.4f}); "
          f"ratio {together['views/s'] / apart['views/s']:.2f}x")

    def get(split_name: str, label: str, key: str) -> float:
        return float(table.get((split_name, label), {}).get(key, float("nan")))

    print("\ntargets:")
    checks = []
    if ("unordered", "(c) concept") in table:
        a, c = get("unordered", "(a) detect+ByteTrack", "HOTA"), get("unordered", "(c) concept", "HOTA")
        aa, ca = get("unordered", "(a) detect+ByteTrack", "AssA"), get("unordered", "(c) concept", "AssA")
        checks += [("unordered HOTA >= (a) + 0.15", c >= a + 0.15, f"{c:.4f} vs {a:.4f}"),
                   ("unordered AssA >= 2x (a)", ca >= 2 * aa, f"{ca:.4f} vs {aa:.4f}")]
    if ("video", "(c) concept") in table:
        a, c = get("video", "(a) detect+ByteTrack", "HOTA"), get("video", "(c) concept", "HOTA")
        checks.append(("video HOTA >= (a) + 0.05", c >= a + 0.05, f"{c:.4f} vs {a:.4f}"))
    if ("occlusion", "(c) concept") in table:
        a, c = get("occlusion", "(a) detect+ByteTrack", "IDSW"), get("occlusion", "(c) concept", "IDSW")
        checks.append(("long occlusion: fewer id switches than (a)", c < a, f"{c:.0f} vs {a:.0f}"))
    if ("near", "(c) concept") in table:
        c, off = get("near", "(c) concept", "near_accepted"), get("near", "(c) -rejection", "near_accepted")
        checks.append(("near-category distractors given the phrase's id <= 5%", c <= 0.05,
                       f"{c:.4f} (rejection off: {off:.4f})"))
    mcc = min(get(s, "(c) concept", "presence_MCC") for s, label in table if label == "(c) concept")
    checks.append(("presence MCC >= 0.8 (every split)", mcc >= 0.8, f"lowest {mcc:.4f}"))
    checks.append(("several phrases in one pass faster than one by one", together["views/s"] > apart["views/s"],
                   f"{together['views/s']:.3f} vs {apart['views/s']:.3f} views/s"))
    for text, ok, value in checks:
        print(f"  {'met   ' if ok else 'MISSED'} {text}: {value}")


if __name__ == "__main__":
    main()
