"""gitmem's writer lock: one writer of memory refs at a time per common dir.

An ``flock`` on ``<common dir>/edda/lock``. The kernel releases it when its
holder dies, so unlike git's ``*.lock`` files it can never be left stale; it
also lets a writer recognise a leftover ref lock file as stale (see
:mod:`gitmem.storage.backends.libgit2`). Linked worktrees share the common
dir and therefore the lock.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from gitmem.errors import ConflictError

LOCK_FILE = "lock"


# (lock path, thread) -> depth. flock is not re-entrant across file
# descriptors: a thread that holds the lock and reaches code that takes it
# again (redact -> read -> flush the spool) would wait on itself forever.
_held: dict[tuple[str, int], int] = {}


@contextmanager
def writer_lock(state_dir: str | os.PathLike[str], timeout: float = 120.0) -> Iterator[None]:
    """Hold the writer lock (re-entrant within a thread); raise ConflictError
    after ``timeout`` seconds of waiting for another holder."""
    os.makedirs(state_dir, exist_ok=True)
    path = os.path.realpath(os.path.join(state_dir, LOCK_FILE))
    key = (path, threading.get_ident())
    if key in _held:
        _held[key] += 1
        try:
            yield
        finally:
            _held[key] -= 1
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ConflictError(
                        f"another gitmem process has held the writer lock for {timeout:.0f} s",
                        f"wait for it to finish; 'fuser {path}' shows who holds it",
                    ) from None
                time.sleep(delay)
                # short polls: holders keep the lock for milliseconds
                delay = min(delay * 2, 0.005)
        _held[key] = 1
        try:
            yield
        finally:
            del _held[key]
    finally:
        os.close(fd)
