"""The headline verdicts a user reads: ``ForensicsPredictor.analyze`` on every clip of a split, counted by the
clip's label, beside what the detector alone at its threshold would say.

``python benchmarks/forensics_verdicts.py --ckpt runs/forensics/tiny/checkpoints/last.ckpt --split
datasets/aigv_footage/test.json [--footage NAME ...] [--by FIELD] [--verdict-rule RULE] [--threads 1]``

``--footage``: only the clips whose pixels come from these camera videos (:func:`vision.forensics.protocol.
footages_of`; e.g. the footage a checkpoint never saw); the CGI clips, which draw on no camera video, stay.

Rows: label (``real`` / ``generated`` / ``cgi``) x headline verdict, with who decided it (``decided_by``: the tests
once the checkpoint's nulls span three camera videos, else the detector and the evidence graph), as counts and as
shares of the label; then the detector alone (calibrated probability against its threshold). ``--by FIELD``
(e.g. ``container``, ``generator``): the rows split further by that field of the clips' entries.
``--verdict-rule``: the headline under another :data:`vision.forensics.task.VERDICT_RULES` rule than the
checkpoint's (an ablation; the checkpoint is not changed).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
from pathlib import Path

import torch

from vision.data.coco import read_json
from vision.forensics.predictor import ForensicsPredictor
from vision.forensics.protocol import footages_of
from vision.forensics.task import VERDICT_RULES

VERDICTS = ("generated", "insufficient evidence", "real")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ckpt", required=True, type=Path)
    parser.add_argument("--split", required=True, type=Path)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--footage", nargs="+", default=None, help="only clips of these camera videos (and CGI)")
    parser.add_argument("--by", default=None, metavar="FIELD", help="split the rows by this field of the clips")
    parser.add_argument("--verdict-rule", default=None, choices=VERDICT_RULES,
                        help="the headline under this rule instead of the checkpoint's")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    predictor = ForensicsPredictor.from_checkpoint(args.ckpt)
    if args.verdict_rule is not None:
        predictor.config = dataclasses.replace(predictor.config, verdict_rule=args.verdict_rule)
    null = predictor.detector.score_null_moments()
    print(f"checkpoint {args.ckpt}: verdict rule {predictor.config.verdict_rule}, level "
          f"{predictor.config.verdict_alpha:g}; detector score null over "
          f"{null[3] if null else 0} videos; statistics' null over "
          f"{max(int(v) for v in predictor.detector.null_footage.tolist())} videos")
    headline: collections.Counter = collections.Counter()
    alone: collections.Counter = collections.Counter()
    deciders: collections.Counter = collections.Counter()
    labels: collections.Counter = collections.Counter()
    for video in read_json(args.split)["videos"]:
        if args.footage and video["label"] != "cgi" and not footages_of(video) & set(args.footage):
            continue
        verdict = predictor.analyze(args.split.parent / video["file_name"])["verdict"]
        label = video["label"] if args.by is None else f"{video['label']}/{video.get(args.by)}"
        labels[label] += 1
        headline[label, verdict["verdict"]] += 1
        deciders[verdict["decided_by"]] += 1
        p = verdict["probability"]
        alone[label, "generated" if p is not None and p >= verdict["threshold"] else "real"] += 1
    print(f"decided by: {dict(deciders)}")
    width = max([12] + [len(label) + 2 for label in labels])
    print(f"{'label':<{width}}{'clips':>7}" + "".join(f"{v:>24}" for v in VERDICTS) + f"{'detector alone: gen':>22}")
    for label in sorted(labels):
        n = labels[label]
        cells = "".join(f"{headline[label, v]:>12} ({headline[label, v] / n:>6.1%})   " for v in VERDICTS)
        print(f"{label:<{width}}{n:>7}{cells}{alone[label, 'generated']:>10} ({alone[label, 'generated'] / n:>6.1%})")


if __name__ == "__main__":
    main()
