"""How many CPUs this process may use: sidecar builders size their pools by
it (Tantivy's writer threads, the code graph's extraction processes, MiniLM's
embedding threads)."""

from __future__ import annotations

import os


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask where the system
    has one (a container or ``taskset`` may allow fewer than the machine
    has), else the machine's count; at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # no affinity masks (macOS)
        return max(1, os.cpu_count() or 1)
