"""The ordering clock: hybrid-logical microsecond timestamps.

Every event's ``time`` comes from here. It is the wall clock in microseconds
since the Unix epoch, except that it never repeats or goes backwards for
writers sharing one common dir: each value is ``max(wall clock, last + 1)``.
The last issued value lives in ``<common dir>/edda/clock`` under an exclusive
``flock``; merging memory from elsewhere calls :func:`observe` so later local
events sort after everything seen. Events are totally ordered by
``(time, id)``, which is deterministic on every clone.

Standard library only (capture hot path).
"""

from __future__ import annotations

import os
import time

from gitmem.storage.lock import acquire

CLOCK_FILE = "clock"
LOCK_TIMEOUT = 10.0  # seconds; holders keep the clock lock for microseconds


def wall_us() -> int:
    """The wall clock in microseconds since the Unix epoch."""
    return time.time_ns() // 1000


def _update(state_dir: str | os.PathLike[str], count: int, floor: int) -> int:
    os.makedirs(state_dir, exist_ok=True)
    path = os.path.join(state_dir, CLOCK_FILE)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        # Never an unbounded wait: a stopped holder would hang git through
        # the hooks (capture and hooks cap it further, see lock.limit_waits).
        acquire(fd, path, LOCK_TIMEOUT, "clock lock")
        raw = os.pread(fd, 32, 0)
        try:
            last = int(raw.decode("ascii").strip() or 0)
        except ValueError:  # a torn or garbage file is rebuilt from the wall clock
            last = 0
        first = max(floor, last + 1)
        new_last = first + count - 1
        data = f"{new_last:020d}\n".encode("ascii")
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
        return first
    finally:
        os.close(fd)  # closing releases the flock


def tick(state_dir: str | os.PathLike[str], count: int = 1, now_us: int | None = None) -> int:
    """Reserve ``count`` consecutive clock values and return the first."""
    if count < 1:
        raise ValueError("count must be >= 1")
    return _update(state_dir, count, wall_us() if now_us is None else now_us)


def observe(state_dir: str | os.PathLike[str], seen_us: int) -> None:
    """Make every later tick exceed ``seen_us`` (called after merging foreign events)."""
    _update(state_dir, 1, seen_us + 1)
