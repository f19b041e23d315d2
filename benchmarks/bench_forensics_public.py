"""Forensic tools on real AI-generated video: leave-one-generator-out on public generators' own outputs
(``vision prepare aigv-public``), with real footage held out too, within one container.

    vision prepare aigv-public --mirrors MIRRORS --out datasets/aigv_public --opencv-samples datasets/opencv_samples \\
        --footage ../shared/footage
    python benchmarks/bench_forensics_public.py [--data datasets/aigv_public/all.json] [--size 128] [--frames 16] \\
        [--tools T ...] [--folds 3] [--workers 2] [--cache runs/forensics/public_features]

Features: every tool's features on every clip (:func:`vision.forensics.features.split_features`, cached per tool).
Folds: for each generator ``G`` (a repository) and each of ``--folds`` groups of the real and CGI sources (the
videos' stems, dealt in turn), a logistic regression on the standardised features (missing values at the training
median, with a missing-value indicator per feature) trains on the other generators' clips against the real and CGI
clips of the other source groups (CGI is rendered, not AI-generated: a negative), and scores ``G``'s clips against
the held-out group's real clips **of the same container**
(a GIF-published clip against real clips put through the GIF round trip, a video against real clips as decoded).
Per generator: the AUC averaged over the footage groups (the detector), and the best single feature's AUC, its
feature and sign chosen on the training clips of the fold (the tools' statistics alone). Operating point: the
threshold that calls 5 % of the training real clips generated; ``realFA`` (held-out real clips called generated),
``cgiFA`` (held-out CGI clips of the same container called generated) and ``gen`` (held-out generated clips called
generated) at it.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="datasets/aigv_public/all.json")
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--frames", type=int, default=16)
    parser.add_argument("--tools", nargs="+", default=None)
    parser.add_argument("--folds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cache", default="runs/forensics/public_features")
    args = parser.parse_args()

    import json

    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score
    from sklearn.preprocessing import StandardScaler

    from vision.forensics.features import split_features
    from vision.forensics.tools import CLASSICAL_TOOLS, PRETRAINED_TOOLS, build_tools

    tools = build_tools(args.tools or [*CLASSICAL_TOOLS, *PRETRAINED_TOOLS])
    rows, labels, videos = split_features(args.data, tools, args.size, args.frames, cache_dir=args.cache,
                                          workers=args.workers)
    entries = {v["id"]: v for v in json.loads(Path(args.data).read_text())["videos"]}
    container = np.array([entries[v["video_id"]]["container"] for v in videos])
    generator = np.array([v["generator"] or "real" for v in videos])
    footage = np.array([v["footage"] or "" for v in videos])
    names = sorted({k for row in rows for k in row})
    cgi = labels == -1
    real_footage = sorted(set(footage[labels <= 0]))  # the real videos and the CGI sources, dealt alike
    group = {f: k % args.folds for k, f in enumerate(real_footage)}
    generators = sorted(set(generator[labels == 1]))
    print(f"{len(rows)} clips: {int((labels == 1).sum())} generated of {len(generators)} generators, "
          f"{int((labels == 0).sum())} real and {int(cgi.sum())} CGI of {len(real_footage)} sources (each as decoded "
          f"and through the GIF round trip); {len(names)} features of {len(tools)} tools; {args.folds} source groups")
    table = []
    for held in generators:
        aucs, singles, false_alarms, called, cgi_called = [], [], [], [], []
        containers = set(container[generator == held])
        target = (labels == 1).astype(np.int64)  # CGI is a negative: rendered, not AI-generated
        for fold in range(args.folds):
            out = (labels <= 0) & np.array([group.get(f, -1) == fold for f in footage])
            real_out = out & (labels == 0)
            train = ((labels == 1) & (generator != held)) | ((labels <= 0) & ~out)
            kept = np.isin(container, list(containers))
            test = ((generator == held) | real_out) & kept
            if not ((labels[test] == 1).any() and (labels[test] == 0).any()):
                continue
            x = design(rows, names, train)
            scaler = StandardScaler().fit(x[train])
            model = LogisticRegression(C=0.3, max_iter=5000, class_weight="balanced")
            model.fit(scaler.transform(x[train]), target[train])
            scores = model.decision_function(scaler.transform(x))
            aucs.append(roc_auc_score(target[test], scores[test]))
            threshold = np.quantile(scores[train & (labels == 0)], 0.95)
            false_alarms.append(float((scores[test & (labels == 0)] > threshold).mean()))
            called.append(float((scores[test & (labels == 1)] > threshold).mean()))
            if (out & cgi & kept).any():
                cgi_called.append(float((scores[out & cgi & kept] > threshold).mean()))
            best, best_auc, best_sign = None, 0.5, 1.0
            for j, name in enumerate(names):  # the single feature that best separates the training clips
                column = x[:, j]
                auc = roc_auc_score(target[train], column[train]) if np.ptp(column[train]) > 0 else 0.5
                sign = 1.0 if auc >= 0.5 else -1.0
                if max(auc, 1 - auc) > best_auc:
                    best, best_auc, best_sign = name, max(auc, 1 - auc), sign
            if best is not None:
                column = x[:, names.index(best)] * best_sign
                singles.append((roc_auc_score(target[test], column[test]), best))
        if not aucs:
            continue
        single_auc = float(np.mean([a for a, _ in singles])) if singles else float("nan")
        features = ", ".join(sorted({n for _, n in singles}))
        table.append((held, "/".join(sorted(containers)), int((generator == held).sum()), float(np.mean(aucs)),
                      float(np.min(aucs)), single_auc, features, float(np.mean(false_alarms)), float(np.mean(called)),
                      float(np.mean(cgi_called)) if cgi_called else float("nan")))
    print("| held-out generator | container | clips | detector AUC | worst fold | best single feature AUC "
          "(feature) | realFA | cgiFA | gen |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for held, cont, count, auc, worst, single, feature, fa, gen, cgi_fa in table:
        print(f"| {held} | {cont} | {count} | {auc:.3f} | {worst:.3f} | {single:.3f} ({feature}) | {fa:.2f} | "
              f"{cgi_fa:.2f} | {gen:.2f} |")
    print(f"macro AUC over generators: detector {np.mean([t[3] for t in table]):.3f}, worst generator "
          f"{min(t[3] for t in table):.3f}; best single feature {np.nanmean([t[5] for t in table]):.3f}")


if __name__ == "__main__":
    main()
