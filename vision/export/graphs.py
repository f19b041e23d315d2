"""The graphs that export to ONNX: plain tensors in, a tuple of tensors out, no Python structures or data-dependent
branches inside.

Each :class:`Graph` is a wrapper module over a loaded model plus what its export needs: example inputs, input and
output names, the axes that stay dynamic, and the tolerance its onnxruntime check is held to.

Each task's graphs are built by ``graphs(model, config, folder, seed)`` of its folder's ``onnx.py``
(:mod:`vision.detection.onnx`, :mod:`vision.geometry.onnx`, :mod:`vision.tracking.onnx`; the registry's
``export_graphs``); :func:`graphs_of` finds them for a task's name.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import torch
from torch import nn

from vision.errors import InputError
from vision.tasks import TASKS, get_task

__all__ = ["Graph", "graphs_of", "example_views"]


@dataclasses.dataclass
class Graph:
    """A module to export and how.

    Args:
        name: the file stem (``<name>.onnx``).
        module: the wrapper (eval mode); ``module(*inputs)`` returns a tuple, one tensor per output name.
        inputs: example inputs, used to trace the export.
        input_names / output_names: the ONNX graph's.
        dynamic: input name -> {axis: dimension name} for the axes that stay dynamic.
        atol / rtol: onnxruntime's float outputs must lie within ``atol + rtol * |PyTorch's|`` of PyTorch's
            (float32 rounding grows with the value: an untrained camera's focal length is hundreds of pixels).
        exact: outputs that must match exactly (integer labels).
    """

    name: str
    module: nn.Module
    inputs: tuple[torch.Tensor, ...]
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    dynamic: dict[str, dict[int, str]]
    atol: float = 1e-4
    rtol: float = 1e-4
    exact: tuple[str, ...] = ()


def example_views(size: int, views: int, seed: int = 0) -> torch.Tensor:
    """``[views, 3, size, size]`` float views in [0, 1] of one scene of the synthetic renderer
    (:func:`vision.synthetic.scenes.generate_scene`): real images to trace and check an export with."""
    from vision.synthetic.scenes import generate_scene

    scene = generate_scene(seed, views=views, size=size, threads=1)
    return torch.from_numpy(np.ascontiguousarray(scene.rgb)).permute(0, 3, 1, 2).float() / 255.0


def graphs_of(task: str, model: nn.Module, config: Any, folder: Any = None, seed: int = 0) -> list[Graph]:
    """The graphs of a loaded ``model`` of ``task``: ``graphs`` of the task's ``onnx.py`` (:data:`vision.tasks.PARTS`),
    with example inputs from the synthetic renderer at the model's input size (two views: a dynamic axis traced at 1
    would be fixed to 1). ``folder``: the model folder or checkpoint the model came from (the detector's example
    text is its training vocabulary's embeddings when it records one), or None.

    Raises:
        InputError: the task exports nothing (forensics), or a tracker without the decoder's graph inputs.
    """
    entry = get_task(task)
    if not entry.has("export_graphs"):
        exporting = ", ".join(t.name for t in TASKS if t.has("export_graphs"))
        raise InputError(f"the {task} task has no ONNX export (exports: {exporting})")
    return entry.resolve("export_graphs")(model.eval(), config, folder, seed)


