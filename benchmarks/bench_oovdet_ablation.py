"""OOVDet ablation: the detector ``make train-detection`` trains, with the OOV mechanisms switched row by row.

Rows (:data:`vision.detection.ablation.ROWS`): no OOV class (closed vocabulary) | + synthesis | + synthesis +
attribution mining | full (+ KDE prior). Every row is built from ``--config`` (default
``configs/detection/tiny.yaml``) by the training CLI (:class:`vision.training.cli.VisionCLI`, the parser of
``tools/train.py``): its module, data module and trainer, with command-line overrides of only ``oov_class``, the
three mechanism switches, the seed, ``max_steps`` (``--steps``), the run folder (``OUT/<row>_seed<N>``) and
validation (off: ``limit_val_batches 0``). It trains with that trainer, runs the module's ``predict`` loop on the
test split (its vocabulary: iv + novel names) and scores the results as ``tools/train.py test`` does
(:meth:`OOVDetModule.score`; oov objects are the unknowns), plus the class-agnostic AP50
(:func:`vision.evaluation.detection.class_agnostic_ap`). Each row runs once per seed; the table prints the mean
(and the spread, max - min, in brackets) over seeds, and the deltas of the means against row 1.

    .venv/bin/python benchmarks/bench_oovdet_ablation.py --rows 1,4 --seeds 0,1,2 --out runs/oovdet_ablation
    .venv/bin/python benchmarks/bench_oovdet_ablation.py --steps 300 --seeds 0      # a quick single-seed look
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402

from vision.data.coco import read_json  # noqa: E402
from vision.detection.ablation import KEYS, ROWS, shown, summarise  # noqa: E402
from vision.evaluation.detection import class_agnostic_ap  # noqa: E402
from vision.training.cli import VisionCLI  # noqa: E402


def row_cli(config: str, name: str, seed: int, steps: int | None, run_dir: Path) -> VisionCLI:
    """The training CLI of ``config`` for one row and seed, its classes built, nothing run."""
    oov_class, mechanisms = ROWS[name]
    args = ["--config", config, "--seed_everything", str(seed), "--run_dir", str(run_dir),
            "--trainer.limit_val_batches", "0", "--trainer.num_sanity_val_steps", "0",
            "--trainer.enable_progress_bar", "false", "--trainer.enable_model_summary", "false",
            "--model.init_args.config.oov_class", str(oov_class).lower(),
            *(arg for key, on in mechanisms.items() for arg in (f"--model.init_args.{key}", str(on).lower()))]
    if steps is not None:
        args += ["--trainer.max_steps", str(steps)]
    with warnings.catch_warnings():  # the CLI parses ``args``, not this script's own command line
        warnings.filterwarnings("ignore", message="LightningCLI's args parameter")
        return VisionCLI(args=args, run=False)


def check_splits(cli: VisionCLI) -> None:
    """Stop with one line when the training or test split of the config is missing."""
    data = cli.datamodule
    missing = [p for p in (data.train_split, data.split_path("predict")) if not Path(p).is_file()]
    if missing:
        raise SystemExit(f"error: {missing[0]} does not exist: render the splits first "
                         "(python -m vision.synthetic.detection --out datasets/synthetic)")


def train_and_evaluate(cli: VisionCLI, out: Path, slug: str, seed: int) -> dict:
    """Train one row's module with its trainer and return its metrics on the test split."""
    trainer, module, data = cli.trainer, cli.model, cli.datamodule
    start = time.time()
    trainer.fit(module, datamodule=data)
    train_s = time.time() - start
    batches = trainer.predict(module, datamodule=data)
    results = [r for _, rs in sorted((pair for batch in batches for pair in batch), key=lambda p: p[0]) for r in rs]
    metrics = module.score("predict", results)
    metrics["agnostic_AP50"] = class_agnostic_ap(read_json(data.split_path("predict")), results)["AP50"]
    (out / f"results_{slug}_seed{seed}.json").write_text(json.dumps(results))
    metrics["train_s"] = train_s
    return {k: (float(v) if isinstance(v, (int, float)) else v) for k, v in metrics.items()}


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
    seeds = [int(s) for s in args.seeds.split(",")]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    names = list(ROWS) if args.rows == "all" else [list(ROWS)[int(i) - 1] for i in args.rows.split(",")]
    runs: dict[str, list[dict]] = {}
    for name in names:
        for seed in seeds:
            slug = "".join(ch if ch.isalnum() else "_" for ch in name).strip("_")
            cli = row_cli(args.config, name, seed, args.steps, out / f"{slug}_seed{seed}")
            check_splits(cli)
            steps, batch_size = cli.trainer.max_steps, cli.datamodule.batch_size
            image_size = cli.model.config.image_size
            metrics = train_and_evaluate(cli, out, slug, seed)
            runs.setdefault(name, []).append(metrics)
            print(name, f"seed {seed}", {k: round(shown(k, metrics[k]), 1) for k in KEYS}, flush=True)
            (out / "ablation.json").write_text(json.dumps(runs, indent=1, sort_keys=True))
    table = summarise(runs)
    base = table.get("no OOV class")
    print(f"\nOOVDet ablation ({args.config}): {steps} steps x batch {batch_size}, "
          f"{image_size}px, seeds {seeds}: mean (max - min) over seeds; AP / recall x100, WI x100, "
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
