"""Placing a source file inside a converted split's folder: the converters' one way to copy or link it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = ["place_file"]


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
