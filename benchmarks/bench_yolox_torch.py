"""YOLOX-nano in PyTorch (vision.weights.nets.yolox) against onnxruntime running the same registered file
(vision.weights.nets.onnx_models.YOLOXNano), on the CPU, one image at 416 x 416.

    python benchmarks/bench_yolox_torch.py [--threads 2] [--reps 50] [--warmup 5] [--weights ../shared/weights]

Both backends get ``--threads`` intra-op threads (``torch.set_num_threads``; the onnxruntime session's
``intra_op_num_threads``). Two things are timed per backend with ``time.perf_counter``: the network alone on the
letterboxed scikit-image ``astronaut`` (1 x 3 x 416 x 416; PyTorch in eval mode under ``torch.no_grad()``, in the
default NCHW layout and with the module and input in ``channels_last``), and the whole ``detect`` (letterbox,
network, decoding, NMS). The backends take turns in blocks of ``--block`` calls, with a pause between blocks: one
backend's idle threads keep spinning for a moment after a call (onnxruntime's pool, OpenMP's), which on a small
machine steals the cores from the other when the calls alternate one by one, while short blocks in turn still
expose both to the same outside load. Min and median milliseconds per frame are printed, with the ratio PyTorch /
onnxruntime, the largest absolute difference of the raw outputs, and the load average before and after.
``--weights`` is a folder holding the registered files (it becomes ``VISION_WEIGHTS_DIR``; default: the weights
folder of :mod:`vision.weights.store`).
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import time


def _timed(call) -> float:
    start = time.perf_counter()
    call()
    return (time.perf_counter() - start) * 1000.0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--block", type=int, default=10, help="calls of one backend in a row")
    parser.add_argument("--weights", default=None, help="a folder holding the registered files")
    args = parser.parse_args(argv)
    if args.weights:
        os.environ["VISION_WEIGHTS_DIR"] = args.weights

    import numpy as np
    import torch
    from skimage import data

    from vision.weights.nets.onnx_models import YOLOXNano as OrtYOLOXNano
    from vision.weights.nets.onnx_models import yolox_letterbox
    from vision.weights.nets.yolox import load_yolox_nano

    torch.set_num_threads(args.threads)
    net, ort_net = load_yolox_nano(), OrtYOLOXNano(threads=args.threads)
    image = data.astronaut()
    blob, _ = yolox_letterbox(image, *net.input_size)
    tensor = torch.from_numpy(blob)
    feed = {ort_net.input_name: blob}

    last_net = copy.deepcopy(net).to(memory_format=torch.channels_last)
    last_tensor = tensor.contiguous(memory_format=torch.channels_last)

    def torch_net(module=net, inputs=tensor):
        with torch.no_grad():
            return module(inputs)["raw"]

    calls = {
        "network": {"pytorch": torch_net, "pytorch-cl": lambda: torch_net(last_net, last_tensor),
                    "onnxruntime": lambda: ort_net.session.run(None, feed)[0]},
        "detect": {"pytorch": lambda: net.detect(image), "onnxruntime": lambda: ort_net.detect(image)},
    }
    reference = calls["network"]["onnxruntime"]()
    difference = {backend: float(np.abs(calls["network"][backend]().numpy() - reference).max())
                  for backend in ("pytorch", "pytorch-cl")}
    load_before = os.getloadavg()
    times: dict[tuple[str, str], list[float]] = {}
    for what, backends in calls.items():
        for call in backends.values():
            for _ in range(args.warmup):
                call()
        done = 0
        while done < args.reps:
            block = min(args.block, args.reps - done)
            for backend, call in backends.items():
                time.sleep(0.2)  # the other backend's threads stop spinning
                times.setdefault((what, backend), []).extend(_timed(call) for _ in range(block))
            done += block
    load_after = os.getloadavg()

    print(f"YOLOX-nano 1 x 3 x 416 x 416, {args.threads} threads each (torch {torch.__version__}), {args.reps} reps "
          f"after {args.warmup} warm-up; load average {load_before[0]:.2f} before, {load_after[0]:.2f} after")
    print(f"{'':10s} {'backend':18s} {'min ms':>8s} {'median ms':>10s}")
    for what in calls:
        medians = {}
        for backend in calls[what]:
            values = times[(what, backend)]
            medians[backend] = (min(values), statistics.median(values))
            print(f"{what:10s} {backend:18s} {min(values):8.1f} {statistics.median(values):10.1f}")
        ort_min, ort_median = medians["onnxruntime"]
        for backend, (low, middle) in medians.items():
            if backend != "onnxruntime":
                print(f"{what:10s} {backend + ' / ort':18s} {low / ort_min:8.2f} {middle / ort_median:10.2f}")
    print("largest |raw difference| from onnxruntime on astronaut: "
          + ", ".join(f"{backend} {value:.2e}" for backend, value in difference.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
