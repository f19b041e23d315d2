"""`vision predict --task forensics VIDEO` writes the JSON and HTML report (end to end on a trained checkpoint)."""

import json
from pathlib import Path

import pytest

from vision.cli.main import main as vision

pytestmark = pytest.mark.slow  # the session's trained forensic checkpoint


def test_predict_cli_writes_the_report(trained_checkpoint: Path, tiny_split: dict[str, Path], tmp_path: Path,
                                       capsys) -> None:
    split = json.loads(Path(tiny_split["val"]).read_text())
    video = Path(tiny_split["val"]).parent / split["videos"][0]["file_name"]
    out = tmp_path / "report"
    assert vision(["predict", str(video), "--task", "forensics", "--ckpt", str(trained_checkpoint), "--out", str(out)]) == 0
    assert "verdict:" in capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    assert report["verdict"]["verdict"] in ("generated", "real", "insufficient evidence")
    assert (out / "report.html").read_text().lstrip().lower().startswith("<!doctype html")
