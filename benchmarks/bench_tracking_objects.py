"""Trackers at many objects: views/s of ``propagate`` at 1 / 4 / 16 / 64 / 128 point-prompted objects, decoded one
object per decoder call (the per-object loop, the baseline row), in buckets, or all in one call; peak memory per
object; and whether every mode gives the per-object loop's masks.

    python benchmarks/bench_tracking_objects.py --ckpt runs/tracking/tiny/checkpoints/last.ckpt
    python benchmarks/bench_tracking_objects.py --ckpt g2tam=runs/tracking/tiny/checkpoints/last.ckpt \
        multiplex=runs/tracking/multiplex_tiny/checkpoints/last.ckpt control=runs/tracking/baseline_tiny/checkpoints/last.ckpt
    python benchmarks/bench_tracking_objects.py --ckpt ... --objects 64 --profile   # cProfile's top lines
    python benchmarks/bench_tracking_objects.py --ckpt ... --flops    # what the decoder computes, and how fast

Several trackers (``NAME=CHECKPOINT``; G2TAM with either decoder, the memory-bank control) run side by side: each
(model, mode) is a row of one table, timed in turn within each repetition, and its ``x 1 obj`` ratio is to its own
one-object row. Every mode tracks the same random 8-frame window (one window, ``cache_views=0``: every ``propagate`` runs the
backbone once, shared by all objects) with the same prompts through one :class:`TrackerPredictor`, one thread; the
modes differ only in ``object_bucket`` (objects per call of the model's decoder: ``loop`` = 1, ``all`` = every
object). Within each repetition the modes run in turn, so a change of load on the machine reaches them alike.
A mode may name the predictor's carried 3D points per object after ``@`` (``bucket@16``; default
``--memory-points``, 64): fewer points are fewer prompt tokens per object, an accuracy trade that
``bench_tracking.py --memory-points`` measures; masks are compared with the first mode of the same points.
Peak memory: each (mode, objects) runs in a fresh process; the peak RSS is reset after the model and the frames are
loaded (``/proc/self/clear_refs``) and read after one ``propagate`` (``VmHWM``); the growth over the RSS before it
beyond the first row's (one object: the backbone's activations), per added object, is the peak memory per object.
``--flops`` replays the decoder calls of one ``propagate`` per row (outside the timed repetitions) under
``torch.utils.flop_counter`` (matrix products, convolutions and attention; element-wise work is not counted) and
prints the FLOPs per decoded (view, object) pair, the decoder's time and its rate, and the rate the decoder would
need for the row to reach 0.25 of the one-object views/s (the rest of ``propagate`` as measured).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

MODES = ("loop", "bucket", "all")


def parse_mode(text: str, memory_points: int) -> tuple[str, int]:
    """``loop`` / ``bucket`` / ``all``, optionally ``@POINTS`` -> (kind, carried 3D points per object)."""
    kind, _, points = text.partition("@")
    if kind not in MODES or (points and not points.isdigit()):
        raise SystemExit(f"--modes: expected one of {MODES}, optionally @POINTS, got {text!r}")
    return kind, int(points) if points else memory_points


def bucket_of(kind: str, objects: int, bucket: int) -> int:
    """``object_bucket`` of a mode: 1 (``loop``), ``bucket``, or every object (``all``)."""
    return {"loop": 1, "bucket": bucket, "all": objects}[kind]


def make_state(predictor, objects: int, views: int, size: int):
    """A state over ``views`` random frames with ``objects`` objects, one positive click each on view 0."""
    frames = (np.random.default_rng(0).random((views, size, size, 3)) * 255).astype(np.uint8)
    state = predictor.init_state(frames)
    for o in range(objects):
        predictor.add_prompt(state, 0, o, points=[[(o * 7) % size, (o * 13) % size]])
    return state


def predictor_for(model, mode: str, objects: int, args):
    from vision.tracking.predictor import TrackerPredictor

    kind, points = parse_mode(mode, args.memory_points)
    return TrackerPredictor(model, text_encoder=None, window_size=args.views, max_anchors=1, cache_views=0,
                            memory_points=points, object_bucket=bucket_of(kind, objects, args.bucket))


def masks_of(predictor, state) -> np.ndarray:
    """``[V, N, H, W]`` bool masks of one ``propagate``."""
    return np.stack([m for _, _, m, _ in predictor.propagate(state)])


def _status(key: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return float(line.split()[1]) / 1024  # kB -> MiB
    raise RuntimeError(f"/proc/self/status has no {key}")


def memory_child(args) -> None:
    """Child process: one (mode, objects); prints the RSS before ``propagate`` and the peak during it (MiB)."""
    from vision.tracking.task import load

    torch.set_num_threads(1)
    mode, objects, ckpt = args.memory_child.split(":", 2)
    model = load(ckpt)[0]
    predictor = predictor_for(model, mode, int(objects), args)
    state = make_state(predictor, int(objects), args.views, args.size)
    Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
    before = _status("VmRSS")
    with torch.no_grad():
        for _ in predictor.propagate(state):
            pass
    print(json.dumps({"before": before, "peak": _status("VmHWM")}))


def peak_growth(ckpt: str, mode: str, objects: int, args) -> float:
    """MiB of peak RSS growth during one ``propagate`` of the tracker in ``ckpt``, in a fresh process."""
    cmd = [sys.executable, __file__, "--ckpt", ckpt, "--memory-child", f"{mode}:{objects}:{ckpt}",
           "--views", str(args.views), "--size", str(args.size), "--bucket", str(args.bucket),
           "--memory-points", str(args.memory_points)]
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1])
    return out["peak"] - out["before"]


def decoder_flops(predictor, state) -> tuple[float, float, int]:
    """(FLOPs, seconds, decoded pairs) of the decoder calls of one ``propagate``: the calls are recorded, then
    each is replayed once under the FLOP counter and timed alone (best of three)."""
    from torch.utils.flop_counter import FlopCounterMode

    model = predictor.model
    calls = []
    inner = model.decode

    def record(encoded, prompts, *views):
        calls.append((encoded, prompts, views))
        return inner(encoded, prompts, *views)

    model.decode = record
    try:
        for _ in predictor.propagate(state):
            pass
    finally:
        model.decode = inner
    flops = seconds = 0.0
    pairs = 0
    with torch.no_grad():
        for encoded, prompts, views in calls:
            with FlopCounterMode(display=False) as counter:
                inner(encoded, prompts, *views)
            flops += counter.get_total_flops()
            best = []
            for _ in range(3):
                t = time.perf_counter()
                inner(encoded, prompts, *views)
                best.append(time.perf_counter() - t)
            seconds += min(best)
            pairs += prompts.num_objects * (len(views[0]) if views and views[0] is not None
                                            else encoded["feats"].shape[1])
    return flops, seconds, pairs


def parse_models(values: list[str]) -> dict[str, str]:
    """``NAME=CHECKPOINT`` (or a bare path, named ``model``) -> ``{name: checkpoint}`` in the given order."""
    models = {}
    for value in values:
        name, sep, path = value.partition("=")
        name, path = (name, path) if sep else ("model", value)
        if not name or not path or name in models:
            raise SystemExit(f"--ckpt: expected distinct NAME=CHECKPOINT entries, got {value!r}")
        if not Path(path).is_file():
            raise SystemExit(f"--ckpt {name}: no checkpoint file at {path}")
        models[name] = path
    return models


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ckpt", required=True, nargs="+",
                    help="trained trackers (TrackingModule checkpoints), each NAME=CHECKPOINT or one bare path")
    ap.add_argument("--objects", type=int, nargs="+", default=[1, 4, 16, 64, 128])
    ap.add_argument("--modes", nargs="+", default=list(MODES), help="loop / bucket / all, optionally @POINTS")
    ap.add_argument("--bucket", type=int, default=16, help="objects per decoder call of the 'bucket' mode")
    ap.add_argument("--memory-points", type=int, default=64, help="carried 3D points per object (the predictor's)")
    ap.add_argument("--views", type=int, default=8)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--skip-memory", action="store_true")
    ap.add_argument("--profile", action="store_true", help="cProfile one propagate per (mode, objects)")
    ap.add_argument("--flops", action="store_true", help="the decoder's FLOPs per pair and rate per (mode, objects)")
    ap.add_argument("--memory-child", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_child:
        memory_child(args)
        return
    from vision.tracking.task import load

    torch.set_num_threads(1)
    ckpts = parse_models(args.ckpt)
    models = {name: load(path)[0] for name, path in ckpts.items()}
    rows = {}
    keys = [(name, mode) for name in models for mode in args.modes]
    for n in args.objects:
        runs = {(name, mode): (p := predictor_for(models[name], mode, n, args), make_state(p, n, args.views, args.size))
                for name, mode in keys}
        reference: dict[tuple[str, int], np.ndarray] = {}
        diffs = {}
        for key, (predictor, state) in runs.items():  # warm-up, and the masks of each mode
            masks = masks_of(predictor, state)
            reference.setdefault((key[0], predictor.memory_points), masks)
            diffs[key] = float((masks != reference[(key[0], predictor.memory_points)]).mean())
        times = {key: [] for key in runs}
        for _ in range(args.reps):
            for key, (predictor, state) in runs.items():
                t = time.perf_counter()
                for _ in predictor.propagate(state):
                    pass
                times[key].append(time.perf_counter() - t)
        for key in runs:
            rows[key + (n,)] = {"min": args.views / min(times[key]), "median": args.views / np.median(times[key]),
                                "diff": diffs[key], "seconds": min(times[key]),
                                "mem": None if args.skip_memory else peak_growth(ckpts[key[0]], key[1], n, args),
                                "flops": decoder_flops(*runs[key]) if args.flops else None}
        if args.profile:
            for key, (predictor, state) in runs.items():
                prof = cProfile.Profile()
                prof.enable()
                for _ in predictor.propagate(state):
                    pass
                prof.disable()
                print(f"\n--- cProfile, {key[0]} {key[1]}, {n} objects (own time)")
                pstats.Stats(prof).sort_stats("tottime").print_stats(12)
    first = keys[0]
    label = "x " + " ".join(first) if len(models) > 1 else "x " + first[1]
    print(f"\nviews/s of propagate, one {args.views}-view window at {args.size} px, one thread, min / median over "
          f"{args.reps} repetitions; 'bucket' = {args.bucket} objects per decoder call; memory points "
          f"{args.memory_points} unless the mode says (@); masks compared with the model's first mode of the same "
          f"points (fraction of differing pixels)")
    for name, path in ckpts.items():
        print(f"  {name}: {path} ({type(models[name]).__name__}"
              f"{', decoder ' + models[name].decoder_style if hasattr(models[name], 'decoder_style') else ''})")
    width = max(10, max(len(name) for name in models) + max(len(mode) for mode in args.modes) + 2)
    print(f"{'objects':>7} {'model mode':<{width}}{'views/s min':>12}{'median':>8}{label:>{max(10, len(label) + 1)}}"
          f"{'x 1 obj':>9}{'peak MiB':>9}{'MiB/obj':>8}{'mask diff':>11}")
    for n in args.objects:
        for name, mode in keys:
            r = rows[(name, mode, n)]
            one = rows[(name, mode, args.objects[0])]
            mem = "" if r["mem"] is None else f"{r['mem']:>9.1f}"
            extra = n - args.objects[0]
            per = "" if r["mem"] is None or extra <= 0 else f"{(r['mem'] - one['mem']) / extra:>8.2f}"
            ratio = r["min"] / rows[first + (n,)]["min"]
            print(f"{n:>7} {name + ' ' + mode:<{width}}{r['min']:>12.1f}{r['median']:>8.1f}"
                  f"{ratio:>{max(10, len(label) + 1)}.2f}{r['min'] / one['min']:>9.3f}{mem:>9}{per:>8}"
                  f"{r['diff']:>11.2e}")
    print(f"(x 1 obj: min views/s over the {args.objects[0]}-object row's min of the same model and mode, target at "
          f"64 objects >= 0.35 and at 128 >= 0.25; peak MiB: peak RSS growth during one propagate, fresh process; "
          f"MiB/obj: its growth over the {args.objects[0]}-object row's, per added object, target <= 0.5 at 128)")
    if args.flops:
        print(f"\nthe decoder in one propagate (matrix products, convolutions, attention), replayed call by call; "
              f"'needed': its rate for views/s at 0.25 of the {args.objects[0]}-object row, the rest of propagate "
              f"as measured")
        print(f"{'objects':>7} {'model mode':<{width}}{'pairs':>7}{'MFLOP/pair':>11}{'decoder s':>10}{'GFLOP/s':>9}"
              f"{'propagate s':>12}{'needed GFLOP/s':>15}")
        for n in args.objects:
            for name, mode in keys:
                r, one = rows[(name, mode, n)], rows[(name, mode, args.objects[0])]
                flops, seconds, pairs = r["flops"]
                budget = args.views / (0.25 * one["min"]) - (r["seconds"] - seconds)
                needed = f"{flops / budget / 1e9:>15.1f}" if budget > 0 else f"{'none left':>15}"
                print(f"{n:>7} {name + ' ' + mode:<{width}}{pairs:>7}{flops / pairs / 1e6:>11.2f}{seconds:>10.3f}"
                      f"{flops / seconds / 1e9:>9.1f}{r['seconds']:>12.3f}{needed}")


if __name__ == "__main__":
    main()
