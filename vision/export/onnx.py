"""Export a :class:`~vision.export.graphs.Graph` to ONNX and check it with onnxruntime against PyTorch.

:func:`export_graph` uses ``torch.onnx.export(..., dynamo=True)`` (the ``torch.export`` based exporter, opset 18):
the TorchScript exporter (``dynamo=False``) stops at ops it lacks (the point head's ``expm1`` at opset 17) and fixes
traced sizes, while the dynamo exporter keeps the graph's dynamic axes as symbolic dimensions (``batch``, ``views``,
``classes``, ``pairs``, ``tokens``). The weights go inside the ``.onnx`` file (one file per graph).

:func:`check_graph` runs an exported graph with onnxruntime (CPU) and PyTorch on the same inputs and returns the
largest absolute difference per output; :class:`~vision.errors.DataError` when one exceeds the graph's tolerance,
``atol + rtol * |PyTorch's value|`` (integer outputs must match exactly; NaN and infinities must be where PyTorch
has them).
"""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch

from vision.errors import DataError, InputError
from vision.export.graphs import Graph

__all__ = ["OPSET", "export_graph", "check_graph", "onnx_session", "run_session"]

#: the ONNX opset the graphs are exported at
OPSET = 18


def _require() -> None:
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
        import onnxscript  # noqa: F401
    except ImportError as exc:
        raise InputError(f"ONNX export needs the export extra (pip install -e '.[export]'): {exc}") from None


def export_graph(graph: Graph, path: str | Path) -> Path:
    """Export ``graph`` to the file ``path`` (one ``.onnx`` file, weights inside) with its dynamic axes; the
    exporter's progress messages are silenced."""
    _require()
    import onnx

    path = Path(path)
    dims: dict[str, torch.export.Dim] = {}
    shapes = {}
    for name in graph.input_names:
        axes = graph.dynamic.get(name, {})
        shapes[name] = {axis: dims.setdefault(dim, torch.export.Dim(dim, min=1, max=4096))
                        for axis, dim in axes.items()}
    quiet = io.StringIO()
    with torch.no_grad(), warnings.catch_warnings(), contextlib.redirect_stdout(quiet), \
            contextlib.redirect_stderr(quiet):
        warnings.simplefilter("ignore")
        level = logging.getLogger("torch").level
        logging.getLogger("torch").setLevel(logging.ERROR)
        try:
            program = torch.onnx.export(graph.module, graph.inputs, input_names=list(graph.input_names),
                                        output_names=list(graph.output_names), dynamic_shapes=shapes,
                                        opset_version=OPSET, dynamo=True, external_data=False)
        finally:
            logging.getLogger("torch").setLevel(level)
    onnx.save_model(program.model_proto, str(path))
    return path


def onnx_session(path: str | Path, threads: int | None = None):
    """An onnxruntime CPU session of the file ``path`` (``threads``: intra-op threads; None: onnxruntime's)."""
    _require()
    import onnxruntime as ort

    options = ort.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = int(threads)
    options.log_severity_level = 3
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def run_session(session, inputs: Sequence[torch.Tensor]) -> list[np.ndarray]:
    """Run ``session`` on ``inputs`` (in the graph's input order)."""
    feed = {meta.name: tensor.detach().cpu().numpy() for meta, tensor in zip(session.get_inputs(), inputs)}
    return session.run(None, feed)


def check_graph(graph: Graph, path: str | Path, inputs: Sequence[torch.Tensor] | None = None,
                session=None) -> dict[str, float]:
    """The largest absolute difference per output between onnxruntime (the file ``path``) and PyTorch
    (``graph.module``) on ``inputs`` (None: the graph's example inputs).

    Raises:
        DataError: an output's shape differs, a float output by more than ``graph.atol + graph.rtol * |value|``, or
            an integer output (``graph.exact``) differs at all (naming the file and the output).
    """
    inputs = graph.inputs if inputs is None else tuple(inputs)
    session = session or onnx_session(path)
    got = run_session(session, inputs)
    with torch.no_grad():
        want = graph.module(*inputs)
    differences = {}
    for name, reference, value in zip(graph.output_names, want, got):
        reference = reference.detach().cpu().numpy()
        if reference.shape != value.shape:
            raise DataError(f"onnxruntime's output has shape {value.shape}, PyTorch's {reference.shape}", file=path,
                            field=name)
        if name in graph.exact:
            differing = int((reference != value).sum())
            if differing:
                raise DataError(f"{differing} of {reference.size} values differ from PyTorch's", file=path,
                                field=name)
            differences[name] = 0.0
            continue
        reference, value = reference.astype(np.float64), value.astype(np.float64)
        if not np.array_equal(np.isnan(reference), np.isnan(value)):  # NaN where the other has a number
            raise DataError("NaN at other places than PyTorch's", file=path, field=name)
        with np.errstate(invalid="ignore"):  # equal infinities (an untrained camera's focal) differ by 0
            gaps = np.nan_to_num(np.where(reference == value, 0.0, np.abs(reference - value)), nan=0.0)
            allowed = graph.atol + graph.rtol * np.nan_to_num(np.abs(reference), nan=0.0, posinf=0.0)
        difference = float(gaps.max(initial=0.0))
        if not (gaps <= allowed).all():
            raise DataError(f"differs from PyTorch by up to {difference:.3g} (tolerance {graph.atol:g} + "
                            f"{graph.rtol:g} x |value|)", file=path, field=name)
        differences[name] = difference
    return differences
