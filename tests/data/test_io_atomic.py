"""Atomic writes: the whole file or the previous one, never a temporary file left behind, and the permissions of any
new file (not the temporary file's private ones)."""

from __future__ import annotations

import json
import os
import stat

from vision.data.io import atomic_write_bytes, atomic_write_json


def test_atomic_write_replaces_the_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "out" / "results.json"
    atomic_write_json(path, [{"image_id": 1}])
    atomic_write_json(path, [{"image_id": 2}])
    assert json.loads(path.read_text()) == [{"image_id": 2}]
    assert [p.name for p in path.parent.iterdir()] == ["results.json"]


def test_atomic_write_gives_the_permissions_of_a_new_file(tmp_path):
    umask = os.umask(0o022)
    try:
        path = tmp_path / "weights.bin"
        atomic_write_bytes(path, b"abc")
        assert stat.S_IMODE(path.stat().st_mode) == 0o644
    finally:
        os.umask(umask)
