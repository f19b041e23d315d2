"""OOVDet ablation: the detector ``make train-detection`` trains, with the OOV mechanisms switched row by row.

Rows: no OOV class (closed vocabulary) | + synthesis | + synthesis + attribution mining | full (+ KDE prior).
Every row takes the model and training settings of ``--config`` (default ``configs/detection/tiny.yaml``: its
``DetectionConfig``, its module arguments, its splits, batch size, augmentation and ``max_steps``), changes only
``oov_class`` and the three mechanism switches, trains with a Lightning ``Trainer`` (no validation), runs the
module's ``predict`` loop on the test split (its vocabulary: iv + novel names) and scores the results as
``tools/train.py test`` does (:meth:`OOVDetModule.score`; oov objects are the unknowns). Each row runs once per
seed; the table prints the mean (and the spread, max - min, in brackets) over seeds, and the deltas of the means
against row 1.

    .venv/bin/python benchmarks/bench_oovdet_ablation.py --rows 1,4 --seeds 0,1,2 --out runs/oovdet_ablation
    .venv/bin/python benchmarks/bench_oovdet_ablation.py --steps 300 --seeds 0      # a quick single-seed look
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


def read_recipe(path: str | Path) -> dict:
    """The ablation's recipe from a detection training config: ``config`` (:class:`DetectionConfig`), ``module``
    (the other :class:`OOVDetModule` arguments), ``data`` (the :class:`DetectionDataModule` arguments) and
    ``steps`` / ``clip`` (the trainer's ``max_steps`` / ``gradient_clip_val``)."""
    import yaml

    with open(path) as handle:
        raw = yaml.safe_load(handle)
    module = dict(raw["model"]["init_args"])
    config = DetectionConfig.from_value(module.pop("config", None), file=path)
    data = {k: v for k, v in raw["data"]["init_args"].items() if k != "num_workers"}
    trainer = raw.get("trainer", {})
    return {"config": config, "module": module, "data": data, "steps": int(trainer.get("max_steps", 1200)),
            "clip": trainer.get("gradient_clip_val", 1.0)}


def train_and_evaluate(name: str, row: tuple[bool, dict], recipe: dict, steps: int, seed: int, out: Path) -> dict:
    """Train one configuration with one seed and return its metrics on the test split."""
    L.seed_everything(seed, verbose=False)
    oov_class, mechanisms = row
    data = recipe["data"]
    train = load_split(data["train_split"])
    settings = {**recipe["module"], **mechanisms}
    settings["class_names"] = settings.get("class_names") or train.vocabulary(("iv",))
    settings["category_ids"] = settings.get("category_ids") or train.category_ids(("iv",))
    config = recipe["config"].replace(oov_class=oov_class)
    module = OOVDetModule(config=config, **settings)
    dm = DetectionDataModule(**{**data, "image_size": config.image_size})
    trainer = L.Trainer(max_steps=steps, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False, num_sanity_val_steps=0, limit_val_batches=0,
                        gradient_clip_val=recipe["clip"], accelerator="cpu", deterministic=False)
    start = time.time()
    trainer.fit(module, dm)
    train_s = time.time() - start
    batches = trainer.predict(module, datamodule=dm)
    results = [r for _, rs in sorted((pair for batch in batches for pair in batch), key=lambda p: p[0]) for r in rs]
    metrics = module.score("predict", results)
    metrics["agnostic_AP50"] = class_agnostic_ap50(read_json(data["test_split"]), results)
    slug = "".join(ch if ch.isalnum() else "_" for ch in name).strip("_")
    (out / f"results_{slug}_seed{seed}.json").write_text(json.dumps(results))
    metrics["train_s"] = train_s
    return {k: (float(v) if isinstance(v, (int, float)) else v) for k, v in metrics.items()}


def shown(key: str, value: float) -> float:
    """A figure as the table shows it: AP / recall x100; WI (already x100), A-OSE (a count), seconds as they are."""
    return value if key in ("WI", "A-OSE", "train_s") or value < 0 else 100 * value


def summarise(runs: dict[str, list[dict]]) -> dict[str, dict[str, tuple[float, float]]]:
    """Per row and figure: (mean, max - min) over seeds, on the table's scale; undefined (-1) runs are left out."""
    table = {}
    for name, per_seed in runs.items():
        table[name] = {}
        for key in (*KEYS, "train_s"):
            values = [shown(key, float(m[key])) for m in per_seed if float(m[key]) >= 0]
            table[name][key] = ((sum(values) / len(values), max(values) - min(values)) if values
                                else (-1.0, 0.0))
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="configs/detection/tiny.yaml", help="the detection training config")
    parser.add_argument("--out", default="runs/oovdet_ablation")
    parser.add_argument("--steps", type=int, default=None, help="default: the config's trainer.max_steps")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds; each row runs once per seed")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--rows", default="all", help="comma-separated row numbers (1-4) or 'all'")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    recipe = read_recipe(args.config)
    missing = [recipe["data"][k] for k in ("train_split", "test_split") if not Path(recipe["data"][k]).is_file()]
    if missing:
        raise SystemExit(f"error: {missing[0]} does not exist: render the splits first "
                         "(python -m vision.detection.data --out datasets/synthetic)")
    steps = args.steps or recipe["steps"]
    seeds = [int(s) for s in args.seeds.split(",")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = list(ROWS) if args.rows == "all" else [list(ROWS)[int(i) - 1] for i in args.rows.split(",")]
    runs: dict[str, list[dict]] = {}
    for name in names:
        for seed in seeds:
            metrics = train_and_evaluate(name, ROWS[name], recipe, steps, seed, out)
            runs.setdefault(name, []).append(metrics)
            print(name, f"seed {seed}", {k: round(shown(k, metrics[k]), 1) for k in KEYS}, flush=True)
            (out / "ablation.json").write_text(json.dumps(runs, indent=1, sort_keys=True))
    table = summarise(runs)
    base = table.get("no OOV class")
    print(f"\nOOVDet ablation ({args.config}): {steps} steps x batch {recipe['data'].get('batch_size')}, "
          f"{recipe['config'].image_size}px, seeds {seeds}: mean (max - min) over seeds; AP / recall x100, WI x100, "
          "A-OSE a count; deltas of the means vs 'no OOV class'; agn_AP50 = class-agnostic AP50")
    print(f"{'row':24s}" + "".join(f"{k.replace('agnostic_', 'agn_'):>19s}" for k in KEYS) + f"{'train s':>9s}")
    for name, row in table.items():
        cells = []
        for key in KEYS:
            mean, spread = row[key]
            cell = f"{mean:.1f}({spread:.1f})"
            if base is not None and name != "no OOV class" and mean >= 0 and base[key][0] >= 0:
                cell += f"{mean - base[key][0]:+.1f}"
            cells.append(cell)
        print(f"{name:24s}" + "".join(f"{c:>19s}" for c in cells) + f"{row['train_s'][0]:9.0f}")


if __name__ == "__main__":
    main()
