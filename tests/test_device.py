"""vision.device: device names to torch devices (auto: CUDA, then MPS, then the CPU), precision names to dtypes,
one-line refusals of what this machine cannot run, and the autocast context every predictor uses."""

from __future__ import annotations

import pytest
import torch

from tests.marks import GPU
from vision import device as dev
from vision.errors import InputError


def test_cpu_and_auto_without_accelerators(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(dev, "_mps_available", lambda: False)
    assert dev.resolve_device("cpu") == torch.device("cpu")
    assert dev.resolve_device(" CPU ") == torch.device("cpu")
    assert dev.resolve_device(torch.device("cpu")) == torch.device("cpu")
    assert dev.resolve_device("auto") == dev.resolve_device(None) == torch.device("cpu")
    assert dev.describe_device(torch.device("cpu")) == "device: cpu"


def test_auto_prefers_cuda_then_mps(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(dev, "_mps_available", lambda: True)
    assert dev.resolve_device("auto") == torch.device("mps") == dev.resolve_device("mps")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert dev.resolve_device("auto") == torch.device("cuda", 0)
    assert dev.resolve_device("cuda:1") == torch.device("cuda", 1)
    with pytest.raises(InputError, match=r"'cuda:2': this machine has 2 CUDA device\(s\)"):
        dev.resolve_device("cuda:2")


@pytest.mark.parametrize("spec, message", [
    ("gpu", "unknown device 'gpu'; expected one of auto, cpu, cuda, cuda:N, mps"),
    ("cuda:x", "unknown device 'cuda:x'"),
    ("tpu", "unknown device 'tpu'"),
    ("cuda", "device 'cuda': CUDA is not available on this machine"),
    ("cuda:0", "device 'cuda:0': CUDA is not available on this machine"),
    ("mps", "device 'mps': Apple's MPS backend is not available here"),
])
def test_devices_this_machine_lacks_are_one_line_errors(monkeypatch, spec, message):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(dev, "_mps_available", lambda: False)
    with pytest.raises(InputError) as info:
        dev.resolve_device(spec)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_precisions():
    assert dev.parse_precision("32") is torch.float32 and dev.parse_precision(None) is torch.float32
    assert dev.parse_precision("bf16") is dev.parse_precision("bf16-mixed") is torch.bfloat16
    assert dev.parse_precision("16") is dev.parse_precision("16-mixed") is torch.float16
    assert dev.parse_precision(torch.bfloat16) is torch.bfloat16
    assert dev.precision_name(torch.float16) == "16"
    for bad in ("64", "int8", "half-ish"):
        with pytest.raises(InputError, match=f"unknown precision '{bad}'; expected one of 32, bf16, 16"):
            dev.parse_precision(bad)
    with pytest.raises(InputError, match="precision torch.float64"):
        dev.parse_precision(torch.float64)


def test_check_precision_runs_a_probe_and_refuses_in_one_line(monkeypatch):
    cpu = torch.device("cpu")
    for dtype in (torch.float32, torch.bfloat16):
        dev.check_precision(cpu, dtype)  # this torch's CPU autocast runs bf16
    with pytest.raises(InputError, match=r"^precision 16 on cpu: float16 mixed precision runs on a GPU, not on the "
                                         r"CPU; use --precision bf16"):
        dev.check_precision(cpu, torch.float16)  # refused as Lightning refuses 16-mixed on the CPU
    monkeypatch.setattr(torch.amp, "is_autocast_available", lambda device_type: False)
    with pytest.raises(InputError, match=r"^precision 16 on cpu: torch has no autocast for cpu; use --precision 32"):
        dev.check_precision(cpu, torch.float16)
    dev.check_precision(cpu, torch.float32)  # float32 needs no autocast


def test_autocast_is_a_no_op_for_float32_and_casts_otherwise():
    x = torch.ones(3, 3)
    with dev.autocast("cpu", torch.float32):
        assert (x @ x).dtype is torch.float32
    with dev.autocast(torch.device("cpu"), torch.bfloat16):
        assert (x @ x).dtype is torch.bfloat16
    assert (x @ x).dtype is torch.float32


def test_a_missing_backend_operator_is_one_line():
    exc = NotImplementedError("The operator 'aten::_upsample_bicubic2d_aa.out' is not currently implemented for the "
                              "MPS device. If you want this op to be added ...")
    error = dev.device_error(exc)
    assert isinstance(error, InputError) and "\n" not in str(error)
    assert str(error).startswith("the mps backend lacks the operator aten::_upsample_bicubic2d_aa.out; "
                                 "use --device cpu")
    assert dev.device_error(RuntimeError("shapes do not match")) is None
    assert dev.device_error(NotImplementedError("subclasses implement this")) is None


def test_model_device():
    assert dev.model_device(torch.nn.Linear(2, 2)) == torch.device("cpu")
    assert dev.model_device(torch.nn.Identity()) == torch.device("cpu")


@pytest.mark.parametrize("spec", ["cuda", "cuda:0", "auto"])
@pytest.mark.parametrize("_gpu", [pytest.param(None, marks=GPU)])
def test_cuda_resolves_and_runs_bf16_and_16(spec, _gpu):
    device = dev.resolve_device(spec)
    assert device.type == "cuda" and dev.describe_device(device).startswith(f"device: {device} (")
    for dtype in (torch.bfloat16, torch.float16):
        dev.check_precision(device, dtype)


def test_precision_choices_are_the_precision_names():
    assert dev.PRECISION_CHOICES == ("32", "bf16", "16") == tuple(dev.PRECISIONS)


def test_placement_resolves_checks_and_defaults_to_the_model(monkeypatch):
    model = torch.nn.Linear(2, 2)
    assert dev.placement(None, "bf16", model) == (torch.device("cpu"), torch.bfloat16)
    with pytest.raises(InputError, match="precision 16 on cpu: float16 mixed precision runs on a GPU"):
        dev.placement("cpu", torch.float16)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(InputError, match="CUDA is not available"):
        dev.placement("cuda", "32", model)
    with pytest.raises(InputError, match="unknown precision '64'"):
        dev.placement("cpu", "64")
    monkeypatch.setattr(torch.amp, "is_autocast_available", lambda device_type: False)
    with pytest.raises(InputError, match="precision 16 on cpu: torch has no autocast"):
        dev.placement("cpu", "16")


class _Loaded(Exception):
    """Raised by the stand-in ``load`` once it has recorded its call (no model is built)."""


#: the options each predictor's ``from_checkpoint(path)`` gives its task's ``load``
LOAD_OPTIONS = {"tracking": {"image_size": None}, "detection": {"with_vocabulary": True},
                "forensics": {"with_backbone": True}, "concept": {}}


@pytest.fixture
def load_calls(monkeypatch):
    """Replace every task's ``load`` (in its ``task`` module and in its predictor's, which imports it by name) by
    one that records ``(task, checkpoint, device, options)`` and raises :class:`_Loaded`."""
    from vision.tasks import TASKS

    calls: list[tuple] = []
    for task in TASKS:
        def load(checkpoint, device="cpu", _task=task.name, **options):
            calls.append((_task, checkpoint, device, options))
            raise _Loaded
        monkeypatch.setattr(f"{task.module}.load", load)
        if task.has("predictor"):
            monkeypatch.setattr(f"{task.where('predictor')[0]}.load", load)
    return calls


def test_load_for_inference_refuses_before_reading(load_calls, monkeypatch, tmp_path):
    from vision.tracking import task

    path = tmp_path / "model.ckpt"
    with pytest.raises(_Loaded):
        dev.load_for_inference(task.load, path, "cpu", "bf16", image_size=64)
    assert load_calls == [("tracking", path, torch.device("cpu"), {"image_size": 64})]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for device, precision, message in (("cuda", "32", "CUDA is not available"), ("cpu", "8", "unknown precision")):
        with pytest.raises(InputError, match=message):
            dev.load_for_inference(task.load, path, device, precision)
    assert len(load_calls) == 1


@pytest.mark.parametrize("name", sorted(LOAD_OPTIONS))
def test_every_predictor_loads_through_its_task_load(name, load_calls, monkeypatch, tmp_path):
    """``from_checkpoint`` reads the model through ``vision.<task>.task.load`` onto the resolved device, and only
    after the device and the precision passed their checks."""
    from vision.tasks import get_task, task_names

    assert set(LOAD_OPTIONS) == set(task_names(predictor=True))
    predictor = get_task(name).resolve("predictor")
    path = tmp_path / "model.ckpt"
    with pytest.raises(_Loaded):
        predictor.from_checkpoint(path, device="cpu", precision="bf16")
    assert load_calls == [(name, path, torch.device("cpu"), LOAD_OPTIONS[name])]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(InputError, match="CUDA is not available"):
        predictor.from_checkpoint(path, device="cuda")
    monkeypatch.setattr(torch.amp, "is_autocast_available", lambda device_type: False)
    with pytest.raises(InputError, match="precision 16 on cpu"):
        predictor.from_checkpoint(path, device="cpu", precision="16")
    assert len(load_calls) == 1  # neither refusal read the checkpoint
