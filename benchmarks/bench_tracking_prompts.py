"""Ablation of the dense prompt maps: how fast the mask decoder learns to follow a prompt, on the prompted view
and on the other views, with and without the click / box maps, the 3D proximity maps and their high-resolution
path into the decoder.

    python benchmarks/bench_tracking_prompts.py --geometry-ckpt runs/geometry/tiny/checkpoints/last.ckpt \
        [--steps 300] [--variants g2tam-sparse,g2tam-clicks,g2tam-full,g2tam-full-oracle,control-full]

Variants (``--variants``): ``g2tam-sparse`` (prompts only as tokens, SAM's way, plus a dense mask prompt),
``g2tam-clicks`` (+ click / box maps embedded on the prompted view), ``g2tam-proximity`` (+ the 3D proximity maps
embedded on every view), ``g2tam-clicks-hires`` (click maps, also fused at the decoder's upsampled resolution, no
proximity maps), ``g2tam-full`` (click and proximity maps, both fused at that resolution too: the default model);
``-oracle`` variants decode from the ground-truth point maps instead of the backbone's predictions (what the
geometry memory would give with a perfect backbone); ``control-sparse`` / ``control-full``: the memory-bank control
without / with the click maps and their high-resolution path (it has no geometry, hence no proximity maps).

To isolate the prompt encoding, the geometry backbone is loaded from ``--geometry-ckpt`` and frozen; everything
after it (projection, prompt and spatial encoders, decoder; the control's memory) trains with AdamW (lr 2e-3,
30 warm-up steps, clip 1.0) on 4-view clips of the tracking training splits, batch 4, prompts of every type
drawn at random (the splits ``make train-tracking`` renders; ``--train`` to point elsewhere). Scored on two
validation splits the bench renders into ``--out`` (16 video and 16 unordered scenes of 8 views, 2 to 5 objects,
seeds unseen in training) with fixed point and box prompts: per split, mean IoU of the selected hypothesis
(presence-gated) over (view, object) pairs where the object is visible, on the prompted view and on the other
views.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import torch
from curves import format_curves  # benchmarks/curves.py, beside this script
from torch.utils.data import DataLoader

from vision.data.coco import load_split
from vision.data.datamodule import MultiViewDataModule
from vision.data.datasets import MultiViewClipDataset, collate_clips
from vision.data.transforms import build_multiview_transform
from vision.geometry.losses import normalize_scene
from vision.tracking.lightning import NEGATIVE_NAMES, TrackingModule
from vision.tracking.losses import mask_iou, tracking_losses
from vision.tracking.model import select_best_mask
from vision.tracking.sampling import sample_prompts

os.environ.setdefault("HF_HUB_OFFLINE", "1")
ROOT = Path(__file__).resolve().parents[1]
SYNTH = ROOT / "datasets" / "synthetic"
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


def forward(module: TrackingModule, batch: dict, prompts, oracle: bool) -> dict:
    """The tracker's outputs; with ``oracle`` G2TAM decodes from the ground-truth point maps (camera 0's frame,
    scene-normalised) instead of its backbone's predicted ones."""
    if not oracle:
        return module(batch["images"], prompts)
    encoded = module.model.encode(batch["images"])
    valid = batch["valid_depth"] & (batch["depth"] > 0)
    gt = normalize_scene(batch["extrinsics"], batch["intrinsics"], batch["depth"], None, valid).world_points
    encoded["world_points"] = torch.where(valid[..., None], gt, torch.full_like(gt, float("nan")))
    return module.model.decode(encoded, prompts)


