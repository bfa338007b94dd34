"""The history tier: recent activity by session (see "history" in
:mod:`gitmem.retrieval.context`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gitmem.memory.describe import iso_date, iso_minute, one_line, plural, ref, visible
from gitmem.memory.event import Event
from gitmem.memory.window import BranchWindow, OlderSessions, capsule_sessions, session_key
from gitmem.retrieval.context._branch import BranchMemory
from gitmem.retrieval.context._lines import event_line, item_of
from gitmem.retrieval.context.pack import PackItem

HISTORY_WIDTH = 120
DETAIL_EVENTS = 20  # events of the last session shown in detail
PREVIOUS_SESSIONS = 3


@dataclass
class _Session:
    """A session of the history tier: exact size and span, and its newest events."""

    key: str
    count: int
    first: int  # time of its first event
    tail: list[Event]  # its newest events (at least DETAIL_EVENTS, or all), oldest first
    capsule: Event | None  # its session capsule (see _session_capsule)

    @property
    def last(self) -> int:
        return self.tail[-1].time

    @property
    def label(self) -> str:
        kind, name = self.key[:2], one_line(self.key[2:], 60)
        return {
            "s:": f"session {name}",
            "c:": f"session capsule {ref(name)}",
            "d:": f"events without a session on {name}",
        }[kind]


def _sessions(
    memory: BranchMemory, window: BranchWindow, session: str | None
) -> tuple[list[_Session], OlderSessions | None]:
    """The recent sessions as the window counts them, and the older ones aggregated.

    A session's capsule is chosen among the showable capsule opens of the
    branch (all of which the window read) keyed to that session."""
    found = window.sessions(PREVIOUS_SESSIONS + 1, session, DETAIL_EVENTS)
    capsules = capsule_sessions(memory.events)
    opens: dict[str, list[Event]] = {}
    for event in memory.events:
        if event.type == "capsule_open" and memory.showable(event):
            opens.setdefault(session_key(event, capsules), []).append(event)
    sessions = [
        _Session(s.key, s.count, s.first, list(s.tail), _session_capsule(opens.get(s.key, [])))
        for s in found.recent
    ]
    return sessions, found.older


def _session_capsule(events: Sequence[Event]) -> Event | None:
    opens = [e for e in events if e.type == "capsule_open"]
    preferred = [e for e in opens if e.field("kind") == "session"]
    chosen = preferred or opens
    return chosen[-1] if chosen else None


def _span(session: _Session) -> str:
    start, end = iso_minute(session.first), iso_minute(session.last)
    if start == end:
        return start
    return f"{start} to {end[11:] if start[:10] == end[:10] else end}"


def _session_line(session: _Session, memory: BranchMemory, lead: str = "") -> PackItem:
    capsule = session.capsule
    anchor = capsule or session.tail[-1]
    count = session.count
    text = f"- {ref(anchor.id)} {lead}{session.label}, {_span(session)}, {plural(count, 'event')}"
    if capsule is not None:
        intent = one_line(str(capsule.field("intent", "") or ""), HISTORY_WIDTH)
        close = memory.closes.get(capsule.id)
        summary = (
            one_line(str(close.field("summary", "") or ""), HISTORY_WIDTH)
            if close is not None and visible(close)
            else ""
        )
        about = " — ".join(part for part in (intent, summary) if part)
        text += f": {about}" if about else ""
    return item_of(anchor, text)


def history_items(
    memory: BranchMemory, session: str | None
) -> tuple[list[PackItem], list[int], list[int | None]]:
    """History items in priority order, their display positions, and what
    each needs (the last session's events need its intro line)."""
    sessions, older = _sessions(memory, memory.window, session)
    if not sessions:
        return [], [], []
    current = next((s for s in sessions if session and s.key == "s:" + session), sessions[-1])
    others = [s for s in sessions if s is not current]
    previous = others[-PREVIOUS_SESSIONS:]
    for prior in others[: len(others) - len(previous)]:
        older = OlderSessions(1, prior.count, prior.first, prior.last).plus(older)
    detail = current.tail[-DETAIL_EVENTS:]

    items: list[PackItem] = []
    order: list[int] = []
    requires: list[int | None] = []
    base = 2 + len(previous)  # aggregate, previous sessions, intro, details
    items.append(_session_line(current, memory, lead="last: "))
    order.append(base)
    requires.append(None)
    for index, event in reversed(list(enumerate(detail))):
        text = "  " + event_line(event, memory, HISTORY_WIDTH, dated=False)
        items.append(item_of(event, text))
        order.append(base + 1 + index)
        requires.append(0)
    for index, prior in reversed(list(enumerate(previous))):
        items.append(_session_line(prior, memory))
        order.append(1 + index)
        requires.append(None)
    if older is not None:
        count, first, last = older.events, older.first, older.last
        text = f"- {plural(older.sessions, 'older session')}, {plural(count, 'event')}, " + (
            iso_date(first)
            if iso_date(first) == iso_date(last)
            else f"{iso_date(first)} to {iso_date(last)}"
        )
        items.append(PackItem(None, "sessions", None, text))
        order.append(0)
        requires.append(None)
    return items, order, requires
