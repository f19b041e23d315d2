"""Ablation of the dense prompt maps: how fast the mask decoder learns to follow a prompt, on the prompted view
and on the other views, with and without the click / box maps and the 3D proximity maps.

    python benchmarks/bench_tracking_prompts.py --geometry-ckpt runs/geometry/tiny/checkpoints/last.ckpt \
        [--steps 300] [--variants g2tam-sparse,g2tam-clicks,g2tam-full,control-sparse,control-clicks]

Variants (``--variants``): ``g2tam-sparse`` (prompts only as tokens, SAM's way, plus a dense mask prompt),
``g2tam-clicks`` (+ click / box maps on the prompted view), ``g2tam-full`` (+ the 3D proximity maps on every view:
the default), ``control-sparse`` / ``control-clicks``: the memory-bank control without / with click maps.

To isolate the prompt encoding, the geometry backbone is loaded from ``--geometry-ckpt`` and frozen; everything
after it (projection, prompt and spatial encoders, decoder; the control's memory) trains with AdamW (lr 2e-3,
30 warm-up steps, clip 1.0) on 4-view clips of the tracking training splits, batch 4, prompts of every type
drawn at random. Scored on the validation split with fixed point and box prompts: mean IoU of the selected
hypothesis (presence-gated) over (view, object) pairs where the object is visible, on the prompted view and on
the other views. Needs the splits ``make train-tracking`` renders (``--train`` / ``--val`` to point elsewhere).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from vision.data.datamodule import MultiViewDataModule  # noqa: E402
from vision.tracking.lightning import NEGATIVE_NAMES, TrackingModule  # noqa: E402
from vision.tracking.losses import mask_iou, tracking_losses  # noqa: E402
from vision.tracking.model import select_best_mask  # noqa: E402
from vision.tracking.sampling import sample_prompts  # noqa: E402

SYNTH = ROOT / "datasets" / "synthetic"
VARIANTS: dict[str, dict] = {
    "g2tam-sparse": dict(architecture="g2tam", click_maps=False, proximity_maps=False),
    "g2tam-clicks": dict(architecture="g2tam", click_maps=True, proximity_maps=False),
    "g2tam-full": dict(architecture="g2tam", click_maps=True, proximity_maps=True),
    "control-sparse": dict(architecture="memory_bank", click_maps=False),
    "control-clicks": dict(architecture="memory_bank", click_maps=True),
}
SCORED = ("point", "box")


@torch.no_grad()
def score(module: TrackingModule, data: MultiViewDataModule) -> dict[str, float]:
    """Mean IoU on the prompted view and on the other views, per prompt type (see the module docstring)."""
    module.eval()
    generator = torch.Generator().manual_seed(0)
    ious: dict[str, list[torch.Tensor]] = {}
    for batch in data.val_dataloader():
        for kind in SCORED:
            sampled = sample_prompts(batch, max_objects=4, types=(kind,), text_dim=module.model.text_dim,
                                     memory_dim=module.model.dim, generator=generator)
            out = module(batch["images"], sampled.prompts)
            masks, _ = select_best_mask(out["masks"], out["iou"])
            masks = torch.where(out["presence"][..., None, None] > 0, masks, torch.full_like(masks, -1.0))
            iou = mask_iou(masks, sampled.gt_masks.float())  # [B, S, N]
            views = torch.arange(iou.shape[1])[None, :, None]
            on_view = views == sampled.prompts.view[:, None, :]
            visible = sampled.gt_presence & sampled.prompts.valid[:, None]
            ious.setdefault(f"{kind}/prompted", []).append(iou[visible & on_view])
            ious.setdefault(f"{kind}/other", []).append(iou[visible & ~on_view])
    return {k: float(torch.cat(v).mean()) for k, v in ious.items()}


def run(name: str, geometry_ckpt: str, train: list[str], val: str, steps: int, every: int,
        lr: float = 2e-3) -> list[dict]:
    torch.manual_seed(0)
    module = TrackingModule(geometry_checkpoint=geometry_ckpt, **VARIANTS[name])
    for p in module.model.backbone.parameters():
        p.requires_grad_(False)
    params = [p for p in module.model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 30))
    data = MultiViewDataModule(train, val, views=4, batch_size=4, num_workers=0, image_size=64, augment=True)
    data.setup("fit")
    rows, step, start = [], 0, time.time()
    while step < steps:
        for batch in data.train_dataloader():
            module.train()
            module.model.backbone.eval()
            sampled = sample_prompts(batch, max_objects=4, types=module.prompt_types, embed_text=module.embed_text,
                                     negative_text=0.2, negative_names=NEGATIVE_NAMES,
                                     text_dim=module.model.text_dim, memory_dim=module.model.dim)
            out = module(batch["images"], sampled.prompts)
            loss = tracking_losses(out, sampled.gt_masks, sampled.gt_presence, sampled.prompts.valid)["loss"]
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            step += 1
            if step % every == 0 or step == steps:
                rows.append({"step": step, "seconds": time.time() - start, **score(module, data)})
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
    ap.add_argument("--val", default=str(SYNTH / "tracking_val.json"))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--every", type=int, default=150)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, from {list(VARIANTS)}")
    ap.add_argument("--out", type=Path, default=None, help="write the curves as JSON here")
    args = ap.parse_args()
    variants = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown:
        ap.error(f"unknown variant(s) {unknown}; choose from {list(VARIANTS)}")
    missing = [p for p in [args.geometry_ckpt, *args.train, args.val] if not Path(p).is_file()]
    if missing:
        ap.error(f"missing file(s) {missing}: run `make train-tracking` (or pass --train / --val / --geometry-ckpt)")
    torch.set_num_threads(args.threads)
    curves = {v: run(v, args.geometry_ckpt, args.train, args.val, args.steps, args.every) for v in variants}
    cols = [f"{k}/{where}" for k in SCORED for where in ("prompted", "other")]
    print(f"\nfrozen geometry backbone, {args.steps} steps, batch 4 x 4 views, 64 px; mean IoU on {args.val}")
    print(f"{'variant':16s}{'step':>6s}{'train s':>9s}" + "".join(f"{c:>16s}" for c in cols))
    for name, rows in curves.items():
        for row in rows:
            print(f"{name:16s}{row['step']:>6d}{row['seconds']:>9.0f}" + "".join(f"{row[c]:>16.3f}" for c in cols))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(curves, indent=1))


if __name__ == "__main__":
    main()
