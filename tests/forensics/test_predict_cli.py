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


def test_without_ckpt_the_detector_of_make_train_forensics_public_answers(trained_checkpoint: Path,
                                                                          tiny_split: dict[str, Path],
                                                                          tmp_path: Path, capsys, monkeypatch) -> None:
    import shutil

    from vision.forensics.cli import DEFAULT_CKPT

    split = json.loads(Path(tiny_split["val"]).read_text())
    video = Path(tiny_split["val"]).parent / split["videos"][0]["file_name"]
    monkeypatch.chdir(tmp_path)
    args = ["predict", str(video), "--task", "forensics", "--out", str(tmp_path / "report")]
    assert vision(args) == 2  # not trained here: one line saying what writes it
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and DEFAULT_CKPT[0] in err[0] and "make train-forensics-public" in err[0]
    (tmp_path / DEFAULT_CKPT[0]).parent.mkdir(parents=True)
    shutil.copy(trained_checkpoint, tmp_path / DEFAULT_CKPT[0])
    assert vision(args) == 0
    captured = capsys.readouterr()
    assert f"no --ckpt: running {DEFAULT_CKPT[0]}" in captured.err and "verdict:" in captured.out
