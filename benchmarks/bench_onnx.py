"""onnxruntime against PyTorch on the CPU, for every graph ``vision export --onnx`` writes.

    python benchmarks/bench_onnx.py [--runs runs] [--reps 20] [--warmup 3] [--threads N] [--graphs detector ...]

For each task with ONNX graphs (``Task.export_graphs`` in :mod:`vision.tasks`: the detector, the geometry backbone, the
tracker's encoder and mask decoder) the model is loaded from ``<runs>/<task>/tiny/checkpoints/best.ckpt`` (the
``make train`` checkpoints; a randomly initialised model of the task's default config when it is missing, said in
the table), exported with :func:`vision.export.onnx.export_graph` into a temporary folder and checked with
:func:`vision.export.onnx.check_graph`; then each backend runs the graph's example inputs (views of the synthetic
renderer at the model's input size) ``--warmup`` times untimed and ``--reps`` times timed with
``time.perf_counter``. PyTorch runs the same wrapper module in eval mode under ``torch.no_grad()``; both use
``--threads`` intra-op threads (default: torch's current count). The table gives min and median milliseconds per
call and the ratios onnxruntime / PyTorch of the minima and of the medians (below 1: onnxruntime is faster), with
the largest absolute difference over the graph's outputs. The detector's example text is 3 random unit rows (the
graph's cost does not depend on their values). The load average is printed: other processes on the machine slow
the medians more than the minima.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402

from vision.export.graphs import graphs_of  # noqa: E402
from vision.tasks import TASKS  # noqa: E402
from vision.export.onnx import check_graph, export_graph, onnx_session, run_session  # noqa: E402
from vision.tasks import get_task  # noqa: E402


def _time(call, warmup: int, reps: int) -> list[float]:
    for _ in range(warmup):
        call()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000.0)
    return times


def _model(task: str, runs: Path):
    checkpoint = runs / task / "tiny" / "checkpoints" / "best.ckpt"
    if checkpoint.is_file():
        model, config = get_task(task).load(checkpoint)
        return model, config, str(checkpoint)
    torch.manual_seed(0)
    config = get_task(task).resolve("config")()
    return get_task(task).build_model(config).eval(), config, "random init"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=Path, default=Path("runs"), help="the folder of the make train runs")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--graphs", nargs="*", help="only these graphs (detector, geometry, tracker_encoder, "
                                                    "mask_decoder)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for task in (t.name for t in TASKS if t.has("export_graphs")):
            model, config, source = _model(task, args.runs)
            for graph in graphs_of(task, model, config):
                if args.graphs and graph.name not in args.graphs:
                    continue
                path = export_graph(graph, Path(folder) / f"{graph.name}.onnx")
                worst = max(check_graph(graph, path).values())
                session = onnx_session(path, threads=args.threads)
                shapes = " ".join("x".join(str(d) for d in t.shape) for t in graph.inputs)
                with torch.no_grad():
                    torch_ms = _time(lambda: graph.module(*graph.inputs), args.warmup, args.reps)
                ort_ms = _time(lambda: run_session(session, graph.inputs), args.warmup, args.reps)
                rows.append((graph.name, source, shapes, torch_ms, ort_ms, worst))
    print(f"CPU, {args.threads} thread(s), {args.reps} timed calls after {args.warmup} untimed; torch "
          f"{torch.__version__}, onnxruntime {__import__('onnxruntime').__version__}")
    print()
    print(f"load average (1, 5, 15 min) at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print()
    print("| graph | weights | inputs | PyTorch min / median ms | onnxruntime min / median ms | ratio min / median "
          "| max abs diff |")
    print("|---|---|---|---|---|---|---|")
    for name, source, shapes, torch_ms, ort_ms, worst in rows:
        ratios = min(ort_ms) / min(torch_ms), statistics.median(ort_ms) / statistics.median(torch_ms)
        print(f"| {name} | {source} | {shapes} | {min(torch_ms):.2f} / {statistics.median(torch_ms):.2f} | "
              f"{min(ort_ms):.2f} / {statistics.median(ort_ms):.2f} | {ratios[0]:.2f} / {ratios[1]:.2f} | "
              f"{worst:.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
