"""`tools/predict.py --task forensics VIDEO` writes the JSON and HTML report (end to end on a trained checkpoint)."""

import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # the session's trained forensic checkpoint


def test_predict_cli_writes_the_report(trained_checkpoint: Path, tiny_split: dict[str, Path], tmp_path: Path,
                                       capsys) -> None:
    spec = importlib.util.spec_from_file_location("predict_cli", ROOT / "tools" / "predict.py")
    cli = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cli)
    split = json.loads(Path(tiny_split["val"]).read_text())
    video = Path(tiny_split["val"]).parent / split["videos"][0]["file_name"]
    out = tmp_path / "report"
    assert cli.main([str(video), "--task", "forensics", "--ckpt", str(trained_checkpoint), "--out", str(out)]) == 0
    assert "verdict:" in capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    assert report["verdict"]["verdict"] in ("generated", "real", "insufficient evidence")
    assert (out / "report.html").read_text().lstrip().lower().startswith("<!doctype html")
