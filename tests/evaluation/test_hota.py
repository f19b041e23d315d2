"""HOTA, its sub-metrics and CLEAR's id switches equal PyPI trackeval's (``trackeval.metrics.HOTA`` / ``CLEAR``) on
the same per-sequence data, sequence by sequence, combined over sequences and averaged over classes."""

from __future__ import annotations

import numpy as np
from trackeval.metrics import CLEAR, HOTA

from vision.evaluation import hota

FIELDS = ("HOTA", "DetA", "AssA", "LocA", "DetRe", "DetPr", "AssRe", "AssPr", "HOTA_TP", "HOTA_FN", "HOTA_FP")


def random_sequence(rng: np.random.Generator, style: str) -> dict:
    """One class of one video as trackeval's data dict, ids drawn with entries, exits and returns.

    ``style``: ``"normal"``, ``"no_tracker"`` (no predictions at all), ``"no_gt"`` (a phrase with no ground truth on
    this video), ``"ties"`` (similarities on a coarse grid, so that matchings tie)."""
    steps = int(rng.integers(1, 9))
    num_gt = 0 if style == "no_gt" else int(rng.integers(0, 5))
    num_tr = 0 if style == "no_tracker" else int(rng.integers(0, 6))

    def presence(n: int) -> np.ndarray:  # [n, steps]: enter late, leave, leave and come back, or always there
        out = np.zeros((n, steps), bool)
        for i in range(n):
            kind = rng.integers(0, 4)
            a, b = sorted(rng.integers(0, steps + 1, 2))
            if kind == 0:
                out[i] = True
            elif kind == 1:
                out[i, a:] = True
            elif kind == 2:
                out[i, :b] = True
            else:
                out[i] = True
                out[i, a:b] = False
        out[:, rng.random(steps) < 0.15] = False  # empty frames
        return out

    gt_present, tr_present = presence(num_gt), presence(num_tr)
    gt_ids, tr_ids, sims = [], [], []
    for t in range(steps):
        g = rng.permutation(np.flatnonzero(gt_present[:, t]))  # any order within a timestep
        p = rng.permutation(np.flatnonzero(tr_present[:, t]))
        if style == "ties":
            s = rng.choice([0.0, 0.25, 0.5, 0.5, 0.75, 1.0], size=(len(g), len(p)))
        else:
            s = np.where(rng.random((len(g), len(p))) < 0.5, rng.random((len(g), len(p))), 0.0)
        gt_ids.append(g)
        tr_ids.append(p)
        sims.append(s)
    return hota.sequence_data(gt_ids, tr_ids, sims)


def test_hota_and_id_switches_equal_trackeval_on_random_cases():
    rng = np.random.default_rng(29)
    ref_hota, ref_clear = HOTA(), CLEAR({"PRINT_CONFIG": False})
    styles = ("normal", "normal", "normal", "no_tracker", "no_gt", "ties")
    for case in range(100):
        classes, ref_classes = [], []
        for _ in range(int(rng.integers(1, 4))):  # phrases
            sequences, ref_sequences = [], []
            for _ in range(int(rng.integers(1, 4))):  # videos querying the phrase
                data = random_sequence(rng, styles[int(rng.integers(0, len(styles)))])
                if case % 4 == 0:  # unordered views: the same views in another order
                    order = rng.permutation(data["num_timesteps"])
                    shuffled = {**data, **{k: [data[k][t] for t in order]
                                           for k in ("gt_ids", "tracker_ids", "similarity_scores")}}
                    np.testing.assert_allclose(hota.hota_sequence(shuffled)["HOTA"],
                                               hota.hota_sequence(data)["HOTA"], atol=1e-12)
                    data = shuffled
                ours = {**hota.hota_sequence(data), "IDSW": hota.id_switches(data)}
                ref = {**ref_hota.eval_sequence(data), "IDSW": ref_clear.eval_sequence(data)["IDSW"]}
                for key in FIELDS:
                    np.testing.assert_allclose(ours[key], ref[key], rtol=0, atol=1e-9, err_msg=f"case {case} {key}")
                assert ours["IDSW"] == ref["IDSW"], f"case {case}"
                sequences.append(ours)
                ref_sequences.append(ref)
            ours = hota.combine_sequences(sequences)
            ref = ref_hota.combine_sequences(dict(enumerate(ref_sequences)))
            for key in FIELDS:
                np.testing.assert_allclose(ours[key], ref[key], rtol=0, atol=1e-9, err_msg=f"case {case} {key}")
            assert ours["IDSW"] == sum(r["IDSW"] for r in ref_sequences)
            if np.sum(ours["HOTA_TP"] + ours["HOTA_FN"]) > 0:  # averaged: the phrases with ground truth
                classes.append(ours)
                ref_classes.append(ref)
        if not classes:
            continue
        ours = hota.combine_classes(classes)
        ref = ref_hota.combine_classes_class_averaged(dict(enumerate(ref_classes)))
        for key in hota.HOTA_FIELDS:
            np.testing.assert_allclose(ours[key], ref[key], rtol=0, atol=1e-9, err_msg=f"case {case} {key}")
        assert abs(hota.summary(ours)["HOTA"] - float(np.mean(ref["HOTA"]))) < 1e-9


def test_sequence_data_relabels_ids_in_sorted_order():
    data = hota.sequence_data([[7, 3], [], [3]], [[10], [5, 10], []],
                              [np.array([[0.5], [0.0]]), np.zeros((0, 2)), np.zeros((1, 0))])
    assert [list(g) for g in data["gt_ids"]] == [[1, 0], [], [0]]
    assert [list(p) for p in data["tracker_ids"]] == [[1], [0, 1], []]
    assert (data["num_gt_ids"], data["num_tracker_ids"], data["num_gt_dets"], data["num_tracker_dets"]) == (2, 2, 3, 3)


def test_perfect_tracking_scores_one_and_a_swap_is_one_switch():
    sim = [np.eye(2)] * 4
    data = hota.sequence_data([[1, 2]] * 4, [[1, 2]] * 4, sim)
    assert hota.summary(hota.hota_sequence(data)) == {k: 1.0 for k in hota.HOTA_FIELDS}
    swapped = hota.sequence_data([[1, 2]] * 4, [[1, 2], [1, 2], [2, 1], [2, 1]], sim)
    assert hota.id_switches(swapped) == 2  # both ground-truth ids change tracker id once
