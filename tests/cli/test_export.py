"""vision-export (vision.cli.export, tools/export.py): a checkpoint becomes a model folder that every --ckpt option
takes; bad input is one ``error:`` line and exit status 2, with nothing written."""

from __future__ import annotations

import json

import pytest
import torch

from vision.cli import export as export_cli
from tests.cli.conftest import write_task_checkpoint
from vision.tasks import get_task


def _checkpoint(tmp_path, name: str = "forensics", **config_fields):
    return write_task_checkpoint(tmp_path / f"{name}.ckpt", name, **config_fields)


def test_export_writes_a_folder_the_task_loads(tmp_path, capsys):
    path, model = _checkpoint(tmp_path)
    out = tmp_path / "model"
    assert export_cli.main(["--ckpt", str(path), "--out", str(out)]) == 0
    assert "wrote the forensics model folder" in capsys.readouterr().out
    assert json.loads((out / "config.json").read_text())["task"] == "forensics"
    loaded, _ = get_task("forensics").load(out)
    for key, value in model.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[key], value, rtol=0, atol=0, equal_nan=True)
    again = tmp_path / "again"
    assert export_cli.main(["--ckpt", str(out), "--out", str(again)]) == 0  # a folder exports too
    assert (again / "README.md").read_text() == (out / "README.md").read_text()


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    path, _ = _checkpoint(tmp_path)
    out = tmp_path / "model"
    cases = [
        (["--ckpt", str(tmp_path / "missing.ckpt")], "checkpoint not found"),
        (["--ckpt", str(tmp_path)], "not a model folder (no config.json)"),
        (["--ckpt", str(path), "--task", "detection"], "holds a forensics model, not a detection model"),
    ]
    for argv, message in cases:
        assert export_cli.main([*argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not out.exists()
    assert export_cli.main(["--ckpt", str(path), "--out", str(out)]) == 0
    assert export_cli.main(["--ckpt", str(path), "--out", str(out)]) == 2
    assert "already holds a model folder; pass --overwrite" in capsys.readouterr().err
    assert export_cli.main(["--ckpt", str(out), "--out", str(out)]) == 2
    assert "is the model folder being read" in capsys.readouterr().err
    assert export_cli.main(["--ckpt", str(path), "--out", str(tmp_path / "no" / "model")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert export_cli.main(["--ckpt", str(path), "--out", str(tmp_path / "o"), "--onnx"]) == 2
    assert "forensics task has no ONNX export" in capsys.readouterr().err and not (tmp_path / "o").exists()


@pytest.mark.slow  # exports the detector and runs vision-predict twice
def test_onnx_export_and_predict_from_the_folder(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    import numpy as np
    from PIL import Image

    from vision.cli import predict as predict_cli

    path, _ = _checkpoint(tmp_path, "detection")
    out = tmp_path / "model"
    assert export_cli.main(["--ckpt", str(path), "--out", str(out), "--onnx"]) == 0
    printed = capsys.readouterr().out
    assert (out / "onnx" / "detector.onnx").is_file() and "detector.onnx: onnxruntime vs PyTorch" in printed
    image = tmp_path / "image.png"
    Image.fromarray((np.random.default_rng(0).random((64, 64, 3)) * 255).astype(np.uint8)).save(image)
    results = []
    for ckpt in (path, out):
        target = tmp_path / f"pred_{ckpt.name}"
        assert predict_cli.main([str(image), "--task", "detection", "--ckpt", str(ckpt), "--vocabulary", "mug,cube",
                                 "--out", str(target)]) == 0
        results.append(sorted(p.read_text() for p in target.rglob("results.json")))
    assert results[0] == results[1] and results[0]
