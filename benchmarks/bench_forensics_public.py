"""Forensic tools on real AI-generated video: leave-one-generator-out and leave-one-source-out on public generators'
own outputs (``vision prepare aigv-public``), within one container, with the verdict's operating point.

    vision prepare aigv-public --mirrors MIRRORS --out datasets/aigv_public --opencv-samples datasets/opencv_samples \\
        --footage ../shared/footage
    python benchmarks/bench_forensics_public.py [--data datasets/aigv_public/all.json] [--size 128] [--frames 16] \\
        [--folds 3] [--workers 2] [--cache runs/forensics/public_features] [--pass-rate 0.95]

Features: every tool's features on every clip (:func:`vision.forensics.features.split_features`, cached per tool).
Three scorers, each a logistic regression on standardised features (missing values at the training median, with a
missing-value indicator), and the tools' statistics alone:

* ``statistics``: the one feature that best separates the training clips, its sign chosen on them;
* ``tools``: every tool's statistics but the appearance tool's;
* ``appearance``: the appearance tool's features alone (a linear probe on MobileNetV2's last block);
* ``all``: both.

Leave-one-generator-out: for each generator ``G`` (a repository) and each of ``--folds`` groups of the real and CGI
sources (the videos' stems, dealt in turn), a scorer trains on the other generators' clips against the other groups'
real and CGI clips (CGI is rendered, not AI-generated: a negative) and scores ``G``'s clips against the held-out
group's real clips **of the same container** (a GIF-published clip against real clips put through the GIF round
trip, a video against real clips as decoded). Leave-one-source-out: for each real source, a scorer trains on every
other source and on three quarters of each generator's clips (in name order) and scores the source's clips against
the held-out quarter, container by container.

Operating point (a verdict of three: generated, real, insufficient evidence), set on the training side alone: the
training clips' **out-of-source** scores (each training source group and one training generator held out in turn,
``--folds`` inner folds) give ``t_gen``, the score ``--pass-rate`` of the out-of-source real clips stay under, and
``t_real``, the score ``--pass-rate`` of the out-of-generator clips stay over. A clip is called generated at or over
``t_gen``, real under ``min(t_real, t_gen)``, and otherwise the tools cannot decide. A threshold set on the training
clips' own scores would call most new real footage generated: a scorer fits its training sources better than it
fits new ones. Columns: ``realFA`` (held-out real clips called generated), ``gen`` (held-out generated clips called
generated), ``gen→real`` (held-out generated clips called real), ``abstain`` (held-out clips, both classes, left
undecided), ``cgiFA`` (held-out CGI clips of the same container called generated).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

SCORERS = ("statistics", "tools", "appearance", "all")


def design(rows: list[dict[str, float]], names: list[str], train: np.ndarray) -> np.ndarray:
    """Features as a matrix: missing values at the training rows' median, plus one missing-value indicator per
    feature that is ever missing."""
    x = np.array([[row.get(n, np.nan) for n in names] for row in rows], np.float64)
    missing = ~np.isfinite(x)
    medians = np.nanmedian(np.where(missing[train], np.nan, x[train]), axis=0)
    medians = np.where(np.isfinite(medians), medians, 0.0)
    x = np.where(missing, medians, x)
    ever = missing.any(axis=0)
    return np.concatenate([x, missing[:, ever].astype(np.float64)], axis=1)


class Corpus:
    """The clips' feature rows and what each clip is (labels 1 generated, 0 real, -1 CGI)."""

    def __init__(self, rows: list[dict[str, float]], labels: np.ndarray, videos: list[dict],
                 entries: dict[int, dict], c: float = 0.01,
                 extra: tuple[list[dict[str, float]], np.ndarray, list[dict]] | None = None) -> None:
        from vision.forensics.protocol import footages_of

        self.c = c
        self.container = np.array([entries[v["video_id"]]["container"] for v in videos])
        self.generator = np.array([v["generator"] or "real" for v in videos])
        self.footage = np.array([v["footage"] or "" for v in videos])
        self.name = np.array([entries[v["video_id"]]["name"] for v in videos])
        self.extra = np.zeros(len(rows), bool)
        self.extra_footage: list[set[str]] = [set() for _ in rows]
        if extra is not None:  # training rows only: never scored, left out with the footage they draw on
            extra_rows, extra_labels, extra_videos = extra
            rows = list(rows) + list(extra_rows)
            labels = np.concatenate([labels, extra_labels])
            self.container = np.concatenate([self.container, ["extra"] * len(extra_rows)])
            self.generator = np.concatenate([self.generator, [f"extra:{v['generator'] or 'real'}"
                                                              for v in extra_videos]])
            self.footage = np.concatenate([self.footage, ["extra:" + "+".join(sorted(footages_of(v)))
                                                          for v in extra_videos]])
            self.name = np.concatenate([self.name, [f"extra:{v['video_id']}" for v in extra_videos]])
            self.extra = np.concatenate([self.extra, np.ones(len(extra_rows), bool)])
            self.extra_footage += [footages_of(v) for v in extra_videos]
        self.rows, self.labels = rows, labels
        self.target = (labels == 1).astype(np.int64)  # CGI is a negative: rendered, not AI-generated
        self.names = sorted({k for row in rows for k in row})
        self.columns = {"tools": [n for n in self.names if not n.startswith("appearance.")],
                        "appearance": [n for n in self.names if n.startswith("appearance.")]}
        self.columns["all"] = self.columns["tools"] + self.columns["appearance"]
        self._matrix: dict[tuple, np.ndarray] = {}

    def matrix(self, scorer: str, train: np.ndarray) -> np.ndarray:
        key = (scorer, train.tobytes())
        if key not in self._matrix:
            self._matrix[key] = design(self.rows, self.columns["all" if scorer == "statistics" else scorer], train)
        return self._matrix[key]

    def score(self, scorer: str, train: np.ndarray) -> tuple[np.ndarray, str]:
        """Every clip's score from ``scorer`` fitted on the ``train`` rows, and what it read."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import roc_auc_score
        from sklearn.preprocessing import StandardScaler

        x = self.matrix(scorer, train)
        y = self.target
        if scorer == "statistics":
            names = self.columns["all"]
            best, best_auc, best_sign = 0, 0.5, 1.0
            for j in range(len(names)):
                column = x[train, j]
                auc = roc_auc_score(y[train], column) if np.ptp(column) > 0 else 0.5
                if max(auc, 1 - auc) > best_auc:
                    best, best_auc, best_sign = j, max(auc, 1 - auc), (1.0 if auc >= 0.5 else -1.0)
            return x[:, best] * best_sign, names[best]
        scaler = StandardScaler().fit(x[train])
        model = LogisticRegression(C=self.c, max_iter=5000, class_weight="balanced")
        model.fit(scaler.transform(x[train]), y[train])
        return model.decision_function(scaler.transform(x)), scorer

    def groups(self, folds: int) -> dict[str, int]:
        sources = sorted(set(self.footage[(self.labels <= 0) & ~self.extra]))  # real and CGI sources, dealt alike
        return {f: k % folds for k, f in enumerate(sources)}

    def drawing_on(self, sources: set[str]) -> np.ndarray:
        """The extra training rows whose pixels come from any of ``sources``."""
        return np.array([bool(f & sources) for f in self.extra_footage])

    def thresholds(self, scorer: str, train: np.ndarray, folds: int, pass_rate: float) -> tuple[float, float]:
        """``(t_gen, t_real)`` from the out-of-source scores of the training clips (see the module docstring)."""
        group = self.groups(folds)
        generators = sorted(set(self.generator[train & (self.labels == 1) & ~self.extra]))
        oof = np.full(len(self.labels), np.nan)
        for k in range(folds):
            held = {f for f, g in group.items() if g == k}
            out = train & ~self.extra & (((self.labels <= 0) & np.isin(self.footage, list(held)))
                                         | ((self.labels == 1) & (self.generator == generators[k % len(generators)])))
            scores, _ = self.score(scorer, train & ~out & ~self.drawing_on(held))
            oof[out] = scores[out]
        real = oof[train & (self.labels == 0) & ~self.extra]
        fake = oof[train & (self.labels == 1) & ~self.extra]
        return (float(np.nanquantile(real, pass_rate)), float(np.nanquantile(fake, 1.0 - pass_rate)))


def calls(scores: np.ndarray, t_gen: float, t_real: float) -> np.ndarray:
    """1 generated, 0 real, -1 insufficient evidence."""
    out = np.full(len(scores), -1)
    out[scores >= t_gen] = 1
    out[scores < min(t_real, t_gen)] = 0
    return out


def held_out_rows(corpus: Corpus, test: np.ndarray, cgi: np.ndarray, scores: np.ndarray,
                  cuts: tuple[float, float]) -> dict[str, float]:
    from sklearn.metrics import roc_auc_score

    verdict = calls(scores, *cuts)
    real, fake = test & (corpus.labels == 0), test & (corpus.labels == 1)
    row = {"auc": roc_auc_score(corpus.target[test], scores[test]),
           "realFA": float((verdict[real] == 1).mean()), "gen": float((verdict[fake] == 1).mean()),
           "gen_real": float((verdict[fake] == 0).mean()), "abstain": float((verdict[test] == -1).mean())}
    if cgi.any():
        row["cgiFA"] = float((verdict[cgi] == 1).mean())
    return row


def mean_rows(rows: list[dict[str, float]]) -> dict[str, float]:
    """The mean of each key over the rows that have it (nan where none has)."""
    keys = sorted({k for r in rows for k in r})
    return {k: float(np.mean([r[k] for r in rows if k in r])) if any(k in r for r in rows) else float("nan")
            for k in keys}


def leave_one_generator_out(corpus: Corpus, scorer: str, folds: int, pass_rate: float) -> list[dict]:
    labels, generator, footage, container = corpus.labels, corpus.generator, corpus.footage, corpus.container
    group = corpus.groups(folds)
    table = []
    for held in sorted(set(generator[labels == 1])):
        containers = sorted(set(container[generator == held]))
        kept = np.isin(container, containers)
        folds_out, read = [], set()
        for fold in range(folds):
            out = (labels <= 0) & np.array([group.get(f, -1) == fold for f in footage])
            train = (((labels == 1) & (generator != held)) | ((labels <= 0) & ~out)) & ~corpus.drawing_on(
                {f for f, g in group.items() if g == fold})
            test = ((generator == held) | (out & (labels == 0))) & kept & ~corpus.extra
            if not ((labels[test] == 1).any() and (labels[test] == 0).any()):
                continue
            scores, what = corpus.score(scorer, train)
            read.add(what)
            cuts = corpus.thresholds(scorer, train, folds, pass_rate)
            folds_out.append(held_out_rows(corpus, test, out & (labels == -1) & kept, scores, cuts))
        if folds_out:
            table.append({"held": held, "container": "/".join(containers), "clips": int((generator == held).sum()),
                          "worst": min(f["auc"] for f in folds_out), "read": ", ".join(sorted(read)),
                          **mean_rows(folds_out)})
    return table


def leave_one_source_out(corpus: Corpus, scorer: str, folds: int, pass_rate: float, quarters: int = 4) -> list[dict]:
    labels, generator, footage = corpus.labels, corpus.generator, corpus.footage
    rank = np.zeros(len(labels), np.int64)
    for g in set(generator[labels == 1]):
        members = np.flatnonzero(generator == g)
        rank[members[np.argsort(corpus.name[members])]] = np.arange(len(members))
    held_fake = (labels == 1) & (rank % quarters == quarters - 1) & ~corpus.extra
    table = []
    for source in sorted(set(footage[(labels == 0) & ~corpus.extra])):
        out = footage == source
        train = ~out & ~held_fake & ~corpus.drawing_on({source})
        scores, _ = corpus.score(scorer, train)
        cuts = corpus.thresholds(scorer, train, folds, pass_rate)
        rows = []
        for cont in sorted(set(corpus.container[out])):
            test = (out | held_fake) & (corpus.container == cont)
            if (labels[test] == 1).any() and (labels[test] == 0).any():
                rows.append(held_out_rows(corpus, test, np.zeros(len(labels), bool), scores, cuts))
        if rows:
            table.append({"held": source, "clips": int((out & (labels == 0)).sum()),
                          **mean_rows(rows)})
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="datasets/aigv_public/all.json")
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--frames", type=int, default=16)
    parser.add_argument("--tools", nargs="+", default=None)
    parser.add_argument("--scorers", nargs="+", default=list(SCORERS), choices=SCORERS)
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--pass-rate", type=float, default=0.95)
    parser.add_argument("--c", type=float, default=0.01, help="the regressions' inverse L2 strength")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache", default="runs/forensics/public_features")
    parser.add_argument("--extra-train", nargs="+", default=[], metavar="SPLIT",
                        help="more labelled splits (e.g. the package's own generators) in every training side, never "
                             "scored, left out with the real footage they draw on")
    args = parser.parse_args()

    from vision.forensics.features import split_features
    from vision.forensics.tools import CLASSICAL_TOOLS, PRETRAINED_TOOLS, build_tools

    tools = build_tools(args.tools or [*CLASSICAL_TOOLS, *PRETRAINED_TOOLS])
    rows, labels, videos = split_features(args.data, tools, args.size, args.frames, cache_dir=args.cache,
                                          workers=args.workers)
    entries = {v["id"]: v for v in json.loads(Path(args.data).read_text())["videos"]}
    extra = None
    for split in args.extra_train:
        more = split_features(split, tools, args.size, args.frames, cache_dir=args.cache, workers=args.workers)
        extra = more if extra is None else (extra[0] + more[0], np.concatenate([extra[1], more[1]]),
                                            extra[2] + more[2])
    corpus = Corpus(rows, labels, videos, entries, c=args.c, extra=extra)
    own = ~corpus.extra
    sources = sorted(set(corpus.footage[(corpus.labels <= 0) & own]))
    print(f"{int(own.sum())} clips: {int((labels == 1).sum())} generated of "
          f"{len(set(corpus.generator[(corpus.labels == 1) & own]))} generators, {int((labels == 0).sum())} real and "
          f"{int((labels == -1).sum())} CGI of {len(sources)} sources (each as decoded and through the GIF round "
          f"trip); {int(corpus.extra.sum())} more training clips of {args.extra_train}; {len(corpus.names)} features "
          f"of {len(tools)} tools; {args.folds} source groups; pass rate {args.pass_rate}; C {args.c}")
    summary = []
    for scorer in args.scorers:
        table = leave_one_generator_out(corpus, scorer, args.folds, args.pass_rate)
        print(f"\nleave-one-generator-out, {scorer}:")
        print("| held-out generator | container | clips | AUC | worst fold | realFA | gen | gen→real | abstain | "
              "cgiFA |" + (" feature |" if scorer == "statistics" else ""))
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|" + ("---|" if scorer == "statistics" else ""))
        for t in table:
            print(f"| {t['held']} | {t['container']} | {t['clips']} | {t['auc']:.3f} | {t['worst']:.3f} | "
                  f"{t['realFA']:.2f} | {t['gen']:.2f} | {t['gen_real']:.2f} | {t['abstain']:.2f} | {t['cgiFA']:.2f} |"
                  + (f" {t['read']} |" if scorer == "statistics" else ""))
        sources_table = leave_one_source_out(corpus, scorer, args.folds, args.pass_rate)
        print(f"\nleave-one-source-out, {scorer}:")
        print("| held-out real source | real clips | AUC | realFA | gen | gen→real | abstain |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for t in sources_table:
            print(f"| {t['held']} | {t['clips']} | {t['auc']:.3f} | {t['realFA']:.2f} | {t['gen']:.2f} | "
                  f"{t['gen_real']:.2f} | {t['abstain']:.2f} |")
        summary.append((scorer, np.mean([t["auc"] for t in table]), min(t["auc"] for t in table),
                        min(t["worst"] for t in table), np.mean([t["realFA"] for t in table]),
                        np.mean([t["gen"] for t in table]), np.mean([t["gen_real"] for t in table]),
                        np.nanmean([t["cgiFA"] for t in table]), np.mean([t["auc"] for t in sources_table]),
                        max(t["realFA"] for t in sources_table)))
    print("\n| scorer | LOGO macro AUC | worst generator | worst fold | realFA | gen | gen→real | cgiFA | "
          "LOSO mean AUC | LOSO worst realFA |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in summary:
        print(f"| {s[0]} | " + " | ".join(f"{v:.3f}" if k in (0, 1, 2, 7) else f"{v:.2f}" for k, v in enumerate(s[1:]))
              + " |")


if __name__ == "__main__":
    main()
