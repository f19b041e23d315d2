"""``vision evaluate`` end to end through a subprocess (the installed ``vision`` script)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.evaluation.conftest import make_detection_case

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    return subprocess.run([str(Path(sys.executable).parent / "vision"), "evaluate", *args], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    split, results = make_detection_case(seed=3, num_images=6)
    (root / "split.json").write_text(json.dumps(split))
    (root / "res.json").write_text(json.dumps(results))
    return root


def test_cli_prints_table_and_writes_metrics(files):
    out = files / "out" / "metrics.json"
    proc = run_cli("--split", str(files / "split.json"), "--results", str(files / "res.json"),
                   "--task", "detection", "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].split() == ["metric", "value"]
    metrics = json.loads(out.read_text())
    assert {"AP", "AP50", "segm_AP", "num_results"} <= set(metrics)
    ap_line = next(line for line in proc.stdout.splitlines() if line.split()[0] == "AP")
    assert float(ap_line.split()[1]) == pytest.approx(metrics["AP"], abs=1e-4)
    assert not [p for p in out.parent.iterdir() if p.name != "metrics.json"]  # no temp files left


def test_cli_errors_exit_2_with_one_line(files):
    (files / "bad.json").write_text(json.dumps([{"image_id": 1, "category_id": 1, "bbox": [0, 0, 1], "score": 1}]))
    proc = run_cli("--split", str(files / "split.json"), "--results", str(files / "bad.json"), "--task", "detection")
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr
    assert "bad.json" in lines[0] and "results[0].bbox" in lines[0]
    proc = run_cli("--split", str(files / "nope.json"), "--results", str(files / "res.json"), "--task", "detection")
    assert proc.returncode == 2 and "nope.json" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_category_ids_vocabulary(files, tmp_path):
    split = json.loads((files / "split.json").read_text())
    names = [c["name"] for c in split["categories"]][:2]
    split["info"] = {**split.get("info", {}), "vocabulary": names}
    (tmp_path / "split.json").write_text(json.dumps(split))
    ids = ",".join(str(c["id"]) for c in split["categories"] if c["name"] in names)
    outputs = []
    for value in ("vocabulary", ids):
        out = tmp_path / f"{value.replace(',', '_')}.json"
        proc = run_cli("--split", str(tmp_path / "split.json"), "--results", str(files / "res.json"),
                       "--task", "detection", "--category-ids", value, "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        outputs.append(json.loads(out.read_text()))
    assert outputs[0] == outputs[1]


def test_cli_processes_give_the_same_metrics_and_bad_values_are_refused(files, tmp_path):
    metrics = {}
    for n in ("1", "2"):
        out = tmp_path / f"m{n}.json"
        proc = run_cli("--split", str(files / "split.json"), "--results", str(files / "res.json"),
                       "--task", "detection", "--processes", n, "--out", str(out))
        assert proc.returncode == 0, proc.stderr
        metrics[n] = json.loads(out.read_text())
    assert metrics["1"] == metrics["2"] and "segm_AP" in metrics["1"]
    proc = run_cli("--split", str(files / "split.json"), "--results", str(files / "res.json"),
                   "--task", "detection", "--processes", "0")
    assert proc.returncode == 2 and "--processes" in proc.stderr and ">= 1" in proc.stderr
    proc = run_cli("--split", str(files / "split.json"), "--results", str(files / "res.json"),
                   "--task", "forensics", "--processes", "2")
    assert proc.returncode == 2 and "does not apply" in proc.stderr


def test_cli_out_that_is_a_link_loop_or_a_fifo_is_refused_and_kept(files, tmp_path, capsys):
    """``--out`` on a self-looping link was replaced by the metrics file (issue 46 item 5); a FIFO would have been
    too. Both are one line, exit 2, and stay as they were; a link to a file is written through (the link stays)."""
    from vision.cli import evaluate as evaluate_cli

    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    fifo = tmp_path / "metrics.fifo"
    os.mkfifo(fifo)
    base = ["--split", str(files / "split.json"), "--results", str(files / "res.json"), "--task", "detection"]
    for out, message in [(loop, f"error: --out {loop}: unusable path (a symbolic-link loop); give a file name"),
                         (fifo, f"error: --out {fifo} is a FIFO (named pipe), not a regular file; give a file name")]:
        assert evaluate_cli.main([*base, "--out", str(out)]) == 2
        assert capsys.readouterr().err.splitlines() == [message]
    assert os.readlink(loop) == str(loop) and fifo.is_fifo()
    target = tmp_path / "metrics.json"
    target.write_text("{}")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    assert evaluate_cli.main([*base, "--out", str(link)]) == 0
    assert link.is_symlink() and "AP" in json.loads(target.read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.json", "loop.json", "metrics.fifo", "metrics.json"]


def test_running_out_of_memory_is_one_line(tmp_path, monkeypatch, capsys):
    """A MemoryError while scoring (a file larger than the process may hold) is one error line, exit 2, no --out."""
    import vision.evaluation.evaluate as evaluate_module
    from vision.cli.evaluate import main

    def exhausted(*args, **kwargs):
        raise MemoryError

    monkeypatch.setattr(evaluate_module, "evaluate", exhausted)
    (tmp_path / "split.json").write_text("{}")
    (tmp_path / "results.json").write_text("[]")
    code = main(["--split", str(tmp_path / "split.json"), "--results", str(tmp_path / "results.json"),
                 "--task", "forensics", "--out", str(tmp_path / "metrics.json")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: out of memory") and err.count("\n") == 1
    assert not (tmp_path / "metrics.json").exists()
