"""The files the converters read and write: one check of ``--out``, one way to build a converter's output beside
``--out`` and put it in place only once it is complete (:func:`staged_output`), one way to copy or link a source file
inside a converted split's folder, one way to write a split JSON there, and one decoder of source mask PNGs."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from vision.data.coco import write_split
from vision.data.files import write_failure
from vision.errors import DataError, InputError

__all__ = ["output_folder", "staged_output", "place_file", "write_named_split", "decode_mask_png"]


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


@contextmanager
def staged_output(out: str | Path, *, merge: bool | Collection[str] = (),
                  inputs: Sequence[str | Path] = ()) -> Iterator[Path]:
    """A fresh staging folder to write a converter's whole output into, as if it were ``out``; ``out`` is changed
    only when the block ends without an exception, so a failure (a bad input found late, Ctrl-C) leaves it as it
    was and nothing behind. The staging folder is a hidden sibling of ``out`` (on its file system, so the files
    are moved, not copied, and ``--link`` hard links reach it; inside ``out`` only when ``out`` is a mount point
    or its parent is read-only); ``out`` itself is made at the end, and folders made above it to hold the staging
    folder are removed again on a failure.

    On success each top-level entry of the staging folder replaces its namesake in ``out`` (a file by a rename, a
    folder as a whole; folders first, the split files last), and every other entry of ``out`` is left alone:
    folders such as ``datasets/real`` hold the outputs of several converters. A folder named in ``merge`` (every
    folder with ``merge=True``) is not replaced as a whole: its files are put into the folder ``out`` holds,
    beside the ones there (a folder several runs fill, such as CO3D's category folders of several subsets).
    Should a rename fail, the entries already replaced are put back.

    Split files name their files relative to their own folder, so what is written into the staging folder reads
    the same once moved; a converter returns and prints the paths in ``out``, never in the staging folder.

    Args:
        out: the converter's ``--out`` folder (checked by :func:`output_folder`; a symbolic link is followed).
        inputs: files and folders the converter reads: a folder of ``out`` that holds one is never replaced.

    Raises:
        InputError: ``out`` is a file; replacing a folder of ``out`` would delete an input (nothing replaced);
            ``out`` cannot be written (the reason; nothing replaced).
    """
    target = Path(os.path.realpath(output_folder(out)))
    made = _missing_folders(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = _staging_folder(target)
    except OSError as exc:
        _remove_empty(made)
        raise write_failure(exc, out) from None
    done = False
    try:
        staged = staging / "new"
        staged.mkdir()
        yield staged
        units = _units(staged, merge)
        _check_inputs(units, target, inputs, out)
        try:
            _move_entries(units, staged, target, staging / "old")
        except OSError as exc:
            raise write_failure(exc, out) from None
        done = True
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if not done:
            _remove_empty(made)


def _staging_folder(target: Path) -> Path:
    """A new hidden folder on ``target``'s file system, where a rename reaches ``target``: beside it, or inside it
    when it is a mount point or its parent is read-only."""
    inside = target.is_dir() and os.stat(target).st_dev != os.stat(target.parent).st_dev
    if not inside:
        try:
            return Path(tempfile.mkdtemp(prefix=f".{target.name}.staging.", dir=target.parent))
        except PermissionError:
            if not target.is_dir():
                raise
    return Path(tempfile.mkdtemp(prefix=".staging.", dir=target))


def _missing_folders(folder: Path) -> list[Path]:
    """``folder`` and the folders above it that do not exist yet, deepest first."""
    missing = []
    while not os.path.lexists(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_empty(folders: Sequence[Path]) -> None:
    """Remove each of ``folders`` (deepest first) that is there and empty; the others stay."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            pass


def _units(staged: Path, merge: bool | Collection[str]) -> list[Path]:
    """What replaces its namesake in the output as a whole, relative to ``staged``: each top-level entry, or for a
    merged folder each file inside it; folders first, so that no split names a file not yet in place."""
    units = []
    for entry in sorted(staged.iterdir(), key=lambda e: (not e.is_dir(), e.name)):
        if entry.is_dir() and not entry.is_symlink() and (merge is True or (merge and entry.name in merge)):
            units += sorted(Path(root, name).relative_to(staged) for root, _, names in os.walk(entry)
                            for name in names)
        else:
            units.append(entry.relative_to(staged))
    return units


def _check_inputs(units: Sequence[Path], target: Path, inputs: Sequence[str | Path], out: str | Path) -> None:
    """Refuse to replace a folder of ``target`` that is, or holds, one of ``inputs`` (``units``: :func:`_units`)."""
    sources = [Path(os.path.realpath(p)) for p in inputs]
    for unit in units:
        replaced = target / unit
        if not replaced.is_dir():
            continue
        for source in sources:
            if source == replaced or replaced in source.parents:
                raise InputError(f"--out {out}: writing {unit} would replace {replaced}, which holds the input "
                                 f"{source}; write the output elsewhere")


def _move_entries(units: Sequence[Path], staged: Path, target: Path, aside: Path) -> None:
    """Move the ``units`` of ``staged`` (:func:`_units`) into ``target``, each replaced one first moved into ``aside``;
    on any failure (Ctrl-C included) the units moved are taken out again and the replaced ones put back, then it
    is raised."""
    aside.mkdir()
    started: list[tuple[Path, Path, Path | None]] = []  # (new unit, its place in target, where the old one goes)
    made: list[Path] = []
    try:
        for i, unit in enumerate(units):
            destination = target / unit
            missing = _missing_folders(destination.parent)
            destination.parent.mkdir(parents=True, exist_ok=True)
            made = missing + made
            old = aside / str(i) if os.path.lexists(destination) else None
            started.append((staged / unit, destination, old))
            if old is not None:
                os.replace(destination, old)
            os.replace(staged / unit, destination)
    except BaseException:
        for new, destination, old in reversed(started):
            if not os.path.lexists(new):  # moved in: take it out
                if destination.is_dir() and not destination.is_symlink():
                    shutil.rmtree(destination)
                else:
                    destination.unlink()
            if old is not None and os.path.lexists(old):
                os.replace(old, destination)
        _remove_empty(made)
        raise


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
