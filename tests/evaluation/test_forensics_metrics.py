"""Forensic metrics against scikit-learn and hand-computed values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve

from tests.evaluation.conftest import evaluate_cli
from vision.errors import DataError, InputError
from vision.evaluation.forensics import (
    equal_error_rate,
    format_forensics,
    threshold_from_real,
    tpr_at_fpr,
)
from vision.evaluation.tasks.forensics import evaluate_forensics


def _split(labels: list[str], gens: list[str | None]) -> dict:
    videos = []
    for i, (label, gen) in enumerate(zip(labels, gens), start=1):
        v = {"id": i, "name": f"v{i}", "label": label, "file_name": f"v{i}.mp4"}
        if gen:
            v["generator"] = gen
        videos.append(v)
    return {"images": [], "annotations": [], "categories": [], "videos": videos}


def test_hand_computed_example() -> None:
    # real scores 0.1 0.2 0.3 0.6 ; A scores 0.5 0.9 ; B scores 0.25 0.4
    labels = ["real"] * 4 + ["generated"] * 4
    gens = [None] * 4 + ["A", "A", "B", "B"]
    scores = [0.1, 0.2, 0.3, 0.6, 0.5, 0.9, 0.25, 0.4]
    gt = _split(labels, gens)
    results = [{"video_id": i + 1, "score": s, "verdict": "real"} for i, s in enumerate(scores)]
    m = evaluate_forensics(gt, results, threshold=0.45)
    y = np.array([0] * 4 + [1] * 4)
    assert m["AUC"] == pytest.approx(roc_auc_score(y, scores))
    assert m["AP"] == pytest.approx(average_precision_score(y, scores))
    # at 0.45: real 0.6 is wrong (3/4 real correct), A both right, B both wrong -> ACC 5/8
    assert m["ACC"] == pytest.approx(5 / 8) and m["real_acc"] == pytest.approx(0.75) and m["fake_acc"] == 0.5
    # A vs real: pairs (fake > real) = 0.5 beats 3 of 4, 0.9 beats 4 -> AUC 7/8
    assert m["A/AUC"] == pytest.approx(7 / 8) and m["A/fake_acc"] == 1.0
    # B vs real: 0.25 beats 2, 0.4 beats 3 -> 5/8
    assert m["B/AUC"] == pytest.approx(5 / 8)
    assert m["macro/AUC"] == pytest.approx((7 / 8 + 5 / 8) / 2)
    assert m["threshold_source"] == "given" and m["num_real"] == 4 and m["num_generated"] == 4


def test_eer_and_tpr_at_fpr_by_hand() -> None:
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    s = np.array([0.1, 0.2, 0.3, 0.6, 0.5, 0.7, 0.8, 0.9])
    # threshold 0.6 keeps fpr 1/4, fnr 1/4 (0.5 missed): |fnr - fpr| = 0 -> EER = 0.25
    assert equal_error_rate(y, s) == pytest.approx(0.25)
    # with FPR <= 5% (no false positive) the best TPR is 3/4 (0.7, 0.8, 0.9 above 0.6)
    assert tpr_at_fpr(y, s, 0.05) == pytest.approx(0.75)


def test_tied_pairs_give_chance_level_eer_and_tpr() -> None:
    # 100 (real, generated) pairs, each pair tied: the full ROC climbs the diagonal in steps of (0.01, 0.01).
    y = np.array([0, 1] * 100)
    for s in (np.repeat(np.arange(100) / 100, 2), np.full(200, 0.5)):  # distinct pairs; all 200 tied
        assert equal_error_rate(y, s) == pytest.approx(0.5)
        assert tpr_at_fpr(y, s, 0.05) == pytest.approx(0.05)


def test_eer_where_the_roc_crosses_between_its_corners() -> None:
    # 20 distinct scores, highest first: 7 generated, 8 real, 3 generated, 2 real (10 of each class).
    # ROC corners (0, 0) (0, .7) (.8, .7) (.8, 1) (1, 1); FPR = FNR = 0.3 on the segment at TPR 0.7.
    y = np.array([1] * 7 + [0] * 8 + [1] * 3 + [0] * 2)
    s = np.linspace(1.0, 0.05, 20)
    assert equal_error_rate(y, s) == pytest.approx(0.30)
    assert tpr_at_fpr(y, s, 0.05) == pytest.approx(0.7)
    assert tpr_at_fpr(y, s, 0.8) == pytest.approx(1.0)  # the top of the vertical segment at FPR 0.8


def _reference_eer_and_tpr(y: np.ndarray, s: np.ndarray, fpr_max: float) -> tuple[float, float]:
    """From sklearn's full ROC (drop_intermediate=False), densely sampled along each segment."""
    fpr, tpr, _ = roc_curve(y, s, drop_intermediate=False)
    t = np.linspace(0.0, 1.0, 20001)[:, None]
    xs = (fpr[:-1] + t * (fpr[1:] - fpr[:-1])).ravel()
    ys = (tpr[:-1] + t * (tpr[1:] - tpr[:-1])).ravel()
    i = np.argmin(np.abs((1 - ys) - xs))
    return float(xs[i]), float(ys[xs <= fpr_max + 1e-12].max())


