"""``gitmem.Memory``: the library's front door.

The store (:class:`gitmem.memory.api.Memory`: open, append, events, get,
redact, status) plus what sits above it: branch operations, sharing through
remotes, search and context packs. Listing events goes through the index
when it is fresh (milliseconds at 100,000 events, where walking the ledger
takes half a minute) and through the store otherwise, with the same result.

    from gitmem import Memory

    with Memory.open(".") as mem:
        mem.note("the cache key includes the locale")
        for hit in mem.search("cache key").hits:
            print(hit.event.summary())
        print(mem.context(budget=1500).to_markdown())
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Literal

from gitmem.branches import chains, detect
from gitmem.branches.chains import BranchInfo, MergeResult
from gitmem.errors import GitmemError
from gitmem.memory.api import Memory as Store
from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg
from gitmem.storage.clock import wall_us

if TYPE_CHECKING:
    from gitmem.branches.prune import PruneEntry
    from gitmem.index.view import IndexView
    from gitmem.retrieval.context import ContextPack
    from gitmem.retrieval.search import SearchResult
    from gitmem.sync.protocol import SyncReport


class Memory(Store):
    """Memory of one repository, with branches, sharing and retrieval."""

    # -- reading through the index ------------------------------------------------------
    def fresh_view(self) -> IndexView | None:
        """The index when it is there and up to date with memory (without
        building or refreshing it), else None."""
        from gitmem.index.manifest import index_root, read_manifest
        from gitmem.index.refresh import is_fresh
        from gitmem.index.view import IndexView

        self.flush()  # pending events first: the index must hold them too
        manifest = read_manifest(index_root(self.location))
        if manifest is None or not is_fresh(self.location, manifest, vectors=False):
            return None
        try:
            return IndexView.open(self.location.cwd, refresh=False, embed=False)
        except (GitmemError, OSError):  # a damaged index: the store answers instead
            return None

    def events(
        self,
        where: EventFilter | None = None,
        *,
        branch: BranchArg = CURRENT_BRANCH,
        all_branches: bool = False,
        limit: int | None = None,
        trunk: str | None = None,
    ) -> list[Event]:
        """As :meth:`gitmem.memory.api.Memory.events`, through the index when it is fresh."""
        view = self.fresh_view()
        if view is None:
            return super().events(
                where, branch=branch, all_branches=all_branches, limit=limit, trunk=trunk
            )
        with view:
            return view.events(
                where, branch=branch, all_branches=all_branches, limit=limit, trunk=trunk
            )

    # -- retrieval --------------------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        limit: int = 10,
        where: EventFilter | None = None,
        branch: BranchArg = CURRENT_BRANCH,
        all_branches: bool = False,
        mode: Literal["hybrid", "lexical", "vector"] = "hybrid",
        now: int | None = None,
    ) -> SearchResult:
        """Hybrid search (full text and meaning, fused by their scores, newer first on a tie);
        the index is built or refreshed first when memory has moved."""
        from gitmem.index.view import IndexView
        from gitmem.retrieval.search import search

        with IndexView.open(self.location.cwd) as view:
            return search(
                view,
                query,
                limit=limit,
                where=where,
                now=wall_us() if now is None else now,
                mode=mode,
                branch=branch,
                all_branches=all_branches,
            )

    def context(
        self,
        query: str | None = None,
        *,
        budget: int = 2000,
        paths: Sequence[str] | None = None,
        branch: BranchArg = CURRENT_BRANCH,
        now: int | None = None,
    ) -> ContextPack:
        """A context pack: what an agent should know now, within ``budget`` tokens."""
        from gitmem.app.retrieve import context

        return context(
            self.location.cwd,
            query,
            now_us=wall_us() if now is None else now,
            budget=budget,
            paths=paths,
            branch=branch,
        )

    # -- branches -------------------------------------------------------------------------
    def fork(self, branch: str, *, hint: str | None = None, code: str | None = None) -> str | None:
        """Start ``branch``'s memory now; see :func:`gitmem.branches.chains.fork`."""
        return chains.fork(self, branch, hint=hint, code=code)

    def merge(self, source: str, into: BranchArg = CURRENT_BRANCH) -> MergeResult:
        """Merge ``source``'s memory into ``into``'s; see :func:`gitmem.branches.chains.merge`."""
        return chains.merge(self, source, into)

    def apply_intents(self) -> list[MergeResult]:
        """Act on the forks and merges git hooks recorded."""
        return chains.apply_intents(self)

    def merge_code_merges(self) -> list[MergeResult]:
        """Merge the memory of branches whose code was merged."""
        return chains.merge_code_merges(self)

    def branches(self, sizes: Callable[[str], int] | None = None) -> list[BranchInfo]:
        """Every memory branch with its size, fork point and git status."""
        return chains.branches(self, sizes)

    def prune(self, *, force: bool = False, dry_run: bool = False) -> list[PruneEntry]:
        """Remove the memory of deleted branches; see :func:`gitmem.branches.prune.prune`."""
        from gitmem.branches.prune import prune

        return prune(self, force=force, dry_run=dry_run)

    def commit_rewrites(self) -> dict[str, str]:
        """Old code sha -> the newest sha it was rewritten to (amend, rebase)."""
        return detect.commit_rewrites(self)

    def resolve_commit(self, sha: str) -> str:
        """Follow amend/rebase rewrites from ``sha`` to the commit that replaced it."""
        return detect.resolve_commit(self, sha)

    # -- sharing --------------------------------------------------------------------------
    def sync(
        self,
        remote: str | None = None,
        *,
        pull: bool = True,
        push: bool = True,
        prompt: bool = True,
    ) -> SyncReport:
        """Fetch, merge and (with ``push``) push memory through a git remote."""
        from gitmem.sync.protocol import sync

        return sync(self, remote, pull=pull, push=push, prompt=prompt)
