"""The files the converters read and write: one check of ``--out``, one way to copy or link a source file inside a
converted split's folder, one way to write a split JSON there, and one decoder of source mask PNGs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from vision.data.coco import write_split
from vision.errors import DataError, InputError

__all__ = ["output_folder", "place_file", "write_named_split", "decode_mask_png"]


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


def write_named_split(out: Path, name: str, dataset: dict) -> Path:
    """Write ``dataset`` as ``out/<name>.json`` (validated and atomic, :func:`vision.data.coco.write_split`);
    returns that path."""
    path = out / f"{name}.json"
    write_split(path, dataset)
    return path


def decode_mask_png(path: Path, modes: tuple[str, ...], expected: str) -> np.ndarray:
    """The pixel values of the mask image at ``path`` as ``uint8 [H, W]``: as stored (a palette image's indices, not
    its colours), a 1-bit image's as 0 / 255. Only the Pillow ``modes`` are read; ``expected`` describes them in
    the error (``mask must be <expected>; got mode 'RGB'``). The caller checks the header (size, pixel limit)
    first, so nothing oversized is decoded.

    Raises:
        DataError: another mode, or a file Pillow cannot decode (the message names the file).
    """
    from PIL import Image

    try:
        with Image.open(path) as image:
            if image.mode not in modes:
                raise DataError(f"mask must be {expected}; got mode {image.mode!r}", file=path, value=image.mode)
            return np.array(image.convert("L") if image.mode == "1" else image, dtype=np.uint8)
    except DataError:
        raise
    except (OSError, ValueError, SyntaxError) as exc:
        raise DataError(f"cannot read mask (corrupt or unsupported): {exc}", file=path) from None
