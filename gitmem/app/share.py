"""Sharing memory: pull, push and sync through git remotes; merge, list and prune branches."""

from __future__ import annotations

from gitmem.app.session import Repo, open_memory, open_writer, reader
from gitmem.branches.chains import BranchInfo, MergeResult
from gitmem.branches.chains import branches as list_branches
from gitmem.branches.chains import merge as merge_chains
from gitmem.branches.prune import PruneEntry
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

    with reader(repo) as source, open_memory(repo) as mem:
        # the index counts each chain's events; the store would read them all
        sizes = source.chain_size if isinstance(source, IndexView) else None
        return list_branches(mem, sizes)


def prune(repo: Repo, *, force: bool = False, dry_run: bool = False) -> list[PruneEntry]:
    """Remove the memory of branches whose git branch is gone, when other
    memory branches hold all of it (everything with ``force``, except a
    redaction no other branch has); one entry per memory branch says what
    happened and why. ``dry_run`` changes nothing. Remotes are left alone:
    a pull does not bring back what was pruned unless it has new events."""
    from gitmem.branches.prune import prune as prune_chains

    with open_writer(repo) as mem:
        return prune_chains(mem, force=force, dry_run=dry_run)
