"""The learned detector over forensic tool features, with calibration and a real-calibrated threshold.

Input: a raw feature matrix ``[B, F]`` (columns in ``feature_names`` order, ``nan`` = not measured / tool not
applicable). The detector standardises with training statistics, sets missing values to 0 (the training mean)
and appends a missing-value mask, so its input is ``[B, 2F]``; an MLP gives a logit ``[B]`` (> 0 = generated).
Unseen generators: beside the supervised logit the detector measures how far a clip lies from the *real*
reference distribution, ``A = mean_j clip(z_j, -10, 10)^2`` with ``z_j`` the feature's z-score against real
training videos (missing features count 0). The decision score is
``s = logit / logit_scale + (A - anom_mean) / anom_std`` (both terms standardised on validation videos: the
logit by its std, ``A`` by the mean and std over *real* validation videos), so a clip unlike any training
generator still scores high when it is unlike real video.
Calibration: Platt scaling ``p = sigmoid(a * s + b)`` with ``a, b`` fitted on validation videos by class-balanced
NLL (equal priors: the probability does not depend on how many generated clips per real one the validation has).
Threshold: on calibrated probabilities of *real* validation videos, so that ``pass_rate`` of them (95%) are
below it; a video is called generated when ``p >= threshold``
(:func:`vision.evaluation.forensics.threshold_from_real`, rounded up to float32, the buffer's type).
Reliability: per tool, the best single-feature validation AUC (the evidence graph weighs tools by it).
All of these are buffers of :class:`ForensicDetector`, so a checkpoint of it holds everything inference needs.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from sklearn.metrics import roc_auc_score

from vision.errors import InputError
from vision.evaluation.forensics import threshold_from_real
from vision.forensics.statistics import RealNull, fit_null, predictive_null

__all__ = ["ForensicDetector", "feature_matrix", "fit_platt", "calibrate", "tool_reliability", "training_loss"]


def feature_matrix(rows: Sequence[dict[str, float]], names: Sequence[str]) -> np.ndarray:
    """Feature dicts -> ``float32 [N, F]`` in ``names`` order (missing names -> nan)."""
    out = np.full((len(rows), len(names)), np.nan, np.float32)
    for i, row in enumerate(rows):
        for j, name in enumerate(names):
            value = row.get(name)
            if value is not None:
                out[i, j] = float(value)
    return out


class ForensicDetector(nn.Module):
    """MLP over standardised tool features (see the module docstring).

    Args:
        feature_names: ``tool.feature`` names, the columns of the input
            (:func:`vision.forensics.tools.feature_names`); the tools are their prefixes, in order of first appearance.
        hidden / dropout: MLP width and dropout (defaults: :class:`vision.forensics.task.ForensicsConfig`).

    Buffers (saved in checkpoints): ``feat_mean`` / ``feat_std`` ``[F]``, ``logit_scale``, ``anom_mean``,
    ``anom_std``, ``platt_a``, ``platt_b``, ``threshold`` (calibrated-probability threshold) and ``pass_rate`` (the
    share of real validation videos below it) ``[]``, ``ref_mean`` / ``ref_std`` / ``ref_sign`` ``[F]`` (the
    real-video reference, also used for evidence items),
    ``gen_mean`` / ``gen_std`` ``[F]`` (the same over generated training videos, nan where unknown: the evidence rows
    say what generated clips typically show; a checkpoint that lacks them loads with nan) and
    ``reliability`` ``[T]`` (per tool of :attr:`tools`, its best single-feature validation AUC; 0.5 = unknown),
    ``null_mean`` / ``null_sd`` / ``null_df`` / ``null_footage`` ``[F]`` (the self-referential statistics' null
    for new real footage, :meth:`set_footage_null`; df 0 = none, as a checkpoint without them loads) and
    ``score_null`` ``[4]`` (the same for the detector's own decision score, from real validation clips,
    :meth:`set_score_null`) and ``generated_cut`` ``[]`` (the decision score ``pass_rate`` of the generated validation
    clips reach, :meth:`set_generated_cut`; nan = unknown, as a checkpoint without it loads).
    """

    def __init__(self, feature_names: Sequence[str], hidden: int, dropout: float) -> None:
        super().__init__()
        if not feature_names:
            raise InputError("ForensicDetector needs at least one feature name")
        self.feature_names = list(feature_names)
        self.tools = list(dict.fromkeys(name.split(".")[0] for name in self.feature_names))
        n = len(self.feature_names)
        self.net = nn.Sequential(nn.Linear(2 * n, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, hidden),
                                 nn.GELU(), nn.Linear(hidden, 1))
        for name, value in (("feat_mean", torch.zeros(n)), ("feat_std", torch.ones(n)), ("ref_mean", torch.zeros(n)),
                            ("ref_std", torch.ones(n)), ("ref_sign", torch.zeros(n)),
                            ("logit_scale", torch.tensor(1.0)), ("anom_mean", torch.tensor(0.0)),
                            ("anom_std", torch.tensor(1.0)), ("platt_a", torch.tensor(1.0)),
                            ("platt_b", torch.tensor(0.0)), ("threshold", torch.tensor(0.5)),
                            ("pass_rate", torch.tensor(0.95)),
                            ("reliability", torch.full((len(self.tools),), 0.5)),
                            ("gen_mean", torch.full((n,), float("nan"))), ("gen_std", torch.full((n,), float("nan"))),
                            ("null_mean", torch.zeros(n)), ("null_sd", torch.ones(n)), ("null_df", torch.zeros(n)),
                            ("null_footage", torch.zeros(n)), ("score_null", torch.zeros(4)),
                            ("generated_cut", torch.tensor(float("nan")))):
            self.register_buffer(name, value)
        self._register_load_state_dict_pre_hook(self._fill_generated_reference)

    def _fill_generated_reference(self, state_dict: dict, prefix: str, *args: Any) -> None:
        """A state dict without the generated-side reference or the pass rate loads with the reference unknown (nan)
        and the pass rate 0.95, the rate a checkpoint without ``pass_rate`` had its threshold fixed at."""
        for name in ("gen_mean", "gen_std"):
            state_dict.setdefault(prefix + name, torch.full_like(getattr(self, name), float("nan")))
        for name, fill in (("null_mean", 0.0), ("null_sd", 1.0), ("null_df", 0.0), ("null_footage", 0.0),
                           ("score_null", 0.0)):
            state_dict.setdefault(prefix + name, torch.full_like(getattr(self, name), fill))  # df 0: no null
        state_dict.setdefault(prefix + "pass_rate", torch.tensor(0.95))  # the rate its threshold was fixed at
        state_dict.setdefault(prefix + "generated_cut", torch.tensor(float("nan")))  # none: never called real by it

    def set_normalisation(self, features: np.ndarray) -> None:
        """Standardisation statistics from a training matrix ``[N, F]`` (nan ignored)."""
        mean = np.nanmean(np.where(np.isfinite(features), features, np.nan), axis=0)
        std = np.nanstd(np.where(np.isfinite(features), features, np.nan), axis=0)
        mean = np.where(np.isfinite(mean), mean, 0.0)
        std = np.where(np.isfinite(std) & (std > 1e-8), std, 1.0)
        self.feat_mean.copy_(torch.as_tensor(mean, dtype=torch.float32))
        self.feat_std.copy_(torch.as_tensor(std, dtype=torch.float32))

    def set_reference(self, features: np.ndarray, labels: np.ndarray) -> None:
        """Real-video reference (mean, std over real rows), the sign of (generated mean - real mean) and the
        generated side's mean and std (nan with fewer than 2 generated values)."""
        real, fake = features[labels == 0], features[labels == 1]
        for j in range(features.shape[1]):
            r = real[:, j][np.isfinite(real[:, j])]
            f = fake[:, j][np.isfinite(fake[:, j])]
            if r.size >= 2:
                self.ref_mean[j] = float(r.mean())
                self.ref_std[j] = float(max(r.std(ddof=1), 1e-6 * max(1.0, abs(r.mean()))))
                self.ref_sign[j] = float(np.sign(f.mean() - r.mean())) if f.size else 0.0
            if f.size >= 2:
                self.gen_mean[j] = float(f.mean())
                self.gen_std[j] = float(max(f.std(ddof=1), 1e-6 * max(1.0, abs(f.mean()))))

    def set_footage_null(self, features: np.ndarray, labels: np.ndarray, footage: Sequence[str]) -> None:
        """The self-referential statistics' null (:func:`vision.forensics.statistics.fit_null`) from the real rows
        of ``features [N, F]`` (``labels [N]``, 0 = real) grouped by their ``footage [N]``; features measured on
        fewer than 2 footages keep no null (``null_df`` 0)."""
        real = np.asarray(labels) == 0
        null = fit_null(np.asarray(features)[real], self.feature_names,
                        [f for f, r in zip(footage, real) if r])
        for j, name in enumerate(self.feature_names):
            mean, sd, df, count = null.moments.get(name, (0.0, 1.0, 0.0, 0))  # df 0: no null
            self.null_mean[j], self.null_sd[j], self.null_df[j], self.null_footage[j] = mean, sd, df, count

    def set_score_null(self, scores: np.ndarray, footage: Sequence[str]) -> None:
        """The null of the detector's own decision score ``[M]`` over *real* validation clips of ``footage [M]``
        (:func:`vision.forensics.statistics.predictive_null`): ``score_null = (mean, sd, df, footages)``, df 0
        with fewer than 2 footages (no test)."""
        null = predictive_null(np.asarray(scores, np.float64), list(footage))
        self.score_null.copy_(torch.tensor(null if null is not None else (0.0, 1.0, 0.0, 0.0), dtype=torch.float32))

    def set_generated_cut(self, scores: np.ndarray) -> None:
        """``generated_cut``: the decision score that ``pass_rate`` of the *generated* validation clips' scores
        ``[M]`` reach (their ``1 - pass_rate`` quantile); nan with fewer than 2. Under it, the detector's score
        speaks for real footage (:func:`vision.forensics.predictor.self_tests`)."""
        scores = np.asarray(scores, np.float64)
        scores = scores[np.isfinite(scores)]
        cut = float(np.quantile(scores, 1.0 - float(self.pass_rate))) if scores.size >= 2 else float("nan")
        self.generated_cut.fill_(cut)

    def score_null_moments(self) -> tuple[float, float, float, int] | None:
        """``(mean, sd, df, footages)`` of :meth:`set_score_null`, None when none was fitted."""
        mean, sd, df, footage = (float(v) for v in self.score_null.tolist())
        return (mean, sd, df, int(footage)) if df >= 1 else None

    def footage_null(self) -> RealNull:
        """The stored null of the self-referential statistics (empty for a checkpoint without one)."""
        return RealNull({name: (float(self.null_mean[j]), float(self.null_sd[j]), float(self.null_df[j]),
                                int(self.null_footage[j]))
                         for j, name in enumerate(self.feature_names) if float(self.null_df[j]) >= 1})

    def reference(self) -> dict[str, dict[str, float]]:
        """The reference as ``{feature: {"mean", "std", "sign"[, "gen_mean", "gen_std"]}}`` (the tools' evidence
        format; the generated side only where it is known)."""
        out = {}
        for j, name in enumerate(self.feature_names):
            out[name] = {"mean": float(self.ref_mean[j]), "std": float(self.ref_std[j]),
                         "sign": float(self.ref_sign[j])}
            if bool(torch.isfinite(self.gen_mean[j])) and bool(torch.isfinite(self.gen_std[j])):
                out[name].update(gen_mean=float(self.gen_mean[j]), gen_std=float(self.gen_std[j]))
        return out

    def tool_reliability(self) -> dict[str, float]:
        """``{tool: reliability}`` (the ``reliability`` buffer by tool name)."""
        return {tool: float(r) for tool, r in zip(self.tools, self.reliability.tolist())}

    def prepare(self, features: torch.Tensor) -> torch.Tensor:
        """Raw ``[B, F]`` -> network input ``[B, 2F]`` (standardised, clipped to +-8, nan -> 0, mask)."""
        if features.ndim != 2 or features.shape[1] != len(self.feature_names):
            raise InputError(f"detector features must be [B, {len(self.feature_names)}]; got {tuple(features.shape)}")
        finite = torch.isfinite(features)
        z = (torch.where(finite, features, self.feat_mean) - self.feat_mean) / self.feat_std
        return torch.cat([z.clamp(-8, 8), (~finite).float()], dim=1)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """Raw features ``[B, F]`` -> logits ``[B]`` (uncalibrated, > 0 leans generated)."""
        return self.net(self.prepare(features)).squeeze(-1)

    def anomaly(self, features: torch.Tensor) -> torch.Tensor:
        """Deviation from the real reference ``A = mean_j clip(z_j, -10, 10)^2`` ``[B]`` (missing z = 0)."""
        z = ((features - self.ref_mean) / self.ref_std).clamp(-10, 10)
        return torch.where(torch.isfinite(z), z, torch.zeros_like(z)).pow(2).mean(dim=1)

    def decision_score(self, features: torch.Tensor) -> torch.Tensor:
        """Uncalibrated decision score ``s`` ``[B]`` (see the module docstring)."""
        return self(features) / self.logit_scale + (self.anomaly(features) - self.anom_mean) / self.anom_std

    def probability(self, features: torch.Tensor) -> torch.Tensor:
        """Calibrated probability of "generated" ``[B]``."""
        return torch.sigmoid(self.platt_a * self.decision_score(features) + self.platt_b)


