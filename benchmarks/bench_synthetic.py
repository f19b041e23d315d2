"""Frames per second of the synthetic scene generator on ONE core, with and without writing files.

Usage::

    python benchmarks/bench_synthetic.py [--scenes 6] [--views 16] [--sizes 128 256] [--mode video]

Thread limits (OMP / MKL / OpenBLAS = 1) are set before numpy and open3d are imported, and the renderer is also
asked for one ray-casting thread. The ``max cpu/wall`` column (process CPU time over wall time) checks that at most
one core was used: it stays at or below about 1.0 (it would approach the core count if work spread over threads).
On a shared machine wall-clock fps drops with the load; the ``cpu fps`` columns (frames per CPU second) do not.
"render" times :func:`generate_scene` (sampling + ray casting + shading, arrays in memory); "render+write" times
:func:`write_split` (the same plus PNG / depth encoding, RLE masks and the validated JSON).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

from vision.synthetic.scenes import generate_scene, scene_seed, write_split  # noqa: E402


def _timed(fn) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of fn()."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - wall, time.process_time() - cpu


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenes", type=int, default=6)
    p.add_argument("--views", type=int, default=16)
    p.add_argument("--sizes", type=int, nargs="+", default=[128, 256])
    p.add_argument("--mode", choices=("video", "unordered"), default="video")
    args = p.parse_args(argv)

    generate_scene(0, 2, 32, args.mode, threads=1)  # warm-up: imports, mesh caches
    frames = args.scenes * args.views
    rows = []
    for size in args.sizes:
        def render() -> None:
            for i in range(args.scenes):
                generate_scene(scene_seed(0, "bench", i), args.views, size, args.mode, threads=1)

        wall_r, cpu_r = _timed(render)
        with tempfile.TemporaryDirectory() as tmp:
            wall_w, cpu_w = _timed(lambda: write_split(tmp, "bench", args.scenes, args.views, size, args.mode, 0,
                                                       threads=1))
        rows.append((size, frames, frames / wall_r, frames / cpu_r, frames / wall_w, frames / cpu_w,
                     max(cpu_r / wall_r, cpu_w / wall_w)))

    print(f"synthetic generator, one core, {args.scenes} scenes x {args.views} views, mode {args.mode}")
    print("fps = frames per wall-clock second; cpu fps = frames per CPU second of this process (the one-core figure "
          "when other jobs share the machine)")
    header = ("size", "frames", "render fps", "render cpu fps", "render+write fps", "render+write cpu fps",
              "max cpu/wall")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---:" for _ in header) + "|")
    for size, n, fr, fr_cpu, fw, fw_cpu, ratio in rows:
        print(f"| {size} | {n} | {fr:.1f} | {fr_cpu:.1f} | {fw:.1f} | {fw_cpu:.1f} | {ratio:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
