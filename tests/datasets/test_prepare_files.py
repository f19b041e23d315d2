"""vision.prepare.files: every converter's ``--out`` is a folder, and an existing file given as ``--out`` is one
``error:`` line naming it (exit status 2), with the file left as it was."""

import os
from pathlib import Path

import pytest

from vision.errors import DataError, InputError
from vision.prepare import aigv, co3d, colmap, files, genvideo, oov_coco, vos


def test_output_folder_accepts_a_folder_or_a_new_path_and_refuses_a_file(tmp_path):
    assert files.output_folder(tmp_path) == tmp_path
    assert files.output_folder(str(tmp_path / "new")) == tmp_path / "new"
    assert not (tmp_path / "new").exists()  # not created here
    (tmp_path / "split.json").write_text("{}")
    with pytest.raises(InputError, match=r"--out is a folder .*split\.json is a file"):
        files.output_folder(tmp_path / "split.json")


@pytest.mark.parametrize("main, args", [
    (vos.main, ["DATA", "--subset", "val"]),
    (colmap.main, ["DATA", "--images", "DATA"]),
    (co3d.main, ["DATA", "--category", "apple"]),
    (genvideo.main, ["DATA"]),
    (oov_coco.main, ["--annotations", "DATA/instances.json", "--iv", "voc"]),
    (aigv.main, []),
], ids=["vos", "colmap", "co3d", "genvideo", "oov_coco", "aigv"])
def test_every_converter_refuses_an_existing_file_as_out(main, args, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "DATA").mkdir()
    existing = tmp_path / "out.json"
    existing.write_text("{}")
    assert main([*args, "--out", str(existing)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --out is a folder") and str(existing) in err[0]
    assert existing.read_text() == "{}"


def _tree(folder):
    return {p.relative_to(folder).as_posix(): None if p.is_dir() else p.read_bytes() for p in sorted(folder.rglob("*"))}


def _old_output(out):
    (out / "frames" / "a").mkdir(parents=True)
    (out / "frames" / "a" / "0.jpg").write_bytes(b"old frame")
    (out / "train.json").write_text("old split")
    (out / "mine.txt").write_text("the user's")


def test_staged_output_replaces_its_entries_whole_and_leaves_the_others(tmp_path):
    out = tmp_path / "out"
    _old_output(out)
    with files.staged_output(out) as stage:
        assert stage.parent.parent == tmp_path and stage.parent.name.startswith(".out.")
        (stage / "frames" / "b").mkdir(parents=True)
        (stage / "frames" / "b" / "0.jpg").write_bytes(b"new frame")
        (stage / "train.json").write_text("new split")
        assert _tree(out)["train.json"] == b"old split"  # nothing replaced before the block ends
    assert _tree(out) == {"frames": None, "frames/b": None, "frames/b/0.jpg": b"new frame", "mine.txt": b"the user's",
                          "train.json": b"new split"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_staged_output_merges_the_folders_named(tmp_path):
    out = tmp_path / "out"
    _old_output(out)
    with files.staged_output(out, merge={"frames"}) as stage:
        (stage / "frames" / "a").mkdir(parents=True)
        (stage / "frames" / "a" / "1.jpg").write_bytes(b"new frame")
    assert _tree(out)["frames/a/0.jpg"] == b"old frame" and _tree(out)["frames/a/1.jpg"] == b"new frame"


def test_staged_output_makes_a_new_out_and_its_folders_only_at_the_end(tmp_path):
    out = tmp_path / "a" / "b" / "out"
    with files.staged_output(out) as stage:
        (stage / "x.json").write_text("{}")
        assert not out.exists()
    assert (out / "x.json").read_text() == "{}"
    assert sorted(p.name for p in (tmp_path / "a" / "b").iterdir()) == ["out"]


@pytest.mark.parametrize("error", [DataError("late"), KeyboardInterrupt()])
def test_a_failure_inside_leaves_out_and_no_staging_folder(tmp_path, error):
    out = tmp_path / "out"
    _old_output(out)
    before = _tree(out)
    with pytest.raises(type(error)):
        with files.staged_output(out) as stage:
            (stage / "train.json").write_text("new split")
            raise error
    assert _tree(out) == before and sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    with pytest.raises(DataError):  # a new out, and folders made for it, are not left behind either
        with files.staged_output(tmp_path / "new" / "out") as stage:
            (stage / "train.json").write_text("new split")
            raise DataError("late")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_failed_move_puts_the_replaced_entries_back(tmp_path, monkeypatch):
    out = tmp_path / "out"
    _old_output(out)
    before = _tree(out)
    replace = os.replace
    moved = []

    def failing(src, dst):
        if Path(dst) == out / "train.json" and Path(src).parent.name == "new":  # after frames/ was swapped in
            raise OSError(28, "No space left on device")
        moved.append(dst)
        replace(src, dst)

    monkeypatch.setattr(files.os, "replace", failing)
    with pytest.raises(InputError, match="No space left"):
        with files.staged_output(out) as stage:
            (stage / "frames").mkdir()
            (stage / "frames" / "new.jpg").write_bytes(b"new")
            (stage / "train.json").write_text("new split")
    assert any(Path(d) == out / "frames" for d in moved)
    assert _tree(out) == before and sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_staged_output_never_replaces_a_folder_holding_an_input(tmp_path):
    out = tmp_path / "out"
    _old_output(out)
    before = _tree(out)
    with pytest.raises(InputError, match="holds the input"):
        with files.staged_output(out, inputs=[out / "frames" / "a"]) as stage:
            (stage / "frames").mkdir()
            (stage / "frames" / "0.jpg").write_bytes(b"copy")
    assert _tree(out) == before and sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_staged_output_stages_inside_out_when_its_parent_is_read_only(tmp_path, monkeypatch):
    out = tmp_path / "out"
    _old_output(out)
    mkdtemp = files.tempfile.mkdtemp

    def read_only_parent(prefix, dir):
        if Path(dir) == tmp_path:
            raise PermissionError(13, "Permission denied", str(dir))
        return mkdtemp(prefix=prefix, dir=dir)

    monkeypatch.setattr(files.tempfile, "mkdtemp", read_only_parent)
    with files.staged_output(out) as stage:
        assert stage.parent.parent == out
        (stage / "train.json").write_text("new split")
    assert sorted(p.name for p in out.iterdir()) == ["frames", "mine.txt", "train.json"]
    assert (out / "train.json").read_text() == "new split"
