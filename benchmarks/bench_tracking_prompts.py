"""Ablation of the dense prompt maps: how fast the mask decoder learns to follow a prompt, on the prompted view
and on the other views, with and without the click / box maps, the 3D proximity maps and their high-resolution
path into the decoder.

    python benchmarks/bench_tracking_prompts.py --geometry-ckpt runs/geometry/tiny/checkpoints/last.ckpt \
        [--steps 300] [--variants g2tam-sparse,g2tam-clicks,g2tam-full,g2tam-full-oracle,control-full]

Variants (``--variants``): ``g2tam-sparse`` (prompts only as tokens, SAM's way, plus a dense mask prompt),
``g2tam-clicks`` (+ click / box maps embedded on the prompted view), ``g2tam-proximity`` (+ the 3D proximity maps
embedded on every view), ``g2tam-clicks-hires`` (click maps, also fused at the decoder's upsampled resolution, no
proximity maps), ``g2tam-full`` (click and proximity maps, both fused at that resolution too: the default model);
``-oracle`` variants decode from the ground-truth point maps instead of the backbone's predictions
(``TrackingModule.oracle_geometry``: what the geometry memory would give with a perfect backbone);
``control-sparse`` / ``control-full``: the memory-bank control without / with the click maps and their
high-resolution path (it has no geometry, hence no proximity maps).

Every variant trains as ``make train-tracking`` trains: the training CLI (:class:`vision.training.cli.VisionCLI`,
the parser of ``tools/train.py``) builds :class:`~vision.tracking.lightning.TrackingModule`, its data module and
the Lightning Trainer from ``configs/tracking/tiny.yaml`` (G2TAM) or ``configs/tracking/baseline_tiny.yaml`` (the
control), with command-line overrides of the variant's model fields (``click_maps``, ``proximity_maps``,
``hires_maps``), the geometry checkpoint (``--geometry-ckpt``) loaded and frozen (``freeze_backbone``,
``geometry_weight`` 0: only what comes after the backbone trains, to isolate the prompt encoding), the oracle,
no simulated 3D memory (``memory_prob`` 0), the learning rate (2e-3, 30 warm-up steps, then the module's cosine),
the steps (``--steps``), 4-view clips in batches of 4 of the training splits (those ``make train-tracking``
renders; ``--train`` to point elsewhere), validation off and the run folder (``OUT/train/<variant>``: logs and
checkpoints). Prompts of every type are drawn at random, as the module draws them.

Every ``--every`` steps (and at the last) a callback scores the model on two validation splits the bench renders
into ``--out`` (16 video and 16 unordered scenes of 8 views, 2 to 5 objects, seeds unseen in training) with fixed
point and box prompts: per split, mean IoU of the selected hypothesis (presence-gated) over (view, object) pairs
where the object is visible, on the prompted view and on the other views
(:func:`vision.tracking.view_iou.prompted_view_ious`).
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

import lightning as L
import torch
from curves import format_curves  # benchmarks/curves.py, beside this script
from lightning.pytorch.utilities import move_data_to_device
from torch.utils.data import DataLoader

from vision.data.coco import load_split
from vision.data.datasets import MultiViewClipDataset, collate_clips
from vision.data.transforms import build_multiview_transform
from vision.tracking.lightning import TrackingModule
from vision.tracking.sampling import sample_prompts
from vision.tracking.view_iou import prompted_view_ious
from vision.training.cli import VisionCLI

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
SYNTH = ROOT / "datasets" / "synthetic"
#: The training config of each tracker.
CONFIGS = {"g2tam": ROOT / "configs" / "tracking" / "tiny.yaml",
           "memory_bank": ROOT / "configs" / "tracking" / "baseline_tiny.yaml"}
#: variant -> the tracker (a key of :data:`CONFIGS`) and the model fields that differ from its config
VARIANTS: dict[str, dict] = {
    "g2tam-sparse": dict(architecture="g2tam", click_maps=False, proximity_maps=False, hires_maps=False),
    "g2tam-clicks": dict(architecture="g2tam", click_maps=True, proximity_maps=False, hires_maps=False),
    "g2tam-proximity": dict(architecture="g2tam", click_maps=True, proximity_maps=True, hires_maps=False),
    "g2tam-clicks-hires": dict(architecture="g2tam", click_maps=True, proximity_maps=False, hires_maps=True),
    "g2tam-full": dict(architecture="g2tam", click_maps=True, proximity_maps=True, hires_maps=True),
    "g2tam-clicks-hires-oracle": dict(architecture="g2tam", click_maps=True, proximity_maps=False, hires_maps=True),
    "g2tam-full-oracle": dict(architecture="g2tam", click_maps=True, proximity_maps=True, hires_maps=True),
    "control-sparse": dict(architecture="memory_bank", click_maps=False, hires_maps=False),
    "control-full": dict(architecture="memory_bank", click_maps=True, hires_maps=True),
}
SCORED = ("point", "box")


@torch.no_grad()
def score(module: TrackingModule, loaders: dict[str, DataLoader]) -> dict[str, float]:
    """Mean IoU on the prompted view and on the other views, per split and prompt type (module docstring), the
    prompts drawn with a fixed seed; leaves ``module`` in eval mode."""
    module.eval()
    generator = torch.Generator().manual_seed(0)
    ious: dict[str, list[torch.Tensor]] = {}
    for split, batch in ((name, b) for name, loader in loaders.items() for b in loader):
        batch = move_data_to_device(batch, module.device)
        for kind in SCORED:
            sampled = sample_prompts(batch, max_objects=4, types=(kind,), text_dim=module.model.text_dim,
                                     memory_dim=module.model.dim, generator=generator)
            out = module.decode_batch(batch, sampled.prompts.to(module.device))
            for where, values in prompted_view_ious(out, sampled).items():
                ious.setdefault(f"{split}:{kind}/{where}", []).append(values.cpu())
    return {k: float(torch.cat(v).mean()) for k, v in ious.items()}


class PromptCurve(L.Callback):
    """Scores the module (:func:`score`) every ``every`` optimiser steps and at the last one: ``rows`` of
    ``{"step", "seconds" (of training so far), "<split>:<prompt>/<views>": mean IoU}``."""

    def __init__(self, variant: str, loaders: dict[str, DataLoader], every: int) -> None:
        self.variant, self.loaders, self.every = variant, loaders, every
        self.rows: list[dict] = []
        self.start = time.time()

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        self.start = time.time()

    def on_train_batch_end(self, trainer: L.Trainer, pl_module: L.LightningModule, outputs: object, batch: object,
                           batch_idx: int) -> None:
        step = trainer.global_step
        if step % self.every and step != trainer.max_steps:
            return
        row = {"step": step, "seconds": time.time() - self.start, **score(pl_module, self.loaders)}
        pl_module.train()
        self.rows.append(row)
        print(f"  {self.variant:15s} step {step:4d}  " + "  ".join(f"{k} {v:.3f}" for k, v in row.items()
                                                                  if "/" in k), flush=True)


def render_validation(out: Path) -> list[str]:
    """Render the two validation splits into ``out`` (if absent); return their paths."""
    from vision.synthetic.scenes import write_split

    paths = []
    for name, mode, seed in (("val_video", "video", 21), ("val_unordered", "unordered", 22)):
        path = out / f"{name}.json"
        if not path.exists():
            write_split(out, name, scenes=16, views=8, size=64, mode=mode, seed=seed, threads=1, max_objects=5)
        paths.append(str(path))
    return paths


def variant_cli(name: str, geometry_ckpt: str, train: list[str], val: str, steps: int, run_dir: Path,
                lr: float = 2e-3) -> VisionCLI:
    """The training CLI of variant ``name`` (module docstring: its config and overrides), its classes built,
    nothing run."""
    fields = dict(VARIANTS[name])
    arch = fields.pop("architecture")
    args = ["--config", str(CONFIGS[arch]), "--seed_everything", "0", "--run_dir", str(run_dir),
            "--trainer.max_steps", str(steps), "--trainer.limit_val_batches", "0",
            "--trainer.num_sanity_val_steps", "0", "--trainer.enable_progress_bar", "false",
            "--trainer.enable_model_summary", "false",
            "--model.init_args.geometry_checkpoint", geometry_ckpt, "--model.init_args.freeze_backbone", "true",
            "--model.init_args.geometry_weight", "0",
            "--model.init_args.oracle_geometry", str(name.endswith("-oracle")).lower(),
            "--model.init_args.memory_prob", "0", "--model.init_args.lr", str(lr),
            "--model.init_args.warmup_steps", "30", "--model.init_args.config.image_size", "64",
            *(arg for key, value in fields.items() for arg in (f"--model.init_args.config.{key}", str(value).lower())),
            "--data.init_args.train_split", json.dumps(train), "--data.init_args.val_split", val,
            "--data.init_args.views", "4", "--data.init_args.batch_size", "4", "--data.init_args.num_workers", "0"]
    with warnings.catch_warnings():  # the CLI parses ``args``, not this script's own command line
        warnings.filterwarnings("ignore", message="LightningCLI's args parameter")
        return VisionCLI(args=args, run=False)


def run(name: str, geometry_ckpt: str, train: list[str], val: list[str], steps: int, every: int,
        run_dir: Path) -> list[dict]:
    """Train variant ``name`` with its trainer; return its learning curve (:class:`PromptCurve` rows)."""
    cli = variant_cli(name, geometry_ckpt, train, val[0], steps, run_dir)
    transform = build_multiview_transform(cli.model.config.image_size, train=False)
    loaders = {}
    for path in val:
        clips = MultiViewClipDataset(load_split(path), 4, transform=transform)
        loaders[Path(path).stem.removeprefix("val_")] = DataLoader(clips, batch_size=4, collate_fn=collate_clips)
    curve = PromptCurve(name, loaders, every)
    cli.trainer.callbacks.append(curve)
    cli.trainer.fit(cli.model, datamodule=cli.datamodule)
    return curve.rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--geometry-ckpt", required=True, help="GeometryModule checkpoint (make train-geometry)")
    ap.add_argument("--train", nargs="+", default=[str(SYNTH / "tracking_train_video.json"),
                                                   str(SYNTH / "tracking_train_unordered.json")])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--every", type=int, default=150)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, from {list(VARIANTS)}")
    ap.add_argument("--out", type=Path, default=Path("runs/bench_tracking_prompts"),
                    help="folder of the validation splits, the runs (train/<variant>) and the results")
    args = ap.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        ap.error(f"unknown variant(s) {unknown}; choose from {list(VARIANTS)}")
    missing = [p for p in [args.geometry_ckpt, *args.train] if not Path(p).is_file()]
    if missing:
        ap.error(f"missing file(s) {missing}: run `make train-tracking` (or pass --train / --geometry-ckpt)")
    torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    val = render_validation(args.out)
    curves = {v: run(v, args.geometry_ckpt, args.train, val, args.steps, args.every, args.out / "train" / v)
              for v in variants}
    cols = [f"{split}:{k}/{where}" for split in ("video", "unordered") for k in SCORED
            for where in ("prompted", "other")]
    print("columns: split:prompt/views (prompted = the view carrying the prompt, other = the remaining views)")
    print(f"\nfrozen geometry backbone, {args.steps} steps, batch 4 x 4 views, 64 px; mean IoU on {', '.join(val)}")
    print(format_curves(curves, cols, width=25))
    (args.out / f"results_{'_'.join(variants)}.json").write_text(json.dumps(curves, indent=1))


if __name__ == "__main__":
    main()
