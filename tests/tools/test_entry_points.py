"""The console scripts of pyproject.toml and the thin wrapper scripts (tools/, datasets/, demo/): every script names
a ``main`` in the package, every wrapper only calls one, and nothing puts the repository on ``sys.path``."""

from __future__ import annotations

import ast
import importlib
import os
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
#: The installed console scripts (pyproject.toml's [project.scripts]; `make setup` reinstalls when it changes).
SCRIPTS: dict[str, str] = {ep.name: ep.value for ep in distribution("vision").entry_points
                           if ep.group == "console_scripts"}
WRAPPERS = sorted([*ROOT.glob("tools/*.py"), *ROOT.glob("datasets/*.py"), *ROOT.glob("demo/*.py")])
THIN = {"tools/train.py": "vision.cli.train", "tools/predict.py": "vision.cli.predict",
        "tools/evaluate.py": "vision.cli.evaluate", "tools/make_synthetic.py": "vision.cli.synthetic",
        "tools/export.py": "vision.cli.export",
        "datasets/prepare_aigv.py": "vision.prepare.aigv", "datasets/prepare_genvideo.py": "vision.prepare.genvideo",
        "datasets/prepare_oov_coco.py": "vision.prepare.oov_coco",
        "datasets/fetch_opencv_samples.py": "vision.prepare.opencv_samples", "demo/app.py": "vision.demo.app",
        "demo/screenshots.py": "vision.demo.screenshots"}


def test_the_console_scripts_are_declared():
    assert {"vision-train", "vision-predict", "vision-evaluate", "vision-synthetic", "vision-demo",
            "vision-prepare-aigv", "vision-prepare-genvideo", "vision-prepare-oov-coco",
            "vision-fetch-opencv-samples", "vision-fit-light-points"} <= set(SCRIPTS)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_each_console_script_names_a_main_in_the_package(name):
    module, _, attr = SCRIPTS[name].partition(":")
    assert module.startswith("vision.") and attr == "main", SCRIPTS[name]
    assert callable(getattr(importlib.import_module(module), attr))


@pytest.mark.parametrize("path", WRAPPERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_scripts_do_not_touch_sys_path(path):
    assert "sys.path" not in path.read_text(), f"{path.relative_to(ROOT)} changes sys.path; import the package"


@pytest.mark.parametrize("relative", sorted(THIN))
def test_wrappers_only_call_the_package_main(relative):
    """A wrapper imports ``main`` from its module and calls it under ``__main__``; no logic of its own."""
    tree = ast.parse((ROOT / relative).read_text())
    imports = [n for n in tree.body if isinstance(n, ast.ImportFrom)]
    assert [(n.module, [a.name for a in n.names]) for n in imports] == [(THIN[relative], ["main"])]
    assert not [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef, ast.Assign))]


def test_train_main_returns_an_exit_status(monkeypatch):
    """``vision-train`` exits 0 after a run (the console-script wrapper passes main's value to sys.exit)."""
    import vision.training.cli

    seen = []
    monkeypatch.setattr(vision.training.cli, "main", lambda argv=None: seen.append(argv) or object())
    from vision.cli.train import main

    assert main(["fit", "--config", "x.yaml"]) == 0 and seen == [["fit", "--config", "x.yaml"]]


def test_a_wrapper_runs_from_any_folder(tmp_path):
    """``python tools/make_synthetic.py`` from another working directory imports the installed package."""
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    env.pop("PYTHONPATH", None)
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "make_synthetic.py"), "--list"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("categories:")
