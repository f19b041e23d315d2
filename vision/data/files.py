"""Checked input files and output places: one check used by every reader and command line tool.

Inputs (splits, results files, images, depth maps, videos, checkpoints) must be *regular files*: a FIFO, a device
(``/dev/zero``, ``/dev/urandom``), a folder or a symbolic-link loop is refused from ``stat`` before anything is
opened, so no reader blocks on a pipe or reads an endless device. Whole-file reads (JSON) are bounded by
``max_bytes``, checked from the size ``stat`` reports and again while reading (memory is taken for what the file
holds, not for the bound), and opened with ``O_NONBLOCK`` so a file swapped for a FIFO after the check still cannot
block.

Outputs: :func:`output_folder` and :func:`output_file` check a tool's ``--out`` before any work is done (not
empty, not one of the inputs, a folder that can be created and written in); :func:`write_failure` words an
``OSError`` met while writing (full disk, read-only mount) as one line naming the file.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from vision.errors import DataError, InputError, VisionError

__all__ = ["MAX_JSON_BYTES", "regular_file", "read_bytes", "read_json", "output_folder", "writable_folder",
           "output_file", "output_path", "write_failure", "environment_error", "same_file"]

#: Largest JSON file (a split or a results file) that is read: 4 GiB. Parsing takes several times the file's size
#: in memory, so a larger file is refused from its size before it is read.
MAX_JSON_BYTES = 4 << 30

#: JSON integers with more characters than this cannot be finite doubles; they are read as floats (+-inf), which
#: the schema and the results checks refuse naming the field. Python itself refuses more than 4300 digits with an
#: error that names no place.
MAX_INT_CHARS = 400


def _kind(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def _reason(exc: OSError) -> str:
    return exc.strerror or exc.__class__.__name__


def regular_file(path: str | Path, *, what: str = "file", max_bytes: int | None = None,
                 error: type[VisionError] = DataError, field: str | None = None, value: Any = DataError._UNSET,
                 file: str | Path | None = None) -> Path:
    """``path`` when it is a regular file (symbolic links followed) of at most ``max_bytes`` bytes (None: any size).

    Args:
        what: the file's role in messages (``"split"``, ``"depth file"``, ``"image file"`` ...).
        error: the error type raised (a :class:`DataError` subclass names the file; :class:`InputError` gets the
            path in its message).
        field, value, file: where the name came from (a split's ``images[3].file_name``), for the message; the
            message then names ``file`` (the split) and the field, else the path itself.

    Raises:
        ``error``: missing, a symbolic-link loop or otherwise unreachable, not a regular file (a FIFO, a device, a
        folder), or larger than ``max_bytes``.
    """
    path = Path(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        _raise(error, f"{what} not found", path, field, value, file)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            _raise(error, f"{what} cannot be opened: a symbolic-link loop", path, field, value, file)
        _raise(error, f"{what} cannot be opened ({_reason(exc)})", path, field, value, file)
    except ValueError as exc:  # an embedded NUL byte
        _raise(error, f"{what} has an unusable name ({exc})", path, field, value, file)
    if not stat.S_ISREG(info.st_mode):
        _raise(error, f"{what} is {_kind(info.st_mode)}, not a regular file", path, field, value, file)
    if max_bytes is not None and info.st_size > max_bytes:
        _raise(error, f"{what} is {info.st_size} bytes, over the limit of {max_bytes} bytes", path, field, value,
               file)
    return path


def _raise(error: type[VisionError], message: str, path: Path, field: str | None, value: Any,
           file: str | Path | None) -> None:
    if issubclass(error, DataError):
        if file is not None:  # a name read from another file: name that file and the field, and where it led
            raise error(f"{message} at {path}", file=file, field=field, value=value)
        raise error(message, file=path, field=field, value=value)
    raise error(f"{path}: {message}")


def read_bytes(path: str | Path, *, what: str = "file", max_bytes: int = MAX_JSON_BYTES,
               error: type[VisionError] = DataError) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`regular_file`), at most ``max_bytes`` of them.

    The file is opened without blocking and checked again on the open descriptor (a regular file of at most
    ``max_bytes`` bytes by its size). Memory is taken for the size the descriptor reports, never for the bound
    (asking for ``max_bytes + 1`` bytes would reserve 4 GiB for any split, which fails under an address-space
    limit). Reading goes one byte past that size, and a file that grew meanwhile is read on in chunks that stop
    past ``max_bytes``, so a file swapped or grown after the check is still refused.
    """
    path = regular_file(path, what=what, max_bytes=max_bytes, error=error)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        _raise(error, f"{what} cannot be opened ({_reason(exc)})", path, None, DataError._UNSET, None)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            _raise(error, f"{what} is not a regular file", path, None, DataError._UNSET, None)
        if info.st_size > max_bytes:
            _raise(error, f"{what} is {info.st_size} bytes, over the limit of {max_bytes} bytes", path, None,
                   DataError._UNSET, None)
        try:
            data = _read_bounded(handle, info.st_size, max_bytes)
        except OSError as exc:
            _raise(error, f"{what} cannot be read ({_reason(exc)})", path, None, DataError._UNSET, None)
    if len(data) > max_bytes:
        _raise(error, f"{what} is over the limit of {max_bytes} bytes", path, None, DataError._UNSET, None)
    return data


#: Chunk read from a file that holds more than its size said when it was opened.
_GROWN_CHUNK_BYTES = 1 << 20


def _read_bounded(handle: BinaryIO, size: int, max_bytes: int) -> bytes:
    """The bytes of ``handle`` from its position: ``size + 1`` asked for at once (one allocation of the file's
    size), then, while the file holds more, chunks of at most :data:`_GROWN_CHUNK_BYTES` until its end or until
    more than ``max_bytes`` bytes are read."""
    data = handle.read(size + 1)
    if len(data) <= size:
        return data
    chunks, total = [data], len(data)
    while total <= max_bytes:
        chunk = handle.read(min(_GROWN_CHUNK_BYTES, max_bytes + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _parse_int(text: str) -> int | float:
    return float(text) if len(text) > MAX_INT_CHARS else int(text)


def read_json(path: str | Path, *, what: str = "JSON file", max_bytes: int = MAX_JSON_BYTES) -> Any:
    """Parse the JSON file ``path`` (UTF-8, a BOM allowed). Integers of more than :data:`MAX_INT_CHARS` characters
    are read as floats (infinite), for the schema's checks to refuse by field.

    Raises:
        DataError: naming the file: not a regular file of at most ``max_bytes`` bytes (:func:`read_bytes`), not
            UTF-8, invalid JSON, or nested too deeply to parse.
    """
    path = Path(path)
    raw = read_bytes(path, what=what, max_bytes=max_bytes)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"not UTF-8 text (byte {exc.start}: {exc.reason})", file=path) from None
    del raw  # the bytes would stay alive while the text is parsed, adding the file's size to the peak memory
    try:
        return json.loads(text, parse_int=_parse_int)
    except json.JSONDecodeError as exc:
        raise DataError(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", file=path) from None
    except RecursionError:
        raise DataError("JSON nested too deeply to read", file=path) from None


# ----------------------------------------------------------------------------------------------------------------
# outputs


def same_file(a: str | Path, b: str | Path) -> bool:
    """True when ``a`` and ``b`` name the same existing file or folder (links and ``..`` followed)."""
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _created_folders(path: Path) -> list[Path]:
    """The folders from ``path`` up that do not exist yet (deepest first)."""
    missing: list[Path] = []
    current = path
    while True:
        try:
            os.stat(current)
            return missing
        except FileNotFoundError:
            missing.append(current)
        except OSError:
            return missing  # reported by mkdir, which meets the same error
        if current.parent == current:
            return missing
        current = current.parent


def output_path(out: str | Path, flag: str = "--out") -> Path:
    """``out`` as a path, refusing an empty one (``Path("")`` would be the current folder) or a NUL byte with an
    :class:`InputError` naming ``flag``; check it before ``out`` is turned into a ``Path``."""
    text = os.fspath(out)
    if not text.strip():
        raise InputError(f"{flag} is empty; give a path to write to")
    if "\x00" in text:
        raise InputError(f"{flag} contains a NUL byte: {text!r}")
    return Path(text)


@contextmanager
def output_folder(out: str | Path, *, inputs: Sequence[str | Path] = (), flag: str = "--out") -> Iterator[Path]:
    """Check and create the output folder ``out`` of a tool, for the ``with`` block that writes in it.

    Before the block: ``out`` is not empty, not one of ``inputs`` (the same file or folder, links followed), and is
    a folder that can be created (missing parents too) and written in (a file is created and removed to be sure: a
    read-only mount, ``/proc`` or a link loop fail here).
    If the block raises, the files it added to the folder are removed, and so are the folders this call created
    when they are then empty: a failed run leaves no partial output (a file it replaced stays replaced). An
    ``OSError`` from the block becomes an :class:`InputError` (see :func:`write_failure`).

    Raises:
        InputError: naming ``flag``, the path and the reason.
    """
    path, created = _writable(out, inputs, flag)
    before = _entries(path)
    try:
        yield path
    except BaseException as exc:
        _remove_new(path, before)
        _remove_empty(created)
        if isinstance(exc, OSError):
            raise write_failure(exc, path, flag) from None
        raise


def writable_folder(out: str | Path, *, inputs: Sequence[str | Path] = (), flag: str = "--out") -> Path:
    """The checks of :func:`output_folder` for a folder a long run writes in (``--run_dir``): ``out`` is created
    (missing parents too) and written in once, or an :class:`InputError` naming ``flag`` says why not."""
    return _writable(out, inputs, flag)[0]


def _writable(out: str | Path, inputs: Sequence[str | Path], flag: str) -> tuple[Path, list[Path]]:
    """Check, create and probe the folder ``out``; return it and the folders created (deepest first)."""
    path = output_path(out, flag)
    for item in inputs:
        if same_file(path, item):
            raise InputError(f"{flag} {path} is one of the inputs ({item}); give another folder")
    try:
        if os.path.lexists(path) and not path.is_dir():
            raise InputError(f"{flag} exists and is not a folder: {path}")
    except OSError as exc:
        raise InputError(f"{flag} {path}: unusable folder ({_reason(exc)})") from None
    created = _created_folders(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-check.", dir=path)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        _remove_empty(created)
        raise InputError(f"{flag} {path}: cannot write in this folder ({_reason(exc)})") from None
    return path, created


def _entries(folder: Path) -> set[str]:
    try:
        return set(os.listdir(folder))
    except OSError:
        return set()


def _remove_new(folder: Path, before: set[str]) -> None:
    """Remove the files (not folders) that appeared in ``folder`` since ``before`` was listed: the partial outputs
    of a run that failed."""
    for name in _entries(folder) - before:
        entry = folder / name
        try:
            if entry.is_symlink() or entry.is_file():
                entry.unlink()
        except OSError:
            pass


def _remove_empty(folders: list[Path]) -> None:
    for folder in folders:  # deepest first
        try:
            folder.rmdir()
        except OSError:
            return  # not empty (or gone): keep it and its parents


def output_file(out: str | Path, *, inputs: Sequence[str | Path] = (), flag: str = "--out") -> Path:
    """Check the output file ``out`` of a tool before any work: not empty, not one of ``inputs``
    (``vision-evaluate --out`` naming its own ``--results`` would overwrite it), not an existing folder, FIFO,
    device or socket (an atomic write would replace ``/dev/null`` itself), and its folder either exists and is
    writable or can be created. Nothing is created here.

    A symbolic link is followed: the file to write is its target (returned), so the link stays a link; a link loop
    or a link that cannot be followed is refused.

    Returns:
        The file to write: ``out``, or the target of the link ``out``.

    Raises:
        InputError: naming ``flag``, the path and the reason.
    """
    path = output_path(out, flag)
    try:
        if path.is_symlink():
            path = Path(os.path.realpath(path, strict=False))
            os.stat(path)  # a loop fails here (a link to a missing file is fine: the file is created)
    except (FileNotFoundError, NotADirectoryError):
        pass
    except OSError as exc:
        reason = "a symbolic-link loop" if exc.errno == errno.ELOOP else _reason(exc)
        raise InputError(f"{flag} {out}: unusable path ({reason}); give a file name") from None
    for item in inputs:
        if same_file(path, item) or _same_name(path, item):
            raise InputError(f"{flag} {out} is one of the inputs ({item}); writing there would overwrite it")
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):  # a missing folder above it: said below
        info = None
    except OSError as exc:
        raise InputError(f"{flag} {out}: unusable path ({_reason(exc)})") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise InputError(f"{flag} {out} is a folder; give a file name")
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise InputError(f"{flag} {out} is {_kind(info.st_mode)}, not a regular file; give a file name")
    folder = path.parent
    existing = folder
    while True:
        try:
            info = os.stat(existing)
            break
        except FileNotFoundError:
            if existing.parent == existing:
                raise InputError(f"{flag} {path}: no existing folder above it") from None
            existing = existing.parent
        except OSError as exc:
            raise InputError(f"{flag} {path}: unusable folder {existing} ({_reason(exc)})") from None
    if not stat.S_ISDIR(info.st_mode):
        raise InputError(f"{flag} {path}: {existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InputError(f"{flag} {path}: cannot write in {existing} (permission denied or read-only)")
    return path


def _same_name(a: Path, b: str | Path) -> bool:
    """True when ``a`` and ``b`` resolve to the same path (for a file that does not exist yet)."""
    try:
        return a.resolve() == Path(b).resolve()
    except (OSError, RuntimeError, ValueError):
        return False


#: ``OSError`` numbers that say something about the machine or the paths given (a full disk, a read-only mount, a
#: link loop, permissions), not about the program: :func:`environment_error` words them as one line.
ENVIRONMENT_ERRNOS = frozenset(getattr(errno, name) for name in (
    "ENOSPC", "EDQUOT", "EROFS", "ELOOP", "EACCES", "EPERM", "EFBIG", "ENAMETOOLONG", "ENOTDIR", "EISDIR", "ENOENT",
    "EIO", "EMFILE", "ENFILE", "EXDEV") if hasattr(errno, name))


def environment_error(exc: BaseException | None) -> InputError | None:
    """The :class:`InputError` to report for an ``OSError`` behind ``exc`` (itself or a cause) whose number is one
    of :data:`ENVIRONMENT_ERRNOS`: ``"<file>: <reason>"`` in one line; None for anything else."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, OSError) and exc.errno in ENVIRONMENT_ERRNOS:
            return InputError(f"{exc.filename}: {_reason(exc)}" if exc.filename is not None else _reason(exc))
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _inside(name: str | Path, folder: str | Path) -> bool:
    try:
        inner, outer = Path(os.path.abspath(name)), Path(os.path.abspath(folder))
        return inner == outer or outer in inner.parents
    except (TypeError, ValueError):
        return False


def write_failure(exc: OSError, folder: str | Path | None = None, flag: str = "--out") -> InputError:
    """One line for an ``OSError`` met while writing a tool's outputs (full disk, read-only mount, a quota):
    names the file when the error does, and ``flag``'s folder."""
    where = exc.filename if exc.filename is not None else folder
    place = f" in {flag} {folder}" if folder is not None else ""
    if exc.filename is not None and folder is not None and not _inside(exc.filename, folder):
        return InputError(f"{exc.filename}: {_reason(exc)}")  # not one of the outputs: a file the run read
    return InputError(f"cannot write {where}{place}: {_reason(exc)}"
                      if where is not None else f"cannot write the output{place}: {_reason(exc)}")
