"""What retrieval reads from, and the small helpers context packs and ``ask`` share.

:class:`EventSource` is the read interface (``gitmem.memory.api.Memory``
satisfies it; an indexed implementation may replace it). :data:`SearchFn` is
an optional ranked search; without one, :func:`term_search` matches query
terms case-insensitively over an event's summary and body text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from gitmem.memory.describe import visible
from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter
from gitmem.records.brancharg import BranchArg, CurrentBranch

_TERM = re.compile(r"\w+", re.UNICODE)


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
        branch: Any = ...,
        all_branches: bool = False,
        limit: int | None = None,
        trunk: str | None = None,
    ) -> list[Event]:
        """Events in (time, id) order; ``limit`` keeps the last n."""
        ...

    def get(self, event_id: str) -> Event:
        """An event by id or unique prefix; raises ``NotFoundError``."""
        ...


SearchFn = Callable[[str, int, Sequence[str]], list[Event]]
"""``(query, limit, allowed event types or () for all) -> events, best first``."""


def branch_kwargs(branch: BranchArg) -> dict[str, Any]:
    """Keyword arguments for :meth:`EventSource.events` selecting ``branch``."""
    return {} if isinstance(branch, CurrentBranch) else {"branch": branch}


def branch_name(source: EventSource, branch: BranchArg) -> str | None:
    """The branch name a call with ``branch`` reads (None: detached HEAD)."""
    if isinstance(branch, CurrentBranch) or not (branch is None or isinstance(branch, str)):
        return source.branch
    return branch


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for key in sorted(value):
            yield from _strings(value[key])


def searchable_text(event: Event) -> str:
    """Lower-cased text a query is matched against: type, summary and body strings."""
    if not visible(event):
        return ""
    parts = [event.type, event.summary(200), *_strings(event.body)]
    return " ".join(parts).lower()


def query_terms(query: str) -> list[str]:
    """The distinct lower-cased words of ``query``, in order (no search syntax)."""
    words = [w.lower() for w in _TERM.findall(query)]
    long_words = [w for w in words if len(w) > 1] or words
    return list(dict.fromkeys(long_words))


def term_score(terms: Sequence[str], text: str) -> int:
    """How many of ``terms`` occur in ``text`` (already lower-cased)."""
    return sum(1 for term in terms if term in text)


def term_search(
    events: Iterable[Event], query: str, limit: int, types: Sequence[str] = ()
) -> list[Event]:
    """The fallback :data:`SearchFn` over ``events``: ranked by the number of
    query terms matched, then newest first, then by id."""
    terms = query_terms(query)
    if not terms or limit <= 0:
        return []
    scored: list[tuple[int, int, str, Event]] = []
    for event in events:
        if types and event.type not in types:
            continue
        score = term_score(terms, searchable_text(event))
        if score:
            scored.append((-score, -event.time, event.id, event))
    scored.sort(key=lambda row: row[:3])
    return [row[3] for row in scored[:limit]]