@torch.no_grad()
def score(module: TrackingModule, loaders: dict[str, DataLoader], oracle: bool = False) -> dict[str, float]:
    """Mean IoU on the prompted view and on the other views, per split and prompt type (module docstring)."""
    module.eval()
    generator = torch.Generator().manual_seed(0)
    ious: dict[str, list[torch.Tensor]] = {}
    for split, batch in ((name, b) for name, loader in loaders.items() for b in loader):
        for kind in SCORED:
            sampled = sample_prompts(batch, max_objects=4, types=(kind,), text_dim=module.model.text_dim,
                                     memory_dim=module.model.dim, generator=generator)
            out = forward(module, batch, sampled.prompts, oracle)
            masks, _ = select_best_mask(out["masks"], out["iou"])
            masks = torch.where(out["presence"][..., None, None] > 0, masks, torch.full_like(masks, -1.0))
            iou = mask_iou(masks, sampled.gt_masks.float())  # [B, S, N]
            views = torch.arange(iou.shape[1])[None, :, None]
            on_view = views == sampled.prompts.view[:, None, :]
            visible = sampled.gt_presence & sampled.prompts.valid[:, None]
            ious.setdefault(f"{split}:{kind}/prompted", []).append(iou[visible & on_view])
            ious.setdefault(f"{split}:{kind}/other", []).append(iou[visible & ~on_view])
    return {k: float(torch.cat(v).mean()) for k, v in ious.items()}


def render_validation(out: Path) -> list[str]:
    """Render the two validation splits into ``out`` (if absent); return their paths."""
    from vision.data.synthetic import write_split

    paths = []
    for name, mode, seed in (("val_video", "video", 21), ("val_unordered", "unordered", 22)):
        path = out / f"{name}.json"
        if not path.exists():
            write_split(out, name, scenes=16, views=8, size=64, mode=mode, seed=seed, threads=1, max_objects=5)
        paths.append(str(path))
    return paths


def run(name: str, geometry_ckpt: str, train: list[str], val: list[str], steps: int, every: int,
        lr: float = 2e-3) -> list[dict]:
    torch.manual_seed(0)
    module = TrackingModule(config=VARIANTS[name], geometry_checkpoint=geometry_ckpt)
    oracle = name.endswith("-oracle")
    for p in module.model.backbone.parameters():
        p.requires_grad_(False)
    params = [p for p in module.model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 30))
    data = MultiViewDataModule(train, val[0], views=4, batch_size=4, num_workers=0, image_size=64, augment=True)
    data.setup("fit")
    transform = build_multiview_transform(64, train=False)
    loaders = {}
    for path in val:
        clips = MultiViewClipDataset(load_split(path), 4, transform=transform)
        loaders[Path(path).stem.removeprefix("val_")] = DataLoader(clips, batch_size=4, collate_fn=collate_clips)
    rows, step, start = [], 0, time.time()
    while step < steps:
        for batch in data.train_dataloader():
            module.train()
            module.model.backbone.eval()
            sampled = sample_prompts(batch, max_objects=4, types=module.prompt_types, embed_text=module.embed_text,
                                     negative_text=0.2, negative_names=NEGATIVE_NAMES,
                                     text_dim=module.model.text_dim, memory_dim=module.model.dim)
            out = forward(module, batch, sampled.prompts, oracle)
            loss = tracking_losses(out, sampled.gt_masks, sampled.gt_presence, sampled.prompts.valid)["loss"]
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            step += 1
            if step % every == 0 or step == steps:
                rows.append({"step": step, "seconds": time.time() - start, **score(module, loaders, oracle)})
                print(f"  {name:15s} step {step:4d}  " + "  ".join(f"{k} {v:.3f}" for k, v in rows[-1].items()
                                                                   if "/" in k), flush=True)
            if step >= steps:
                break
    return rows


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
                    help="folder of the validation splits and results.json")
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
    curves = {v: run(v, args.geometry_ckpt, args.train, val, args.steps, args.every) for v in variants}
    cols = [f"{split}:{k}/{where}" for split in ("video", "unordered") for k in SCORED
            for where in ("prompted", "other")]
    print("columns: split:prompt/views (prompted = the view carrying the prompt, other = the remaining views)")
    print(f"\nfrozen geometry backbone, {args.steps} steps, batch 4 x 4 views, 64 px; mean IoU on {', '.join(val)}")
    print(format_curves(curves, cols, width=25))
    (args.out / f"results_{'_'.join(variants)}.json").write_text(json.dumps(curves, indent=1))


if __name__ == "__main__":
    main()
