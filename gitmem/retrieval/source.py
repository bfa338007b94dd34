"""What retrieval reads from, and the small helpers context packs and ``ask`` share.

:class:`EventSource` is the read interface (``gitmem.memory.api.Memory``
satisfies it; an indexed implementation may replace it). :data:`SearchFn` is
an optional ranked search; without one, :func:`term_search` matches query
terms case-insensitively over an event's summary and body text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter, path_matches
from gitmem.records.brancharg import BranchArg, CurrentBranch

SHORT_ID = 12
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
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


def visible(event: Event) -> bool:
    """Whether an event may be shown at all: not redacted, payload present."""
    return not event.redacted and event.body is not None


def short_id(event_id: str) -> str:
    """The first 12 hex characters of an id (what ``git edda show`` accepts)."""
    return event_id[:SHORT_ID]


def ref(event_id: str) -> str:
    """An id as shown in compact lines: ``[a1b2c3d4e5f6]``."""
    return f"[{short_id(event_id)}]"


def _utc(time_us: int) -> datetime:
    return _EPOCH + timedelta(microseconds=time_us)


def iso_minute(time_us: int) -> str:
    """``2025-01-02T03:04Z`` (UTC, minute precision)."""
    return _utc(time_us).strftime("%Y-%m-%dT%H:%MZ")


def iso_date(time_us: int) -> str:
    """``2025-01-02`` (UTC)."""
    return _utc(time_us).strftime("%Y-%m-%d")


def one_line(text: str, width: int) -> str:
    """``text`` on one line, whitespace collapsed, cut to ``width`` with an ellipsis."""
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


def paths_of(event: Event) -> list[str]:
    """The paths an event is about (its ``paths`` and ``files`` body fields)."""
    found: list[str] = []
    for name in ("paths", "files"):
        value = event.field(name, [])
        if isinstance(value, list):
            found.extend(str(v) for v in value)
    return found


def paths_overlap(left: Iterable[str], right: Iterable[str]) -> bool:
    """Whether any path of ``left`` matches any of ``right`` (either way round:
    exact, directory prefix or glob)."""
    right = list(right)
    return any(path_matches(a, b) or path_matches(b, a) for a in left for b in right)


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


LINE_WIDTH = 200
"""Characters of an event's text on a compact line (the index stores each
decision described at this width: see :class:`~gitmem.retrieval.windowing.DecisionOutline`)."""


def describe(event: Event, width: int = LINE_WIDTH) -> str:
    """A one-line, id-less description of an event: ``type: text``."""
    if event.redacted:
        return f"{event.type}: [redacted]"
    get = event.field
    if event.type == "decision":
        reason = str(get("reason", "") or "")
        text = f"`{get('key', '')}` = {get('value', '')}" + (f" — {reason}" if reason else "")
        return "decision " + one_line(text, width)
    if event.type in ("learning", "mistake", "pattern"):
        paths = paths_of(event)
        where = f"{', '.join(paths[:3])}{', …' if len(paths) > 3 else ''}"
        about = f" ({one_line(where, 80)})" if paths else ""
        return f"{event.type}{about}: {one_line(str(get('text', '')), width)}"
    if event.type == "capsule_open":
        return f"{get('kind', '')} capsule opened: {one_line(str(get('intent', '')), width)}"
    if event.type == "capsule_close":
        summary = str(get("summary", "") or "")
        return "capsule closed" + (f": {one_line(summary, width)}" if summary else "")
    if event.type == "commit_link":
        sha = str(get("sha", ""))[:12]
        return f"commit {sha}: {one_line(str(get('message', '')), width)}".rstrip(": ")
    if event.type in ("pin", "unpin", "ratify"):
        return f"{event.type} {ref(str(get('target', '')).removeprefix('summary:'))}" + (
            f": {one_line(str(get('reason', '') or get('note', '')), width)}"
            if get("reason") or get("note")
            else ""
        )
    return f"{event.type}: {event.summary(width)}"
