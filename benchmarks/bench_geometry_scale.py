#!/usr/bin/env python
"""Scale of the geometry backbone with the number of views S: forward time, peak memory, achieved GFLOP/s.

For each size (tiny, base) and S in 1, 2, 4, 8, 16, 32, 64 a fresh worker process builds the model and runs
``torch.no_grad()`` forwards on random images of the size's native resolution:
- time: median of ``--reps`` forwards after one warm-up;
- peak memory: on an accelerator, ``torch.accelerator.max_memory_allocated``; on a CPU, the worker's peak RSS minus the peak RSS of an
  identical worker that builds the model and the inputs but runs nothing (so imports and weights cancel out);
- heads: peak memory of the full forward minus that of the aggregator alone, minus the size of the head outputs
  themselves; with chunked DPT heads (``frames_chunk_size``) this stays flat in S;
- GFLOP/s of the aggregator (FLOPs counted by ``torch.utils.flop_counter``) against a 2048^3 float32 matmul
  measured in the same worker (5 timed products): the machine's practical limit. ``ratio``: the median forward's
  rate over the median product's; ``ratio best``: the fastest forward's over the fastest product's.

``python benchmarks/bench_geometry_scale.py [--sizes tiny base] [--views 1 2 4 8 16 32 64] [--threads 2]``
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def worker(size: str, views: int, part: str, reps: int, threads: int, chunk: int) -> dict:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from vision.geometry.model import BACKBONE_CONFIGS
    from vision.geometry.task import GeometryConfig, build_model

    torch.set_num_threads(threads)
    accel = torch.accelerator.is_available()
    device = torch.accelerator.current_accelerator() if accel else torch.device("cpu")
    res = BACKBONE_CONFIGS[size]["img_size"]
    model = build_model(GeometryConfig(size=size, image_size=res)).backbone.to(device).eval()
    images = torch.rand(1, views, 3, res, res, device=device)
    out = {"size": size, "views": views, "part": part, "res": res}
    if part == "idle":
        out["peak_mb"] = _peak_rss_mb()
        return out

    def run() -> None:
        with torch.no_grad():
            if part == "aggregator":
                model.aggregate(images)
            else:
                model(images, frames_chunk_size=chunk)

    run()  # warm-up
    if accel:
        torch.accelerator.synchronize()
        torch.accelerator.reset_peak_memory_stats()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run()
        if accel:
            torch.accelerator.synchronize()
        times.append(time.perf_counter() - t0)
    out["seconds"] = sorted(times)[len(times) // 2]
    out["seconds_min"] = min(times)
    out["peak_mb"] = (torch.accelerator.max_memory_allocated() / 2**20) if accel else _peak_rss_mb()
    if part == "aggregator":
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model.aggregate(images)
        out["gflop"] = counter.get_total_flops() / 1e9
        a = torch.rand(2048, 2048, device=device)
        torch.mm(a, a)
        rates = []
        for _ in range(5):
            t0 = time.perf_counter()
            torch.mm(a, a)
            if accel:
                torch.accelerator.synchronize()
            rates.append(2 * 2048**3 / (time.perf_counter() - t0) / 1e9)
        out["matmul_gflops"] = sorted(rates)[len(rates) // 2]
        out["matmul_gflops_max"] = max(rates)
    else:
        h = w = res
        out["output_mb"] = views * h * w * (1 + 1 + 3 + 1) * 4 / 2**20
    return out


def spawn(size: str, views: int, part: str, reps: int, threads: int, chunk: int) -> dict:
    cmd = [sys.executable, __file__, "--worker", size, str(views), part, "--reps", str(reps), "--threads",
           str(threads), "--chunk", str(chunk)]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="+", default=["tiny", "base"])
    parser.add_argument("--views", nargs="+", type=int, default=[1, 2, 4, 8, 16, 32, 64])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--chunk", type=int, default=8, help="frames per DPT head chunk")
    parser.add_argument("--worker", nargs=3, metavar=("SIZE", "S", "PART"))
    args = parser.parse_args()
    if args.worker:
        size, views, part = args.worker
        print(json.dumps(worker(size, int(views), part, args.reps, args.threads, args.chunk)))
        return
    print(f"{'size':<6}{'S':>4}{'res':>5}{'fwd s':>9}{'s/view':>9}{'peak MB':>9}{'agg MB':>8}{'heads MB':>9}"
          f"{'agg GFLOP/s':>12}{'matmul':>9}{'ratio':>7}{'ratio best':>11}")
    for size in args.sizes:
        for views in args.views:
            reps = args.reps if views <= 16 else 1
            idle = spawn(size, views, "idle", reps, args.threads, args.chunk)
            agg = spawn(size, views, "aggregator", reps, args.threads, args.chunk)
            full = spawn(size, views, "full", reps, args.threads, args.chunk)
            bad = [r["error"] for r in (idle, agg, full) if "error" in r]
            if bad:
                print(f"{size:<6}{views:>4}  failed: {bad[0]}")
                continue
            cpu = not _has_accelerator()
            base = idle["peak_mb"] if cpu else 0.0
            peak, agg_peak = full["peak_mb"] - base, agg["peak_mb"] - base
            heads = full["peak_mb"] - agg["peak_mb"] - full["output_mb"]
            gflops = agg["gflop"] / agg["seconds"]
            print(f"{size:<6}{views:>4}{full['res']:>5}{full['seconds']:>9.3f}{full['seconds'] / views:>9.4f}"
                  f"{peak:>9.0f}{agg_peak:>8.0f}{heads:>9.0f}{gflops:>12.1f}{agg['matmul_gflops']:>9.1f}"
                  f"{gflops / agg['matmul_gflops']:>7.2f}"
                  f"{agg['gflop'] / agg['seconds_min'] / agg['matmul_gflops_max']:>11.2f}", flush=True)


def _has_accelerator() -> bool:
    import torch

    return torch.accelerator.is_available()


if __name__ == "__main__":
    main()
