"""Background housekeeping of the object store.

libgit2 never runs ``git gc``: thousands of appends would leave thousands of
loose objects, and batched writes add a pack each. After a write we check
cheaply whether git's own ``gc --auto`` thresholds may be near (loose objects
in one fan-out directory, or the number of packs) and, if so, start
``git gc --auto --quiet`` detached in the background. git decides for itself
whether there is work to do and takes its own ``gc.pid`` lock, so concurrent
starts are harmless. Hooks and the capture path never call this.
"""

from __future__ import annotations

import os
import time

from gitmem.storage.locate import RepoLocation, clean_git_env

# git estimates loose objects from directory objects/17 (gc.auto=6700 -> 27).
LOOSE_SAMPLE_LIMIT = 27
PACK_LIMIT = 40  # below git's gc.autoPackLimit (50)
MIN_INTERVAL_S = 60.0
STAMP = "gc-started"


def _needs_gc(objects_dir: str) -> bool:
    try:
        loose = len(os.listdir(os.path.join(objects_dir, "17")))
    except FileNotFoundError:
        loose = 0
    if loose > LOOSE_SAMPLE_LIMIT:
        return True
    try:
        packs = sum(1 for n in os.listdir(os.path.join(objects_dir, "pack")) if n.endswith(".pack"))
    except FileNotFoundError:
        packs = 0
    return packs > PACK_LIMIT


def maybe_gc(location: RepoLocation, objects_dir: str) -> bool:
    """Start ``git gc --auto`` in the background when it is likely due; True if started."""
    if os.environ.get("GITMEM_NO_AUTO_GC") or not _needs_gc(objects_dir):
        return False
    stamp = os.path.join(location.state_path, STAMP)
    try:
        if time.time() - os.stat(stamp).st_mtime < MIN_INTERVAL_S:
            return False
    except FileNotFoundError:
        pass
    import subprocess

    os.makedirs(location.state_path, exist_ok=True)
    with open(stamp, "w", encoding="ascii") as handle:
        handle.write(f"{os.getpid()}\n")
    subprocess.Popen(
        ["git", "gc", "--auto", "--quiet"],
        cwd=location.cwd,
        env=clean_git_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    return True
