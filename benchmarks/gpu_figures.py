"""The figures a GPU session records, in one run (under 8 minutes on one H200): the ``gpu`` tests, then in bf16
(mixed precision, :func:`vision.device.autocast` / Lightning's ``bf16-mixed``) at full size

- the VGGT-1B-shaped geometry backbone (random weights: speed and memory do not depend on them) on 10 views at
  518 px: seconds per forward (median of 3 after a warm-up) and peak GPU memory;
- the G2TAM predictor with SAM 2.1-sized heads (:data:`vision.tracking.sam2_keys.SAM2_1_HEADS`) on the VGGT-1B
  backbone at 518 px: frames per second tracking 2 objects through a 32-frame 480x854 clip (encoding included,
  windows of 8 views), and its peak memory;
- one training step of each task (the second of two, so the first's set-up is not counted), through Lightning's
  Trainer and each task's own data module on synthetic scenes rendered here at the model's size: geometry
  (VGGT-1B, 8 views, activation checkpointing as in ``configs/geometry/vggt_1b.yaml``), tracking
  (``configs/tracking/vggt1b_sam2.yaml``'s model: frozen VGGT-1B, SAM 2.1 heads), detection (VGGT-1B backbone at
  518 px, batch 2) and forensics (its MLP on a batch of 64 feature rows: the backbone cues are cached features,
  not part of a step).

    python benchmarks/gpu_figures.py --out docs/gpu.md                  # on a GPU: full size
    python benchmarks/gpu_figures.py --cpu-smoke                        # anywhere: the same code at toy sizes

``--cpu-smoke`` runs every step on the CPU with tiny models and sizes, to know the script works before a GPU is
lent (``tests/test_gpu_figures_smoke.py`` runs it in the slow tier); its figures mean
nothing. Every figure printed is measured by this run; the table goes to stdout and, with ``--out``, under the
``## Last output`` heading of a file (the text above it is kept).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

ROOT = Path(__file__).resolve().parents[1]
GPU_TESTS = ["tests/test_gpu_smoke.py", "tests/test_device.py", "tests/geometry/test_precision.py",
             "tests/tracking/test_predictor_precision.py", "tests/detection/test_predictor_precision.py",
             "tests/forensics/test_predictor_precision.py"]

#: sizes: full (a GPU) and smoke (the CPU, to check the script)
FULL = dict(backbone="vggt_1b", image_size=518, views=10, clip=(32, 480, 854), train_views=8, det_size=518,
            det_batch=2, checkpointing=True)
SMOKE = dict(backbone="tiny", image_size=32, views=3, clip=(6, 40, 48), train_views=3, det_size=64, det_batch=2,
             checkpointing=False)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _reset_peak(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)


def _peak(device: torch.device) -> str:
    return f"{torch.cuda.max_memory_allocated(device) / 2**30:.2f} GiB" if device.type == "cuda" else "n/a (CPU)"


def _timed(device: torch.device, run: Callable[[], Any], repeats: int = 3) -> float:
    """Median seconds of ``repeats`` calls of ``run`` after one warm-up call."""
    run()
    times = []
    for _ in range(repeats):
        _sync(device)
        start = time.perf_counter()
        run()
        _sync(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def gpu_tests() -> list[tuple[str, str, str]]:
    """Run the ``gpu``-marked tests (they skip without CUDA); the row holds pytest's summary line."""
    command = [sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider", *GPU_TESTS]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    summary = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    if done.returncode not in (0, 5):  # 5: every test deselected
        print(done.stdout[-4000:] + done.stderr[-2000:], file=sys.stderr)
    return [("pytest -m gpu", summary.strip("= "), f"exit {done.returncode}")]


def backbone(device: torch.device, sizes: dict[str, Any]) -> list[tuple[str, str, str]]:
    from vision.device import autocast
    from vision.geometry.task import GeometryConfig, build_model

    torch.manual_seed(0)
    model = build_model(GeometryConfig(size=sizes["backbone"], image_size=sizes["image_size"])).backbone
    model = model.to(device).eval()
    px, views = sizes["image_size"], sizes["views"]
    images = torch.rand(1, views, 3, px, px, device=device)
    _reset_peak(device)

    @torch.no_grad()
    def forward() -> None:
        with autocast(device, torch.bfloat16):
            model(images)

    seconds = _timed(device, forward)
    name = f"{sizes['backbone']} backbone, {views} views at {px} px, bf16"
    del model
    return [(name, f"{seconds:.3f} s / forward", f"peak {_peak(device)}")]


def tracker(device: torch.device, sizes: dict[str, Any]) -> list[tuple[str, str, str]]:
    from vision.tracking.predictor import TrackerPredictor
    from vision.tracking.sam2_keys import SAM2_1_HEADS
    from vision.tracking.task import TrackingConfig, build_model

    torch.manual_seed(0)
    config = TrackingConfig(architecture="g2tam", backbone=sizes["backbone"], image_size=sizes["image_size"],
                            text_encoder=None, **SAM2_1_HEADS)
    predictor = TrackerPredictor(build_model(config), text_encoder=None, device=device, precision="bf16",
                                 window_size=8, cache_views=0)
    t, h, w = sizes["clip"]
    frames = np.random.default_rng(0).integers(0, 256, size=(t, h, w, 3), dtype=np.uint8)
    state = predictor.init_state(frames)
    predictor.add_prompt(state, view=0, obj_id=1, points=[[w // 3, h // 2]], labels=[1])
    predictor.add_prompt(state, view=0, obj_id=2, box=[w // 2, h // 4, 3 * w // 4, 3 * h // 4])

    def track() -> None:
        for _ in predictor.propagate(state):
            pass

    _reset_peak(device)
    seconds = _timed(device, track, repeats=2)
    name = f"G2TAM (SAM 2.1 heads, {sizes['backbone']}), {t} frames {w}x{h}, 2 objects, bf16"
    return [(name, f"{t / seconds:.1f} frames/s", f"peak {_peak(device)}")]


class _StepTimer:
    """A Lightning callback: the seconds of each training batch (synchronised) and the peak memory."""

    def __init__(self, device: torch.device) -> None:
        import lightning as L

        class Callback(L.Callback):
            def on_train_batch_start(inner, *args: Any) -> None:
                _sync(device)
                inner.start = time.perf_counter()

            def on_train_batch_end(inner, *args: Any) -> None:
                _sync(device)
                self.seconds.append(time.perf_counter() - inner.start)

        self.seconds: list[float] = []
        self.callback = Callback()


def _fit_two_steps(module: Any, datamodule: Any, device: torch.device) -> tuple[float, str]:
    import lightning as L

    timer = _StepTimer(device)
    trainer = L.Trainer(max_steps=2, accelerator="gpu" if device.type == "cuda" else "cpu", devices=1,
                        precision="bf16-mixed", logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, limit_val_batches=0, num_sanity_val_steps=0,
                        callbacks=[timer.callback])
    _reset_peak(device)
    trainer.fit(module, datamodule=datamodule)
    return timer.seconds[-1], _peak(device)


def train_steps(device: torch.device, sizes: dict[str, Any], root: Path) -> list[tuple[str, str, str]]:
    from vision.data.datamodule import DetectionDataModule, MultiViewDataModule
    from vision.detection.lightning import OOVDetModule
    from vision.forensics.lightning import ForensicsModule
    from vision.forensics.task import ForensicsConfig
    from vision.geometry.lightning import GeometryModule
    from vision.synthetic.detection import write_oov_synthetic
    from vision.synthetic.scenes import write_split
    from vision.tracking.lightning import TrackingModule
    from vision.tracking.sam2_keys import SAM2_1_HEADS

    px, views, bb = sizes["image_size"], sizes["train_views"], sizes["backbone"]
    threads = os.cpu_count() or 1
    video = str(write_split(root, "video", scenes=2, views=views, size=px, mode="video", seed=0, threads=threads,
                            min_objects=2, max_objects=3))
    rows = []

    torch.manual_seed(0)
    geometry = GeometryModule(config={"size": bb, "image_size": px, "use_checkpoint": sizes["checkpointing"]})
    data = MultiViewDataModule(video, video, views=views, batch_size=1, augment=False)
    seconds, peak = _fit_two_steps(geometry, data, device)
    rows.append((f"train step: geometry ({bb}, {views} views at {px} px)", f"{seconds:.3f} s", f"peak {peak}"))
    del geometry

    torch.manual_seed(0)
    tracking = TrackingModule(config={"architecture": "g2tam", "backbone": bb, "image_size": px,
                                      "text_encoder": None, **SAM2_1_HEADS},
                              freeze_backbone=True, geometry_weight=0.0, max_objects=4, memory_prob=0.5)
    data = MultiViewDataModule(video, video, views=views, batch_size=1, augment=False)
    seconds, peak = _fit_two_steps(tracking, data, device)
    rows.append((f"train step: tracking (G2TAM, SAM 2.1 heads, frozen {bb}, {views} views)", f"{seconds:.3f} s",
                 f"peak {peak}"))
    del tracking

    det_px, batch = sizes["det_size"], sizes["det_batch"]
    splits = write_oov_synthetic(root / "oov", train_scenes=2, val_scenes=1, test_scenes=1, views=batch,
                                 size=det_px, seed=0, threads=threads)
    torch.manual_seed(0)
    detection = OOVDetModule(config={"size": bb, "image_size": det_px}, queue_size=64, samples_per_class=64,
                             synthesis_start=0.0, mining_start=0.0, warmup_steps=1)
    data = DetectionDataModule(str(splits["train"]), str(splits["val"]), batch_size=batch, augment=False)
    seconds, peak = _fit_two_steps(detection, data, device)
    rows.append((f"train step: detection ({bb} at {det_px} px, batch {batch})", f"{seconds:.3f} s", f"peak {peak}"))
    del detection

    torch.manual_seed(0)
    config = ForensicsConfig(hidden=32, image_size=64, max_frames=16)
    forensics = ForensicsModule(config=config).to(device)
    optimizer = forensics.configure_optimizers()
    optimizer = optimizer["optimizer"] if isinstance(optimizer, dict) else optimizer
    optimizer = optimizer[0][0] if isinstance(optimizer, tuple) else optimizer
    features = torch.randn(64, len(config.feature_names), device=device)
    labels = torch.randint(0, 2, (64,), device=device)
    forensics.log = lambda *args, **kwargs: None  # no Trainer to log to: the step alone

    def step() -> None:
        optimizer.zero_grad()
        with torch.autocast(device.type, dtype=torch.bfloat16):
            loss = forensics.training_step({"features": features, "label": labels}, 0)
        loss.backward()
        optimizer.step()

    _reset_peak(device)
    seconds = _timed(device, step)
    rows.append(("train step: forensics (MLP, 64 feature rows)", f"{seconds * 1000:.2f} ms", f"peak {_peak(device)}"))
    return rows


#: the heading under which ``--out`` writes the table; a file's text above it is kept (docs/gpu.md)
MARKER = "## Last output"


def write_output(path: Path, table: str, smoke: bool) -> None:
    """Write ``table`` under :data:`MARKER` in ``path``, keeping what the file holds above the marker."""
    head = ""
    if path.is_file():
        text = path.read_text()
        head = text[: text.index(MARKER)] if MARKER in text else text.rstrip() + "\n\n"
    command = f"python benchmarks/gpu_figures.py{' --cpu-smoke' if smoke else ''} --out {path}"
    path.write_text(f"{head}{MARKER}\n\n`{command}` ({time.strftime('%Y-%m-%d')})\n\n{table}\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu-smoke", action="store_true", help="tiny sizes on the CPU: check the script runs")
    parser.add_argument("--out", type=Path, help="also write the table (markdown) to this file")
    parser.add_argument("--skip-tests", action="store_true", help="do not run the gpu-marked tests")
    args = parser.parse_args(argv)
    if args.cpu_smoke:
        device, sizes = torch.device("cpu"), SMOKE
    elif not torch.cuda.is_available():
        print("error: no CUDA GPU here; run with --cpu-smoke to check the script on the CPU", file=sys.stderr)
        return 2
    else:
        device, sizes = torch.device("cuda"), FULL
    started = time.perf_counter()
    rows: list[tuple[str, str, str]] = []
    if not args.skip_tests:
        rows += gpu_tests()
    rows += backbone(device, sizes)
    rows += tracker(device, sizes)
    with tempfile.TemporaryDirectory(prefix="gpu_figures_") as tmp:
        rows += train_steps(device, sizes, Path(tmp))
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU (smoke: toy sizes)"
    lines = [f"device: {name}; torch {torch.__version__}; {time.perf_counter() - started:.0f} s in all", "",
             "| what | figure | memory / status |", "|---|---|---|"]
    lines += [f"| {a} | {b} | {c} |" for a, b, c in rows]
    table = "\n".join(lines)
    print(table)
    if args.out is not None:
        write_output(args.out, table, args.cpu_smoke)
    return 0


if __name__ == "__main__":
    sys.exit(main())
