"""Render time and content of the synthetic concept-prompt splits (:mod:`vision.synthetic.concept`), per mode.

Usage::

    python benchmarks/bench_concept_splits.py [--scenes 16] [--views 16] [--size 64] [--seed 0]

Scenes are those of the split ``concept_<mode>`` under ``--seed`` (as ``vision synthetic --concept`` draws them),
rendered on ONE core (thread limits set before numpy and open3d are imported; one ray-casting thread). Per mode
the table gives the render time per scene (sampling + ray casting, arrays in memory; wall and process CPU
seconds) and, from the rendered visibility (an instance is visible on a view where it has at least one pixel), per
scene means of: target instances placed, near distractors, objects outside every phrase, target instances with
a late entry (first visible after view 0), with an exit and return (not visible on some views between two where
it is), with an occluded run of >= 4 views (not visible, yet inside the image, between two views where it is);
then the percentages of scenes with at least one of each and with both a late entry and an exit and return, the
mean longest occluded run of a target, and the median size of visible target instances (longer bbox side, pixels).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from vision.synthetic.concept import CONCEPT_MODES, generate_concept_scene, visibility_events  # noqa: E402
from vision.synthetic.scenes import scene_seed  # noqa: E402


def _sides(instance_ids: np.ndarray, columns: list[int]) -> list[int]:
    """Longer bbox side (pixels) of each visible (view, instance) among ``columns`` (0-based object indices)."""
    out = []
    for view in instance_ids:
        for k in columns:
            ys, xs = np.nonzero(view == k + 1)
            if len(ys):
                out.append(int(max(np.ptp(ys), np.ptp(xs))) + 1)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--scenes", type=int, default=16)
    p.add_argument("--views", type=int, default=16)
    p.add_argument("--size", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)

    generate_concept_scene(0, 2, 32, "video", threads=1)  # warm-up: imports, mesh caches
    print(f"concept splits, one core, {args.scenes} scenes x {args.views} views x {args.size} px, seed {args.seed}")
    head = ("mode", "s/scene", "cpu s", "targets", "near", "outside", "late", "exit+ret", "occl>=4", "%late",
            "%exit+ret", "%occl>=4", "%late&ret", "max occl", "px med")
    print("| " + " | ".join(head) + " |")
    print("|" + "|".join("---" for _ in head) + "|")
    for mode in CONCEPT_MODES:
        wall = cpu = 0.0
        rows, sides = [], []
        for index in range(args.scenes):
            w0, c0 = time.perf_counter(), time.process_time()
            concept, scene = generate_concept_scene(scene_seed(args.seed, f"concept_{mode}", index), args.views,
                                                    args.size, mode, threads=1)
            wall += time.perf_counter() - w0
            cpu += time.process_time() - c0
            events = visibility_events(scene.visible_area, scene.amodal_area)
            target = np.array([r == "target" for r in concept.roles])
            rows.append((target.sum(), concept.roles.count("near"), concept.roles.count("outside"),
                         (events["late_entry"] & target).sum(), (events["exit_return"] & target).sum(),
                         ((events["occluded_run"] >= 4) & target).sum(), events["occluded_run"][target].max()))
            sides += _sides(scene.instance_ids, list(np.flatnonzero(target)))
        a = np.asarray(rows, dtype=np.float64)
        mean = a.mean(0)
        share = [*((a[:, 3:6] > 0).mean(0) * 100.0), ((a[:, 3] > 0) & (a[:, 4] > 0)).mean() * 100.0]
        cells = [mode, f"{wall / args.scenes:.3f}", f"{cpu / args.scenes:.3f}", *(f"{x:.2f}" for x in mean[:6]),
                 *(f"{x:.0f}" for x in share), f"{mean[6]:.1f}", f"{np.median(sides):.0f}"]
        print("| " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
