"""The benchmark table that `make train` prints for the forensic detector."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from vision.forensics.split_report import main


def test_split_report_scores_every_generator(trained_checkpoint: Path, tiny_split: dict[str, Path],
                                             tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "metrics.json"
    metrics = main(["--checkpoint", str(trained_checkpoint), "--split", str(tiny_split["val"]), "--json", str(out)])
    printed = capsys.readouterr().out
    for row in ("simA", "simB", "macro", "all"):
        assert any(line.startswith(row) for line in printed.splitlines()), row
    saved = json.loads(out.read_text())
    assert set(saved) == {"val"} == set(metrics)
    val = saved["val"]
    assert val["threshold_source"] == "given"
    assert val["num_real"] == 4 and val["num_generated"] == 4
    for key in ("AUC", "macro/AUC", "simA/ACC", "simB/TPR@5%FPR"):
        assert 0.0 <= val[key] <= 1.0 and not math.isnan(val[key]), key
    # the macro AUC is the mean of the per-generator AUCs
    assert val["macro/AUC"] == pytest.approx((val["simA/AUC"] + val["simB/AUC"]) / 2)
