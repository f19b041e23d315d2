"""The converters' output folder and the files placed in it: one check of ``--out`` and one way to copy or link a
source file inside a converted split's folder."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from vision.errors import InputError

__all__ = ["output_folder", "place_file"]


def output_folder(out: str | Path) -> Path:
    """``out`` as the folder a converter writes its split JSON files (and the files they name) into. The folder is
    not created here, so a converter that fails on its input leaves nothing behind.

    Raises:
        InputError: ``out`` is an existing file (every converter's ``--out`` is a folder).
    """
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise InputError(f"--out is a folder (the split is written inside it as <name>.json), but {path} is a file")
    return path


def place_file(src: Path, dst: Path, link: bool) -> None:
    """Put ``src`` at ``dst`` (replacing what is there): a hard link when ``link`` (a copy when the two lie on
    different file systems, where hard links cannot reach), else a copy with its timestamps."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists() or dst.is_symlink():
        dst.unlink()
    if link:
        try:
            os.link(src, dst)
            return
        except OSError:
            pass  # another file system: copy
    shutil.copy2(src, dst)
