"""Ablations of the tiny geometry backbone's recipe: the plain patchify convolution against the convolutional stem
(``patch_embed="convstem"``), the plain convolution with the training augmentation (per-view random crops
and photometric noise, one flip per clip) switched on, and the plain convolution with the cross-view patch
correspondence loss (``+match``, weight 1: :mod:`vision.geometry.matching`; its ``match AUC@30`` / ``match RRA@15``
columns score the cameras registered from the learned matches); same data, steps, seed and optimiser, scored on
the unordered validation split every ``--every`` steps (learning curves).

    python benchmarks/bench_geometry_ablation.py --out runs/bench_geometry_ablation --scenes 512 --steps 400 \
        [--variants conv,convstem,conv+augment]

Renders ``--scenes`` unordered training scenes and 16 validation scenes (64 px, 8 views) into ``--out`` if absent;
trains each variant with GeometryModule's recipe (AdamW, decay groups, warm-up + cosine, clip 1.0) on 4-view clips, batch 4 (augmented
only in ``+augment`` variants); prints one row per (variant, step) with the metrics of ``tools/eval_geometry.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from benchmarks.curves import format_curves  # noqa: E402
from vision.data.datamodule import MultiViewDataModule  # noqa: E402
from vision.geometry.model import create_backbone  # noqa: E402
from vision.geometry.lightning import GeometryModule
from vision.geometry.losses import geometry_losses  # noqa: E402
from vision.geometry.evaluation import evaluate_geometry  # noqa: E402
from vision.training.optim import warmup_cosine  # noqa: E402

VARIANTS = ("conv", "convstem", "conv+augment", "conv+match")
COLUMNS = ("abs_rel", "delta_1.25", "AUC@30", "RRA@15", "RTA@15", "chamfer", "match AUC@30", "match RRA@15")


def render(out: Path, scenes: int) -> tuple[Path, Path]:
    from vision.data.synthetic import write_split

    paths = []
    for name, count, seed in (("train", scenes, 0), ("val", 16, 1)):
        path = out / f"{name}.json"
        if not path.exists():
            write_split(out, name, scenes=count, views=8, size=64, mode="unordered", seed=seed, threads=1)
        paths.append(path)
    return paths[0], paths[1]


def run(variant: str, train: Path, val: Path, steps: int, every: int, lr: float = 1e-3) -> list[dict]:
    """Train one variant; return ``[{"step", "seconds", metrics...}]`` every ``every`` steps."""
    torch.manual_seed(0)
    embed, _, augment = variant.partition("+")
    match_weight = 1.0 if augment == "match" else 0.0
    module = GeometryModule(size="tiny", image_size=64, lr=lr, warmup_steps=50, match_weight=match_weight)
    module.model = create_backbone("tiny", img_size=64, patch_embed=embed)
    data = MultiViewDataModule(str(train), str(val), views=4, batch_size=4, image_size=64, augment=augment == "augment")
    data.setup("fit")
    opt = torch.optim.AdamW(module.param_groups(), lr=lr)
    sched = warmup_cosine(opt, lr, 50, steps)["lr_scheduler"]["scheduler"]
    rows, step, start = [], 0, time.time()
    while step < steps:
        for batch in data.train_dataloader():
            module.model.train()
            loss = geometry_losses(module.model, batch, match=module.match, match_weight=match_weight)[0]["loss"]
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            if step % every == 0 or step == steps:
                results = evaluate_geometry(module.model, val, views=4, image_size=64, match=module.match)
                metrics = dict(results["model"])
                matched = results.get("match_pose", {})
                metrics.update({"match AUC@30": matched.get("AUC@30", float("nan")),
                                "match RRA@15": matched.get("RRA@15", float("nan"))})
                rows.append({"step": step, "seconds": time.time() - start, **{k: metrics[k] for k in COLUMNS}})
                print(f"  {variant:17s} step {step:5d}  " + "  ".join(f"{k} {rows[-1][k]:.3f}" for k in COLUMNS),
                      flush=True)
            if step >= steps:
                break
    return rows


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
    curves = {variant: run(variant, train, val, args.steps, args.every) for variant in variants}
    print(f"\n{args.scenes} training scenes, {args.steps} steps, batch 4 x 4 views, 64 px")
    print(format_curves(curves, COLUMNS))
    (args.out / f"results_{'_'.join(variants).replace('+', '-')}.json").write_text(json.dumps(curves, indent=1))


if __name__ == "__main__":
    main()
