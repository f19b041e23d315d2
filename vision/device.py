"""Where and in what precision a model runs: one rule for every predictor, ``vision-predict`` and the demo.

- :func:`resolve_device` turns ``"auto" | "cpu" | "cuda" | "cuda:N" | "mps"`` (or a ``torch.device``) into a
  ``torch.device``; ``auto`` picks CUDA, then MPS, then the CPU. Asking for a device this machine lacks is an
  :class:`~vision.errors.InputError` that says so in one line.
- :func:`parse_precision` turns ``"32" | "bf16" | "16"`` (Lightning's spellings ``"32-true"``, ``"bf16-mixed"``,
  ``"16-mixed"`` too, or a ``torch.dtype``) into the compute dtype.
- :func:`autocast` is the one context every predictor runs its networks in: mixed precision (weights stay float32,
  matmuls and convolutions run in the compute dtype, as Lightning's ``bf16-mixed``), a no-op for float32.
  :func:`check_precision` refuses a pair the device cannot run, before a model is loaded.
- :func:`device_error` turns the error a backend raises for an operator it lacks (MPS) into one line.
- :func:`placement` is the one device / precision preamble of every predictor's constructor, and
  :func:`load_for_inference` the one of every ``from_checkpoint``: the pair is checked before anything is read, then
  the model is read through the task's ``load`` (its folder's ``task.py``, given by the predictor) straight onto the
  device.

Nothing here imports Lightning: inference code uses it.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path
from collections.abc import Callable
from typing import Any, ContextManager

import torch

from vision.errors import InputError, VisionError

__all__ = ["DEVICES", "PRECISIONS", "PRECISION_CHOICES", "autocast", "check_precision", "describe_device",
           "device_error", "load_for_inference", "model_device", "parse_precision", "placement", "precision_name",
           "resolve_device"]

#: what ``--device`` accepts (``cuda:N`` too)
DEVICES = ("auto", "cpu", "cuda", "mps")

#: what ``--precision`` accepts -> the compute dtype
PRECISIONS: dict[str, torch.dtype] = {"32": torch.float32, "bf16": torch.bfloat16, "16": torch.float16}

#: the ``choices`` of every ``--precision`` option (CLI and demo): the names of :data:`PRECISIONS`, in its order
PRECISION_CHOICES: tuple[str, ...] = tuple(PRECISIONS)

_ALIASES = {"32-true": "32", "fp32": "32", "float32": "32", "bf16-mixed": "bf16", "bfloat16": "bf16",
            "16-mixed": "16", "fp16": "16", "float16": "16"}


def _mps_available() -> bool:
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())


def resolve_device(spec: str | torch.device | None = "auto") -> torch.device:
    """The ``torch.device`` of ``spec`` (None means ``auto``: CUDA, then MPS, then the CPU).

    Raises:
        InputError: an unknown name, CUDA where there is none (or an index past the last GPU), MPS where there
            is none.
    """
    if isinstance(spec, torch.device):
        spec = str(spec)
    text = "auto" if spec is None else str(spec).strip().lower()
    if text == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", torch.cuda.current_device())
        return torch.device("mps") if _mps_available() else torch.device("cpu")
    if text == "cpu":
        return torch.device("cpu")
    match = re.fullmatch(r"cuda(?::(\d+))?", text)
    if match:
        if not torch.cuda.is_available():
            raise InputError(f"device {spec!r}: CUDA is not available on this machine (torch {torch.__version__}, "
                             f"{'built without CUDA' if torch.version.cuda is None else 'no GPU found'}); use "
                             "--device cpu or auto")
        index = int(match.group(1) or torch.cuda.current_device())
        if index >= torch.cuda.device_count():
            raise InputError(f"device {spec!r}: this machine has {torch.cuda.device_count()} CUDA device(s), "
                             f"numbered from 0")
        return torch.device("cuda", index)
    if text == "mps":
        if not _mps_available():
            raise InputError(f"device {spec!r}: Apple's MPS backend is not available here (it needs macOS 12.3+ on "
                             "Apple silicon and a torch built with it); use --device cpu or auto")
        return torch.device("mps")
    raise InputError(f"unknown device {spec!r}; expected one of auto, cpu, cuda, cuda:N, mps")


def describe_device(device: torch.device) -> str:
    """One line for the user: which device runs, with the GPU's name."""
    if device.type == "cuda":
        return f"device: {device} ({torch.cuda.get_device_name(device)})"
    if device.type == "mps":
        return "device: mps (Apple GPU)"
    return f"device: {device}"


def parse_precision(spec: str | torch.dtype | None = "32") -> torch.dtype:
    """The compute dtype of ``spec`` (see the module docstring); None is float32. Unknown names raise
    :class:`InputError`."""
    if isinstance(spec, torch.dtype):
        if spec not in PRECISIONS.values():
            raise InputError(f"precision {spec}: expected one of torch.float32, torch.bfloat16, torch.float16")
        return spec
    if spec is None:
        return torch.float32
    text = _ALIASES.get(str(spec).strip().lower(), str(spec).strip().lower())
    if text not in PRECISIONS:
        raise InputError(f"unknown precision {spec!r}; expected one of {', '.join(PRECISIONS)}")
    return PRECISIONS[text]


