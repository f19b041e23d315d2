"""The one-line verdicts of a method against its control (vision/evaluation/claims.py)."""

from __future__ import annotations

import math

from vision.evaluation.claims import TRACKING_MARGINS, margin_verdicts


def test_a_lead_above_the_margin_is_met_and_equal_or_below_is_not():
    ours = {"val_unordered": 0.333, "val_long_occlusion": 0.30, "val_video": 0.40}
    control = {"val_unordered": 0.229, "val_long_occlusion": 0.20, "val_video": 0.41}
    verdicts = {v.split: v for v in margin_verdicts(ours, control, TRACKING_MARGINS)}
    assert verdicts["val_unordered"].met and math.isclose(verdicts["val_unordered"].lead, 0.104)
    assert not verdicts["val_long_occlusion"].met  # +0.10 is not above +0.10
    assert not verdicts["val_video"].met  # behind the control
    assert set(verdicts) == set(ours)


def test_the_line_says_plainly_when_the_target_is_missed():
    (verdict,) = margin_verdicts({"val_unordered": 0.239}, {"val_unordered": 0.236}, {"val_unordered": 0.10})
    line = verdict.line("G2TAM", "the control", "point J&F")
    assert line == ("G2TAM does NOT beat the control by the target on val_unordered: +0.003 point J&F "
                    "(target > +0.100)")
    (verdict,) = margin_verdicts({"val_unordered": 0.362}, {"val_unordered": 0.236}, {"val_unordered": 0.10})
    assert verdict.line("G2TAM", "the control", "point J&F") == (
        "G2TAM beats the control by +0.126 point J&F on val_unordered (target > +0.100)")


def test_a_split_neither_table_has_is_left_out():
    assert margin_verdicts({"a": 0.5}, {"a": 0.1}, {"a": 0.1, "b": 0.0})[0].split == "a"
    assert len(margin_verdicts({"a": 0.5}, {"a": 0.1}, {"a": 0.1, "b": 0.0})) == 1


def test_a_missing_or_nan_figure_is_not_met():
    verdicts = margin_verdicts({"val_video": math.nan}, {"val_unordered": 0.2}, {"val_video": 0.0,
                                                                                 "val_unordered": 0.0})
    assert [v.met for v in verdicts] == [False, False]
    assert "n/a" in verdicts[0].line("G2TAM", "the control", "point J&F")
