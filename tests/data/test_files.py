"""vision.data.files: inputs must be regular files of bounded size (a FIFO, a device, a folder or a link loop is
refused from ``stat``, before anything is opened), JSON integers too long for a double are read as infinities for
the schema to refuse by field, and output places are checked before any work (and cleaned after a failure)."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from vision.data.files import (environment_error, output_file, output_folder, output_path, read_bytes, read_json,
                               regular_file, writable_folder)
from vision.errors import DataError, InputError, VideoError

#: What a careless or hostile user can give where a file is expected, built in a folder.
HOSTILE = ("missing", "fifo", "folder", "loop", "device", "dangling")


def hostile_path(folder: Path, kind: str) -> Path:
    """A path of ``kind`` (one of :data:`HOSTILE`) in ``folder``."""
    path = folder / f"{kind}.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    elif kind == "loop":
        os.symlink(folder / f"{kind}.json", path)  # a link to itself
    elif kind == "device":
        return Path("/dev/zero")
    elif kind == "dangling":
        os.symlink(folder / "nowhere", path)
    return path


@pytest.mark.parametrize("kind", HOSTILE)
def test_anything_but_a_regular_file_is_refused_in_one_line_naming_it(tmp_path, kind):
    path = hostile_path(tmp_path, kind)
    for read in (regular_file, read_bytes, read_json):
        with pytest.raises(DataError) as info:
            read(path)
        message = str(info.value)
        assert "\n" not in message and str(path) in message
    reason = {"missing": "not found", "dangling": "not found", "fifo": "FIFO", "folder": "a folder",
              "loop": "symbolic-link loop", "device": "character device"}[kind]
    assert reason in message


def test_the_error_type_and_the_source_of_the_name_are_the_callers(tmp_path):
    with pytest.raises(VideoError, match="video file not found"):
        regular_file(tmp_path / "v.mp4", what="video file", error=VideoError)
    with pytest.raises(InputError, match=r"x\.ckpt: checkpoint not found"):
        regular_file(tmp_path / "x.ckpt", what="checkpoint", error=InputError)
    with pytest.raises(DataError) as info:
        regular_file(hostile_path(tmp_path, "fifo"), what="depth file", file="split.json",
                     field="images[3].depth_file", value="fifo.json")
    assert info.value.file == "split.json" and info.value.field == "images[3].depth_file"
    assert "depth file is a FIFO" in str(info.value) and str(tmp_path / "fifo.json") in str(info.value)


def test_files_over_the_byte_limit_are_refused_from_their_size(tmp_path):
    path = tmp_path / "big.json"
    path.write_text("[" + "0," * 100 + "0]")
    with pytest.raises(DataError, match="over the limit of 100 bytes"):
        read_json(path, max_bytes=100)
    assert read_json(path, max_bytes=1000) == [0] * 101


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(digits=st.integers(401, 20_000), negative=st.booleans())
def test_integers_too_long_for_a_double_are_read_as_infinities(tmp_path_factory, digits, negative):
    """Python refuses int() of more than 4300 digits with an error naming no place; they are read as +-inf here, so
    the schema and the results checks refuse them by field (see tests/data/test_schema.py)."""
    path = tmp_path_factory.mktemp("ints") / "ints.json"
    literal = ("-" if negative else "") + "9" * digits
    path.write_text(f'{{"id": {literal}, "small": 12}}')
    value = read_json(path)
    assert value["id"] == (float("-inf") if negative else float("inf")) and value["small"] == 12


def test_bad_text_and_bad_json_name_the_file(tmp_path):
    (tmp_path / "bin.json").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DataError, match="not UTF-8"):
        read_json(tmp_path / "bin.json")
    (tmp_path / "cut.json").write_text('{"a": [1, 2')
    with pytest.raises(DataError, match=r"cut\.json: invalid JSON at line 1"):
        read_json(tmp_path / "cut.json")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(DataError, match="nested too deeply"):
        read_json(tmp_path / "deep.json")


# ---------------------------------------------------------------------------------------------------------------
# outputs


def test_an_empty_output_is_refused_not_taken_as_the_current_folder():
    for bad in ("", "  "):
        with pytest.raises(InputError, match="--out is empty"):
            output_path(bad)
    with pytest.raises(InputError, match="NUL"):
        output_path("a\x00b")


@pytest.mark.parametrize("kind", ["loop", "under_a_file", "proc"])
def test_an_unwritable_output_folder_is_refused_before_any_work(tmp_path, kind):
    target = {"loop": tmp_path / "loop" / "out", "under_a_file": tmp_path / "file.txt" / "out",
              "proc": Path("/proc/vision-test/out")}[kind]
    if kind == "loop":
        os.symlink(tmp_path / "loop", tmp_path / "loop")
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(InputError) as info:
        with output_folder(target):
            pytest.fail("the block must not run")
    assert str(info.value).startswith(f"--out {target}: cannot write in this folder")
    with pytest.raises(InputError, match="--run_dir"):
        writable_folder(target, flag="--run_dir")


def test_an_output_folder_that_is_an_input_or_a_file_is_refused(tmp_path):
    images = tmp_path / "images"
    images.mkdir()
    with pytest.raises(InputError, match="is one of the inputs"):
        with output_folder(images / ".." / "images", inputs=[images]):
            pass
    (tmp_path / "model.ckpt").write_bytes(b"x")
    with pytest.raises(InputError, match="exists and is not a folder"):
        with output_folder(tmp_path / "model.ckpt"):
            pass


def test_a_failed_run_leaves_nothing_behind(tmp_path):
    """Files the block wrote are removed, and the folders the check created, and a full disk is one line naming
    the file; what was there before stays."""
    out = tmp_path / "a" / "b"
    with pytest.raises(InputError) as info:
        with output_folder(out) as folder:
            (folder / "results.json").write_text("{}")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(folder / "annotated.mp4"))
    assert str(info.value) == (f"cannot write {out / 'annotated.mp4'} in --out {out}: "
                               f"{os.strerror(errno.ENOSPC)}")
    assert not (tmp_path / "a").exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "old.txt").write_text("old")
    with pytest.raises(ValueError):
        with output_folder(kept) as folder:
            (folder / "new.txt").write_text("new")
            raise ValueError("a bug")
    assert sorted(p.name for p in kept.iterdir()) == ["old.txt"]
    with output_folder(tmp_path / "ok") as folder:
        (folder / "results.json").write_text("{}")
    assert (tmp_path / "ok" / "results.json").exists()


def test_an_output_file_may_not_overwrite_an_input(tmp_path):
    split, results = tmp_path / "split.json", tmp_path / "results.json"
    for path in (split, results):
        path.write_text(json.dumps([]))
    for target in (results, tmp_path / "." / "split.json"):
        with pytest.raises(InputError, match="is one of the inputs"):
            output_file(target, inputs=[split, results])
    os.symlink(results, tmp_path / "link.json")
    with pytest.raises(InputError, match="is one of the inputs"):
        output_file(tmp_path / "link.json", inputs=[split, results])
    with pytest.raises(InputError, match="is a folder"):
        output_file(tmp_path, inputs=[split])
    with pytest.raises(InputError, match="is not a folder"):
        output_file(results / "m.json")
    assert output_file(tmp_path / "new" / "m.json", inputs=[split, results]) == tmp_path / "new" / "m.json"
    assert not (tmp_path / "new").exists()  # nothing is created by the check


def test_environment_errors_are_one_line_naming_the_file_and_others_are_not_hidden():
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "/run/last.ckpt")
    try:
        raise RuntimeError("wrapped") from full
    except RuntimeError as wrapped:
        assert str(environment_error(wrapped)) == f"/run/last.ckpt: {os.strerror(errno.ENOSPC)}"
    assert environment_error(OSError(errno.EAGAIN, "try again")) is None
    assert environment_error(ValueError("a bug")) is None


@pytest.mark.parametrize("kind", HOSTILE)
def test_an_output_file_that_is_not_a_regular_file_is_refused_in_one_line(tmp_path, kind):
    """``--out`` naming a FIFO, a device, a folder or a link loop is refused before any work (an atomic write
    would replace the FIFO, the device node or the link itself); a missing file is created, and a link to a
    missing file creates its target (the link stays)."""
    path = hostile_path(tmp_path, kind)
    expected = {"fifo": "is a FIFO (named pipe), not a regular file", "device": "is a character device, not a regular "
                "file", "folder": "is a folder; give a file name", "loop": "unusable path (a symbolic-link loop)"}
    if kind in expected:
        with pytest.raises(InputError) as info:
            output_file(path)
        assert str(info.value).startswith(f"--out {path}") and expected[kind] in str(info.value)
        assert "\n" not in str(info.value)
    else:
        assert output_file(path) == (tmp_path / "nowhere" if kind == "dangling" else path)


def test_an_output_file_through_a_link_writes_the_target(tmp_path):
    target = tmp_path / "metrics.json"
    target.write_text("{}")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    assert output_file(link) == target
