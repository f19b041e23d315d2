"""The forensics task's one definition: its model config, how to build the detector, how to load a checkpoint.

A checkpoint written by :class:`vision.forensics.lightning.ForensicsModule` holds the config as a plain dict under
``hyper_parameters["config"]`` and the detector's weights *and buffers* under ``state_dict["model."]``: the
normalisation, the real reference, the calibration, the threshold and the per-tool reliability (see
:class:`vision.forensics.model.ForensicDetector`), so :func:`load` restores everything
:class:`vision.forensics.predictor.ForensicsPredictor` needs. Inference code imports this module, never
:mod:`vision.training`.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from vision.checkpoint import TaskConfig, load_weights, read_task_checkpoint
from vision.errors import InputError
from vision.forensics.model import ForensicDetector
from vision.forensics.tools import TOOL_NAMES, build_tools, feature_names

__all__ = ["ForensicsConfig", "DEFAULT_TOOLS", "build_model", "load"]

#: The tools a detector uses unless its config names others: every tool of the library.
DEFAULT_TOOLS: tuple[str, ...] = TOOL_NAMES


@dataclasses.dataclass
class ForensicsConfig(TaskConfig):
    """What defines a forensic detector.

    Args:
        tools: forensic tool names (:data:`vision.forensics.tools.TOOL_NAMES`), in order; they fix the feature
            columns ``tool.feature`` of the detector's input.
        hidden: MLP width. dropout: MLP dropout.
        image_size: the analysis frame size: clips are resized (shorter side) and centre-cropped to
            ``image_size x image_size`` (:func:`vision.forensics.features.load_clip`).
        max_frames: the first ``max_frames`` frames of a video are analysed.
    """

    tools: list[str] = dataclasses.field(default_factory=lambda: list(DEFAULT_TOOLS))
    hidden: int = 32
    dropout: float = 0.1
    image_size: int = 64
    max_frames: int = 16

    def __post_init__(self) -> None:
        self.tools = list(self.tools)
        if not self.tools:
            raise InputError("ForensicsConfig.tools must name at least one tool")
        unknown = [t for t in self.tools if t not in TOOL_NAMES]
        if unknown:
            raise InputError(f"ForensicsConfig.tools: unknown tool(s) {unknown}; choose from {list(TOOL_NAMES)}")
        if len(set(self.tools)) != len(self.tools):
            raise InputError(f"ForensicsConfig.tools names a tool twice: {self.tools}")
        for name in ("hidden", "image_size", "max_frames"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InputError(f"ForensicsConfig.{name} must be an integer >= 1, got {value!r}")
        if not 0.0 <= float(self.dropout) < 1.0:
            raise InputError(f"ForensicsConfig.dropout must be in [0, 1), got {self.dropout!r}")

    @property
    def feature_names(self) -> list[str]:
        """The detector's input columns, ``tool.feature`` for every feature of every tool, in order."""
        return feature_names(build_tools(self.tools))


def build_model(config: ForensicsConfig) -> ForensicDetector:
    """A fresh (untrained, uncalibrated) :class:`ForensicDetector` over the features of ``config.tools``."""
    return ForensicDetector(config.feature_names, hidden=config.hidden, dropout=config.dropout)


def load(checkpoint: str | Path, map_location: Any = "cpu") -> tuple[ForensicDetector, ForensicsConfig]:
    """Read a forensics checkpoint (``weights_only=True``): ``(detector in eval mode, config)``.

    Raises:
        DataError: the file is missing or unreadable, is not a forensics checkpoint of this version, or its
            weights do not fit the config's detector (names the file).
    """
    config, weights, _ = read_task_checkpoint(checkpoint, ForensicsConfig, prefix="model.",
                                              map_location=map_location)
    model = build_model(config)
    load_weights(model, weights, checkpoint)
    return model.eval(), config
