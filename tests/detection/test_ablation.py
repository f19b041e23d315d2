"""vision.detection.ablation: its rows are constructible module settings, and its table's mean / spread."""

from __future__ import annotations

import pytest

from vision.detection import ablation


def test_rows_go_from_the_closed_vocabulary_to_the_full_detector():
    rows = list(ablation.ROWS.values())
    assert rows[0] == (False, dict(synthesis=False, mining=False, kde_prior=False))
    assert rows[-1] == (True, dict(synthesis=True, mining=True, kde_prior=True))
    # a detector without the OOV class takes none of the mechanisms (OOVDetModule refuses the mix)
    assert all(oov_class or not any(switches.values()) for oov_class, switches in rows)


def test_summary_mean_and_spread_over_seeds():
    runs = {"no OOV class": [dict.fromkeys(ablation.KEYS, 0.2) | {"WI": 4.0, "A-OSE": 100, "train_s": 10},
                             dict.fromkeys(ablation.KEYS, 0.4) | {"WI": 6.0, "A-OSE": 50, "U-Recall": -1.0,
                                                                  "train_s": 20}]}
    table = ablation.summarise(runs)["no OOV class"]
    assert table["IV_AP50"] == pytest.approx((30.0, 20.0))  # x100
    assert table["WI"] == pytest.approx((5.0, 2.0)) and table["A-OSE"] == pytest.approx((75.0, 50.0))
    assert table["U-Recall"] == pytest.approx((20.0, 0.0))  # the undefined run is left out
    assert table["train_s"] == pytest.approx((15.0, 10.0))
    undefined = ablation.summarise({"row": [dict.fromkeys((*ablation.KEYS, "train_s"), -1.0)]})["row"]
    assert undefined["AP_U"] == (-1.0, 0.0)
