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

from gitmem.records.validate import DEFAULT_SKEW_S
from gitmem.storage.lock import acquire

CLOCK_FILE = "clock"
LOCK_TIMEOUT = 10.0  # seconds; holders keep the clock lock for microseconds
DEFAULT_SKEW_US = DEFAULT_SKEW_S * 1_000_000  # edda.maxClockSkew's default


def wall_us() -> int:
    """The wall clock in microseconds since the Unix epoch."""
    return time.time_ns() // 1000


def _update(
    state_dir: str | os.PathLike[str], count: int, floor: int, ceiling: int | None = None
) -> int:
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
        if ceiling is not None and last + count > ceiling:
            # The file is further ahead of the wall clock than any accepted
            # event can be (a machine whose clock ran ahead, a forged value):
            # following it would stamp every new event years in the future.
            last = 0
        first = max(floor, last + 1)
        new_last = first + count - 1
        data = f"{new_last:020d}\n".encode("ascii")
        os.pwrite(fd, data, 0)
        os.ftruncate(fd, len(data))
        return first
    finally:
        os.close(fd)  # closing releases the flock


def tick(
    state_dir: str | os.PathLike[str],
    count: int = 1,
    now_us: int | None = None,
    *,
    skew_us: int = DEFAULT_SKEW_US,
) -> int:
    """Reserve ``count`` consecutive clock values and return the first.

    A clock file more than ``skew_us`` ahead of the wall clock is not
    followed (spec/storage.md §8): the values restart from the wall clock.
    """
    if count < 1:
        raise ValueError("count must be >= 1")
    now = wall_us() if now_us is None else now_us
    return _update(state_dir, count, now, now + skew_us)


def observe(
    state_dir: str | os.PathLike[str], seen_us: int, *, skew_us: int = DEFAULT_SKEW_US
) -> None:
    """Make every later tick exceed ``seen_us`` (called after merging foreign
    events), but never push the clock more than ``skew_us`` past the wall clock."""
    _update(state_dir, 1, min(seen_us + 1, wall_us() + skew_us))
