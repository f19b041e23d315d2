"""Score a trained forensic detector checkpoint on labelled splits and print the benchmark table.

    python -m vision.forensics.split_report --checkpoint runs/forensics/tiny/checkpoints/last.ckpt \
        --split datasets/aigv/test.json --split datasets/aigv/test_crf28.json [--json metrics.json]

Every video goes through the full analysis (:meth:`ForensicsPredictor.analyze`: tools, detector, evidence
graph); the decision threshold is the detector's own, fixed on real validation videos at training time. One row
per generator and the macro average over generators (each generator scored against all real videos).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from vision.data.coco import read_json
from vision.errors import VisionError
from vision.evaluation.forensics import METRICS, evaluate_forensics
from vision.forensics.predictor import ForensicsPredictor, predict_split

__all__ = ["evaluate_checkpoint", "format_forensics", "main"]



def evaluate_checkpoint(checkpoint: str | Path, split_path: str | Path) -> dict[str, Any]:
    """Analyse every labelled video of ``split_path`` and return :func:`evaluate_forensics` at the detector's
    threshold."""
    predictor = ForensicsPredictor.from_checkpoint(checkpoint)
    results = predict_split(predictor, split_path)
    return evaluate_forensics(read_json(split_path), results, threshold=float(predictor.detector.threshold),
                              gt_file=str(split_path))


def format_forensics(metrics: dict[str, Any], title: str) -> str:
    """A fixed-width table: one row per generator plus ``macro`` and ``all``."""
    rows = sorted({key.split("/")[0] for key in metrics if "/" in key} - {"macro"}) + ["macro"]
    header = f"{title:14s}" + "".join(f"{c:>11s}" for c in METRICS)
    lines = [header, "-" * len(header)]
    for row in rows:
        lines.append(f"{row:14s}" + "".join(f"{metrics.get(f'{row}/{c}', float('nan')):11.3f}" for c in METRICS))
    lines.append(f"{'all':14s}" + "".join(f"{metrics.get(c, float('nan')):11.3f}" for c in METRICS))
    lines.append(f"({metrics['num_real']} real, {metrics['num_generated']} generated videos; "
                 f"threshold {metrics['threshold']:.3f} fixed on real validation videos)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--split", required=True, action="append", help="a labelled split (repeatable)")
    parser.add_argument("--json", default=None, help="also write the metrics here, keyed by split file name")
    args = parser.parse_args(argv)
    out: dict[str, dict[str, Any]] = {}
    for split in args.split:
        try:
            metrics = evaluate_checkpoint(args.checkpoint, split)
        except VisionError as exc:  # a missing or corrupt checkpoint or split: one line, like the other entry points
            print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
            raise SystemExit(2) from None
        out[Path(split).stem] = metrics
        print(format_forensics(metrics, Path(split).stem))
        print()
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1, sort_keys=True))
    return out


if __name__ == "__main__":
    main()
