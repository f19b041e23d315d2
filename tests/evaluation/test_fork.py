"""A computation in a forked child: its value comes back; where it fails, or cannot fork, the caller computes it and
raises exactly what a sequential run raises."""

from __future__ import annotations

import os
import threading
import time

import pytest

from vision.errors import DataError
from vision.evaluation.fork import Forked, can_fork

needs_fork = pytest.mark.skipif(not can_fork(), reason="this platform does not fork")


@needs_fork
def test_the_value_is_computed_in_a_child():
    parent = os.getpid()
    assert Forked(lambda: os.getpid()).result() != parent
    assert Forked(lambda: {"AP": 0.25, "keys": [1, 2]}).result() == {"AP": 0.25, "keys": [1, 2]}


def test_an_error_in_the_child_is_raised_here_as_it_would_be_sequentially():
    calls = []

    def fails():
        calls.append(os.getpid())
        raise DataError("results[3].bbox is not finite", field="bbox")

    with pytest.raises(DataError, match=r"results\[3\]\.bbox"):
        Forked(fails).result()
    assert calls == [os.getpid()]  # the child's attempt is not in this process's list; the retry here is


def test_a_value_that_does_not_pickle_is_computed_here():
    lock = threading.Lock()  # locks do not pickle
    assert Forked(lambda: lock).result() is lock


@needs_fork
def test_a_killed_child_is_recomputed_here():
    parent = os.getpid()
    assert Forked(lambda: os._exit(3) if os.getpid() != parent else "here").result() == "here"


def test_without_fork_it_runs_in_the_caller(monkeypatch):
    monkeypatch.setattr("vision.evaluation.fork.can_fork", lambda: False)
    assert Forked(lambda: os.getpid()).result() == os.getpid()


@needs_fork
def test_cancel_stops_the_child():
    parent = os.getpid()
    job = Forked(lambda: time.sleep(600) if os.getpid() != parent else "here")
    child = job._proc
    job.cancel()
    assert not child.is_alive() and child.exitcode != 0
    assert job.result() == "here"
