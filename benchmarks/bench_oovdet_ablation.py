"""OOVDet ablation on the synthetic OOV split: same data, seed and step budget for every row.

Rows: no OOV class (closed vocabulary) | + synthesis | + synthesis + attribution mining | full (+ KDE prior).
Each row builds an :class:`~vision.detection.lightning.OOVDetModule` (its detector from a
:class:`~vision.detection.task.DetectionConfig`), trains it for ``--steps`` steps on the IV-only training split with a
Lightning ``Trainer``, then runs the module's ``predict`` loop on the test split (the split's vocabulary: iv + novel
names) and scores the results as ``tools/train.py test`` does (:meth:`OOVDetModule.score`: COCO AP and the open-set
figures; oov objects are the unknowns). Deltas are against row 1.

    .venv/bin/python benchmarks/bench_oovdet_ablation.py --steps 400 --out runs/oovdet_ablation
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import lightning as L  # noqa: E402
import torch  # noqa: E402

from vision.data.coco import load_split, read_json  # noqa: E402
from vision.data.datamodule import DetectionDataModule  # noqa: E402
from vision.detection.data import write_oov_synthetic  # noqa: E402
from vision.detection.lightning import OOVDetModule  # noqa: E402
from vision.detection.task import DetectionConfig  # noqa: E402
from vision.evaluation.detection import coco_ap  # noqa: E402

#: row -> (the detector's ``oov_class``, the module's mechanism switches)
ROWS = {
    "no OOV class": (False, dict(synthesis=False, mining=False, kde_prior=False)),
    "+ synthesis": (True, dict(synthesis=True, mining=False, kde_prior=False)),
    "+ synthesis + mining": (True, dict(synthesis=True, mining=True, kde_prior=False)),
    "full (+ KDE prior)": (True, dict(synthesis=True, mining=True, kde_prior=True)),
}
KEYS = ("IV_AP50", "novel_AP50", "U-Recall", "AP_U", "WI", "A-OSE", "H-mean", "agnostic_AP50")


def class_agnostic_ap50(gt: dict, results: list[dict]) -> float:
    """AP50 with every ground-truth object and every detection in one class (are objects found at all?)."""
    one = {"images": gt["images"], "categories": [{"id": 1, "name": "object"}],
           "annotations": [dict(a, category_id=1) for a in gt["annotations"]]}
    return coco_ap(one, [dict(r, category_id=1) for r in results])["AP50"]


def train_and_evaluate(name: str, row: tuple[bool, dict], paths: dict[str, Path], steps: int, seed: int,
                       batch_size: int, out: Path, config: DetectionConfig, lr: float) -> dict:
    """Train one configuration and return its metrics on the test split."""
    L.seed_everything(seed, verbose=False)
    oov_class, mechanisms = row
    train = load_split(paths["train"])
    module = OOVDetModule(config=config.replace(oov_class=oov_class), class_names=train.vocabulary(("iv",)),
                          category_ids=train.category_ids(("iv",)), lr=lr, **mechanisms)
    dm = DetectionDataModule(str(paths["train"]), str(paths["val"]), test_split=str(paths["test"]),
                             batch_size=batch_size, image_size=config.image_size, augment=False)
    trainer = L.Trainer(max_steps=steps, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=0,
                        gradient_clip_val=1.0, accelerator="cpu", deterministic=False)
    start = time.time()
    trainer.fit(module, dm)
    train_s = time.time() - start
    batches = trainer.predict(module, datamodule=dm)
    results = [r for _, rs in sorted((pair for batch in batches for pair in batch), key=lambda p: p[0]) for r in rs]
    metrics = module.score("predict", results)
    metrics["agnostic_AP50"] = class_agnostic_ap50(read_json(paths["test"]), results)
    slug = "".join(ch if ch.isalnum() else "_" for ch in name).strip("_")
    (out / f"results_{slug}.json").write_text(json.dumps(results))
    metrics["train_s"] = train_s
    return metrics


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="datasets/synthetic_oov", help="folder of the rendered OOV splits")
    parser.add_argument("--out", default="runs/oovdet_ablation")
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--train-scenes", type=int, default=60)
    parser.add_argument("--test-scenes", type=int, default=20)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--temperature", type=float, default=0.05)
    parser.add_argument("--rows", default="all", help="comma-separated row numbers (1-4) or 'all'")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    data = Path(args.data)
    paths = {k: data / f"oov_{k}.json" for k in ("train", "val", "test")}
    if not all(p.is_file() for p in paths.values()):
        paths = write_oov_synthetic(data, train_scenes=args.train_scenes, val_scenes=4, test_scenes=args.test_scenes,
                                    views=4, size=args.size, seed=args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = list(ROWS) if args.rows == "all" else [list(ROWS)[int(i) - 1] for i in args.rows.split(",")]
    config = DetectionConfig(image_size=args.size, temperature=args.temperature)
    table = {}
    for name in names:
        table[name] = train_and_evaluate(name, ROWS[name], paths, args.steps, args.seed, args.batch_size, out, config,
                                         args.lr)
        print(name, {k: round(float(table[name][k]), 4) for k in KEYS}, flush=True)
    (out / "ablation.json").write_text(json.dumps(table, indent=1, sort_keys=True))
    base = table.get("no OOV class")
    print(f"\nOOVDet ablation: {args.steps} steps x batch {args.batch_size}, {args.size}px, seed {args.seed}; "
          "AP / recall in points (x100), WI x100, A-OSE count; deltas vs 'no OOV class'; "
          "agn_AP50 = class-agnostic AP50 (all objects, all detections)")
    print(f"{'row':26s}" + "".join(f"{k.replace('agnostic_', 'agn_'):>12s}" for k in KEYS) + f"{'train s':>9s}")
    for name, m in table.items():
        cells = []
        for k in KEYS:
            v = float(m[k])
            scaled = v if k in ("WI", "A-OSE") or v < 0 else 100 * v
            if base is not None and name != "no OOV class" and float(base[k]) >= 0 and v >= 0:
                b = float(base[k]) if k in ("WI", "A-OSE") else 100 * float(base[k])
                cells.append(f"{scaled:6.1f}({scaled - b:+.1f})")
            else:
                cells.append(f"{scaled:6.1f}")
        print(f"{name:26s}" + "".join(f"{c:>12s}" for c in cells) + f"{m['train_s']:9.0f}")


if __name__ == "__main__":
    main()
