"""Loading a COCO-sized split: ``vision.data.coco.load_split`` against ``pycocotools.coco.COCO``.

    python benchmarks/bench_loading.py [--images 118000] [--annotations 860000] [--reps 3] [--out DIR]
                                       [--variants rle polygons] [--before REV] [--no-check-files] [--profile]

Generates, in ``--out`` (kept, and reused when it already holds splits of the same sizes) or else in a temporary
folder (removed), one split per variant in this package's format (:mod:`vision.data.schema`), sized like COCO
train 2017 by default (118k images, 860k annotations over 80 categories, 640x480-ish images):

- ``rle``: every annotation's ``segmentation`` is a compressed RLE (``counts`` a string, as pycocotools writes
  it) of a ragged ellipse of log-uniform size;
- ``polygons``: the same objects as one polygon each (6 to 40 vertices, coordinates with 2 decimals).

Boxes and areas are those of the object. The images are empty files under ``images/``: ``load_split`` checks by
default that every image file exists (``check_files=True``, as it is used) and pycocotools does not look at files
at all, so the comparison charges our existence checks to us; ``--no-check-files`` leaves them out.

Each measurement runs in its own fresh Python process that first imports both libraries, then times one call of
``load_split(path)`` (parse, validate, index) or ``COCO(path)`` (parse, index) with ``time.perf_counter`` and
reports its peak resident memory (``VmHWM``). The table gives the minimum and median over ``--reps`` runs, the
peak memory (median; "+load" is the peak less the memory after the imports) and the ratios ours / pycocotools.
``--before REV`` also measures ``load_split`` of git revision ``REV`` (its ``vision`` package extracted with
``git archive``). ``--profile`` prints cProfile's top lines (by own time) of one ``load_split`` per variant.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
IMAGE_SIZES = [(640, 480), (640, 427), (480, 640), (640, 360), (500, 375), (427, 640)]
CATEGORIES = 80


# ---------------------------------------------------------------------------------------------------- generation


def _object(rng: np.random.Generator, width: int, height: int) -> tuple[float, float, float, float]:
    """Centre and half-axes (cx, cy, rx, ry) of an ellipse inside a ``width`` x ``height`` image; its width is
    log-uniform between 4 px and 80% of the image (COCO has many small objects)."""
    rx = math.exp(rng.uniform(math.log(2.0), math.log(0.4 * width)))
    ry = min(rx * math.exp(rng.uniform(-0.7, 0.7)), 0.45 * height)
    cx = rng.uniform(rx, width - rx)
    cy = rng.uniform(ry, height - ry)
    return cx, cy, rx, ry


def _rle_runs(rng: np.random.Generator, obj: tuple, width: int, height: int) -> tuple[list[int], float, list]:
    """Uncompressed COCO RLE runs (column-major, starting with background) of the ragged ellipse ``obj``, its area
    and its box (XYWH)."""
    cx, cy, rx, ry = obj
    cols = np.arange(max(int(cx - rx), 0), min(int(math.ceil(cx + rx)), width))
    half = ry * np.sqrt(np.clip(1.0 - ((cols + 0.5 - cx) / rx) ** 2, 0.0, 1.0))
    top = np.clip(np.round(cy - half) + rng.integers(-1, 2, cols.size), 0, height).astype(np.int64)
    bottom = np.clip(np.round(cy + half) + rng.integers(-1, 2, cols.size), 0, height).astype(np.int64)
    keep = bottom > top
    if not keep.any():  # a sliver: one pixel at the centre
        cols, top, bottom = np.array([int(cx)]), np.array([int(cy)]), np.array([int(cy) + 1])
    else:
        cols, top, bottom = cols[keep], top[keep], bottom[keep]
    starts, ends = cols * height + top, cols * height + bottom
    runs = np.empty(2 * starts.size + 1, np.int64)
    runs[0] = starts[0]
    runs[1:-1:2] = ends - starts
    runs[2:-1:2] = starts[1:] - ends[:-1]
    runs[-1] = width * height - ends[-1]
    box = [float(cols[0]), float(top.min()), float(cols[-1] + 1 - cols[0]), float(bottom.max() - top.min())]
    return runs.tolist(), float((bottom - top).sum()), box


def _polygon(rng: np.random.Generator, obj: tuple, width: int, height: int) -> list[float]:
    """One polygon (x0, y0, x1, y1, ...) of 6..40 vertices around the ellipse ``obj``, on the image."""
    cx, cy, rx, ry = obj
    k = int(rng.integers(6, 41))
    angle = np.sort(rng.uniform(0, 2 * math.pi, k))
    radius = rng.uniform(0.8, 1.0, k)
    xs = np.clip(cx + rx * radius * np.cos(angle), 0, width)
    ys = np.clip(cy + ry * radius * np.sin(angle), 0, height)
    return np.round(np.stack([xs, ys], 1).reshape(-1), 2).tolist()


def generate(out: Path, n_images: int, n_annotations: int, variants: list[str], seed: int = 0) -> dict[str, Path]:
    """Write ``{variant}.json`` splits and the (empty) image files under ``out``; reuse them when ``out`` already
    holds splits of these sizes (``sizes.json``)."""
    from pycocotools import mask as mask_utils

    out.mkdir(parents=True, exist_ok=True)
    paths = {v: out / f"{v}.json" for v in variants}
    stamp = out / "sizes.json"
    wanted = {"images": n_images, "annotations": n_annotations, "seed": seed}
    if stamp.exists() and json.loads(stamp.read_text()) == wanted and all(p.exists() for p in paths.values()):
        return paths
    rng = np.random.default_rng(seed)
    (out / "images").mkdir(exist_ok=True)
    images = []
    for i in range(1, n_images + 1):
        width, height = IMAGE_SIZES[int(rng.integers(len(IMAGE_SIZES)))]
        name = f"images/{i:012d}.jpg"
        (out / name).touch()
        images.append({"id": i, "file_name": name, "width": width, "height": height})
    categories = [{"id": c, "name": f"category {c}", "supercategory": "thing"} for c in range(1, CATEGORIES + 1)]
    image_of = rng.integers(0, n_images, n_annotations)
    category_of = rng.integers(1, CATEGORIES + 1, n_annotations)
    annotations = {v: [] for v in variants}
    batch: list[tuple[dict, dict]] = []

    def flush_rle() -> None:
        for ann, uncompressed in batch:
            rle = mask_utils.frPyObjects(uncompressed, *uncompressed["size"])  # compressed by pycocotools
            ann["segmentation"] = {"size": uncompressed["size"], "counts": rle["counts"].decode("ascii")}
            annotations["rle"].append(ann)
        batch.clear()

    for j in range(n_annotations):
        img = images[int(image_of[j])]
        width, height = img["width"], img["height"]
        obj = _object(rng, width, height)
        ann = {"id": j + 1, "image_id": img["id"], "category_id": int(category_of[j]), "iscrowd": 0}
        if "polygons" in variants:
            poly = _polygon(rng, obj, width, height)
            xs, ys = poly[0::2], poly[1::2]
            area = 0.5 * abs(sum(xs[k] * ys[k - 1] - xs[k - 1] * ys[k] for k in range(len(xs))))
            box = [min(xs), min(ys), round(max(xs) - min(xs), 2), round(max(ys) - min(ys), 2)]
            annotations["polygons"].append({**ann, "segmentation": [poly], "area": round(area, 2), "bbox": box})
        if "rle" in variants:
            runs, area, box = _rle_runs(rng, obj, width, height)
            batch.append(({**ann, "area": area, "bbox": box}, {"size": [height, width], "counts": runs}))
            if len(batch) >= 5000:
                flush_rle()
        if (j + 1) % 100000 == 0:
            print(f"  generated {j + 1} / {n_annotations} annotations", file=sys.stderr)
    if batch:
        flush_rle()
    for v in variants:
        text = json.dumps({"info": {"description": f"bench_loading {v}"}, "images": images,
                           "annotations": annotations[v], "categories": categories}, separators=(",", ":"))
        paths[v].write_text(text)
        annotations[v] = []
    stamp.write_text(json.dumps(wanted))
    return paths


# ---------------------------------------------------------------------------------------------------- measuring


def _status_kib(key: str) -> int:
    """A memory line of /proc/self/status (Linux), in bytes: ``VmRSS`` (resident now) or ``VmHWM`` (peak resident
    since this program started; ``ru_maxrss`` would also count the parent's memory before the child's exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {key} in /proc/self/status")


def _measure(tool: str, path: str, check_files: bool) -> None:
    """(In a child process.) Time one load and print {seconds, peak, base} as JSON on the last line."""
    import time

    import pycocotools.coco

    import vision.data.coco

    base = _status_kib("VmRSS")
    start = time.perf_counter()
    if tool == "pycocotools":
        sink = io.StringIO()  # COCO prints its progress
        stdout, sys.stdout = sys.stdout, sink
        try:
            pycocotools.coco.COCO(path)
        finally:
            sys.stdout = stdout
    else:
        vision.data.coco.load_split(path, check_files=check_files)
    seconds = time.perf_counter() - start
    peak = _status_kib("VmHWM")
    print(json.dumps({"seconds": seconds, "peak": peak, "base": base}))


def _run_child(tool: str, path: Path, check_files: bool, pythonpath: Path | None) -> dict:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(pythonpath), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, str(Path(__file__).resolve()), "--_measure", tool, str(path)]
    if not check_files:
        cmd.append("--no-check-files")
    return child_json(cmd, f"{tool} on {path}", env, pythonpath or ROOT)


