"""The GPU figures script (``python benchmarks/gpu_figures.py``, run in a session that is lent a GPU) works: its
``--cpu-smoke`` mode runs every step — the gpu-marked tests, the backbone timing, the tracker's frames/s and one
training step per task — on the CPU at toy sizes and writes its table. Its figures are not checked (they mean
nothing at toy sizes); that it runs to the end is."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_the_gpu_script_runs_on_the_cpu_at_toy_sizes(tmp_path):
    out = tmp_path / "gpu.md"
    out.write_text("# GPU figures\n\nhow to run it\n\n## Last output\n\nan older table\n")
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_figures.py"), "--cpu-smoke", "--out",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [line for line in out.read_text().splitlines() if line.startswith("| ") and "---" not in line][1:]
    assert [row.split(" | ")[0] for row in rows] == [
        "| pytest -m gpu", "| tiny backbone, 3 views at 32 px, bf16",
        "| G2TAM (SAM 2.1 heads, tiny), 6 frames 48x40, 2 objects, bf16",
        "| train step: geometry (tiny, 3 views at 32 px)",
        "| train step: tracking (G2TAM, SAM 2.1 heads, frozen tiny, 3 views)",
        "| train step: detection (tiny at 64 px, batch 2)", "| train step: forensics (MLP, 64 feature rows)"]
    assert "skipped" in rows[0] and "exit 0" in rows[0]  # no CUDA here: every gpu test skips, none fails
    text = out.read_text()  # the table replaced the last output; the text above it stayed
    assert text.startswith("# GPU figures\n\nhow to run it\n\n## Last output\n\n`python benchmarks/gpu_figures.py "
                           "--cpu-smoke --out ") and "an older table" not in text
