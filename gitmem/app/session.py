"""Opening a repository's memory: for writing, and for reading the fastest way.

Readers get the index when it is fresh (a lookup takes milliseconds at
100,000 events, walking the ledger half a minute) and the store otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from gitmem.errors import GitmemError, UsageError

if TYPE_CHECKING:
    from gitmem.index.view import IndexView
    from gitmem.memory.api import Memory
    from gitmem.memory.source import EventSource
    from gitmem.storage.locate import RepoLocation

Repo = str | os.PathLike[str] | None
"""A path inside the repository (None: the current directory)."""


def open_memory(repo: Repo = None) -> Memory:
    """The store of the repository containing ``repo``."""
    from gitmem.memory.api import Memory

    return Memory.open(repo)


def open_writer(repo: Repo = None) -> Memory:
    """The store, for a use case that writes it: in a bare repository only
    after ``git edda init --bare-ok`` (memory there is usually a mistake:
    nobody works in a bare repository, and its memory follows no checkout)."""
    from gitmem.storage.gitconfig import check_writable

    mem = open_memory(repo)
    try:
        check_writable(mem.location, mem.config)
    except UsageError:
        mem.close()
        raise
    return mem


def open_view(repo: Repo = None, *, embed: bool = True) -> IndexView:
    """The search index, refreshed first when memory has moved."""
    from gitmem.index.view import IndexView

    return IndexView.open(repo, embed=embed)


@contextmanager
def reader(repo: Repo = None) -> Iterator[EventSource]:
    """What lookups and listings read: the index, refreshed first (without
    embeddings, which they do not need); the store when the index cannot
    serve exactly (another process is rebuilding it, so the view would miss
    the newest events, or it cannot be built here)."""
    from gitmem.index.view import IndexView

    try:
        view = IndexView.open(repo, embed=False, wait=1.0)
    except (GitmemError, OSError):
        view = None
    if view is not None and not view.stale:
        with view:
            yield view
        return
    if view is not None:
        view.close()
    with open_memory(repo) as mem:
        yield mem


def check_branch_known(location: RepoLocation, branch: str) -> None:
    """A NotFoundError when ``branch`` is neither a git branch here (local or
    remote-tracking) nor a branch with memory: reading it would quietly show
    nothing, or only what it would inherit from the trunk."""
    from gitmem.errors import NotFoundError
    from gitmem.records import layout
    from gitmem.sidecar.freshness import memory_tips
    from gitmem.storage.locate import read_git_output

    if layout.branch_ref(branch) in memory_tips(location):
        return
    for ref in (f"refs/heads/{branch}", f"refs/remotes/{branch}"):
        if read_git_output(["rev-parse", "--verify", "--quiet", ref], location.cwd):
            return
    raise NotFoundError(
        f"no branch {branch!r}: it is neither a git branch nor a branch with memory",
        "list them with 'git branch -a' and 'git edda branches'",
    )