def child_json(cmd: list[str], what: str, env: dict[str, str] | None = None, cwd: Path = ROOT) -> dict:
    """Run one ``--_measure`` child process and return the JSON object its last output line holds; exits naming
    ``what`` with the child's error output when it fails."""
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=str(cwd))
    if done.returncode != 0:
        raise SystemExit(f"{what} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def profile_top(call, top: int) -> str:
    """cProfile's ``top`` lines by own time of ``call()``, under the line that gives the total."""
    profiler = cProfile.Profile()
    profiler.enable()
    call()
    profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(top)
    lines = text.getvalue().splitlines()
    head = next(i for i, line in enumerate(lines) if "ncalls" in line)
    total = next(line for line in lines if "function calls" in line)
    return "\n".join([total.strip()] + lines[head:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=118000)
    parser.add_argument("--annotations", type=int, default=860000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--variants", nargs="+", default=["rle", "polygons"], choices=["rle", "polygons"])
    parser.add_argument("--out", type=Path, default=None, help="keep the generated splits here (and reuse them)")
    parser.add_argument("--before", default=None, help="also measure load_split of this git revision")
    parser.add_argument("--no-check-files", action="store_true", help="load_split(check_files=False)")
    parser.add_argument("--profile", action="store_true", help="print cProfile's top lines of load_split")
    parser.add_argument("--_measure", nargs=2, metavar=("TOOL", "PATH"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    check_files = not args.no_check_files
    if args._measure:
        _measure(args._measure[0], args._measure[1], check_files)
        return

    temp = None
    out = args.out
    if out is None:
        temp = tempfile.mkdtemp(prefix="bench_loading_")
        out = Path(temp)
    before_dir = None
    try:
        print(f"generating {args.images} images, {args.annotations} annotations in {out} ...", file=sys.stderr)
        paths = generate(out, args.images, args.annotations, args.variants)
        tools = ["pycocotools", "load_split"]
        if args.before:
            before_dir = Path(tempfile.mkdtemp(prefix="bench_loading_before_"))
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before, "vision"], check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(before_dir)], input=archive, check=True)
            tools.insert(1, f"load_split@{args.before}")
        results: dict[tuple[str, str], list[dict]] = {}
        for rep in range(args.reps):
            for variant in args.variants:
                order = tools if rep % 2 == 0 else tools[::-1]
                for tool in order:
                    pythonpath = before_dir if "@" in tool else None
                    kind = "pycocotools" if tool == "pycocotools" else "ours"
                    r = _run_child(kind, paths[variant], check_files, pythonpath)
                    results.setdefault((variant, tool), []).append(r)
                    print(f"  rep {rep + 1} {variant:8s} {tool:22s} {r['seconds']:7.2f} s "
                          f"{r['peak'] / 2**20:8.0f} MiB", file=sys.stderr)
        sizes = {v: paths[v].stat().st_size / 2**20 for v in args.variants}
        print(f"\nload_split (check_files={check_files}) vs pycocotools.coco.COCO: {args.images} images, "
              f"{args.annotations} annotations, {args.reps} runs each (own process per run)")
        header = (f"{'variant':9s} {'tool':24s} {'min s':>7s} {'median s':>9s} {'peak MiB':>9s} {'+load MiB':>9s}"
                  f" {'time x':>7s} {'peak x':>7s} {'+load x':>8s}")
        print(header)
        print("-" * len(header))
        for variant in args.variants:
            ref = results[(variant, "pycocotools")]
            ref_t = min(r["seconds"] for r in ref)
            ref_p = statistics.median(r["peak"] for r in ref)
            ref_d = statistics.median(r["peak"] - r["base"] for r in ref)
            for tool in tools:
                rs = results[(variant, tool)]
                t = [r["seconds"] for r in rs]
                peak = statistics.median(r["peak"] for r in rs)
                delta = statistics.median(r["peak"] - r["base"] for r in rs)
                print(f"{variant:9s} {tool:24s} {min(t):7.2f} {statistics.median(t):9.2f} {peak / 2**20:9.0f} "
                      f"{delta / 2**20:9.0f} {min(t) / ref_t:7.2f} {peak / ref_p:7.2f} {delta / ref_d:8.2f}")
            print(f"{'':9s} (JSON file {sizes[variant]:.0f} MiB)")
        print("time x: min time / pycocotools' min time; peak x, +load x: median peak / pycocotools' median peak")
        if args.profile:
            from vision.data.coco import load_split

            for variant in args.variants:
                print(f"\ncProfile of load_split({paths[variant].name}), top lines by own time:")
                print(profile_top(partial(load_split, paths[variant], check_files=check_files), 18))
    finally:
        if temp is not None:
            shutil.rmtree(temp, ignore_errors=True)
        if before_dir is not None:
            shutil.rmtree(before_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
