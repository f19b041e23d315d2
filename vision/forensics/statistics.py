"""Self-referential forensic statistics: tests that compare a clip with itself, each against a null distribution
calibrated on real camera footage, combined into a three-way verdict.

Each statistic of :data:`STATISTICS` is one tool feature that measures a clip against itself (odd vs even frames,
a frame vs its motion-compensated neighbour, noise across frames and regions, the motion vs one homography, codec
structure), with the direction its hypothesis names (``greater``: generated clips are expected to measure more than
real footage; ``less``: less; ``two-sided``: either way). Its null (:func:`predictive_null`) is where a clip of
*new* real footage may lie: footage, not clips, is the unit of replication (clips cut from one video say nothing
about how far another video lies), so it needs real clips of at least two footages. A clip's value ``x`` gets
``z = (x - mean) / sd`` (oriented so that + points to "generated"; ``|z|`` for two-sided statistics) and the
Student-t p-value of a new real clip reaching it.

The learned detector enters as one more p-value (:func:`detector_p_value`: its score against the real validation
scores, the same test). :func:`combine` joins the p-values by Bonferroni: ``p = min(1, k * min_i p_i)`` over the
``k`` tests made on the clip, which holds its level whatever the dependence between statistics.
:func:`verdict_of` turns it into ``generated`` (``p <= alpha``), ``real`` (``p >= real_p``: no test is unusual
even before correcting for their number) or ``insufficient evidence`` (between, or no test could be made).
:func:`explain` writes the two or three statistics that drove a verdict as sentences a reader can check.

Reliability: :func:`reliability_curve` and :func:`expected_calibration_error` of probabilities on labelled clips.
No torch here; numpy and scipy only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, NamedTuple, Sequence

import numpy as np
from scipy import stats as sps

from vision.errors import InputError

__all__ = ["Statistic", "STATISTICS", "RealNull", "predictive_null", "fit_null", "z_scores", "p_values",
           "detector_p_value", "score_p_value", "combine", "verdict_of", "alpha_for_false_alarms", "VERDICT_ALPHA", "VERDICT_REAL_P",
           "explain",
           "reliability_curve", "expected_calibration_error"]

#: Combined p-value at or below which a clip is called ``generated``.
VERDICT_ALPHA = 0.05
#: Combined p-value at or above which a clip is called ``real``: its smallest single p-value is at least
#: ``VERDICT_REAL_P / k``; between the two, ``insufficient evidence``.
VERDICT_REAL_P = 1.0


class Statistic(NamedTuple):
    """One self-referential test: ``feature`` (``tool.feature``), ``alternative`` (``greater`` | ``less`` |
    ``two-sided``: where generated clips are expected to lie against real footage) and ``what`` (plain words)."""

    feature: str
    alternative: str
    what: str


STATISTICS: tuple[Statistic, ...] = (
    Statistic("periodicity.sharp_p2", "greater", "the alternation of sharpness between odd and even frames"),
    Statistic("periodicity.noise_p2", "greater", "the alternation of the noise level between odd and even frames"),
    Statistic("periodicity.resid_p2", "greater",
              "the alternation of how well each frame is predicted by the mean of its neighbours"),
    Statistic("periodicity.resid_pk", "greater", "a pattern repeating every 3 to 8 frames in that prediction error"),
    Statistic("motion.warp_gain", "two-sided",
              "how much motion compensation improves predicting a frame from its neighbour"),
    Statistic("motion.fb_error", "two-sided", "how far forward and backward optical flow disagree"),
    Statistic("noise.corr_gain", "greater",
              "how much more the noise of consecutive frames correlates once their motion is compensated "
              "(noise that moves with the picture)"),
    Statistic("noise.level_cv", "two-sided", "how much the noise level changes from frame to frame"),
    Statistic("residual.block_cv", "two-sided", "how much the noise level changes between regions of a frame"),
    Statistic("residual.temporal_corr", "two-sided", "how much the noise residual of consecutive frames correlates"),
    Statistic("planar.explained", "greater", "the share of the motion that a single plane (one homography) explains"),
    Statistic("geometry.parallax", "less", "the parallax between frames (depth seen from a moving camera)"),
    Statistic("temporal.d3", "two-sided", "the size of second-order changes between consecutive frames"),
    Statistic("codec.mv_roughness", "two-sided", "how irregular the encoder's motion vectors are"),
    Statistic("codec.bits_per_pixel", "two-sided", "how many bits the encoder spends per pixel"),
    Statistic("depth.flicker", "greater",
              "how much the predicted depth changes between frames compared with the picture"),
    Statistic("depth.warp_error", "greater",
              "how much the predicted depth changes in ways the motion does not explain"),
    Statistic("depth.parallax_rank", "less",
              "how much more the nearer parts of the picture move than the farther ones (parallax that agrees "
              "with depth)"),
    Statistic("twoview.h_inliers", "two-sided", "the share of matched features that one plane (a homography) explains"),
    Statistic("twoview.epi_median", "two-sided",
              "how far matched features lie from the epipolar geometry of a moving camera"),
    Statistic("twoview.dropout", "greater",
              "how often features matched across two frames vanish in the frame between them"),
    Statistic("twoview.ghost", "greater", "whether every other frame looks like a blend of its neighbours"),
    Statistic("semantic.step_rel", "two-sided", "how much what the picture shows changes per unit of pixel change"),
    Statistic("semantic.smooth_rel", "greater",
              "how much more jerky the changes of the picture's content are than those of its pixels"),
    Statistic("faces.sharpness_ratio", "two-sided", "how much sharper or blurrier the face is than its surroundings"),
    Statistic("faces.noise_ratio", "two-sided", "how much the face's noise level differs from its surroundings'"),
    Statistic("faces.block_ratio", "greater",
              "how much stronger the face's compression blocks are than its surroundings'"),
)
_ALTERNATIVES = ("greater", "less", "two-sided")


@dataclass(frozen=True)
class RealNull:
    """Per feature the predictive null of a clip from *new* real footage: ``{feature: (mean, sd, df, footage)}``
    (:func:`predictive_null`)."""

    moments: dict[str, tuple[float, float, float, int]]

    def __post_init__(self) -> None:
        for name, (mean, sd, df, footage) in self.moments.items():
            if not (np.isfinite(mean) and np.isfinite(sd) and sd > 0 and df >= 1 and footage >= 2):
                raise InputError(f"null of {name!r} needs a finite mean, sd > 0, df >= 1 and footage >= 2; got "
                                 f"({mean}, {sd}, {df}, {footage})")


def predictive_null(values: np.ndarray, groups: Sequence[str]) -> tuple[float, float, float, int] | None:
    """The null of one statistic from real clips ``values [N]`` cut from the footage ``groups [N]``, for a clip of
    footage not among them (a random-effects prediction): with ``k`` footages, footage means ``m_j``, grand mean
    ``M`` (the mean of the ``m_j``), between-footage variance ``tau2 = var(m_j, ddof 1)`` and pooled
    within-footage variance ``s2`` over ``N`` clips, ``sd = sqrt(tau2 (1 + 1/k) + s2 (1 + 1/N))`` with ``k - 1``
    degrees of freedom. Returns ``(M, sd, k - 1, k)``; None with fewer than 2 footages holding finite values (no
    test can be made)."""
    values = np.asarray(values, np.float64).ravel()
    groups = np.asarray([str(g) for g in groups], object)
    if values.shape != groups.shape:
        raise InputError(f"values and groups differ in length: {values.size}, {groups.size}")
    ok = np.isfinite(values)
    values, groups = values[ok], groups[ok]
    names = sorted(set(groups.tolist()))
    if len(names) < 2:
        return None
    means = np.array([values[groups == g].mean() for g in names])
    within = sum(float(((values[groups == g] - m) ** 2).sum()) for g, m in zip(names, means))
    dof = values.size - len(names)
    s2 = within / dof if dof > 0 else 0.0
    k = len(names)
    grand = float(means.mean())
    sd = float(np.sqrt(means.var(ddof=1) * (1 + 1 / k) + s2 * (1 + 1 / values.size)))
    return grand, max(sd, 1e-6 * max(1.0, abs(grand))), float(k - 1), k


def fit_null(x: np.ndarray, names: Sequence[str], groups: Sequence[str],
             statistics: Sequence[Statistic] = STATISTICS) -> RealNull:
    """The :func:`predictive_null` of each statistic from real clips' features ``x [N, F]`` (columns ``names``;
    nan = not measured) and their footage ``groups [N]``. Statistics measured on fewer than 2 footages, or missing
    from ``names``, are left out."""
    x = np.asarray(x, np.float64)
    if x.ndim != 2 or x.shape[1] != len(names) or len(groups) != len(x):
        raise InputError(f"real features must be [N, {len(names)}] with N footage names; got {x.shape}, "
                         f"{len(groups)}")
    moments = {}
    for s in statistics:
        if s.feature in names:
            null = predictive_null(x[:, list(names).index(s.feature)], groups)
            if null is not None:
                moments[s.feature] = null
    return RealNull(moments)


def _oriented(z: np.ndarray, alternative: str) -> np.ndarray:
    if alternative not in _ALTERNATIVES:
        raise InputError(f"alternative must be one of {_ALTERNATIVES}; got {alternative!r}")
    return {"greater": z, "less": -z, "two-sided": np.abs(z)}[alternative]


def z_scores(x: np.ndarray, names: Sequence[str], null: RealNull,
             statistics: Sequence[Statistic] = STATISTICS) -> tuple[np.ndarray, list[Statistic]]:
    """``(z [N, S], statistics)``: each statistic's z against the real null, oriented so that larger points to
    generated (``|z|`` for two-sided ones); nan where the clip lacks the feature. Only statistics with a null."""
    x = np.asarray(x, np.float64)
    if x.ndim == 1:
        x = x[None]
    used = [s for s in statistics if s.feature in null.moments and s.feature in names]
    z = np.full((len(x), len(used)), np.nan)
    for j, s in enumerate(used):
        mean, sd, _, _ = null.moments[s.feature]
        z[:, j] = _oriented((x[:, list(names).index(s.feature)] - mean) / sd, s.alternative)
    return z, used


def _t_p(z: np.ndarray, df: np.ndarray | float, two_sided: np.ndarray | bool) -> np.ndarray:
    one = sps.t.sf(z, df=np.asarray(df, np.float64))
    return np.where(two_sided, np.minimum(1.0, 2.0 * one), one)


def p_values(z: np.ndarray, statistics: Sequence[Statistic], null: RealNull) -> np.ndarray:
    """The prediction-test p-values ``[N, S]`` of oriented ``z [N, S]`` (Student t with the null's ``df``; nan
    stays nan): the chance that a clip of new real footage measures at least as far towards "generated" (either
    way for two-sided statistics)."""
    df = np.array([null.moments[s.feature][2] for s in statistics])
    two = np.array([s.alternative == "two-sided" for s in statistics])
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(z), _t_p(np.nan_to_num(z), df, two), np.nan)


def detector_p_value(scores: np.ndarray, real_scores: np.ndarray,
                     groups: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """The detector as one more one-sided test: its ``scores [N]`` (larger = generated; a logit, not a
    probability) against the :func:`predictive_null` of ``real_scores [M]`` of real validation clips of footage
    ``groups [M]``; returns ``(z [N], p [N])``, nan when the real scores span fewer than 2 footages."""
    return score_p_value(scores, predictive_null(real_scores, groups))


def score_p_value(scores: np.ndarray, null: tuple[float, float, float, int] | None) -> tuple[np.ndarray, np.ndarray]:
    """A one-sided prediction test of ``scores [N]`` (larger = generated) against a :func:`predictive_null`
    ``(mean, sd, df, footages)``: ``(z [N], p [N])``, nan without a null."""
    scores = np.asarray(scores, np.float64)
    if null is None:
        return np.full(scores.shape, np.nan), np.full(scores.shape, np.nan)
    mean, sd, df, _ = null
    z = (scores - mean) / sd
    return z, _t_p(z, df, False)


def combine(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bonferroni combination of ``p [N, S]`` (nan = not measured): ``(p_combined [N], k [N])`` with
    ``p_combined = min(1, k * min p)`` over the ``k`` tests made (nan where none is)."""
    p = np.asarray(p, np.float64)
    k = np.isfinite(p).sum(axis=1)
    low = np.min(np.where(np.isfinite(p), p, np.inf), axis=1, initial=np.inf)
    return np.where(k > 0, np.minimum(1.0, low * np.maximum(k, 1)), np.nan), k


