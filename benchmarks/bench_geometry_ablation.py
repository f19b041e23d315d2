"""Ablations of the tiny geometry backbone's recipe: the plain patchify convolution against the convolutional stem
(``patch_embed="convstem"``), the plain convolution with the training augmentation (per-view random crops
and photometric noise, one flip per clip) switched on, and the plain convolution with the cross-view patch
correspondence loss (``+match``, weight 1: :mod:`vision.geometry.matching`; its ``match_pose/AUC@30`` /
``match_pose/RRA@15`` columns score the cameras registered from the learned matches); same data, steps, seed and optimiser, scored on
the unordered validation split every ``--every`` steps (learning curves).

    python benchmarks/bench_geometry_ablation.py --out runs/bench_geometry_ablation --scenes 512 --steps 400 \
        [--variants conv,convstem,conv+augment]

Renders ``--scenes`` unordered training scenes and 16 validation scenes (64 px, 8 views) into ``--out`` if absent.
Every variant trains as ``make train-geometry`` trains: the training CLI (:class:`vision.training.cli.VisionCLI`,
the parser of ``tools/train.py``) builds :class:`~vision.geometry.lightning.GeometryModule`, its data module and the
Lightning Trainer from ``configs/geometry/tiny.yaml`` (AdamW, decay groups, warm-up + cosine, clip 1.0), with
command-line overrides of the variant's fields (``patch_embed``; ``match_dim`` 64 and ``match_weight`` 1 with
``+match``, none and 0 otherwise; ``augment`` with ``+augment``), the splits rendered here (no curriculum, no video
frame skipping, no reloading of the loaders), 4-view clips in batches of 4, the steps (``--steps``), validation every
``--every`` steps and the run folder (``OUT/<variant>``: logs and checkpoints); prints one row per (variant, step)
with the module's validation metrics (the figures ``tools/train.py test`` prints).
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import lightning as L
import torch

from curves import format_curves  # benchmarks/curves.py, beside this script
from vision.training.cli import VisionCLI

#: The training config every variant starts from.
CONFIG = Path(__file__).resolve().parents[1] / "configs" / "geometry" / "tiny.yaml"
VARIANTS = ("conv", "convstem", "conv+augment", "conv+match")
COLUMNS = ("abs_rel", "delta_1.25", "AUC@30", "RRA@15", "RTA@15", "chamfer", "match_pose/AUC@30",
           "match_pose/RRA@15")


def render(out: Path, scenes: int) -> tuple[Path, Path]:
    from vision.synthetic.scenes import write_split

    paths = []
    for name, count, seed in (("train", scenes, 0), ("val", 16, 1)):
        path = out / f"{name}.json"
        if not path.exists():
            write_split(out, name, scenes=count, views=8, size=64, mode="unordered", seed=seed, threads=1)
        paths.append(path)
    return paths[0], paths[1]


class Curve(L.Callback):
    """Keeps the validation metrics of every evaluation: ``rows`` of ``{"step", "seconds", column: value}``."""

    def __init__(self, variant: str) -> None:
        self.variant, self.rows, self.start = variant, [], time.time()

    def on_validation_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        if trainer.sanity_checking:
            return
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
        row = {"step": trainer.global_step, "seconds": time.time() - self.start,
               **{k: metrics.get(f"val/{k}", float("nan")) for k in COLUMNS}}
        self.rows.append(row)
        print(f"  {self.variant:17s} step {row['step']:5d}  " + "  ".join(f"{k} {row[k]:.3f}" for k in COLUMNS),
              flush=True)


def variant_cli(variant: str, train: Path, val: Path, steps: int, every: int, run_dir: Path,
                lr: float = 1e-3) -> VisionCLI:
    """The training CLI of ``variant`` (module docstring: :data:`CONFIG` and the overrides), its classes built,
    nothing run."""
    embed, _, extra = variant.partition("+")
    match = extra == "match"
    args = ["--config", str(CONFIG), "--seed_everything", "0", "--run_dir", str(run_dir),
            "--trainer.max_steps", str(steps), "--trainer.val_check_interval", str(every),
            "--trainer.check_val_every_n_epoch", "null", "--trainer.reload_dataloaders_every_n_epochs", "0",
            "--trainer.num_sanity_val_steps", "0", "--trainer.enable_progress_bar", "false",
            "--trainer.enable_model_summary", "false",
            # one mapping merged into the file's config (a dotted ``config.match_dim null`` parses as a string)
            "--model.init_args.config", json.dumps({"image_size": 64, "patch_embed": embed,
                                                    "match_dim": 64 if match else None}),
            "--model.init_args.match_weight", "1.0" if match else "0.0",
            "--model.init_args.lr", str(lr), "--model.init_args.warmup_steps", "50",
            "--data.init_args.train_split", json.dumps([str(train)]), "--data.init_args.val_split", str(val),
            "--data.init_args.views", "4", "--data.init_args.batch_size", "4", "--data.init_args.num_workers", "0",
            "--data.init_args.augment", str(extra == "augment").lower(), "--data.init_args.max_stride", "null",
            "--data.init_args.curriculum", "null"]
    with warnings.catch_warnings():  # the CLI parses ``args``, not this script's own command line
        warnings.filterwarnings("ignore", message="LightningCLI's args parameter")
        return VisionCLI(args=args, run=False)


def run(variant: str, train: Path, val: Path, steps: int, every: int, root: Path) -> list[dict]:
    """Train one variant; return ``[{"step", "seconds", metrics...}]`` every ``every`` steps and at the last."""
    cli = variant_cli(variant, train, val, steps, every, root / variant)
    trainer, module, data = cli.trainer, cli.model, cli.datamodule
    curve = Curve(variant)
    trainer.callbacks.append(curve)
    trainer.fit(module, datamodule=data)
    if not curve.rows or curve.rows[-1]["step"] != trainer.global_step:
        trainer.validate(module, datamodule=data, verbose=False)
    return curve.rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=Path("runs/bench_geometry_ablation"))
    ap.add_argument("--scenes", type=int, default=512)
    ap.add_argument("--steps", type=int, default=400)
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, from {VARIANTS}")
    args = ap.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        ap.error(f"unknown variant(s) {unknown}; choose from {VARIANTS}")
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    train, val = render(args.out, args.scenes)
    curves = {variant: run(variant, train, val, args.steps, args.every, args.out) for variant in variants}
    print(f"\n{args.scenes} training scenes, {args.steps} steps, batch 4 x 4 views, 64 px")
    print(format_curves(curves, COLUMNS))
    (args.out / f"results_{'_'.join(variants).replace('+', '-')}.json").write_text(json.dumps(curves, indent=1))


if __name__ == "__main__":
    main()
