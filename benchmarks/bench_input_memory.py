"""Peak memory of ``vision predict`` on large images: is it bounded by the input limits, not by the input?

    python benchmarks/bench_input_memory.py [--before REV] [--sizes 640x480 4000x4000 10000x10000]
                                            [--tasks TASK ...]  (default: every registered task with a predictor)

Writes one PNG per size (a smooth colour pattern, so a 10000x10000 file is a few MB, like a photo's PNG), builds a
checkpoint with random weights for each task (the tests' way: the task's LightningModule, its hyper-parameters and
state dict; accuracy does not matter here, only what is decoded and drawn), and runs ``vision predict`` on each
image in its own process. The table gives each run's peak resident memory (``ru_maxrss`` of that child, from
``os.wait4``) and its exit status: 0 ran, 2 refused with a one-line error (printed under the table). An image over
MAX_INPUT_PIXELS is also run with ``--max-pixels`` raised to its size (column "cap raised"): what the working size
alone bounds once the user lets such a frame be decoded.

``--before REV`` also runs the ``vision predict`` of git revision ``REV`` (extracted with ``git archive`` into a
temporary folder; its folder leads ``PYTHONPATH`` so its own ``vision`` package is imported, not the installed
one) beside the working tree's, e.g. the commit before
the input limits of vision/data/io.py. The limits themselves: frames over MAX_INPUT_PIXELS are refused from the
header, frames over MAX_WORKING_PIXELS are drawn downscaled.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import cv2
import numpy as np
import torch

from vision.data.io import MAX_INPUT_PIXELS
from vision.tasks import get_task, task_names

#: The prompt each task with a predictor is run with (every one of them: checked in main). Tracking keeps every mask
#: (presence threshold 0): an untrained tracker's masks are what is drawn and exported.
TASK_ARGS = {"detection": ["--vocabulary", "mug,chair"],
             "tracking": ["--points", "100,100", "--presence-threshold", "0"], "forensics": [],
             "concept": ["--concept", "mug"]}
#: LightningModule arguments besides the defaults: no tracker text encoder to load for a memory figure.
MODULE_ARGS = {"tracking": {"config": {"text_encoder": None}},
               "concept": {"config": {"tracker": {"text_encoder": None}}}}


def write_png(path: Path, width: int, height: int) -> Path:
    """A smooth colour pattern, written row block by row block into one array (uint8, 3 bytes a pixel)."""
    image = np.empty((height, width, 3), np.uint8)
    xs = np.arange(width, dtype=np.float32)
    for y0 in range(0, height, 1024):
        ys = np.arange(y0, min(y0 + 1024, height), dtype=np.float32)[:, None]
        image[y0:y0 + len(ys), :, 0] = (127 + 120 * np.sin(xs / 97.0) * np.cos(ys / 131.0)).astype(np.uint8)
        image[y0:y0 + len(ys), :, 1] = ((xs[None] + ys) / (width + height) * 255).astype(np.uint8)
        image[y0:y0 + len(ys), :, 2] = (127 + 120 * np.cos((xs[None] - ys) / 211.0)).astype(np.uint8)
    if not cv2.imwrite(str(path), image):
        raise SystemExit(f"could not write {path}")
    return path


def random_checkpoint(task: str, path: Path) -> Path:
    """A checkpoint of ``task`` with random weights in the layout tools/train.py writes (its registered
    LightningModule, default arguments but for :data:`MODULE_ARGS`)."""
    torch.manual_seed(0)
    module = get_task(task).resolve("lightning")(**MODULE_ARGS.get(task, {}))
    torch.save({"hyper_parameters": dict(module.hparams), "state_dict": module.state_dict()}, path)
    return path


def peak_rss(command: list[str], tree: Path) -> tuple[float, int, str]:
    """Run ``command`` with the ``vision`` package of ``tree`` first on ``PYTHONPATH``; return (its peak resident
    memory in GiB, exit status, last stderr line)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(tree), os.environ.get("PYTHONPATH")) if p))
    with tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=err, env=env)
        _, status, usage = os.wait4(process.pid, 0)
        err.seek(0)
        lines = [line for line in err.read().decode(errors="replace").splitlines() if line.startswith("error:")]
    code = os.waitstatus_to_exitcode(status)
    return usage.ru_maxrss / 2 ** 20, code, lines[-1] if lines else ""  # ru_maxrss is in KiB on Linux


