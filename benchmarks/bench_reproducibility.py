"""Is training reproducible and is resume exact on this machine? The tiny geometry backbone, trained in separate
processes from one seed, compared tensor by tensor.

    python benchmarks/bench_reproducibility.py [--accelerator cpu|cuda] [--steps 8] [--kill-at 5] \
        [--data runs/repro_data] [--deterministic] [--native]

Four runs of ``--steps`` steps (4-view clips of a small synthetic video split, 32 px, augmentation on, validation
every 3 steps) in their own processes:

- ``plain``: uninterrupted, no DataLoader workers;
- ``again``: uninterrupted, one worker, another ``PYTHONHASHSEED``;
- ``killed`` + ``resumed``: SIGKILLed when step ``--kill-at`` starts (its last checkpoint holds step
  ``--kill-at``), then resumed from that checkpoint with ``--ckpt_path``.

The table gives, for ``again`` and ``resumed`` against ``plain``, how many of the final weights (and optimizer
tensors) differ and the largest absolute difference. On the CPU both are 0 (``tests/training/test_reproducibility.py``
asserts it for every task). On a GPU, ``--deterministic`` sets Lightning's ``deterministic=True`` (deterministic
kernels; ``CUBLAS_WORKSPACE_CONFIG`` is set for it).

The split is rendered on first use into ``--data`` (rendering needs open3d); a folder rendered elsewhere can be
given instead.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

import torch


def _child(args: argparse.Namespace) -> None:
    """One training run (this script re-run with ``--child RUN``)."""
    import lightning as L
    from lightning.pytorch.callbacks import ModelCheckpoint

    from vision.data.datamodule import MultiViewDataModule
    from vision.training.callbacks import RandomStateCheckpoint
    from vision.training.checkpoint_io import AtomicCheckpointIO
    from vision.geometry.lightning import GeometryModule

    class Kill(L.Callback):
        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            if args.kill_at and trainer.global_step >= args.kill_at:
                os.kill(os.getpid(), signal.SIGKILL)

    run = Path(args.child)
    L.seed_everything(7)
    model = GeometryModule(config={"size": "tiny", "image_size": 32, "match_dim": 64}, warmup_steps=2,
                           match_weight=1.0)
    data = MultiViewDataModule(str(Path(args.data) / "train.json"), str(Path(args.data) / "val.json"), views=4,
                               batch_size=2, num_workers=args.workers, image_size=None if args.native else 32,
                               augment=True)
    trainer = L.Trainer(accelerator=args.accelerator, devices=1, max_steps=args.steps, max_epochs=-1,
                        deterministic=args.deterministic or None, logger=False, enable_progress_bar=False,
                        enable_model_summary=False, num_sanity_val_steps=1, val_check_interval=3,
                        check_val_every_n_epoch=None, limit_val_batches=1, plugins=[AtomicCheckpointIO()],
                        callbacks=[ModelCheckpoint(dirpath=run, save_last=True, save_top_k=0, every_n_train_steps=1),
                                   RandomStateCheckpoint(), Kill()])
    trainer.fit(model, data, ckpt_path=args.resume)


def _spawn(args: argparse.Namespace, run: Path, workers: int, hash_seed: int, kill_at: int = 0,
           resume: Path | None = None) -> tuple[int, str]:
    cmd = [sys.executable, __file__, "--child", str(run), "--data", str(args.data), "--accelerator", args.accelerator,
           "--steps", str(args.steps), "--kill-at", str(kill_at), "--workers", str(workers)]
    if resume is not None:
        cmd += ["--resume", str(resume)]
    cmd += ["--deterministic"] * args.deterministic + ["--native"] * args.native
    env = {**os.environ, "PYTHONHASHSEED": str(hash_seed), "CUBLAS_WORKSPACE_CONFIG": ":4096:8"}
    done = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    return done.returncode, done.stderr[-2000:]


def _compare(a: dict, b: dict) -> tuple[int, int, float]:
    """(tensors differing, tensors compared, largest absolute difference) over weights and optimizer state."""
    pairs = [(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"]]
    for sa, sb in zip(a["optimizer_states"], b["optimizer_states"]):
        pairs += [(v, sb["state"][i][n]) for i, s in sa["state"].items() for n, v in s.items()]
    differ, worst = 0, 0.0
    for x, y in pairs:
        x, y = torch.as_tensor(x).double(), torch.as_tensor(y).double()
        if not torch.equal(x, y):
            differ += 1
            worst = max(worst, float((x - y).abs().max()))
    return differ, len(pairs), worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--accelerator", default="cpu")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--kill-at", type=int, default=5)
    parser.add_argument("--data", type=Path, default=ROOT / "runs" / "repro_data")
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "repro")
    parser.add_argument("--deterministic", action="store_true")
    parser.add_argument("--native", action="store_true", help="images at their size, no augmentation (no albumentations)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--resume", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(args)
        return
    if not 0 < args.kill_at < args.steps:
        parser.error("--kill-at must lie between 0 and --steps")
    if not (args.data / "train.json").is_file():
        from vision.synthetic.scenes import write_split

        for name, scenes in (("train", 6), ("val", 1)):
            write_split(args.data, name, scenes=scenes, views=6, size=32, mode="video", seed=3, threads=1)

    from vision.training.checkpoint_io import load_checkpoint

    runs = {name: args.out / name for name in ("plain", "again", "interrupted")}
    codes = {
        "plain": _spawn(args, runs["plain"], workers=0, hash_seed=1),
        "again": _spawn(args, runs["again"], workers=1, hash_seed=2),
        "killed": _spawn(args, runs["interrupted"], workers=1, hash_seed=3, kill_at=args.kill_at),
    }
    codes["resumed"] = _spawn(args, runs["interrupted"], workers=0, hash_seed=4,
                              resume=runs["interrupted"] / "last.ckpt")
    expected = {"plain": 0, "again": 0, "killed": -signal.SIGKILL, "resumed": 0}
    for name, (code, stderr) in codes.items():
        if code != expected[name]:
            sys.exit(f"run {name!r} exited with {code}:\n{stderr}")
    plain = load_checkpoint(runs["plain"] / "last.ckpt")
    mode = f"{args.accelerator}{', deterministic' if args.deterministic else ''}"
    print(f"| runs vs plain ({mode}, {args.steps} steps) | tensors differing | largest abs. difference |")
    print("|---|---:|---:|")
    for label, run in (("same seed, other process / workers", "again"),
                       (f"killed at step {args.kill_at}, resumed", "interrupted")):
        differ, total, worst = _compare(plain, load_checkpoint(runs[run] / "last.ckpt"))
        print(f"| {label} | {differ} / {total} | {worst:.3g} |")


if __name__ == "__main__":
    main()
