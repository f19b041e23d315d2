"""The common interface of every forensic tool: a clip in, named features plus evidence items out.

Conventions:
    * A :class:`Clip` holds ``frames`` as ``uint8 [T, H, W, 3]`` RGB, the frame rate, and (when it came from a
      file) the path of the encoded video, which the codec tool needs.
    * A tool returns a :class:`ToolResult`: ``features`` (name -> float; every name of ``tool.feature_names``
      is present, ``nan`` where a value could not be measured), ``evidence`` (one :class:`Evidence` per feature,
      naming the frames and image region it was measured on), or ``applicable=False`` with a ``reason`` and
      no features at all (a tool never returns noise where it cannot apply).
    * Reference distribution: the mean and standard deviation of every feature over *real* training videos
      (:func:`fit_reference`). An evidence item's ``z`` is ``(value - mean) / std``; ``direction`` says whether
      the deviation points to ``generated`` (its sign agrees with the sign that generated videos showed on the
      training set, ``sign`` in the reference) or to ``real``.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from vision.errors import InputError

__all__ = ["Clip", "Evidence", "ToolResult", "ForensicTool", "fit_reference", "to_gray", "not_applicable",
           "sample_indices", "max_block_region"]

# |z| under this is "within the real range": the item neither supports nor contradicts generated.
Z_NEUTRAL = 1.0


@dataclass
class Clip:
    """A video clip for analysis.

    Attributes:
        frames: ``uint8 [T, H, W, 3]`` RGB.
        fps: frames per second (for speeds and rates).
        path: the encoded video file the frames came from, or None (then codec tools do not apply).
        name: a label for reports.
    """

    frames: np.ndarray
    fps: float = 25.0
    path: Path | None = None
    name: str = "clip"
    # per-clip intermediate results shared by the tools (luma frames, frame changes), computed on first use;
    # ``frames`` must not be modified after the first call of :meth:`gray` or :meth:`frame_changes`
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        frames = np.asarray(self.frames)
        if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
            raise InputError(f"Clip.frames must be uint8 [T, H, W, 3]; got {frames.dtype} {tuple(frames.shape)}")
        if frames.shape[0] < 1 or frames.shape[1] < 8 or frames.shape[2] < 8:
            raise InputError(f"Clip.frames needs T >= 1 and H, W >= 8; got shape {tuple(frames.shape)}")
        if not math.isfinite(float(self.fps)) or float(self.fps) <= 0:
            raise InputError(f"Clip.fps must be positive; got {self.fps!r}")
        self.frames = frames
        self.path = None if self.path is None else Path(self.path)

    @property
    def num_frames(self) -> int:
        return int(self.frames.shape[0])

    @property
    def height(self) -> int:
        return int(self.frames.shape[1])

    @property
    def width(self) -> int:
        return int(self.frames.shape[2])

    def gray(self, index: int) -> np.ndarray:
        """Luma ``uint8 [H, W]`` of frame ``index`` (OpenCV ``COLOR_RGB2GRAY``), converted once per clip."""
        import cv2

        cache = self._cache.setdefault("gray", {})
        index = int(index)
        if index not in cache:
            cache[index] = cv2.cvtColor(self.frames[index], cv2.COLOR_RGB2GRAY)
        return cache[index]

    def frame_changes(self) -> np.ndarray:
        """``bool [T - 1]``: entry ``t`` is True when frame ``t + 1`` differs from frame ``t`` in any byte;
        computed once per clip, frame pair by frame pair (no clip-sized temporary)."""
        if "changes" not in self._cache:
            self._cache["changes"] = np.array([not np.array_equal(self.frames[t], self.frames[t + 1])
                                               for t in range(self.num_frames - 1)], bool)
        return self._cache["changes"]


@dataclass
class Evidence:
    """One measured fact about a clip.

    Attributes:
        tool: tool name. statistic: feature name (e.g. ``spectrum.hf_ratio``). value: the measured value.
        frames: frame indices it was measured on. region: ``[x0, y0, x1, y1]`` pixels (XYXY) or None = whole frame.
        description: what the statistic is, in words.
        ref_mean, ref_std: the real-video reference (None when no reference is known).
        z: standardised deviation from the real reference (None without a reference).
        direction: ``generated`` | ``real`` | ``neutral`` | ``unknown``.
        reliability: the tool's measured reliability (validation AUC of its features) in [0.5, 1], default 0.5.
        weight: evidential weight (set by the evidence graph).
    """

    tool: str
    statistic: str
    value: float
    frames: list[int] = field(default_factory=list)
    region: list[int] | None = None
    description: str = ""
    ref_mean: float | None = None
    ref_std: float | None = None
    z: float | None = None
    direction: str = "unknown"
    reliability: float = 0.5
    weight: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for key in ("value", "ref_mean", "ref_std", "z", "reliability", "weight"):
            if out[key] is not None:
                out[key] = float(out[key]) if math.isfinite(float(out[key])) else None
        return out


@dataclass
class ToolResult:
    """The output of one tool on one clip (see the module docstring)."""

    tool: str
    applicable: bool
    reason: str = ""
    features: dict[str, float] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)  # arrays for plots (per-frame curves, profiles)
    seconds: float = 0.0  # wall-clock time the tool took on the clip (set by run_tools)

    def to_dict(self) -> dict[str, Any]:
        return {"tool": self.tool, "applicable": self.applicable, "reason": self.reason, "seconds": self.seconds,
                "features": {k: (float(v) if math.isfinite(float(v)) else None) for k, v in self.features.items()},
                "evidence": [e.to_dict() for e in self.evidence]}


def not_applicable(tool: str, reason: str) -> ToolResult:
    """The explicit "this tool cannot apply to this clip" result."""
    return ToolResult(tool=tool, applicable=False, reason=reason)


def to_gray(frames: np.ndarray) -> np.ndarray:
    """``uint8 [T, H, W, 3]`` RGB -> float32 luma ``[T, H, W]`` in [0, 1] (BT.601 weights)."""
    rgb = frames.astype(np.float32) / 255.0
    return rgb[..., 0] * 0.299 + rgb[..., 1] * 0.587 + rgb[..., 2] * 0.114


class ForensicTool(ABC):
    """Base class. Subclasses set ``name``, ``feature_names``, ``descriptions`` and ``min_frames`` and implement
    :meth:`measure` (features + where they were measured) and optionally :meth:`check` (applicability)."""

    name: str = "tool"
    feature_names: tuple[str, ...] = ()
    descriptions: dict[str, str] = {}
    min_frames: int = 1
    #: bumped whenever the tool's feature values change: feature caches are keyed by it, so none is read stale
    version: int = 1

    def check(self, clip: Clip) -> str | None:
        """Return a reason string when the tool cannot apply to ``clip``, else None."""
        if clip.num_frames < self.min_frames:
            return f"needs at least {self.min_frames} frames, the clip has {clip.num_frames}"
        return None

    @abstractmethod
    def measure(self, clip: Clip) -> tuple[dict[str, float], dict[str, tuple[list[int], list[int] | None]],
                                           dict[str, Any]] | str:
        """Return ``(features, locations, extras)``: feature values keyed by short name (without the tool prefix),
        ``locations[name] = (frame indices, region XYXY or None)`` and arrays for plots; or a reason string when
        measuring showed that the tool cannot apply (e.g. a frozen video for a temporal tool)."""

    def __call__(self, clip: Clip, reference: dict[str, dict[str, float]] | None = None) -> ToolResult:
        """Run the tool; ``reference`` maps full feature names to ``{"mean", "std", "sign"}`` (see module doc)."""
        reason = self.check(clip)
        if reason is not None:
            return not_applicable(self.name, reason)
        measured = self.measure(clip)
        if isinstance(measured, str):  # a tool found out while measuring that it cannot apply
            return not_applicable(self.name, measured)
        values, locations, extras = measured
        features: dict[str, float] = {}
        evidence: list[Evidence] = []
        for short in self.feature_names:
            full = f"{self.name}.{short}"
            value = float(values.get(short, float("nan")))
            features[full] = value
            frames, region = locations.get(short, (list(range(clip.num_frames)), None))
            item = Evidence(tool=self.name, statistic=full, value=value, frames=[int(f) for f in frames],
                            region=None if region is None else [int(v) for v in region],
                            description=self.descriptions.get(short, ""))
            ref = (reference or {}).get(full)
            if ref is not None and math.isfinite(value):
                item.ref_mean, item.ref_std = float(ref["mean"]), float(ref["std"])
                item.z = (value - item.ref_mean) / max(item.ref_std, 1e-8)
                sign = float(ref.get("sign", 0.0))
                if abs(item.z) < Z_NEUTRAL or sign == 0.0:
                    item.direction = "neutral"
                else:
                    item.direction = "generated" if item.z * sign > 0 else "real"
            evidence.append(item)
        return ToolResult(tool=self.name, applicable=True, features=features, evidence=evidence, extras=extras)


def sample_indices(num_frames: int, count: int) -> np.ndarray:
    """At most ``count`` frame indices spread evenly over ``[0, num_frames)`` (all of them when fewer)."""
    if num_frames <= count:
        return np.arange(num_frames)
    return np.unique(np.linspace(0, num_frames - 1, count).round().astype(np.int64))


def max_block_region(energy: np.ndarray, block: int) -> list[int]:
    """The XYXY pixel box of the ``block x block`` tile of ``energy [H, W]`` with the largest mean."""
    h, w = energy.shape
    bh, bw = max(1, h // block), max(1, w // block)
    tiles = energy[: bh * block, : bw * block].reshape(bh, block, bw, block).mean(axis=(1, 3)) if h >= block and \
        w >= block else energy.mean(keepdims=True)
    iy, ix = np.unravel_index(int(np.argmax(tiles)), tiles.shape)
    size = block if h >= block and w >= block else max(h, w)
    return [int(ix * size), int(iy * size), int(min(w, (ix + 1) * size)), int(min(h, (iy + 1) * size))]


def fit_reference(features: Sequence[dict[str, float]], labels: Sequence[int]) -> dict[str, dict[str, float]]:
    """Reference distribution of real videos: per feature the mean and std over ``labels == 0`` rows, and
    ``sign`` = the sign of (mean over generated - mean over real), 0 when there are no generated rows.

    Args:
        features: one dict per video (full feature name -> value; nan / missing = not measured).
        labels: 0 = real, 1 = generated, one per video.
    """
    if len(features) != len(labels):
        raise InputError(f"fit_reference got {len(features)} feature rows and {len(labels)} labels")
    names = sorted({k for row in features for k in row})
    reference: dict[str, dict[str, float]] = {}
    for name in names:
        real = np.array([row.get(name, np.nan) for row, y in zip(features, labels) if y == 0], np.float64)
        fake = np.array([row.get(name, np.nan) for row, y in zip(features, labels) if y == 1], np.float64)
        real, fake = real[np.isfinite(real)], fake[np.isfinite(fake)]
        if real.size < 2:
            continue
        std = float(real.std(ddof=1))
        scale = max(std, 1e-6 * max(1.0, abs(float(real.mean()))))
        sign = float(np.sign(fake.mean() - real.mean())) if fake.size else 0.0
        reference[name] = {"mean": float(real.mean()), "std": scale, "sign": sign}
    return reference
