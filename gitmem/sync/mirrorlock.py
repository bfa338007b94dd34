"""The mirror lock: sync's transfers and ``purge`` never overlap.

Sync writes the remote mirror refs (``refs/edda-remotes/<remote>/…``) outside
the writer lock: the fetch that sets them, and the update after a push,
involve the network, and holding the writer lock that long would stall every
local write. ``purge`` rewrites mirror refs and deletes objects. If the two
overlapped, a fetch could point a mirror at a payload snapshot whose redacted
blob ``purge`` had just judged unreachable and deleted, leaving a ref to a
missing object (which ``git gc`` and ``git fsck`` then trip over). So a sync
round holds this lock from its fetch to its last mirror update, and ``purge``
holds it throughout.

An ``flock`` on ``<common dir>/edda/mirror-lock``, released by the kernel when
its holder dies. Lock order: this lock first, then the writer lock (a sync
round merges under the writer lock while holding this one). Neither the
capture path nor git hooks take it: hooks only start a background push.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from gitmem.storage.lock import acquire

MIRROR_LOCK_FILE = "mirror-lock"
# A sync round waits for a gc's repack, a gc for a round's fetch and push:
# both can take minutes on a big repository or a slow network.
DEFAULT_TIMEOUT_S = 600.0

_held: dict[tuple[str, int], int] = {}  # (lock path, thread) -> depth, for re-entry


@contextmanager
def mirror_lock(
    state_dir: str | os.PathLike[str], timeout: float = DEFAULT_TIMEOUT_S
) -> Iterator[None]:
    """Hold the mirror lock (re-entrant within a thread); raise ConflictError
    after ``timeout`` seconds of waiting for another holder."""
    os.makedirs(state_dir, exist_ok=True)
    path = os.path.realpath(os.path.join(state_dir, MIRROR_LOCK_FILE))
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
        # acquire() honours the wait cap of processes that must stay quick
        # (the hooks' background worker pushes through sync).
        acquire(fd, path, timeout, "memory sync/gc lock")
        _held[key] = 1
        try:
            yield
        finally:
            del _held[key]
    finally:
        os.close(fd)
