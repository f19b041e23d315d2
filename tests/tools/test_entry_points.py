"""tools/train.py, the one wrapper kept beside the ``vision`` command (the README's training command): it runs
``vision train``'s main, whose value is the exit status. The console scripts are checked in tests/cli/test_main.py."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_wrapper_does_not_touch_sys_path():
    assert "sys.path" not in (ROOT / "tools" / "train.py").read_text(), "tools/train.py changes sys.path"


def test_train_main_returns_an_exit_status(monkeypatch):
    """``vision train`` exits 0 after a run (the console-script wrapper passes main's value to sys.exit)."""
    import vision.training.cli

    seen = []
    monkeypatch.setattr(vision.training.cli, "main", lambda argv=None: seen.append(argv) or object())
    from vision.cli.train import main

    assert main(["fit", "--config", "x.yaml"]) == 0 and seen == [["fit", "--config", "x.yaml"]]
