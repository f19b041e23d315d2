"""The forensic tool library: one module per tool, all with the :class:`~vision.forensics.tools.base.ForensicTool`
interface. :func:`build_tools` builds them by name, :func:`run_tools` runs them on a clip.

Two kinds: :data:`CLASSICAL_TOOLS` need no pretrained file (hand-made statistics, and the shared geometry backbone
where one is given); :data:`PRETRAINED_TOOLS` measure with small real pretrained networks (:mod:`vision.weights`:
TCMonoDepth depth, ALIKE matches, MobileNetV2 ImageNet features, YuNet faces, and the real-perception backbone the
real tracker shares), whose files ``vision-fetch-weights``
brings (:data:`TOOL_WEIGHTS` names them); a tool without its file raises the error that names that command."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Iterator, Sequence

import torch

from vision.errors import InputError
from vision.forensics.tools.base import Clip, Evidence, ForensicTool, ToolResult, fit_reference, not_applicable
from vision.forensics.tools.appearance import AppearanceTool
from vision.forensics.tools.codec import CodecTool
from vision.forensics.tools.depth import DepthTool
from vision.forensics.tools.faces import FaceTool
from vision.forensics.tools.geometry import GeometryTool
from vision.forensics.tools.motion import MotionTool
from vision.forensics.tools.noise import NoiseTool
from vision.forensics.tools.npr import NPRTool
from vision.forensics.tools.periodicity import PeriodicityTool
from vision.forensics.tools.planar import PlanarTool
from vision.forensics.tools.residual import ResidualTool
from vision.forensics.tools.scene import SceneTool
from vision.forensics.tools.semantic import SemanticTool
from vision.forensics.tools.spectrum import SpectrumTool
from vision.forensics.tools.temporal import TemporalTool
from vision.forensics.tools.twoview import TwoViewTool

__all__ = ["Clip", "Evidence", "ForensicTool", "ToolResult", "fit_reference", "not_applicable", "TOOL_NAMES",
           "CLASSICAL_TOOLS", "PRETRAINED_TOOLS", "TOOL_WEIGHTS", "build_tools", "run_tools", "feature_names",
           "one_thread"]

CLASSICAL_TOOLS = ("spectrum", "residual", "npr", "temporal", "motion", "codec", "geometry", "periodicity", "planar",
                   "noise")
PRETRAINED_TOOLS = ("depth", "twoview", "semantic", "faces", "scene", "appearance")
TOOL_NAMES = CLASSICAL_TOOLS + PRETRAINED_TOOLS
#: the registered weight files (:mod:`vision.weights.registry`) each pretrained tool reads
TOOL_WEIGHTS: dict[str, tuple[str, ...]] = {"depth": ("tcmonodepth-small",),
                                            "twoview": ("alike-t", "tcmonodepth-small"),
                                            "semantic": ("mobilenetv2-imagenet",), "faces": ("yunet-120x160",),
                                            "scene": ("tcmonodepth-small", "nanotrack-v2"),
                                            "appearance": ("mobilenetv2-imagenet",)}
_CLASSES = {"spectrum": SpectrumTool, "residual": ResidualTool, "npr": NPRTool, "temporal": TemporalTool,
            "motion": MotionTool, "codec": CodecTool, "geometry": GeometryTool, "periodicity": PeriodicityTool,
            "planar": PlanarTool, "noise": NoiseTool, "depth": DepthTool, "twoview": TwoViewTool,
            "semantic": SemanticTool, "faces": FaceTool, "scene": SceneTool, "appearance": AppearanceTool}
_BACKBONE_TOOLS = {"geometry", "planar"}  # tools that take the optional geometry backbone


def build_tools(names: Sequence[str] = CLASSICAL_TOOLS,
                backbone: torch.nn.Module | None = None) -> list[ForensicTool]:
    """Instantiate tools by name (``backbone`` goes to the geometry and planar tools); unknown names raise
    ``InputError``; a pretrained tool whose weight file is missing or corrupt raises
    :class:`vision.weights.WeightsError` naming the ``vision-fetch-weights`` command, here rather than mid-analysis."""
    from vision.weights import weights_path

    tools: list[ForensicTool] = []
    for name in names:
        if name not in _CLASSES:
            raise InputError(f"unknown forensic tool {name!r}; choose from {', '.join(TOOL_NAMES)}")
        for weights in TOOL_WEIGHTS.get(name, ()):
            weights_path(weights)
        tools.append(_CLASSES[name](backbone=backbone) if name in _BACKBONE_TOOLS else _CLASSES[name]())
    return tools


def feature_names(tools: Sequence[ForensicTool]) -> list[str]:
    """Full feature names ``tool.feature`` of ``tools`` in a fixed order."""
    return [f"{t.name}.{f}" for t in tools for f in t.feature_names]


#: held by :func:`one_thread`: the thread count is the process's, so threads measuring at once take turns
_ONE_THREAD = threading.RLock()


def _new_lock_in_child() -> None:  # a process forked while another thread held the lock gets a free one
    global _ONE_THREAD
    _ONE_THREAD = threading.RLock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_lock_in_child)


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """torch's intra-op threads set to one inside the block, restored after.

    The pretrained networks' CPU kernels sum in an order that depends on the thread count, and a few features
    (``twoview``'s) follow those last bits; measured on one thread, every feature is the same on every machine, so
    a detector's calibration fitted on one machine holds on another. At the tools' sizes one thread is also the
    faster on two cores (no thread hand-off per small kernel); ``split_features(workers=...)`` measures several
    videos at once instead. The setting is the process's: Python threads in the block take turns."""
    with _ONE_THREAD:
        before = torch.get_num_threads()
        if before != 1:
            torch.set_num_threads(1)
        try:
            yield
        finally:
            if before != 1:
                torch.set_num_threads(before)


def run_tools(clip: Clip, tools: Sequence[ForensicTool],
              reference: dict[str, dict[str, float]] | None = None) -> dict[str, ToolResult]:
    """Run every tool on ``clip`` on one torch thread (:func:`one_thread`): ``{tool name: ToolResult}``
    (not-applicable results included), each with the wall-clock ``seconds`` it took."""
    results: dict[str, ToolResult] = {}
    with one_thread():
        for tool in tools:
            start = time.perf_counter()
            result = tool(clip, reference)
            result.seconds = time.perf_counter() - start
            results[tool.name] = result
    return results
