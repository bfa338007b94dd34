"""Background work started by git hooks, with the full library loaded.

``python -m gitmem.githooks.worker apply REPO``
    apply pending hook intents (forks, merges), flush the capture spool and
    refresh the search indexes;
``python -m gitmem.githooks.worker index REPO``
    refresh the search indexes (post-checkout of an existing branch);
``python -m gitmem.githooks.worker push REPO REMOTE``
    push memory to REMOTE (pre-push), never prompting for credentials;
``python -m gitmem.githooks.worker code REPO``
    bring this worktree's code graph up to date (post-checkout, post-merge);
    ``apply+code`` and ``index+code`` do both, in that order.

Outcomes and errors go to ``<common dir>/edda/log/hooks.log``; the exit
status is only for that log, nobody waits for it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

LOCK_WAIT = 2.0  # seconds the worker waits for any lock before leaving its work for later


def run_job(job: str, repo: str, *args: str) -> str:
    """Do ``job`` (jobs joined by ``+`` in turn) for the repository at
    ``repo``; returns a one-line summary."""
    parts = job.split("+")
    summaries = [_memory_job(p, repo, *args) for p in parts if p != "code"]
    if "code" in parts:
        summaries.append(_refresh_code(repo))
    return "; ".join(summaries)


def _memory_job(job: str, repo: str, *args: str) -> str:
    from gitmem.branches.chains import apply_intents
    from gitmem.memory.api import Memory
    from gitmem.sync.protocol import sync

    with Memory.open(repo) as memory:
        if job == "apply":
            merges = apply_intents(memory)
            flushed = memory.flush()
            return (
                f"applied intents ({len(merges)} memory merge(s)), flushed {flushed.events}"
                f" event(s); {_refresh_index(memory)}"
            )
        if job == "index":
            return _refresh_index(memory)
        if job == "push":
            report = sync(memory, args[0] if args else None, pull=False, prompt=False)
            return f"pushed memory to {report.remote}: {len(report.pushed)} ref(s)"
    raise ValueError(f"unknown job {job!r}")


def _refresh_index(memory: Any) -> str:
    """Refresh the sidecar indexes unless another process is already at it
    (``edda.indexOnHooks=false`` turns this off)."""
    from gitmem.index.refresh import try_refresh
    from gitmem.storage.gitconfig import get_bool

    if not get_bool(memory.config, "edda.indexOnHooks", True):
        return "index refresh off (edda.indexOnHooks)"
    report = try_refresh(memory, wait=0.0)
    if report is None:
        return "index: another process is refreshing it"
    return f"index {report.mode}: {report.events} events"


def _refresh_code(repo: str) -> str:
    """Bring the code graph up to date unless another process is already at
    it (``edda.code.onHooks=false`` turns this off)."""
    from gitmem.graph.opening import refresh
    from gitmem.storage.gitconfig import get_bool, read_config
    from gitmem.storage.locate import locate

    location = locate(repo, any_format=True)
    config = read_config(location)
    if not get_bool(config, "edda.code.onHooks", True):
        return "code graph refresh off (edda.code.onHooks)"
    report = refresh(location, config, wait=0.0)
    if report is None:
        return "code graph: another process is building it"
    done = "built" if report.built else "up to date"
    return (
        f"code graph {done}: {report.files} files ({report.parsed} parsed),"
        f" {report.nodes} nodes, {report.edges} edges"
    )


def main(argv: list[str]) -> int:
    from gitmem.githooks.run import log
    from gitmem.storage.locate import locate
    from gitmem.storage.lock import limit_waits

    # One BLAS thread: spinning OpenBLAS workers would compete with the
    # user's git and agent on a small machine (see gitmem.cli.main).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # A lock held for longer than this (a stopped process) leaves the intents
    # and the spool for the next gitmem command instead of a worker waiting
    # for minutes (or a hook, under GITMEM_HOOKS_FOREGROUND=1).
    limit_waits(LOCK_WAIT)
    location = None
    try:
        location = locate(argv[1])
        if not location.state_dir.is_dir():
            # gitmem's state was removed after the hook started us: the
            # intents went with it, and recreating the directory would undo it.
            return 0
        summary = run_job(argv[0], argv[1], *argv[2:])
        log(location, f"worker {argv[0]}: {summary}")
        return 0
    except Exception as exc:
        log(location, f"worker {argv[:1]} failed: {type(exc).__name__}: {exc}")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
