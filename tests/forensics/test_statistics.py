"""Self-referential statistics: the footage null, p-values, the Bonferroni verdict, the sentences, calibration."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from vision.errors import InputError
from vision.forensics.model import ForensicDetector
from vision.forensics.statistics import (VERDICT_ALPHA, Statistic, alpha_for_false_alarms, combine,
                                         expected_calibration_error, explain, fit_null, p_values, predictive_null,
                                         reliability_curve, verdict_of, z_scores)

STATS = (Statistic("a.x", "greater", "the first thing"), Statistic("a.y", "two-sided", "the second thing"))


def test_one_footage_gives_no_null_and_footage_spread_widens_it():
    values = np.array([1.0, 1.2, 0.8, 5.0, 5.2, 4.8])
    assert predictive_null(values[:3], ["v1"] * 3) is None
    mean, sd, df, k = predictive_null(values, ["v1"] * 3 + ["v2"] * 3)
    assert (mean, df, k) == (3.0, 1.0, 2)
    # between-footage variance (8) x (1 + 1/2) + within (0.04) x (1 + 1/6)
    assert sd == pytest.approx(np.sqrt(8 * 1.5 + 0.04 * 7 / 6))
    clip_mean, clip_sd, clip_df, _ = predictive_null(values, [str(i) for i in range(6)])  # clips as replicates
    assert clip_df == 5 and clip_sd < sd


def test_p_values_follow_each_statistics_direction():
    x = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    groups = ["v1", "v1", "v2", "v2"]
    null = fit_null(x, ["a.x", "a.y"], groups, STATS)
    probe = np.array([[100.0, -98.5], [-100.0, 101.5], [np.nan, 1.5]])  # far (one dof: heavy tails), +-100 on 1.5
    z, used = z_scores(probe, ["a.x", "a.y"], null, STATS)
    p = p_values(z, used, null)
    assert p[0, 0] < 0.05 < p[1, 0]  # greater: only a high value is unusual
    assert p[0, 1] == pytest.approx(p[1, 1]) and p[0, 1] < 0.1  # two-sided: both ways, equally
    assert np.isnan(p[2, 0]) and p[2, 1] == pytest.approx(1.0)


def test_bonferroni_verdict_and_no_test_is_insufficient_evidence():
    p_comb, k = combine(np.array([[0.01, 0.5], [0.4, np.nan], [np.nan, np.nan]]))
    assert p_comb[0] == pytest.approx(0.02) and p_comb[1] == pytest.approx(0.4) and np.isnan(p_comb[2])
    assert k.tolist() == [2, 1, 0]
    assert [verdict_of(float(v)) for v in p_comb] == ["generated", "insufficient evidence", "insufficient evidence"]
    assert verdict_of(1.0) == "real"
    with pytest.raises(InputError, match="alpha"):
        verdict_of(0.5, alpha=0.6, real_p=0.5)


def test_explain_names_the_numbers_a_reader_can_check():
    x = np.array([[0.0, 0.0], [1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    null = fit_null(x, ["a.x", "a.y"], ["v1", "v1", "v2", "v2"], STATS)
    z, used = z_scores(np.array([[40.0, 1.5]]), ["a.x", "a.y"], null, STATS)
    rows = explain({"a.x": 40.0, "a.y": 1.5}, z[0], p_values(z, used, null)[0], used, null, top=1)
    assert len(rows) == 1 and rows[0]["feature"] == "a.x"
    sentence = rows[0]["sentence"]
    assert sentence.startswith("The first thing measures 40;") and "(2 videos)" in sentence
    assert f"{rows[0]['real_mean']:.3g} ± {rows[0]['real_sd']:.3g}" in sentence and "above" in sentence


def test_reliability_curve_and_ece():
    prob = np.array([0.1, 0.1, 0.9, 0.9])
    assert expected_calibration_error(prob, np.array([0, 0, 1, 1])) == pytest.approx(0.1)
    curve = reliability_curve(prob, np.array([1, 0, 1, 1]), bins=2)
    assert [b["count"] for b in curve] == [2, 2] and curve[0]["share_generated"] == 0.5
    with pytest.raises(InputError, match="one length"):
        reliability_curve(prob, np.array([0, 1]))


def test_detector_stores_the_footage_null_and_old_checkpoints_load_without_one():
    names = ["a.x", "periodicity.sharp_p2"]
    det = ForensicDetector(names, hidden=4, dropout=0.0)
    x = np.array([[0.0, 1.0], [1.0, 2.0], [2.0, 2.5], [3.0, 3.0], [9.0, 9.0]])
    det.set_footage_null(x, np.array([0, 0, 0, 0, 1]), ["v1", "v1", "v2", "v2", "v1"])
    null = det.footage_null()
    assert list(null.moments) == ["periodicity.sharp_p2"]  # a.x is no statistic
    assert null.moments["periodicity.sharp_p2"][2:] == (1.0, 2)
    state = {k: v for k, v in det.state_dict().items() if not k.startswith("null_")}
    fresh = ForensicDetector(names, hidden=4, dropout=0.0)
    fresh.load_state_dict(state)
    assert fresh.footage_null().moments == {} and torch.all(fresh.null_df == 0)


def test_alpha_for_false_alarms_is_the_loosest_level_within_the_target():
    rng = np.random.default_rng(0)
    for case in range(200):
        n = int(rng.integers(1, 60))
        p = rng.choice([rng.uniform(0, 1), 10.0 ** rng.uniform(-6, 0)], size=n)
        p = np.maximum(np.round(p, int(rng.integers(1, 4))), 1e-6)  # ties
        p[rng.random(n) < 0.1] = np.nan  # clips no test could be made on
        target = float(rng.choice([0.0, 0.05, 0.1, 0.3]))
        alpha = alpha_for_false_alarms(p, target)
        alarms = np.nansum(p <= alpha)
        assert 0 < alpha <= VERDICT_ALPHA and alarms <= np.floor(target * n + 1e-9), (case, alpha, alarms)
        looser = np.sort(p[np.isfinite(p) & (p > alpha)])  # the next p-value above alpha would exceed the target
        if looser.size and looser[0] <= VERDICT_ALPHA:
            assert np.nansum(p <= looser[0]) > np.floor(target * n + 1e-9), case


def test_alpha_for_false_alarms_examples_and_errors():
    assert alpha_for_false_alarms(np.array([0.5, 0.9, 1.0])) == VERDICT_ALPHA  # no real clip comes near
    assert alpha_for_false_alarms(np.array([1e-4, 0.5, 1.0])) == pytest.approx(1e-4 / np.sqrt(10))  # none allowed
    p = np.r_[1e-4, 1e-3, np.ones(38)]  # 40 clips, 2 alarms allowed at 5%
    assert alpha_for_false_alarms(p) == VERDICT_ALPHA
    p = np.r_[1e-4, 1e-3, 1e-2, np.ones(17)]  # 20 clips, 1 allowed: between the first and second
    assert alpha_for_false_alarms(p) == pytest.approx(np.sqrt(1e-4 * 1e-3))
    with pytest.raises(InputError, match="at least one"):
        alpha_for_false_alarms(np.array([]))
    with pytest.raises(InputError, match="target"):
        alpha_for_false_alarms(np.array([0.1]), target=1.0)
