"""One builder at a time per sidecar.

Building holds an ``flock`` on the sidecar's ``lock`` file (released by the
kernel if the builder dies; see :mod:`gitmem.storage.lock`). Readers never
take it: they read the generation the manifest names, so they never wait for
a build unless there is nothing to read yet.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from gitmem.errors import ConflictError
from gitmem.sidecar.generations import prepare_root
from gitmem.storage.lock import LOCK_FILE, writer_lock

# A build waits this long for another builder before giving up.
LOCK_TIMEOUT = 600.0

R = TypeVar("R")


@contextmanager
def builder_lock(root: Path, timeout: float, *, what: str = "builder lock") -> Iterator[None]:
    """Hold the builder lock of the sidecar in ``root`` (ConflictError naming
    ``what`` after ``timeout`` seconds of waiting for another builder)."""
    lock = root / LOCK_FILE
    if lock.is_dir() and not lock.is_symlink():
        shutil.rmtree(lock, ignore_errors=True)  # damage: nothing can hold a directory
    with writer_lock(root, timeout=timeout, what=what):
        yield


@contextmanager
def building(root: Path, timeout: float, *, what: str) -> Iterator[None]:
    """The root directory made sound (see :func:`prepare_root`) and its
    builder lock held: where every build of the sidecar runs."""
    prepare_root(root)
    with builder_lock(root, timeout, what=what):
        yield


def unless_busy(build: Callable[[], R]) -> R | None:
    """``build()``, or None when another builder held the lock past the
    wait ``build`` allowed itself: the caller then reads the previous version."""
    try:
        return build()
    except ConflictError:
        return None
