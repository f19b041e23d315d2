"""tools/predict.py: clear one-line errors for bad paths and prompts (exit status 2, no stack trace)."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from vision.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("predict_cli", ROOT / "tools" / "predict.py")
predict_cli = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(predict_cli)


def test_missing_checkpoint_and_input(tmp_path, capsys):
    assert predict_cli.main([str(tmp_path / "v.mp4"), "--task", "forensics", "--ckpt", str(tmp_path / "no.ckpt")]) == 2
    assert "checkpoint not found" in capsys.readouterr().err
    ckpt = tmp_path / "x.ckpt"
    ckpt.write_bytes(b"0")
    assert predict_cli.main([str(tmp_path / "v.mp4"), "--task", "tracking", "--ckpt", str(ckpt),
                             "--points", "1,2"]) == 2
    assert "input not found" in capsys.readouterr().err


def test_prompts_are_parsed_or_refused(tmp_path, capsys):
    np.testing.assert_array_equal(predict_cli.parse_points("10,20; 30,40"), [[10, 20], [30, 40]])
    for bad in ("10", "a,b", "1,2,3", ""):
        with pytest.raises(InputError, match="--points"):
            predict_cli.parse_points(bad)
    ckpt = tmp_path / "x.ckpt"
    ckpt.write_bytes(b"0")
    empty = tmp_path / "frames"
    empty.mkdir()
    assert predict_cli.main([str(empty), "--task", "tracking", "--ckpt", str(ckpt)]) == 2
    assert "needs a prompt" in capsys.readouterr().err
    assert predict_cli.main([str(empty), "--task", "detection", "--ckpt", str(ckpt)]) == 2
    assert "--vocabulary" in capsys.readouterr().err
