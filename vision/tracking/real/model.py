"""G2TAM on real video (:class:`RealG2TAM`): the real-perception backbone (:mod:`vision.geometry.real_backbone`) gives each
frame's depth and camera; each prompted object is a :class:`~vision.tracking.real.target.Target` (NanoTrack's
appearance memory, the 3D memory, the presence head, re-acquisition); one NanoTrack network and one presence head
serve every object.

Frames are uint8 ``[H, W, 3]`` RGB in time order; boxes ``(x, y, w, h)`` in pixels.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from torch import nn

from vision.errors import DataError, InputError
from vision.geometry.real_backbone import FrameGeometry, RealPerception, RealPerceptionConfig
from vision.tracking.nanotrack import NanoTracker
from vision.tracking.real.presence import MEMORIES, PresenceHead
from vision.tracking.real.target import Answer, Target, TargetConfig

__all__ = ["RealTrackerConfig", "RealG2TAM", "check_box"]


@dataclasses.dataclass(frozen=True)
class RealTrackerConfig:
    """What defines the real tracker (kept in its checkpoints as plain data, :meth:`to_dict`).

    Args:
        memory: ``"3d"`` (G2TAM: appearance and 3D memory) or ``"2d"`` (the control: appearance only).
        hidden: the presence head's hidden width.
        max_objects: the most objects one video may be prompted with.
        perception: the backbone's :class:`RealPerceptionConfig` fields (those not given take their defaults; all
            are kept).
        target: the targets' :class:`TargetConfig` fields (``use_memory`` follows ``memory``).
    """

    #: the task its checkpoints and model folders record (a model folder reads this config through
    #: :meth:`vision.tracking.task.TrackingConfig.variant`)
    task: ClassVar[str] = "tracking"

    memory: str = "3d"
    hidden: int = 32
    max_objects: int = 8
    perception: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    target: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.memory not in MEMORIES:
            raise InputError(f"RealTrackerConfig.memory must be one of {MEMORIES}, got {self.memory!r}")
        if int(self.max_objects) < 1:
            raise InputError(f"RealTrackerConfig.max_objects must be >= 1, got {self.max_objects}")
        # every field written out, defaults included: equal configs compare equal however they were given
        object.__setattr__(self, "perception", dataclasses.asdict(self.perception_config()))
        target = dataclasses.asdict(self.target_config())
        del target["use_memory"]  # it follows memory
        object.__setattr__(self, "target", target)

    def perception_config(self) -> RealPerceptionConfig:
        return RealPerceptionConfig(**dict(self.perception))

    def target_config(self) -> TargetConfig:
        if "use_memory" in self.target:
            raise InputError("RealTrackerConfig.target: use_memory follows memory; do not set it")
        return TargetConfig(**dict(self.target), use_memory=self.memory == "3d")

    @classmethod
    def variant(cls, hyper_parameters: Mapping[str, Any]) -> type:
        """This class (:meth:`vision.task_config.TaskConfig.variant`: a model folder read as a real tracker's)."""
        return cls

    @classmethod
    def from_value(cls, value: Any, file: str | Path | None = None, field: str = "hyper_parameters.config"
                   ) -> RealTrackerConfig:
        """The config of ``value`` (a mapping of its fields, or a config); a refused one is an :class:`InputError`,
        or with ``file`` (where it was read) a :class:`DataError` naming the file and ``field``."""
        if isinstance(value, cls):
            return value
        try:
            if not isinstance(value, Mapping):
                raise InputError(f"a RealTrackerConfig must be a mapping of its fields, got {type(value).__name__}")
            known = {f.name for f in dataclasses.fields(cls)}
            unknown = sorted(str(k) for k in value if k not in known)
            if unknown:
                raise InputError(f"unknown RealTrackerConfig field(s) {unknown}; known: {sorted(known)}")
            return cls(**dict(value))
        except (InputError, TypeError) as exc:
            if file is None:
                raise InputError(str(exc)) from None
            raise DataError(str(exc), file=file, field=field) from None

    def to_dict(self) -> dict[str, Any]:
        """Plain data with every field of the backbone's and the targets' configs written out (defaults included),
        so a checkpoint or model folder records the backbone it was trained on."""
        return {"memory": self.memory, "hidden": int(self.hidden), "max_objects": int(self.max_objects),
                "perception": dict(self.perception), "target": dict(self.target)}


def check_box(box: Any, frame_size: tuple[int, int], what: str = "box") -> np.ndarray:
    """A prompt box ``(x, y, w, h)`` checked against a ``(W, H)`` frame: finite, positive size, overlapping the
    frame; the part inside the frame is returned (float64). Raises :class:`InputError` naming ``what``."""
    values = np.asarray(box, np.float64).reshape(-1)
    if values.shape != (4,) or not np.isfinite(values).all():
        raise InputError(f"{what} must be 4 finite numbers (x, y, w, h), got {list(np.ravel(box))}")
    x, y, w, h = values
    if w <= 0 or h <= 0:
        raise InputError(f"{what} must have a positive width and height, got w={w:g}, h={h:g}")
    width, height = frame_size
    x0, y0, x1, y1 = max(x, 0.0), max(y, 0.0), min(x + w, width), min(y + h, height)
    if x1 - x0 < 1 or y1 - y0 < 1:
        raise InputError(f"{what} ({x:g}, {y:g}, {w:g}, {h:g}) lies outside the {width}x{height} frame")
    return np.array([x0, y0, x1 - x0, y1 - y0])


class RealG2TAM(nn.Module):
    """The real-video tracker (see the module docstring).

    Args:
        config: :class:`RealTrackerConfig` (or a mapping of its fields).
        nanotrack: a loaded NanoTrack network (None: the registered weights of the perception config's
            ``features``); depth_net: a loaded TCMonoDepth network (None: registered); detector_net: a YOLOX-nano
            network for the backbone's ``detector`` (None: registered).
    """

    def __init__(self, config: RealTrackerConfig | Mapping[str, Any] | None = None, nanotrack: nn.Module | None = None,
                 depth_net: nn.Module | None = None, detector_net: nn.Module | None = None) -> None:
        super().__init__()
        if config is None:
            config = RealTrackerConfig()
        elif not isinstance(config, RealTrackerConfig):
            config = RealTrackerConfig(**dict(config))
        self.config = config
        perception = config.perception_config()
        if nanotrack is None:
            from vision.weights.nets.nanotrack import load_nanotrack

            nanotrack = load_nanotrack(perception.features.split("-")[1])
        self.perception = RealPerception(perception, depth_net=depth_net, feature_net=nanotrack,
                                         detector_net=detector_net)
        self.head = PresenceHead(config.memory, config.hidden)
        self.target_config = config.target_config()

    @property
    def name(self) -> str:
        """What answered, for users and logs."""
        return f"G2TAM-real ({self.config.memory} memory, {self.config.perception_config().features})"

    def make_target(self, frame: np.ndarray, geometry: FrameGeometry, box: np.ndarray) -> Target:
        """A fresh target prompted with ``box (x, y, w, h)`` on ``frame`` (whose geometry is ``geometry``)."""
        box = check_box(box, geometry.frame_size)
        return Target(NanoTracker(self.perception.feature_net), self.head, self.target_config, frame, geometry, box)

    def track(self, frames: Iterable[np.ndarray], prompts: Mapping[int, tuple[int, Any]]
              ) -> Iterator[tuple[int, FrameGeometry, dict[int, Answer]]]:
        """Follow the prompted objects through ``frames``.

        Args:
            frames: uint8 ``[H, W, 3]`` RGB frames in time order (an iterable: a stream works).
            prompts: ``{obj_id: (frame index, box (x, y, w, h))}``.

        Yields:
            ``(frame index, geometry, {obj_id: Answer})`` for every frame; an object appears from its prompt's
            frame on (its prompt frame answers with the prompt box, presence 1).
        """
        if len(prompts) > self.config.max_objects:
            raise InputError(f"{len(prompts)} objects prompted, more than the configured maximum "
                             f"{self.config.max_objects} (RealTrackerConfig.max_objects)")
        self.perception.reset()
        targets: dict[int, Target] = {}
        for t, frame in enumerate(frames):
            geometry = self.perception.step(frame)
            answers = {}
            for obj_id, target in targets.items():
                answers[obj_id] = target.step(frame, geometry)
            for obj_id, (view, box) in prompts.items():
                if view == t:
                    targets[obj_id] = self.make_target(frame, geometry, box)
                    answers[obj_id] = Answer(targets[obj_id].prompt_box, 1.0, True, np.zeros(0, np.float32),
                                             "prompt")
            yield t, geometry, answers
        self.perception.reset()
