"""What every dataset converter's ``main`` shares, and the list of converters ``vision prepare <dataset>`` runs.

A converter module (``vision/prepare/<name>.py``) keeps its own options and its conversion; its ``main(argv)``
builds its parser with :func:`converter_parser` (the description is the docstring's first line), adds ``--out`` and
``--link`` with :func:`add_out` / :func:`add_link`, and hands the parser and a function of the parsed arguments to
:func:`run`, which prints the lines that function yields and turns a :class:`~vision.errors.VisionError` into one
``error:`` line and exit status 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterable, Sequence

from vision.cli.main import Command, dispatch
from vision.errors import VisionError

__all__ = ["CONVERTERS", "add_link", "add_out", "converter_parser", "main", "run"]

#: The converters and dataset builders, ``vision prepare <name>``, in the order ``vision prepare --help`` lists them.
CONVERTERS: dict[str, Command] = {
    "aigv": Command("vision.prepare.aigv:main", "build the AIGV forensics benchmark (real, CGI and generated clips)"),
    "aigv-public": Command("vision.prepare.aigv_public:main",
                           "public generators' own sample outputs (pinned git blobs) beside real clips, alike"),
    "genvideo": Command("vision.prepare.genvideo:main", "GenVideo-style folders -> forensics splits"),
    "oov-coco": Command("vision.prepare.oov_coco:main",
                        "OOV-COCO / OOV-VOC / LVIS open-set splits from a COCO annotation file"),
    "vos": Command("vision.prepare.vos:main", "DAVIS 2017 / YouTube-VOS / MOSE folders -> a COCO-video split"),
    "colmap": Command("vision.prepare.colmap:main", "a COLMAP text model -> an unordered multi-view split"),
    "co3d": Command("vision.prepare.co3d:main", "a CO3Dv2 category -> multi-view videos with cameras and depth"),
    "ytvis": Command("vision.prepare.ytvis:main", "YouTube-VIS 2019 / 2021, LV-VIS -> a concept split"),
    "burst": Command("vision.prepare.burst:main", "BURST (TAO) -> a concept split"),
    "saco": Command("vision.prepare.saco:main", "SA-Co Gold / Silver / VEval -> a concept split"),
    "real-detection": Command("vision.prepare.teacher:main",
                              "real frames labelled by the YOLOX-nano teacher, as COCO splits"),
    "real-checked": Command("vision.prepare.real_checked:main",
                            "real frames with boxes checked by eye (detection evaluation), as COCO splits"),
    "real-tracks": Command("vision.prepare.real_tracks:main",
                           "real clips with one object's box track checked by eye, as a COCO-video split"),
    "real-depth": Command("vision.prepare.real_depth:main", "real frames with a monocular teacher's disparity"),
    "opencv-samples": Command("vision.prepare.opencv_samples:main",
                              "OpenCV's real sample videos, from Debian's opencv-doc package"),
}


def converter_parser(doc: str, full_doc: bool = False) -> argparse.ArgumentParser:
    """A converter's parser, described by its module docstring ``doc``: its first line, or all of it as written
    (``full_doc``, for a docstring whose examples are the help)."""
    if full_doc:
        return argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    return argparse.ArgumentParser(description=doc.split("\n")[0])


def add_out(parser: argparse.ArgumentParser, help: str | None = None, default: str | None = None) -> None:
    """``--out``: where the converter writes; required unless it has a ``default``."""
    parser.add_argument("--out", required=default is None, default=default, help=help)


def add_link(parser: argparse.ArgumentParser, what: str) -> None:
    """``--link``: hard-link the source files (``what``: frames, images, media) into ``--out`` instead of copying
    them (:func:`vision.prepare.files.place_file`)."""
    parser.add_argument("--link", action="store_true",
                        help=f"hard-link {what} instead of copying (a copy across file systems)")


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None,
        convert: Callable[[argparse.Namespace], Iterable[object]],
        errors: tuple[type[BaseException], ...] = (VisionError,), one_line: bool = False) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``), run ``convert`` on the arguments and print each line it yields;
    0 on success. An exception of ``errors`` is one ``error:`` line on stderr (its whitespace folded to single
    spaces with ``one_line``) and exit status 2."""
    args = parser.parse_args(argv)
    try:
        for line in convert(args):
            print(line)
    except errors as exc:
        message = " ".join(str(exc).split()) if one_line else str(exc)
        print(f"error: {message}", file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``vision prepare <dataset> [arguments]``: run that converter's ``main`` on the arguments."""
    return dispatch("vision prepare", CONVERTERS, list(sys.argv[1:] if argv is None else argv), what="dataset")
