"""OpenCV's real sample videos from Debian's opencv-doc: copied from an installed package, or extracted from the
package that ``apt-get download`` fetches (here a small package built with ``dpkg-deb`` and a stand-in apt-get on
PATH), only the files asked for, each checked for by name."""

from __future__ import annotations

import gzip
import os
import shutil
import stat
from pathlib import Path

import pytest

from tests.datasets.staging import add_user_file, assert_left_as_it_was, fail_late, snapshot
from vision.prepare import opencv_samples
from vision.prepare.opencv_samples import ALL_FILES, CGI_FILES, FILES, fetch, main, missing


def _package_tree(root: Path) -> dict[str, bytes]:
    """The members of :data:`ALL_FILES` under ``root`` (gzip where the package has them gzipped); our name -> bytes."""
    content = {}
    for name, member in ALL_FILES.items():
        data = f"{name} contents".encode() * 10
        path = root / member
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(gzip.compress(data) if member.endswith(".gz") else data)
        content[name] = data
    (root / "usr/share/doc/opencv-doc/examples/data/tree.avi").write_bytes(b"not wanted")
    return content


def test_installed_package_files_are_copied_and_unzipped(tmp_path, monkeypatch):
    content = _package_tree(tmp_path / "root")
    monkeypatch.setattr(opencv_samples, "INSTALLED", tmp_path / "root")
    out = fetch(tmp_path / "out")
    assert missing(out) == [] and missing(out, tuple(ALL_FILES)) == []
    assert {p.name for p in out.iterdir()} == set(ALL_FILES)
    for name, data in content.items():
        assert (out / name).read_bytes() == data


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="needs Debian's dpkg-deb")
def test_downloaded_package_gives_only_the_named_files(tmp_path, monkeypatch):
    tree = tmp_path / "pkg"
    content = _package_tree(tree)
    (tree / "DEBIAN").mkdir()
    (tree / "DEBIAN/control").write_text("Package: opencv-doc\nVersion: 1.0\nArchitecture: all\n"
                                         "Maintainer: test <t@example.org>\nDescription: test package\n")
    deb = tmp_path / "opencv-doc_1.0_all.deb"
    assert os.system(f"dpkg-deb --build --root-owner-group {tree} {deb} >/dev/null") == 0
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "apt-get"  # `apt-get download opencv-doc` puts the package into the working folder
    fake.write_text(f"#!/bin/sh\n[ \"$1\" = download ] && [ \"$2\" = opencv-doc ] && cp {deb} .\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(opencv_samples, "INSTALLED", tmp_path / "nothing_installed")
    out = tmp_path / "out"
    assert main(["--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(ALL_FILES)
    for name, data in content.items():
        assert (out / name).read_bytes() == data


def test_a_failed_download_names_the_package(tmp_path, monkeypatch, capsys):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "apt-get"
    fake.write_text("#!/bin/sh\necho 'E: Unable to locate package opencv-doc' >&2\nexit 100\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(opencv_samples, "INSTALLED", tmp_path / "nothing_installed")
    assert main(["--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "opencv-doc" in err and "Unable to locate package" in err
    assert not any((tmp_path / "out").glob("*.*"))


def test_out_that_is_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert main(["--out", str(tmp_path / "f")]) == 2
    assert "is a file" in capsys.readouterr().err


def test_a_late_failure_leaves_the_folder_as_it_was(tmp_path, monkeypatch, capsys):
    """The last file fails as it is copied: those copied before it do not replace the old ones either."""
    _package_tree(tmp_path / "root")
    monkeypatch.setattr(opencv_samples, "INSTALLED", tmp_path / "root")
    out = tmp_path / "out"
    add_user_file(out)
    assert main(["--out", str(out)]) == 0
    (out / "cup.mp4").unlink()  # one missing: the next run fetches all three again
    before = snapshot(out)
    for member in ALL_FILES.values():  # a newer package
        path = tmp_path / "root" / member
        path.write_bytes(gzip.compress(b"newer") if member.endswith(".gz") else b"newer")
    written = fail_late(monkeypatch, opencv_samples, "_copy_member", call=len(ALL_FILES))
    capsys.readouterr()
    assert main(["--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(written) == len(ALL_FILES) and len(err) == 1 and "injected late failure" in err[0]
    assert_left_as_it_was(out, before, {"root", "out"})


def test_the_camera_videos_are_checked_apart_from_the_animated_film(tmp_path, monkeypatch):
    """A folder with the camera videos but not the film counts as complete for the real sources; fetch brings the
    film."""
    content = _package_tree(tmp_path / "root")
    monkeypatch.setattr(opencv_samples, "INSTALLED", tmp_path / "root")
    out = fetch(tmp_path / "out")
    (out / "Megamind.avi").unlink()
    assert missing(out) == [] and missing(out, tuple(ALL_FILES)) == list(CGI_FILES)
    fetch(out)
    assert (out / "Megamind.avi").read_bytes() == content["Megamind.avi"]
