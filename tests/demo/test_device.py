"""The demo's device and precision (DemoConfig, ``vision-demo --device --precision``)."""

from __future__ import annotations

import pytest

from vision.demo.handlers import DemoConfig, Models
from vision.errors import InputError


def test_the_demo_takes_a_device_and_precision(tmp_path, monkeypatch, capsys):
    """DemoConfig's device and precision reach the predictors (the tracker's loads onto it); a device this
    machine lacks is refused by the config, and when the demo starts: one line, exit 2."""
    import torch

    from tests.tracking.test_stream import _predictor
    from vision import device as dev

    ckpt = tmp_path / "t.ckpt"
    predictor = _predictor()
    torch.save({"hyper_parameters": {"config": {"image_size": 32, "dim": 32, "text_encoder": None}},
                "state_dict": {f"model.{k}": v for k, v in predictor.model.state_dict().items()}}, ckpt)
    models = Models(DemoConfig(checkpoints={"tracking": ckpt}, work_dir=tmp_path, device="cpu", precision="bf16"))
    loaded = models.get("tracking")
    assert loaded.device == torch.device("cpu") and loaded.dtype is torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(dev, "_mps_available", lambda: False)
    with pytest.raises(InputError, match="device 'cuda': CUDA is not available"):
        DemoConfig(device="cuda")


@pytest.mark.slow
def test_the_demo_refuses_a_device_this_machine_lacks(monkeypatch, capsys):
    import torch

    from vision import device as dev
    from vision.demo import app

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(dev, "_mps_available", lambda: False)
    assert app.main(["--device", "mps", "--no-examples"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: device 'mps': Apple's MPS backend is not available here (it needs macOS 12.3+ on Apple silicon and a "
        "torch built with it); use --device cpu or auto"]
