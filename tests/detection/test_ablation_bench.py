"""benchmarks/bench_oovdet_ablation.py: its recipe is the training config's, and its table's mean / spread."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("bench_oovdet_ablation", _ROOT / "benchmarks" / "bench_oovdet_ablation.py")
bench = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(bench)


def test_recipe_is_the_training_config():
    import yaml

    raw = yaml.safe_load((_ROOT / "configs/detection/tiny.yaml").read_text())
    recipe = bench.read_recipe(_ROOT / "configs/detection/tiny.yaml")
    assert recipe["steps"] == raw["trainer"]["max_steps"]
    assert recipe["config"].to_dict() == bench.DetectionConfig.from_value(raw["model"]["init_args"]["config"]).to_dict()
    assert recipe["module"]["lr"] == raw["model"]["init_args"]["lr"] and "config" not in recipe["module"]
    assert recipe["data"]["train_split"] == raw["data"]["init_args"]["train_split"]
    assert "num_workers" not in recipe["data"]


def test_summary_mean_and_spread_over_seeds():
    runs = {"no OOV class": [dict.fromkeys(bench.KEYS, 0.2) | {"WI": 4.0, "A-OSE": 100, "train_s": 10},
                             dict.fromkeys(bench.KEYS, 0.4) | {"WI": 6.0, "A-OSE": 50, "U-Recall": -1.0,
                                                               "train_s": 20}]}
    table = bench.summarise(runs)["no OOV class"]
    assert table["IV_AP50"] == pytest.approx((30.0, 20.0))  # x100
    assert table["WI"] == pytest.approx((5.0, 2.0)) and table["A-OSE"] == pytest.approx((75.0, 50.0))
    assert table["U-Recall"] == pytest.approx((20.0, 0.0))  # the undefined run is left out
    assert table["train_s"] == pytest.approx((15.0, 10.0))
