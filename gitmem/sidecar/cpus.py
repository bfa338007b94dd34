"""How many CPUs this process may use: sidecar builders size their pools by
it (Tantivy's writer threads, the code graph's extraction processes, MiniLM's
embedding threads)."""

from __future__ import annotations

import math
import os
from pathlib import Path

CGROUP_CPU_MAX = Path("/sys/fs/cgroup/cpu.max")


def usable_cpus() -> int:
    """The CPUs this process may run on: its affinity mask where the system
    has one (a container or ``taskset`` may allow fewer than the machine
    has), else the machine's count, and no more than a cgroup v2 CPU quota
    grants (``docker --cpus=1`` on a large host: 1); at least 1."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # no affinity masks (macOS)
        count = os.cpu_count() or 1
    quota = cgroup_quota(CGROUP_CPU_MAX)
    if quota is not None:
        count = min(count, quota)
    return max(1, count)


def cgroup_quota(path: Path) -> int | None:
    """The CPUs a cgroup v2 ``cpu.max`` file grants (``"<quota> <period>"``,
    rounded up), or None: no file, no limit (``"max ..."``) or not readable."""
    try:
        quota, period = path.read_text().split()[:2]
        if quota == "max":
            return None
        return max(1, math.ceil(int(quota) / int(period)))
    except (OSError, ValueError, ZeroDivisionError):
        return None
