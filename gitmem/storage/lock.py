"""gitmem's locks: the writer lock, and waiting for any flock with a deadline.

The writer lock is an ``flock`` on ``<common dir>/edda/lock``: one writer of
memory refs at a time per common dir. The kernel releases it when its holder
dies, so unlike git's ``*.lock`` files it can never be left stale; it also
lets a writer recognise a leftover ref lock file as stale (see
:mod:`gitmem.storage.backends.libgit2`). Linked worktrees share the common
dir and therefore the lock.

No lock is ever waited for without a deadline (:func:`acquire`): a process
that holds one and is stopped (``kill -STOP``, a debugger, a frozen network
file system) must not hang every git command through gitmem's hooks. Processes
that must stay fast whatever happens (``gitmem-capture``, the git hooks and
their background worker) lower every deadline at once with
:func:`limit_waits`. Standard library only (capture hot path).
"""

from __future__ import annotations

import fcntl
import os
import time
from _thread import get_ident  # threading.get_ident, without importing threading

from gitmem.errors import ConflictError

LOCK_FILE = "lock"
WRITER_TIMEOUT = 120.0  # a command waits this long for another writer (big flushes, imports)
MIRROR_LOCK_FILE = "mirror-lock"
# A sync round waits for a gc's repack, a gc for a round's fetch and push:
# both can take minutes on a big repository or a slow network.
MIRROR_TIMEOUT = 600.0

# (lock path, thread) -> depth. flock is not re-entrant across file
# descriptors: a thread that holds the lock and reaches code that takes it
# again (redact -> read -> flush the spool) would wait on itself forever.
_held: dict[tuple[str, int], int] = {}

# The most this process waits for any lock, whatever its caller asked for
# (None: no cap). Set by the entry points that must never hang.
_wait_limit: float | None = None


def limit_waits(seconds: float | None) -> None:
    """Cap every lock wait of this process at ``seconds`` (None lifts the cap).

    For processes that run inside someone else's command (``gitmem-capture``
    on every agent tool call, git hooks, the hooks' background worker): when
    a lock does not come in time they fail with :class:`ConflictError` and
    leave their work for later instead of hanging.
    """
    global _wait_limit
    _wait_limit = seconds


def wait_limit() -> float | None:
    """The cap :func:`limit_waits` set (None: none), for callers that restore it."""
    return _wait_limit


def acquire(fd: int, path: str, timeout: float, what: str) -> None:
    """Take an exclusive ``flock`` on ``fd`` within ``timeout`` seconds (or the
    process's cap, if lower); raise ConflictError naming ``what`` otherwise."""
    if _wait_limit is not None:
        timeout = min(timeout, _wait_limit)
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise ConflictError(
                    f"another process has held the {what} for {timeout:g} s; nothing was written",
                    f"retry when it is done; 'fuser {path}' shows who holds it",
                ) from None
            # short polls: holders keep gitmem's locks for milliseconds
            time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 0.005)


def writer_lock(
    state_dir: str | os.PathLike[str], timeout: float = WRITER_TIMEOUT, what: str = "writer lock"
) -> WriterLock:
    """Hold the writer lock (re-entrant within a thread) in a ``with`` block;
    raise ConflictError after ``timeout`` seconds of waiting for another
    holder. (The index builder's lock is the same kind of lock in another
    directory: ``what`` names it in the error.)"""
    return WriterLock(state_dir, timeout, what)


def mirror_lock(state_dir: str | os.PathLike[str], timeout: float = MIRROR_TIMEOUT) -> WriterLock:
    """The mirror lock (``<common dir>/edda/mirror-lock``): sync's transfers and
    ``gc`` never overlap.

    Sync writes the remote mirror refs (``refs/edda-remotes/<remote>/…``)
    outside the writer lock: the fetch that sets them and the update after a
    push involve the network, and holding the writer lock that long would
    stall every local write. ``gc`` rewrites mirror refs and deletes objects.
    Overlapping, a fetch could point a mirror at a payload snapshot whose
    redacted blob ``gc`` had just judged unreachable and deleted. So a sync
    round holds this lock from its fetch to its last mirror update, and
    ``gc`` throughout. Lock order: this one first, then the writer lock.
    Neither capture nor the git hooks take it (hooks only start a push).
    """
    return WriterLock(state_dir, timeout, "memory sync/gc lock", MIRROR_LOCK_FILE)


class WriterLock:
    """The context manager :func:`writer_lock` returns. (A class rather than
    ``contextlib.contextmanager``: this module is on the capture hot path,
    through the clock, and contextlib costs about a millisecond to import.)"""

    __slots__ = ("fd", "key", "path", "timeout", "what")

    def __init__(
        self, state_dir: str | os.PathLike[str], timeout: float, what: str, name: str = LOCK_FILE
    ) -> None:
        os.makedirs(state_dir, exist_ok=True)
        self.path = os.path.realpath(os.path.join(state_dir, name))
        self.timeout = timeout
        self.what = what
        self.key = (self.path, 0)
        self.fd = -1

    def __enter__(self) -> None:
        self.key = (self.path, get_ident())
        if self.key in _held:
            _held[self.key] += 1
            return
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            acquire(fd, self.path, self.timeout, self.what)
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        _held[self.key] = 1

    def __exit__(self, *exc: object) -> None:
        if _held[self.key] > 1 or self.fd < 0:
            _held[self.key] -= 1
            return
        del _held[self.key]
        fd, self.fd = self.fd, -1
        os.close(fd)  # closing releases the flock