def fit_platt(scores: np.ndarray, labels: np.ndarray, iterations: int = 200,
              balanced: bool = False) -> tuple[float, float]:
    """Platt scaling: ``(a, b)`` minimising the binary NLL of ``sigmoid(a * s + b)`` (L-BFGS from (1, 0); ``a`` is
    kept >= 0.05 so the score's order is never flipped or flattened). One class only: ``(1.0, 0.0)``.

    ``balanced``: each class weighs half of the NLL whatever its count, so the probability assumes equal priors of
    real and generated instead of the calibration set's ratio (a benchmark with eight generated clips per real one
    would otherwise shift every probability up by about log 8 in logit)."""
    scores = np.asarray(scores, np.float64)
    labels = np.asarray(labels, np.float64)
    if scores.size == 0 or len(np.unique(labels)) < 2:
        return 1.0, 0.0
    pos = float(labels.mean())
    weights = np.where(labels > 0.5, 0.5 / pos, 0.5 / (1.0 - pos)) if balanced else np.ones_like(labels)
    # its own autograd context: calibration runs at the end of validation, under no_grad or inference_mode
    with torch.inference_mode(False), torch.enable_grad():
        s = torch.as_tensor(scores)
        y = torch.as_tensor(labels)
        w = torch.as_tensor(weights)
        params = torch.tensor([1.0, 0.0], dtype=torch.float64, requires_grad=True)
        opt = torch.optim.LBFGS([params], lr=0.5, max_iter=iterations, line_search_fn="strong_wolfe")

        def closure() -> torch.Tensor:
            opt.zero_grad()
            a = params[0].clamp_min(0.05)
            loss = F.binary_cross_entropy_with_logits(a * s + params[1], y, weight=w) + 1e-4 * (params ** 2).sum()
            loss.backward()
            return loss

        opt.step(closure)
    a, b = params.detach().tolist()
    return max(float(a), 0.05), float(b)


