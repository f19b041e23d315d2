"""vision.prepare.files: every converter's ``--out`` is a folder, and an existing file given as ``--out`` is one
``error:`` line naming it (exit status 2), with the file left as it was."""

import pytest

from vision.errors import InputError
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
