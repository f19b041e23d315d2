"""Scoring a results file never loads torch or a model: ``vision-evaluate`` for each task, run in a fresh
interpreter, leaves neither torch, Lightning nor a model package in ``sys.modules``, and ``--help`` loads no
NumPy either."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.evaluation.test_results import CASES
from vision.tasks import task_names

TASKS = task_names()
from vision.evaluation.results import encode_array

ROOT = Path(__file__).resolve().parents[2]

#: Top-level packages and vision packages that scoring must not import: every registered task's package (its
#: scorer lives in vision.evaluation), and training.
FORBIDDEN = ("torch", "lightning", "vision.training", *(f"vision.{name}" for name in task_names()))

#: Runs ``vision.cli.evaluate.main(argv)`` and prints the exit status and the loaded module names as JSON.
PROBE = """
import json, sys
from vision.cli.evaluate import main
argv = json.loads(sys.argv[1])
try:
    code = main(argv)
except SystemExit as exc:
    code = exc.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _probe(argv: list[str]) -> tuple[int, list[str]]:
    proc = subprocess.run([sys.executable, "-c", PROBE, json.dumps(argv)], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return report["code"], report["modules"]


def _loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == name or m.startswith(name + ".") for name in names)]


def geometry_case(root: Path) -> tuple[dict, list[dict]]:
    """A split of one video of 3 views of 8 x 8 pixels with cameras and depth files, and results for its clip."""
    rng = np.random.default_rng(0)
    images, results = [], []
    clip = [1, 2, 3]
    for i in clip:
        depth_name = f"depth_{i}.npz"
        np.savez(root / depth_name, depth=rng.uniform(1.0, 3.0, size=(8, 8)).astype(np.float16))
        angle = 0.1 * i
        extrinsics = [[np.cos(angle), 0.0, np.sin(angle), 0.1 * i], [0.0, 1.0, 0.0, 0.0],
                      [-np.sin(angle), 0.0, np.cos(angle), 0.0]]
        images.append({"id": i, "file_name": f"{i}.png", "width": 8, "height": 8, "video_id": 1, "frame_index": i,
                       "camera": {"K": [[8.0, 0.0, 3.5], [0.0, 8.0, 3.5], [0.0, 0.0, 1.0]], "extrinsics": extrinsics},
                       "depth_file": depth_name})
        results.append({"image_id": i, "clip": clip, "extrinsics": np.eye(3, 4).tolist(),
                        "depth": encode_array(rng.uniform(1.0, 2.0, size=(8, 8))),
                        "world_points": encode_array(rng.normal(size=(8, 8, 3)))})
    split = {"images": images, "annotations": [], "categories": [], "videos": [{"id": 1, "name": "v"}]}
    return split, results


@pytest.mark.parametrize("task", TASKS)
def test_scoring_a_task_imports_no_torch_and_no_model(tmp_path, task):
    split, results = geometry_case(tmp_path) if task == "geometry" else CASES[task]()
    (tmp_path / "split.json").write_text(json.dumps(split))
    (tmp_path / "results.json").write_text(json.dumps(results))
    code, modules = _probe(["--split", str(tmp_path / "split.json"), "--results", str(tmp_path / "results.json"),
                            "--task", task])
    assert code == 0
    assert "vision.evaluation.evaluate" in modules  # the scorers did run
    assert _loaded(modules, FORBIDDEN) == []


def test_help_imports_no_torch_and_no_numpy():
    code, modules = _probe(["--help"])
    assert code == 0
    assert _loaded(modules, FORBIDDEN + ("numpy", "cv2", "scipy", "vision.evaluation.evaluate")) == []
