"""Browsing: list events (``log``), show one, summarise memory (``status``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitmem.app.session import Repo, check_branch_known, open_memory, reader
from gitmem.errors import UsageError
from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter
from gitmem.memory.source import EventSource
from gitmem.memory.timespec import parse_time
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg
from gitmem.records.names import EVENT_TYPES

if TYPE_CHECKING:
    from gitmem.memory.api import Status


@dataclass(frozen=True)
class Filters:
    """Which events a listing or search considers, as people give them:
    repeat a value for OR; different fields combine with AND. Capsules are
    ids or unique prefixes; times are as :func:`~gitmem.memory.timespec.parse_time`
    reads them (ISO dates and times, or ages such as ``7d``)."""

    types: Sequence[str] = ()
    sessions: Sequence[str] = ()
    capsules: Sequence[str] = ()
    actors: Sequence[str] = ()
    tags: Sequence[str] = ()
    paths: Sequence[str] = ()
    since: str | None = None
    until: str | None = None

    def resolve(
        self, source: EventSource, *, now_us: int, include_redacted: bool = True
    ) -> EventFilter:
        """The :class:`EventFilter` these describe (capsules resolved through
        ``source``, times relative to ``now_us``)."""
        check_types(self.types)
        return EventFilter(
            types=tuple(self.types),
            sessions=tuple(self.sessions),
            actors=tuple(self.actors),
            tags=tuple(self.tags),
            paths=tuple(self.paths),
            capsules=tuple(source.get(c).id for c in self.capsules),
            since=parse_time(self.since, now_us) if self.since else None,
            until=parse_time(self.until, now_us) if self.until else None,
            include_redacted=include_redacted,
        )


EVERYTHING = Filters()


def check_types(types: Sequence[str]) -> None:
    """A usage error naming the valid types when one is unknown."""
    for name in types:
        if name not in EVENT_TYPES:
            raise UsageError(
                f"unknown event type {name!r}", f"use one of: {', '.join(EVENT_TYPES)}"
            )


def log(
    repo: Repo,
    filters: Filters = EVERYTHING,
    *,
    now_us: int,
    branch: BranchArg = CURRENT_BRANCH,
    all_branches: bool = False,
    limit: int | None = None,
    include_redacted: bool = True,
    newest_first: bool = False,
) -> list[Event]:
    """Events in (time, id) order, or the reverse when ``newest_first`` (as
    ``git log`` lists commits); ``limit`` keeps the newest ``limit`` either way."""
    if isinstance(branch, str):
        from gitmem.storage.locate import locate

        check_branch_known(locate(repo), branch)
    with reader(repo) as source:
        where = filters.resolve(source, now_us=now_us, include_redacted=include_redacted)
        events = source.events(where, branch=branch, all_branches=all_branches, limit=limit)
    return events[::-1] if newest_first else events


def show(repo: Repo, id: str) -> Event:
    """One event by id or unique prefix."""
    with reader(repo) as source:
        return source.get(id)


def status(repo: Repo) -> Status:
    """A summary of this repository's memory (counts from the index when fresh)."""
    from gitmem.index.view import IndexView

    with reader(repo) as source:
        counts = source.counts(source.branch) if isinstance(source, IndexView) else None
    with open_memory(repo) as mem:
        return mem.status(counts)
