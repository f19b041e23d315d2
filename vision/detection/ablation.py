"""The ablation of OOVDet's out-of-vocabulary mechanisms: its rows (the detector's ``oov_class`` and the module's
mechanism switches each row trains with), the figures it reports, and their summary over seeds.
``benchmarks/bench_oovdet_ablation.py`` trains and scores the rows.
"""

from __future__ import annotations

__all__ = ["ROWS", "KEYS", "shown", "summarise"]

#: row -> (the detector's ``oov_class``, the module's mechanism switches), from the closed vocabulary to the full
#: detector.
ROWS: dict[str, tuple[bool, dict[str, bool]]] = {
    "no OOV class": (False, dict(synthesis=False, mining=False, kde_prior=False)),
    "+ synthesis": (True, dict(synthesis=True, mining=False, kde_prior=False)),
    "+ synthesis + mining": (True, dict(synthesis=True, mining=True, kde_prior=False)),
    "full (+ KDE prior)": (True, dict(synthesis=True, mining=True, kde_prior=True)),
}

#: The figures of a row: the open-set metrics of :meth:`OOVDetModule.score` and the class-agnostic AP50
#: (:func:`vision.evaluation.detection.class_agnostic_ap`).
KEYS: tuple[str, ...] = ("IV_AP50", "novel_AP50", "U-Recall", "AP_U", "WI", "A-OSE", "H-mean", "agnostic_AP50")


def shown(key: str, value: float) -> float:
    """A figure as the table shows it: AP / recall x100; WI (already x100), A-OSE (a count) and seconds
    (``train_s``) as they are; an undefined figure (< 0) as it is."""
    return value if key in ("WI", "A-OSE", "train_s") or value < 0 else 100 * value


def summarise(runs: dict[str, list[dict]]) -> dict[str, dict[str, tuple[float, float]]]:
    """Per row and figure (:data:`KEYS` and ``train_s``): ``(mean, max - min)`` over the row's runs (one per seed) on
    the table's scale (:func:`shown`); runs where the figure is undefined (< 0) are left out, and a figure undefined
    in every run is ``(-1.0, 0.0)``."""
    table = {}
    for name, per_seed in runs.items():
        table[name] = {}
        for key in (*KEYS, "train_s"):
            values = [shown(key, float(m[key])) for m in per_seed if float(m[key]) >= 0]
            table[name][key] = ((sum(values) / len(values), max(values) - min(values)) if values
                                else (-1.0, 0.0))
    return table
