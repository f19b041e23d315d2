"""Whole-file reads take memory for what the file holds, not for the 4 GiB bound: under an address-space limit a
tiny split and results file are read and scored (a read that reserved ``MAX_JSON_BYTES + 1`` bytes ended in a
MemoryError under 4 GiB for ``vision-evaluate``, and under 8 GiB in a process that had imported torch for training).
Each case runs in a child process whose address space is limited with ``resource.setrlimit(RLIMIT_AS)``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.evaluation.test_annotated import scored_case
from vision.data.files import MAX_JSON_BYTES, read_bytes, read_json
from vision.errors import DataError

#: The limits are set with resource.setrlimit and the process's size is read from /proc.
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc are Linux's")
GiB = 1 << 30
#: The issue's limit for the command line tool: it holds well under 1 GiB after its imports.
COMMAND_LIMIT = 4 * GiB
#: What a process may take beyond what it holds after its imports (torch alone holds about 4 GiB of address space).
HEADROOM = 2 * GiB


def _env() -> dict[str, str]:
    # one math thread: each thread's stack and allocator arena adds address space, more on machines with many cores
    return dict(os.environ, HF_HUB_OFFLINE="1", OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")


def _run(code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=_env(),
                          check=False, timeout=300)


def _limited(command: list[str], limit: int) -> subprocess.CompletedProcess:
    """``command`` run with its address space limited to ``limit`` bytes (set, then exec'd: limits are kept)."""
    code = ("import os, resource, sys\n"
            "resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))\n"
            "os.execv(sys.argv[2], sys.argv[2:])\n")
    return _run(code, str(limit), *command)


def _detection_case() -> tuple[dict, list[dict]]:
    split = {"images": [{"id": 1, "file_name": "a.png", "width": 8, "height": 6}],
             "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1.0, 1.0, 4.0, 3.0], "area": 12.0,
                              "iscrowd": 0}],
             "categories": [{"id": 1, "name": "mug"}]}
    return split, [{"image_id": 1, "category_id": 1, "bbox": [1.0, 1.0, 4.0, 3.0], "score": 0.9}]


@pytest.mark.slow
@linux_only
@pytest.mark.parametrize("task", ["detection", "tracking"])
def test_vision_evaluate_scores_a_tiny_split_under_a_4_gib_address_space(tmp_path, task):
    split, results = _detection_case() if task == "detection" else scored_case("tracking", False)
    (tmp_path / "split.json").write_text(json.dumps(split))
    (tmp_path / "results.json").write_text(json.dumps(results))
    command = Path(sys.executable).parent / "vision-evaluate"
    proc = _limited([str(command), "--split", str(tmp_path / "split.json"), "--results",
                     str(tmp_path / "results.json"), "--task", task, "--out", str(tmp_path / "m.json")], COMMAND_LIMIT)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "m.json").read_text())["AP" if task == "detection" else "J&F"] == 1.0


#: Child process: import ``sys.argv[1]`` (what the reader's caller has loaded), then limit the address space to
#: what it holds plus ``sys.argv[2]`` bytes and read the split ``sys.argv[3]`` with read_json and load_split.
_READ_UNDER_LIMIT = """
import importlib, resource, sys
importlib.import_module(sys.argv[1])
with open("/proc/self/status") as status:
    held = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
limit = held + int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from vision.data.coco import load_split
from vision.data.files import read_json
assert read_json(sys.argv[3])["images"]
print(len(load_split(sys.argv[3]).images))
"""


@pytest.mark.slow
@linux_only
@pytest.mark.parametrize("loaded", ["vision.data.files", "vision.data.datamodule"])
def test_a_split_is_read_with_little_address_space_beyond_the_imports(split_path, loaded):
    """The data modules (torch imported) and a bare reader read the fixture split with 2 GiB to spare."""
    proc = _run(_READ_UNDER_LIMIT, loaded, str(HEADROOM), str(split_path))
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) == len(json.loads(split_path.read_text())["images"])


def test_the_bound_is_checked_on_the_open_file_and_while_reading(tmp_path, monkeypatch):
    """A file over the bound is refused by its size; one that grows past its size while read is read on, and
    refused once past the bound; one that shrinks is read as it is."""
    path = tmp_path / "doc.json"
    content = b"[" + b"1," * 49 + b"1]"
    path.write_bytes(content)
    assert read_bytes(path, max_bytes=len(content)) == content
    with pytest.raises(DataError, match=f"is {len(content)} bytes, over the limit of {len(content) - 1} bytes"):
        read_bytes(path, max_bytes=len(content) - 1)
    assert read_json(path, max_bytes=len(content)) == [1] * 50

    from vision.data import files

    sizes: list[int] = []
    real_fstat = os.fstat

    def fstat_then_append(fd: int) -> os.stat_result:
        """The size is taken, then the file grows (another writer) before it is read."""
        info = real_fstat(fd)
        sizes.append(info.st_size)
        with open(path, "ab") as more:
            more.write(extra)
        return info

    monkeypatch.setattr(files.os, "fstat", fstat_then_append)
    monkeypatch.setattr(files, "_GROWN_CHUNK_BYTES", 7)
    extra = b" " * 50
    assert read_bytes(path, max_bytes=1000) == content + extra and sizes == [len(content)]
    extra = b" " * 2000
    with pytest.raises(DataError, match="over the limit of 1000 bytes"):
        read_bytes(path, max_bytes=1000)
    monkeypatch.setattr(files.os, "fstat", real_fstat)
    path.write_bytes(b"[]")
    assert read_json(path) == [] and MAX_JSON_BYTES == 4 * GiB
