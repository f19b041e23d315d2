"""vision export (vision.cli.export): a checkpoint becomes a model folder that every --ckpt option
takes; bad input is one ``error:`` line and exit status 2, with nothing written."""

from __future__ import annotations

import json
import os

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from vision.cli import export as export_cli
from tests.cli.conftest import write_task_checkpoint
from vision.tasks import get_task


def _checkpoint(tmp_path, name: str = "forensics", **config_fields):
    return write_task_checkpoint(tmp_path / f"{name}.ckpt", name, **config_fields)


def test_export_writes_a_folder_the_task_loads(tmp_path, capsys):
    path, model = _checkpoint(tmp_path)
    out = tmp_path / "model"
    assert export_cli.main(["--ckpt", str(path), "--out", str(out)]) == 0
    assert "wrote the forensics model folder" in capsys.readouterr().out
    assert json.loads((out / "config.json").read_text())["task"] == "forensics"
    loaded, _ = get_task("forensics").load(out)
    for key, value in model.state_dict().items():
        torch.testing.assert_close(loaded.state_dict()[key], value, rtol=0, atol=0, equal_nan=True)
    again = tmp_path / "again"
    assert export_cli.main(["--ckpt", str(out), "--out", str(again)]) == 0  # a folder exports too
    assert (again / "README.md").read_text() == (out / "README.md").read_text()


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    path, _ = _checkpoint(tmp_path)
    out = tmp_path / "model"
    cases = [
        (["--ckpt", str(tmp_path / "missing.ckpt")], "checkpoint not found"),
        (["--ckpt", str(tmp_path)], "not a model folder (no config.json)"),
        (["--ckpt", str(path), "--task", "detection"], "holds a forensics model, not a detection model"),
    ]
    for argv, message in cases:
        assert export_cli.main([*argv, "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1
    assert not out.exists()
    assert export_cli.main(["--ckpt", str(path), "--out", str(out)]) == 0
    assert export_cli.main(["--ckpt", str(path), "--out", str(out)]) == 2
    assert "already holds a model folder; pass --overwrite" in capsys.readouterr().err
    assert export_cli.main(["--ckpt", str(out), "--out", str(out)]) == 2
    assert "is the model folder being read" in capsys.readouterr().err
    assert export_cli.main(["--ckpt", str(path), "--out", str(tmp_path / "no" / "model")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert export_cli.main(["--ckpt", str(path), "--out", str(tmp_path / "o"), "--onnx"]) == 2
    assert "forensics task has no ONNX export" in capsys.readouterr().err and not (tmp_path / "o").exists()


@pytest.mark.slow  # exports the detector and runs vision-predict twice
def test_onnx_export_and_predict_from_the_folder(tmp_path, capsys):
    pytest.importorskip("onnxruntime")
    import numpy as np
    from PIL import Image

    from vision.cli import predict as predict_cli

    path, _ = _checkpoint(tmp_path, "detection")
    out = tmp_path / "model"
    assert export_cli.main(["--ckpt", str(path), "--out", str(out), "--onnx"]) == 0
    printed = capsys.readouterr().out
    assert (out / "onnx" / "detector.onnx").is_file() and "detector.onnx: onnxruntime vs PyTorch" in printed
    image = tmp_path / "image.png"
    Image.fromarray((np.random.default_rng(0).random((64, 64, 3)) * 255).astype(np.uint8)).save(image)
    results = []
    for ckpt in (path, out):
        target = tmp_path / f"pred_{ckpt.name}"
        assert predict_cli.main([str(image), "--task", "detection", "--ckpt", str(ckpt), "--vocabulary", "mug,cube",
                                 "--out", str(target)]) == 0
        results.append(sorted(p.read_text() for p in target.rglob("results.json")))
    assert results[0] == results[1] and results[0]


def _one_error(capsys, message: str) -> str:
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and message in err, err
    return err


def _contents(folder) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_overwrite_never_deletes_an_input_or_a_foreign_file(tmp_path, capsys):
    """``--overwrite`` replaces a model folder and nothing else: a checkpoint, a model folder or a metrics file
    inside ``--out`` is refused naming it (issue 46 item 2), and so is any file a model folder is not made of."""
    path, _ = _checkpoint(tmp_path)
    out = tmp_path / "model"
    assert export_cli.main(["--ckpt", str(path), "--out", str(out)]) == 0
    capsys.readouterr()
    inside = out / "x.ckpt"
    inside.write_bytes(path.read_bytes())
    before = _contents(out)
    assert export_cli.main(["--ckpt", str(inside), "--out", str(out), "--overwrite"]) == 2
    _one_error(capsys, f"--out {out} holds the input {inside}, which replacing the folder would delete")
    assert _contents(out) == before
    inside.unlink()
    nested = out / "sub" / "inner"
    nested.parent.mkdir()
    assert export_cli.main(["--ckpt", str(path), "--out", str(nested)]) == 0
    capsys.readouterr()
    before = _contents(out)
    assert export_cli.main(["--ckpt", str(nested), "--out", str(out), "--overwrite"]) == 2
    _one_error(capsys, f"holds the input {nested}")
    assert export_cli.main(["--ckpt", str(path), "--out", str(out), "--overwrite"]) == 2  # not an input: still kept
    _one_error(capsys, f"--out {out} holds 'sub', which is not part of a model folder")
    assert _contents(out) == before
    metrics = out / "sub" / "metrics.csv"
    metrics.write_text("epoch,val/x\n0,1\n")
    assert export_cli.main(["--ckpt", str(path), "--out", str(out), "--overwrite", "--metrics", str(metrics)]) == 2
    _one_error(capsys, f"holds the input {metrics}")
    link = tmp_path / "link.ckpt"  # an input reached through a link is the file the link names
    link.symlink_to(out / "sub" / "inner" / "model.safetensors")
    assert export_cli.main(["--ckpt", str(link), "--out", str(out), "--overwrite"]) == 2
    _one_error(capsys, "which replacing the folder would delete")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["forensics.ckpt", "link.ckpt", "model"]


def test_an_unwritable_out_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    """A read-only mount or a full disk (simulated: the tests run as root) is one line naming the file and the
    reason; a replaced folder stays as it was and no temporary folder is left beside it."""
    import errno
    import pathlib

    from safetensors import SafetensorError

    from vision import model_folder

    path, _ = _checkpoint(tmp_path)
    out = tmp_path / "model"
    assert export_cli.main(["--ckpt", str(path), "--out", str(out)]) == 0
    capsys.readouterr()
    before = _contents(out)
    argv = ["--ckpt", str(path), "--out", str(out), "--overwrite"]

    def full_disk(tensors, filename, metadata=None):
        raise SafetensorError(f"Error while serializing: I/O error: No space left on device (os error 28) at "
                              f"path \"{filename}.tmp\"")

    with monkeypatch.context() as patch:
        patch.setattr(model_folder, "save_file", full_disk)
        assert export_cli.main(argv) == 2
    _one_error(capsys, f"cannot write {out / 'model.safetensors'} in --out {out}: No space left on device")
    real_write_text = pathlib.Path.write_text

    def read_only(self, *args, **kwargs):
        if self.name == "README.md":
            raise OSError(errno.EROFS, "Read-only file system", str(self))
        return real_write_text(self, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(pathlib.Path, "write_text", read_only)
        assert export_cli.main(argv) == 2
    _one_error(capsys, f"cannot write {out / 'README.md'} in --out {out}: Read-only file system")

    real_replace = os.replace
    failed = []

    def no_rename(src, dst):  # the new folder's rename into place fails once; putting the old one back works
        if str(dst) == str(out) and not failed:
            failed.append(src)
            raise OSError(errno.ENOSPC, "No space left on device", str(src), None, str(dst))
        return real_replace(src, dst)

    with monkeypatch.context() as patch:
        patch.setattr(model_folder.os, "replace", no_rename)
        assert export_cli.main(argv) == 2
    _one_error(capsys, f"--out {out}: No space left on device")
    assert failed and _contents(out) == before

    def read_only_folder(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    with monkeypatch.context() as patch:  # found before the checkpoint is read
        patch.setattr(model_folder.tempfile, "mkdtemp", read_only_folder)
        assert export_cli.main(argv) == 2
    _one_error(capsys, f"--out {out}: cannot write in {tmp_path} (Read-only file system)")
    assert _contents(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["forensics.ckpt", "model"]
    assert export_cli.main(["--ckpt", str(path), "--out", str(path / "model")]) == 2  # under a file
    _one_error(capsys, f"--out {path / 'model'}: {path} (its parent) is not a folder")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert export_cli.main(["--ckpt", str(path), "--out", str(loop)]) == 2
    _one_error(capsys, f"--out {loop}: unusable path (a symbolic-link loop)")
    assert loop.is_symlink()
    assert export_cli.main(["--ckpt", str(path), "--out", ""]) == 2
    _one_error(capsys, "--out is empty")


def test_metrics_that_cannot_be_used_are_one_line(tmp_path, capsys):
    """``--metrics`` is a metrics.csv or a folder of them that gives the card its figures: a device, a FIFO, a
    link loop, a missing path or a file without the checkpoint's row is refused, never silently dropped."""
    path, _ = _checkpoint(tmp_path)
    out = tmp_path / "model"
    fifo = tmp_path / "metrics.fifo"
    os.mkfifo(fifo)
    loop = tmp_path / "loop.csv"
    loop.symlink_to(loop)
    other = tmp_path / "other.csv"
    other.write_text("epoch,step,val/x\n3,10,0.5\n")
    cases = [("/dev/zero", "/dev/zero: --metrics is a character device, not a regular file"),
             (str(fifo), f"{fifo}: --metrics is a FIFO (named pipe), not a regular file"),
             (str(loop), f"{loop}: --metrics cannot be opened: a symbolic-link loop"),
             (str(tmp_path / "missing.csv"), "--metrics not found"),
             (str(other), (f"--metrics {other} is not used: it holds no readable metrics.csv with a val/* row at "
                           "the checkpoint's epoch 0"))]
    for metrics, message in cases:
        assert export_cli.main(["--ckpt", str(path), "--out", str(out), "--metrics", metrics]) == 2
        _one_error(capsys, message)
        assert not out.exists()
    logs = tmp_path / "logs"
    (logs / "version_1").mkdir(parents=True)
    (logs / "version_0").mkdir()
    (logs / "version_1" / "metrics.csv").write_text("epoch,step,val/x\n0,1,0.25\n")
    os.mkfifo(logs / "version_0" / "metrics.csv")
    assert export_cli.main(["--ckpt", str(path), "--out", str(out), "--metrics", str(logs)]) == 0
    assert "| val/x | 0.25 |" in (out / "README.md").read_text()  # a folder: its metrics.csv files, FIFOs skipped
    assert export_cli.main(["--ckpt", str(out), "--out", str(tmp_path / "again"), "--metrics", str(other)]) == 2
    _one_error(capsys, "--ckpt is a model folder, which keeps the training record it was exported with")


#: what may lie in a model folder besides its own files, and whether ``--overwrite`` may delete it
_EXTRA_ENTRIES = {"x.ckpt": False, "notes.txt": False, "sub/": False, "sub/inner.ckpt": False, ".hidden": False,
                  "onnx/a.onnx": True, "onnx/b.txt": False, "backbone.safetensors": True, "link.safetensors": False}


def _tree(folder) -> dict[str, bytes | str | None]:
    """Every entry under ``folder``: a file's bytes, a link's target, None for a folder."""
    return {str(p.relative_to(folder)): (os.readlink(p) if p.is_symlink() else p.read_bytes() if p.is_file()
                                         else None) for p in sorted(folder.rglob("*"))}


@settings(max_examples=25, deadline=None)
@given(extra=st.sets(st.sampled_from(sorted(_EXTRA_ENTRIES))))
def test_overwrite_replaces_a_model_folder_and_nothing_else(tmp_path_factory, extra):
    """Whatever else lies in a model folder, ``--overwrite`` replaces it only when everything in it is a model
    folder's own (config.json, README.md, ``*.safetensors``, ``onnx/*.onnx``); otherwise the folder is refused and
    left as it was, and no temporary folder is left beside it."""
    from vision.errors import InputError
    from vision.export.model_card import model_card
    from vision.model_folder import ModelFolder, write_model_folder

    root = tmp_path_factory.mktemp("overwrite")
    out = root / "model"
    write_model_folder(ModelFolder("forensics", {}, {"model": {"w": torch.zeros(2)}}), out, card=model_card)
    for name in sorted(extra):
        entry = out / name.rstrip("/")
        entry.parent.mkdir(exist_ok=True)
        if name.endswith("/"):
            entry.mkdir(exist_ok=True)
        elif name.startswith("link"):
            entry.symlink_to(out / "model.safetensors")
        else:
            entry.write_bytes(name.encode())
    before = _tree(out)
    new = ModelFolder("forensics", {}, {"model": {"w": torch.ones(3)}})
    if all(_EXTRA_ENTRIES[name] for name in extra):
        write_model_folder(new, out, overwrite=True, card=model_card)
        assert sorted(_tree(out)) == ["README.md", "config.json", "model.safetensors"]
    else:
        with pytest.raises(InputError, match="which is not part of a model folder"):
            write_model_folder(new, out, overwrite=True, card=model_card)
        assert _tree(out) == before
    assert [p.name for p in root.iterdir()] == ["model"]
