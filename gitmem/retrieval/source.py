"""Ranked search as context packs and ``ask`` call it, and its plain fallback.

:data:`SearchFn` is an optional ranked search; without one,
:func:`term_search` matches query terms case-insensitively over an event's
summary and body text. What they read from is
:class:`~gitmem.memory.source.EventSource`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from gitmem.memory.describe import visible
from gitmem.memory.event import Event

_TERM = re.compile(r"\w+", re.UNICODE)


SearchFn = Callable[[str, int, Sequence[str]], list[Event]]
"""``(query, limit, allowed event types or () for all) -> events, best first``."""


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
