"""One computation in a forked child while the caller runs another: two independent scorings of one evaluation
(box AP and mask AP of ``vision-evaluate --task detection --processes 2``) at once on two cores.

The child inherits the loaded split and results (fork: nothing is pickled on the way in) and sends back only its
result. Where the platform cannot fork, or the child fails in any way (an exception, a result that does not pickle,
a killed process), :meth:`Forked.result` runs the computation in the caller instead, so its value or its error is
exactly what a sequential run gives.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Forked", "can_fork"]

T = TypeVar("T")


def can_fork() -> bool:
    """Whether this platform starts processes by fork (Linux; not Windows, and not macOS's default)."""
    return "fork" in mp.get_all_start_methods()


def _child(fn: Callable[[], object], conn) -> None:
    try:
        conn.send((True, fn()))
    except BaseException:  # noqa: BLE001 - the parent runs fn again and raises whatever it raises
        try:
            conn.send((False, None))
        except BaseException:  # noqa: BLE001 - the pipe is gone: the parent sees EOF
            pass
    finally:
        conn.close()


class Forked(Generic[T]):
    """Start ``fn()`` in a forked child now (where fork exists and ``fork`` is true); :meth:`result` waits for its
    value (without a child it computes it there, as a sequential run would).

    Use it only from a process that holds no other threads doing work and no accelerator context (a forked child
    inherits one thread and copies of everything else); ``vision-evaluate`` is such a process.
    """

    def __init__(self, fn: Callable[[], T], fork: bool = True) -> None:
        self._fn = fn
        self._proc = self._conn = None
        if fork and can_fork():
            ctx = mp.get_context("fork")
            self._conn, send = ctx.Pipe(duplex=False)
            self._proc = ctx.Process(target=_child, args=(fn, send), daemon=True)
            self._proc.start()
            send.close()

    def cancel(self) -> None:
        """Stop the child (when the caller will not need its value)."""
        if self._proc is not None:
            self._proc.terminate()
            self._proc.join()
            self._conn.close()
            self._proc = None

    def result(self) -> T:
        """The child's value; computed here instead when there is no child or it failed."""
        if self._proc is not None:
            ok, value = False, None
            try:
                ok, value = self._conn.recv()
            except (EOFError, OSError):
                ok = False
            finally:
                self._conn.close()
                self._proc.join()
                self._proc = None
            if ok:
                return value
        return self._fn()