def test_eer_and_tpr_match_the_full_sklearn_roc_with_ties() -> None:
    rng = np.random.default_rng(4)
    for n, levels in ((40, 5), (200, 12), (333, 1000)):
        y = rng.integers(0, 2, n)
        s = np.round(rng.normal(y * 0.8, 1.0) * levels) / levels  # coarse scores: many ties
        eer, tpr = _reference_eer_and_tpr(y, s, 0.05)
        assert equal_error_rate(y, s) == pytest.approx(eer, abs=1e-4)
        assert tpr_at_fpr(y, s, 0.05) == pytest.approx(tpr, abs=1e-4)


def test_one_class_only_is_an_error_that_names_the_missing_class(tmp_path: Path, capsys) -> None:
    with pytest.raises(InputError, match="both classes"):
        equal_error_rate(np.zeros(3), np.array([0.1, 0.2, 0.3]))
    with pytest.raises(InputError, match="both classes"):
        tpr_at_fpr(np.ones(3), np.array([0.1, 0.2, 0.3]))
    gt = _split(["generated", "generated"], ["A", "B"])
    results = [{"video_id": 1, "score": 0.9}, {"video_id": 2, "score": 0.2}]
    with pytest.raises(DataError, match="no 'real' video"):
        evaluate_forensics(gt, results, threshold=0.5, gt_file="split.json")
    # what a user of vision evaluate sees: one line on stderr, exit status 2
    main = evaluate_cli.main

    (tmp_path / "split.json").write_text(json.dumps(gt))
    (tmp_path / "res.json").write_text(json.dumps(results))
    real_only = _split(["real", "real"], [None, None])
    (tmp_path / "real.json").write_text(json.dumps(real_only))
    assert main(["--split", str(tmp_path / "split.json"), "--results", str(tmp_path / "res.json"),
                 "--task", "forensics", "--threshold", "0.5"]) == 2
    assert "no 'real' video" in capsys.readouterr().err
    assert main(["--split", str(tmp_path / "real.json"), "--results", str(tmp_path / "res.json"),
                 "--task", "forensics"]) == 2
    assert "no 'generated' video" in capsys.readouterr().err


def test_random_scores_match_sklearn_and_threshold_from_real() -> None:
    rng = np.random.default_rng(0)
    n = 200
    y = rng.integers(0, 2, n)
    s = rng.normal(y * 1.0, 1.0)
    gt = _split(["generated" if v else "real" for v in y], ["G" if v else None for v in y])
    m = evaluate_forensics(gt, [{"video_id": i + 1, "score": float(v)} for i, v in enumerate(s)])
    assert m["AUC"] == pytest.approx(roc_auc_score(y, s)) and m["AP"] == pytest.approx(average_precision_score(y, s))
    assert m["threshold_source"] == "eval-real" and m["real_acc"] >= 0.95
    assert m["G/AUC"] == pytest.approx(m["AUC"]) and m["macro/AUC"] == pytest.approx(m["AUC"])


def test_bad_results_name_the_field() -> None:
    gt = _split(["real", "generated"], [None, "A"])
    with pytest.raises(DataError, match=r"results\[1\]\.score"):
        evaluate_forensics(gt, [{"video_id": 1, "score": 0.1}, {"video_id": 2, "score": float("nan")}])
    with pytest.raises(DataError, match="no result"):
        evaluate_forensics(gt, [{"video_id": 1, "score": 0.1}])
    with pytest.raises(DataError, match=r"results\[1\]\.video_id"):
        evaluate_forensics(gt, [{"video_id": 1, "score": 0.1}, {"video_id": 9, "score": 0.2}])
    with pytest.raises(DataError, match="duplicate"):
        evaluate_forensics(gt, [{"video_id": 1, "score": 0.1}, {"video_id": 1, "score": 0.2}])


def test_the_one_entry_point_scores_forensics() -> None:
    from vision.evaluation.evaluate import evaluate

    gt = _split(["real", "real", "generated", "generated"], [None, None, "vae", "vae"])
    results = [{"video_id": v["id"], "score": s} for v, s in zip(gt["videos"], [0.1, 0.3, 0.7, 0.2])]
    metrics = evaluate(gt, results, "forensics", threshold=0.5)
    assert metrics["AUC"] == pytest.approx(0.75)
    assert metrics == evaluate_forensics(gt, results, threshold=0.5)


def test_threshold_from_real_passes_the_share_and_every_tie_with_the_quantile() -> None:
    scores = np.linspace(0, 1, 101)
    for dtype in (np.float64, np.float32):
        threshold = threshold_from_real(scores, 0.95, dtype=dtype)
        assert (scores < threshold).mean() == pytest.approx(96 / 101)  # the quantile (scores[95]) itself passes
        assert scores[95] < threshold < scores[96]
        assert float(np.asarray(threshold, dtype)) == threshold  # exactly representable
    with pytest.raises(InputError, match="no real"):
        threshold_from_real(np.array([]))
    with pytest.raises(InputError, match="pass_rate"):
        threshold_from_real(scores, 1.5)
    with pytest.raises(InputError, match="finite"):
        threshold_from_real(np.array([0.1, np.nan]))