def verdict_of(p_combined: float, alpha: float = VERDICT_ALPHA, real_p: float = VERDICT_REAL_P) -> str:
    """``generated`` when ``p_combined <= alpha``, ``real`` when ``p_combined >= real_p``, else (and when no test
    could be made: nan) ``insufficient evidence``."""
    if not 0.0 < alpha < real_p <= 1.0:
        raise InputError(f"need 0 < alpha < real_p <= 1; got alpha={alpha}, real_p={real_p}")
    if not np.isfinite(p_combined):
        return "insufficient evidence"
    if p_combined <= alpha:
        return "generated"
    return "real" if p_combined >= real_p else "insufficient evidence"


def alpha_for_false_alarms(p_real: np.ndarray, target: float = 0.05, ceiling: float = VERDICT_ALPHA) -> float:
    """The operating point fitted on real clips of held-out footage: the largest ``alpha <= ceiling`` at which at
    most ``target`` of them are called generated by :func:`verdict_of` (combined p ``<= alpha``).

    ``p_real [N]``: combined p-values of real clips whose footage trained, calibrated and thresholded nothing
    (leave-one-source-out); nan (no test made) never raises an alarm but counts in ``N``. With ``m = floor(target
    N)`` alarms allowed, ``alpha`` lies halfway in log between the (m+1)-th smallest p-value and the largest one
    below it (at most a factor 1,000 below; just below the smallest when none is allowed), so a tie never tips it
    over. ``ceiling``: the fitted level is never looser
    than the stated one."""
    p = np.asarray(p_real, np.float64).ravel()
    if p.size == 0:
        raise InputError("alpha_for_false_alarms needs the p-values of at least one real clip")
    if not 0.0 <= target < 1.0 or not 0.0 < ceiling < VERDICT_REAL_P:
        raise InputError(f"need 0 <= target < 1 and 0 < ceiling < {VERDICT_REAL_P}; got {target}, {ceiling}")
    finite = np.sort(p[np.isfinite(p)])
    allowed = int(np.floor(target * p.size + 1e-9))
    if allowed >= finite.size or finite[allowed] > ceiling:
        return float(ceiling)
    upper = float(finite[allowed])
    if upper <= 0.0:  # p = 0 alarms at every level: the least positive one
        return float(np.finfo(np.float64).tiny)
    below = finite[finite < upper]  # at most `allowed` values (ties with the boundary stay above alpha)
    lower = float(below[-1]) if below.size else upper / 10.0
    return float(min(ceiling, np.sqrt(max(lower, upper * 1e-3) * upper)))