def predict_command(tree: Path) -> list[str]:
    """How to run the predict CLI of ``tree``: its ``tools/predict.py`` in a revision that has one, else the main of
    ``vision predict`` (the ``vision`` package of ``tree`` leads ``PYTHONPATH``, :func:`peak_rss`)."""
    script = tree / "tools" / "predict.py"
    if script.is_file():
        return [sys.executable, str(script)]
    return [sys.executable, "-c", "import sys; from vision.cli.predict import main; sys.exit(main())"]


def extract(revision: str, into: Path) -> Path:
    """The files of git ``revision`` in ``into`` (``git archive``)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision], check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", help="also run vision predict of this git revision")
    parser.add_argument("--sizes", nargs="+", default=["640x480", "4000x4000", "10000x10000"])
    parser.add_argument("--tasks", nargs="+", default=list(task_names(predictor=True)),
                        choices=task_names(predictor=True))
    args = parser.parse_args(argv)
    unprompted = sorted(set(task_names(predictor=True)) ^ set(TASK_ARGS))
    if unprompted:  # a task added to (or removed from) the registry without its prompt here
        print(f"error: TASK_ARGS must hold the predictor tasks of vision.tasks exactly; differs in {unprompted}",
              file=sys.stderr)
        return 2
    sizes = [tuple(int(v) for v in s.lower().split("x")) for s in args.sizes]
    with tempfile.TemporaryDirectory(prefix="bench_input_memory_") as tmp:
        tmp = Path(tmp)
        trees = {"now": ROOT}
        if args.before:
            trees[args.before] = extract(args.before, Path(tempfile.mkdtemp(dir=tmp)))
        runs = [(name, tree, []) for name, tree in trees.items()]
        if any(w * h > MAX_INPUT_PIXELS for w, h in sizes):
            runs.insert(1, ("now, cap raised", ROOT, ["--max-pixels"]))
        images = {(w, h): write_png(tmp / f"{w}x{h}.png", w, h) for w, h in sizes}
        ckpts = {task: random_checkpoint(task, tmp / f"{task}.ckpt") for task in args.tasks}
        rows, errors = [], []
        for task in args.tasks:
            for (w, h), image in images.items():
                cells = []
                for name, tree, extra in runs:
                    if extra and w * h <= MAX_INPUT_PIXELS:
                        cells.append("-")
                        continue
                    command = [*predict_command(tree), str(image), "--task", task,
                               "--ckpt", str(ckpts[task]), "--out", str(tmp / "out"), *TASK_ARGS[task]]
                    command += [*extra, str(w * h)] if extra else []
                    gib, code, error = peak_rss(command, tree)
                    cells.append(f"{gib:7.2f} GiB (exit {code})")
                    if error:
                        errors.append(f"{name}, {task}, {w}x{h}: {error.replace(str(tmp) + '/', '')}")
                    print(f"  {task} {w}x{h} [{name}]: {gib:.2f} GiB, exit {code}", file=sys.stderr, flush=True)
                mb = image.stat().st_size / 1e6
                rows.append(f"| {task:<9} | {w}x{h} ({mb:.1f} MB) | " + " | ".join(cells) + " |")
    header = "| task      | PNG | " + " | ".join(f"peak RSS, {name}" for name, _, _ in runs) + " |"
    print(header)
    print("|" + "|".join("---" for _ in range(header.count("|") - 1)) + "|")
    print("\n".join(rows))
    for line in errors:
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