def test_a_float32_threshold_is_rounded_up_so_scores_equal_to_the_quantile_still_pass() -> None:
    """The edge: a quantile that float32 rounds *down*. Stored in a float32 buffer as nearest-rounding would store
    it, the real videos scoring exactly the quantile would be called generated; threshold_from_real rounds up."""
    q = 0.7
    assert float(np.float32(q)) < q  # the nearest float32 lies below 0.7
    real = np.array([0.1, q, q, q])  # the 95% quantile ("higher") is q, which three real videos score
    threshold = threshold_from_real(real, 0.95, dtype=np.float32)
    stored = float(torch.tensor(threshold, dtype=torch.float32))  # what a checkpoint's buffer gives back
    assert stored == threshold
    assert (real < stored).all()
    assert not (real < float(np.float32(np.quantile(real, 0.95, method="higher")))).all()  # nearest rounding fails
    # float32 scores (the detector's probabilities) tied with the threshold's quantile pass too; the next float32
    # above them does not
    p = np.float32(0.3)
    assert threshold_from_real(np.array([p, p]), dtype=np.float32) == float(np.nextafter(p, np.float32(1)))
    # and at the threshold itself a video counts as generated
    gt = _split(["real", "generated"], [None, "A"])
    metrics = evaluate_forensics(gt, [{"video_id": 1, "score": q}, {"video_id": 2, "score": threshold}],
                                 threshold=threshold)
    assert metrics["real_acc"] == 1.0 and metrics["fake_acc"] == 1.0


def test_format_forensics_prints_every_generator_and_the_full_threshold() -> None:
    gt = _split(["real", "real", "generated", "generated"], [None, None, "A", "B"])
    results = [{"video_id": i, "score": s} for i, s in zip(range(1, 5), (0.1, 0.2, 0.3, 0.9))]
    metrics = evaluate_forensics(gt, results, threshold=0.25000001)
    table = format_forensics(metrics, "val")
    rows = [line.split()[0] for line in table.splitlines()]
    assert rows[0] == "val" and {"A", "B", "macro", "all"} <= set(rows)
    assert "threshold 0.25000001 fixed on real validation videos" in table


def test_cgi_videos_are_neither_class_and_are_reported_apart() -> None:
    # the hand-computed example plus two cgi videos: the binary metrics do not move, cgi/false_alarm counts the
    # cgi videos at or above the threshold
    labels = ["real"] * 4 + ["generated"] * 4 + ["cgi"] * 2
    gens = [None] * 4 + ["A", "A", "B", "B"] + ["cgi", "render"]
    scores = [0.1, 0.2, 0.3, 0.6, 0.5, 0.9, 0.25, 0.4, 0.95, 0.1]
    gt = _split(labels, gens)
    results = [{"video_id": i + 1, "score": s} for i, s in enumerate(scores)]
    m = evaluate_forensics(gt, results, threshold=0.45)
    base = evaluate_forensics(_split(labels[:8], gens[:8]), results[:8], threshold=0.45)
    assert {k: v for k, v in m.items() if k not in ("num_cgi", "cgi/false_alarm")} == {k: v for k, v in base.items() if k != "num_cgi"}
    assert m["num_cgi"] == 2 and m["cgi/false_alarm"] == pytest.approx(0.5)
    assert "cgi/AUC" not in m and "render/AUC" not in m
    assert "cgi (not AI-generated): 0.500 called generated of 2 videos" in format_forensics(m, "split")
    # a cgi video still needs a result, like every labelled video
    with pytest.raises(DataError, match="no result"):
        evaluate_forensics(gt, results[:9], threshold=0.45)


def test_rows_are_families_when_the_generated_videos_carry_one() -> None:
    labels = ["real"] * 4 + ["generated"] * 4
    gens = [None] * 4 + ["interp_flow", "interp_blend", "B1", "B2"]
    scores = [0.1, 0.2, 0.3, 0.6, 0.5, 0.9, 0.25, 0.4]
    gt = _split(labels, gens)
    for video, family in zip(gt["videos"][4:], ["interpolation", "interpolation", None, None]):
        if family:
            video["family"] = family
    results = [{"video_id": i + 1, "score": s} for i, s in enumerate(scores)]
    m = evaluate_forensics(gt, results, threshold=0.45)
    y = np.array([0] * 4 + [1, 1])
    assert m["interpolation/AUC"] == pytest.approx(roc_auc_score(y, scores[:6]))
    assert "interp_flow/AUC" not in m and "B1/AUC" in m and "B2/AUC" in m  # no family: counted by generator
    assert m["macro/AUC"] == pytest.approx(np.mean([m["interpolation/AUC"], m["B1/AUC"], m["B2/AUC"]]))
