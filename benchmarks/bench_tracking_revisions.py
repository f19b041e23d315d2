"""Trackers' views/s under two revisions of the code: ``propagate`` at 1 / 4 / 16 / 64 / 128 point-prompted objects
with the ``vision`` package of each source folder (this checkout and, e.g., a ``git worktree`` of an older commit),
the folders timed in turn, so a change of load on the machine reaches both alike.

    git worktree add /tmp/before <commit>
    python benchmarks/bench_tracking_revisions.py --source /tmp/before . --rounds 2 \\
        --ckpt g2tam=runs/tracking/tiny/checkpoints/last.ckpt control=runs/tracking/baseline_tiny/checkpoints/last.ckpt

Each (folder, round) runs in a fresh process whose ``PYTHONPATH`` starts with the folder: one random 8-frame window
at 64 px, one thread, ``cache_views=0`` (every ``propagate`` encodes), the predictor's defaults otherwise; per
object count, the best of three ``propagate`` after a warm-up. The table gives each folder's best round.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

OBJECTS = (1, 4, 16, 64, 128)


def child(models: list[str]) -> None:
    """In a fresh process (``PYTHONPATH`` naming the source folder first): time every model; print one JSON line."""
    import time

    import numpy as np
    import torch

    from vision.tracking.predictor import TrackerPredictor
    from vision.tracking.task import load

    torch.set_num_threads(1)
    out = {}
    frames = (np.random.default_rng(0).random((8, 64, 64, 3)) * 255).astype(np.uint8)
    for spec in models:
        name, path = spec.split("=", 1)
        model = load(path)[0]
        for n in OBJECTS:
            predictor = TrackerPredictor(model, text_encoder=None, window_size=8, max_anchors=1, cache_views=0)
            state = predictor.init_state(frames)
            for o in range(n):
                predictor.add_prompt(state, 0, o, points=[[(o * 7) % 64, (o * 13) % 64]])
            list(predictor.propagate(state))  # warm-up
            seconds = []
            for _ in range(3):
                start = time.perf_counter()
                list(predictor.propagate(state))
                seconds.append(time.perf_counter() - start)
            out[f"{name}@{n}"] = 8 / min(seconds)
    print(json.dumps(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--source", nargs=2, required=True, metavar=("BEFORE", "AFTER"),
                    help="two source folders, each holding a vision/ package")
    ap.add_argument("--ckpt", nargs="+", required=True, help="NAME=CHECKPOINT entries, loadable by both revisions")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.ckpt)
        return
    for folder in args.source:
        if not (Path(folder) / "vision" / "__init__.py").is_file():
            raise SystemExit(f"--source {folder}: no vision/ package there")
    best: dict[str, dict[str, float]] = {folder: {} for folder in args.source}
    for _ in range(args.rounds):
        for folder in args.source:
            path = os.pathsep.join(filter(None, [str(Path(folder).resolve()), os.environ.get("PYTHONPATH")]))
            env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
            cmd = [sys.executable, __file__, "--source", *args.source, "--ckpt", *args.ckpt, "--child"]
            line = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout.strip()
            for key, value in json.loads(line.splitlines()[-1]).items():
                best[folder][key] = max(best[folder].get(key, 0.0), value)
    before, after = args.source
    names = [spec.split("=", 1)[0] for spec in args.ckpt]
    print(f"views/s of propagate (best of {args.rounds} rounds), before = {before}, after = {after}")
    print(f"{'objects':>7} " + "".join(f"{name + ' before':>16}{name + ' after':>15}{'ratio':>7}" for name in names))
    for n in OBJECTS:
        cells = "".join(f"{best[before][f'{name}@{n}']:>16.1f}{best[after][f'{name}@{n}']:>15.1f}"
                        f"{best[after][f'{name}@{n}'] / best[before][f'{name}@{n}']:>7.2f}" for name in names)
        print(f"{n:>7} {cells}")


if __name__ == "__main__":
    main()