def _share_beyond(p: float) -> str:
    if p < 0.001:
        return "fewer than 1 in 1,000"
    if p < 0.01:
        return f"about 1 in {int(round(1 / p, -1)):,}"
    return f"{100 * p:.0f}%"


def explain(values: dict[str, float], z: Iterable[float], p: Iterable[float], statistics: Sequence[Statistic],
            null: RealNull, top: int = 3) -> list[dict]:
    """The ``top`` statistics with the smallest p-values (the ones that drove the verdict), each
    ``{"feature", "z", "p", "value", "real_mean", "real_sd", "real_footage", "sentence"}``. The sentence names
    what was measured, this clip's value, the real footage's predictive mean and spread and how many videos it
    was measured on, and how often a real clip reaches that far, e.g. "The alternation of sharpness between odd
    and even frames measures 9.1; real camera footage (2 videos) gives 1.2 ± 0.6 for a new video, so this clip
    lies 13.2 spreads above it; about 1 in 40 of real clips would go that far (p = 0.024)."."""
    rows = []
    for s, zz, pp in zip(statistics, z, p):
        if not (np.isfinite(zz) and np.isfinite(pp)) or s.feature not in values:
            continue
        mean, sd, _, footage = null.moments[s.feature]
        value = float(values[s.feature])
        signed = (value - mean) / sd
        side = "above" if signed >= 0 else "below"
        sentence = (f"{s.what[0].upper()}{s.what[1:]} measures {value:.3g}; real camera footage ({footage} "
                    f"videos) gives {mean:.3g} ± {sd:.3g} for a new video, so this clip lies {abs(signed):.1f} "
                    f"spreads {side} it; {_share_beyond(float(pp))} of real clips would go that far "
                    f"(p = {pp:.2g}).")
        rows.append({"feature": s.feature, "z": float(zz), "p": float(pp), "value": value, "real_mean": mean,
                     "real_sd": sd, "real_footage": footage, "sentence": sentence})
    rows.sort(key=lambda r: (r["p"], -r["z"]))
    return rows[:top]