def training_loss(model: ForensicDetector, features: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Class-balanced binary cross-entropy of ``model(features [B, F])`` against ``labels [B]`` (1 = generated):
    each class weighs half, with the batch's share of generated videos clamped to [0.05, 0.95]."""
    labels = labels.to(features.dtype)
    pos = labels.mean().clamp(0.05, 0.95)
    weight = torch.where(labels > 0.5, 0.5 / pos, 0.5 / (1 - pos))
    return F.binary_cross_entropy_with_logits(model(features), labels, weight=weight)


def tool_reliability(x: np.ndarray, y: np.ndarray, names: Sequence[str]) -> dict[str, float]:
    """Per tool, the best single-feature AUC (orientation-free, ``max(auc, 1 - auc)``) on ``x [N, F]`` (columns
    ``names``, ``tool.feature``) with labels ``y [N]``; 0.5 when it cannot be measured (one class, or fewer than
    4 finite values)."""
    best: dict[str, float] = {}
    for j, name in enumerate(names):
        tool = name.split(".")[0]
        col = x[:, j]
        ok = np.isfinite(col)
        auc = 0.5
        if ok.sum() >= 4 and len(np.unique(y[ok])) == 2:
            a = float(roc_auc_score(y[ok], col[ok]))
            auc = max(a, 1.0 - a)
        best[tool] = max(best.get(tool, 0.5), auc)
    return best


@torch.no_grad()
def calibrate(model: ForensicDetector, val_x: np.ndarray, val_y: np.ndarray, pass_rate: float = 0.95) -> None:
    """On validation videos ``val_x [N, F]`` (labels ``val_y [N]``): standardise the logit and the real-anomaly
    term, fit Platt scaling, fix the threshold so that ``pass_rate`` of the real ones are below it, and measure each
    tool's reliability. Runs in float32 on the model's device; the buffers are a deterministic function of
    (weights, ``val_x``, ``val_y``), so every rank given the same gathered rows computes the same ones."""
    device = model.threshold.device
    x = torch.as_tensor(val_x, dtype=torch.float32, device=device)
    val_y = np.asarray(val_y)
    was_training = model.training
    model.eval()
    logits = model(x).cpu().numpy()
    model.logit_scale.fill_(float(max(logits.std(), 1e-3)) if logits.size > 1 else 1.0)
    anomaly = model.anomaly(x).cpu().numpy()
    real_anomaly = anomaly[val_y == 0] if (val_y == 0).sum() >= 2 else anomaly
    model.anom_mean.fill_(float(real_anomaly.mean()))
    model.anom_std.fill_(float(max(real_anomaly.std(), 1e-3)) if real_anomaly.size > 1 else 1.0)
    scores = model.decision_score(x).cpu().numpy()
    a, b = fit_platt(scores, val_y, balanced=True)
    model.platt_a.fill_(a)
    model.platt_b.fill_(b)
    probs = model.probability(x).cpu().numpy()
    if (val_y == 0).any():
        model.threshold.fill_(threshold_from_real(probs[val_y == 0], pass_rate, dtype=np.float32))
        model.pass_rate.fill_(pass_rate)
    reliability = tool_reliability(np.asarray(val_x, np.float32), val_y, model.feature_names)
    model.reliability.copy_(torch.tensor([reliability.get(t, 0.5) for t in model.tools], dtype=torch.float32))
    model.train(was_training)
