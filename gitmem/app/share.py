"""Sharing memory: pull, push and sync through git remotes; merge and list branches."""

from __future__ import annotations

from gitmem.app.session import Repo, open_memory, open_writer, reader
from gitmem.branches.chains import BranchInfo, MergeResult
from gitmem.branches.chains import branches as list_branches
from gitmem.branches.chains import merge as merge_chains
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg
from gitmem.sync.protocol import SyncReport


def sync(
    repo: Repo,
    remote: str | None = None,
    *,
    pull: bool = True,
    push: bool = True,
    prompt: bool = True,
) -> SyncReport:
    """Fetch and merge memory from ``remote`` (default: ``edda.remote``, the
    branch's remote, origin) and with ``push`` push it back, never forced.
    ``prompt=False`` never asks for credentials (background runs)."""
    from gitmem.sync.protocol import sync as run_sync

    with open_writer(repo) as mem:
        return run_sync(mem, remote, pull=pull, push=push, prompt=prompt)


def merge(repo: Repo, branch: str, into: BranchArg = CURRENT_BRANCH) -> MergeResult:
    """Merge ``branch``'s memory into ``into``'s (default: the current
    branch's): for squash and rebase merges, which git hooks cannot recognise."""
    with open_writer(repo) as mem:
        return merge_chains(mem, branch, into)


def branches(repo: Repo) -> list[BranchInfo]:
    """Every memory branch: events, fork point, whether its git branch exists."""
    from gitmem.index.view import IndexView

    with reader(repo) as source:  # the index counts each chain's events
        sizes = source.chain_size if isinstance(source, IndexView) else None
    with open_memory(repo) as mem:
        return list_branches(mem, sizes)