def precision_name(dtype: torch.dtype) -> str:
    """``"32"``, ``"bf16"`` or ``"16"`` of a compute dtype."""
    return {v: k for k, v in PRECISIONS.items()}[dtype]


def check_precision(device: torch.device, dtype: torch.dtype) -> None:
    """Refuse a precision the device cannot run (:class:`InputError`, one line naming the device and the
    precision): autocast must exist for the device type and dtype, float16 is refused on the CPU (as Lightning
    refuses ``16-mixed`` there: the CPU's mixed precision is bf16, and the networks' constants overflow float16's
    range of +-65504), and one small matmul must run in it on the device (bf16 on a GPU before Ampere, an MPS
    without bf16)."""
    if dtype == torch.float32:
        return
    name = precision_name(dtype)
    hint = "use --precision 32" + ("" if device.type != "cpu" else " (or bf16)" if dtype == torch.float16 else "")
    if not torch.amp.is_autocast_available(device.type):
        raise InputError(f"precision {name} on {device}: torch has no autocast for {device.type}; {hint}")
    if device.type == "cpu" and dtype == torch.float16:
        raise InputError(f"precision {name} on {device}: float16 mixed precision runs on a GPU, not on the CPU; use "
                         "--precision bf16 (the CPU's mixed precision) or 32, or a GPU with --device cuda")
    try:
        x = torch.ones(4, 4, device=device)
        with torch.autocast(device.type, dtype=dtype):
            y = x @ x
        if y.dtype != dtype or not bool(torch.isfinite(y.float()).all()):
            raise RuntimeError(f"the result came back as {y.dtype}")
    except (RuntimeError, TypeError, NotImplementedError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InputError(f"precision {name} is not supported on {device} ({first}); {hint}") from None


def autocast(device: torch.device | str, dtype: torch.dtype = torch.float32) -> ContextManager[Any]:
    """The context a predictor runs its networks in: ``torch.autocast(device.type, dtype)``, or nothing for
    float32. Enter it around model calls only (never across a ``yield``: autocast is thread state)."""
    device = torch.device(device)
    if dtype == torch.float32:
        return contextlib.nullcontext()
    return torch.autocast(device.type, dtype=dtype)


def device_error(exc: BaseException) -> VisionError | None:
    """An :class:`InputError` for an operator a backend lacks (torch raises ``NotImplementedError: The operator
    'aten::...' is not currently implemented for the MPS device ...``), else None (any other error)."""
    found = re.search(r"operator '([^']+)' is not currently implemented for the (\w+) device", str(exc))
    if not isinstance(exc, (NotImplementedError, RuntimeError)) or found is None:
        return None
    op, backend = found.group(1), found.group(2).lower()
    fallback = ", or set PYTORCH_ENABLE_MPS_FALLBACK=1 to run the missing operators on the CPU" if backend == "mps" \
        else ""
    return InputError(f"the {backend} backend lacks the operator {op}; use --device cpu{fallback}")


def model_device(model: torch.nn.Module) -> torch.device:
    """The device of a model's first parameter, else of its first buffer (the CPU for a model with neither)."""
    tensor = next(model.parameters(), None)
    if tensor is None:
        tensor = next(model.buffers(), None)
    return tensor.device if tensor is not None else torch.device("cpu")


def placement(device: str | torch.device | None, precision: str | torch.dtype | None,
              model: torch.nn.Module | None = None) -> tuple[torch.device, torch.dtype]:
    """Where and in which compute dtype a predictor runs: ``(device, dtype)``, checked as a pair.

    ``device`` goes through :func:`resolve_device`; None means ``model``'s device (:func:`model_device`) when a model
    is given, else ``auto``. ``precision`` goes through :func:`parse_precision`. A device this machine lacks, an
    unknown precision, or a precision the device cannot run (:func:`check_precision`) is an :class:`InputError`.
    """
    resolved = model_device(model) if device is None and model is not None else resolve_device(device)
    dtype = parse_precision(precision)
    check_precision(resolved, dtype)
    return resolved, dtype


def load_for_inference(load: Callable[..., Any], checkpoint: str | Path, device: str | torch.device | None = "cpu",
                       precision: str | torch.dtype | None = "32", **options: Any
                       ) -> tuple[Any, torch.device, torch.dtype]:
    """The preamble of every predictor's ``from_checkpoint``: :func:`placement` of ``device`` and ``precision`` (so
    an unavailable device or precision is refused before the checkpoint is read), then the task's one loader,
    ``load(checkpoint, device=device, **options)`` (``vision.<task>.task.load``, of the predictor's own task folder),
    which returns the model in eval mode on ``device``.

    Returns:
        ``(what load returned, device, dtype)``: ``load``'s tuple (``(model, config)``, longer where an option asks
        for more, e.g. the forensic backbone), the resolved ``torch.device`` and the compute dtype.
    """
    device, dtype = placement(device, precision)
    loaded = load(checkpoint, device=device, **options)
    return loaded, device, dtype