def reliability_curve(probabilities: np.ndarray, labels: np.ndarray, bins: int = 10) -> list[dict]:
    """Equal-width bins of the predicted probability of "generated" ``[N]`` against labels ``[N]`` (1 = generated,
    0 = real): per non-empty bin ``{"lo", "hi", "count", "mean_probability", "share_generated"}``."""
    prob = np.asarray(probabilities, np.float64).ravel()
    y = np.asarray(labels, np.float64).ravel()
    if prob.shape != y.shape or prob.size == 0:
        raise InputError(f"probabilities and labels must be non-empty and of one length; got {prob.size}, {y.size}")
    if bins < 1:
        raise InputError(f"bins must be >= 1; got {bins}")
    edges = np.linspace(0.0, 1.0, bins + 1)
    index = np.clip(np.digitize(prob, edges[1:-1], right=False), 0, bins - 1)
    out = []
    for b in range(bins):
        sel = index == b
        if sel.any():
            out.append({"lo": float(edges[b]), "hi": float(edges[b + 1]), "count": int(sel.sum()),
                        "mean_probability": float(prob[sel].mean()), "share_generated": float(y[sel].mean())})
    return out


def expected_calibration_error(probabilities: np.ndarray, labels: np.ndarray, bins: int = 10) -> float:
    """ECE: the count-weighted mean over :func:`reliability_curve`'s bins of ``|mean probability - share
    generated|``."""
    curve = reliability_curve(probabilities, labels, bins)
    total = sum(b["count"] for b in curve)
    return float(sum(b["count"] * abs(b["mean_probability"] - b["share_generated"]) for b in curve) / total)
