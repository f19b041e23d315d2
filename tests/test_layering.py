"""The package's import rules: inference code (each task's definition and predictor, the CLI's predict and
evaluate) loads no training code and not Lightning; the core packages never import a task; no task imports
another. Checked in a fresh interpreter, so what other tests imported does not hide a dependency."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

TASKS = ("geometry", "tracking", "detection", "forensics")
CORE = ("vision.data", "vision.evaluation", "vision.text", "vision.checkpoint")


def _imported_after(*modules: str) -> set[str]:
    code = ("import json, sys\n" + "".join(f"import {m}\n" for m in modules)
            + "print(json.dumps(sorted(m for m in sys.modules if m.startswith(('vision', 'lightning')))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


INFERENCE = ["vision.geometry.task", "vision.tracking.task", "vision.tracking.predictor", "vision.detection.task",
             "vision.detection.predictor", "vision.forensics.task", "vision.forensics.predictor",
             "vision.cli.predict", "vision.cli.evaluate"]


@pytest.mark.parametrize("module", INFERENCE)
def test_inference_code_loads_no_training_code(module):
    loaded = _imported_after(module)
    assert not {m for m in loaded if m.startswith("vision.training")}, module
    assert "lightning" not in loaded, f"{module} imports Lightning"


@pytest.mark.parametrize("core", CORE)
def test_core_packages_import_no_task(core):
    loaded = _imported_after(core)
    tasks = {m for m in loaded if m.split(".")[1:2] and m.split(".")[1] in TASKS[1:]}
    assert not tasks, f"{core} imports {sorted(tasks)}"


@pytest.mark.parametrize("task", TASKS[1:])
def test_no_task_imports_another(task):
    loaded = _imported_after(f"vision.{task}.lightning", f"vision.{task}.predictor", f"vision.{task}.task")
    others = {m for m in loaded if m.split(".")[1:2] and m.split(".")[1] in TASKS[1:] and m.split(".")[1] != task}
    assert not others, f"vision.{task} imports {sorted(others)}"
