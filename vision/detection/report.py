"""Score a trained detector checkpoint on a split with the open-set metrics and print them.

    python -m vision.detection.report --checkpoint runs/detection/tiny/checkpoints/last.ckpt \
        --split datasets/synthetic/oov_test.json [--results runs/detection/tiny/test_results.json]

The vocabulary given to the detector is the split's ``info.vocabulary`` (iv + novel names for the synthetic test
split); every other annotated category is an unknown object. Novel categories are the split's ``split: novel``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from vision.data.coco import load_split
from vision.detection.predictor import UNKNOWN_CATEGORY_ID, DetectorPredictor
from vision.errors import DataError, VisionError
from vision.evaluation.openset import evaluate_openset

__all__ = ["evaluate_checkpoint", "format_openset", "main"]

_ORDER = ("IV_AP", "IV_AP50", "novel_AP50", "U-Recall", "AP_U", "WI", "A-OSE", "H-mean")


def evaluate_checkpoint(checkpoint: str | Path, split_path: str | Path, results_path: str | Path | None = None,
                        **predictor_kwargs: Any) -> dict[str, Any]:
    """Detect on every image of ``split_path`` with the split's vocabulary and return :func:`evaluate_openset`."""
    split = load_split(split_path)
    vocabulary = split.given_vocabulary()
    by_name = {c["name"]: int(cid) for cid, c in split.categories.items()}
    missing = [n for n in vocabulary if n not in by_name]
    if missing:
        raise DataError("info.vocabulary names a category the split does not define", file=split.file,
                        field="info.vocabulary", value=missing)
    ids = [by_name[n] for n in vocabulary]
    predictor = DetectorPredictor.from_checkpoint(checkpoint, vocabulary=vocabulary, category_ids=ids,
                                                  **predictor_kwargs)
    results = predictor.predict_split(split_path, results_path)
    return evaluate_openset(split.dataset, results, ids, predictor.unknown_category_id,
                            novel_category_ids=split.category_ids(("novel",)))


def format_openset(metrics: dict[str, Any]) -> str:
    """A two-column table; AP / recall figures x100, WI x100 (already), A-OSE as a count."""
    lines = [f"{'metric':12s}{'value':>10s}"]
    for key in _ORDER:
        value = float(metrics[key])
        shown = value if key in ("WI", "A-OSE") or value < 0 else 100 * value
        lines.append(f"{key:12s}{shown:10.1f}")
    lines.append(f"(H-mean: {metrics['hmean_definition']}; -1 = undefined)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--split", required=True)
    parser.add_argument("--results", default=None, help="also write the COCO results here")
    parser.add_argument("--json", default=None, help="also write the metrics here")
    parser.add_argument("--unknown-category-id", type=int, default=UNKNOWN_CATEGORY_ID)
    args = parser.parse_args(argv)
    try:
        metrics = evaluate_checkpoint(args.checkpoint, args.split, args.results,
                                      unknown_category_id=args.unknown_category_id)
    except VisionError as exc:  # a missing or corrupt checkpoint or split: one line, like the other entry points
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        raise SystemExit(2) from None
    print(format_openset(metrics))
    if args.json:
        Path(args.json).write_text(json.dumps(metrics, indent=1, sort_keys=True))
    return metrics


if __name__ == "__main__":
    main()
