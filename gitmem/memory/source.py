"""What readers read from: the store (:class:`~gitmem.memory.api.Memory`), the
index (:class:`~gitmem.index.view.IndexView`) or a plain list of events
(:class:`~gitmem.memory.listwindow.ListSource`) behind one protocol.

Every source has a :meth:`~EventSource.window`: a branch's events fetched by
need (:class:`~gitmem.memory.window.BranchWindow`). The index selects them
from Arrow columns; the others hold the branch's events in a list
(:class:`~gitmem.memory.listwindow.ListWindow`). The answers are the same.
"""

from __future__ import annotations

from typing import Protocol, TypedDict

from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter
from gitmem.memory.window import BranchWindow
from gitmem.records.brancharg import BranchArg, CurrentBranch


class BranchKwargs(TypedDict, total=False):
    """Which events one branch sees: keyword arguments of :meth:`EventSource.events`."""

    branch: BranchArg
    all_branches: bool
    trunk: str | None


class EventSource(Protocol):
    """Read access to one repository's memory."""

    @property
    def branch(self) -> str | None:
        """The current branch (None: detached HEAD)."""
        ...

    def events(
        self,
        where: EventFilter | None = None,
        *,
        branch: BranchArg = ...,
        all_branches: bool = False,
        limit: int | None = None,
        trunk: str | None = None,
    ) -> list[Event]:
        """Events in (time, id) order; ``limit`` keeps the last n."""
        ...

    def get(self, event_id: str) -> Event:
        """An event by id or unique prefix; raises ``NotFoundError``."""
        ...

    def window(self, branch_kwargs: BranchKwargs) -> BranchWindow:
        """One branch's events fetched by need (``branch_kwargs`` as for
        :meth:`events`, e.g. from :func:`branch_kwargs`)."""
        ...


def branch_kwargs(branch: BranchArg) -> BranchKwargs:
    """Keyword arguments for :meth:`EventSource.events` selecting ``branch``."""
    return {} if isinstance(branch, CurrentBranch) else {"branch": branch}


def branch_name(source: EventSource, branch: BranchArg) -> str | None:
    """The branch name a call with ``branch`` reads (None: detached HEAD)."""
    if isinstance(branch, CurrentBranch) or not (branch is None or isinstance(branch, str)):
        return source.branch
    return branch
