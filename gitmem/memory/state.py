"""State derived from events: capsules, pins in force, the active decision on a key.

Each reads through an :class:`~gitmem.memory.source.EventSource` (the store or
the index), so the same answer comes back either way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Unpack

from gitmem.errors import AmbiguousIdError, NotFoundError, UsageError
from gitmem.memory.decisions import active_decision
from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter
from gitmem.memory.source import BranchKwargs, EventSource


@dataclass(frozen=True)
class CapsuleInfo:
    """A capsule with its state: open or closed, and how many events it holds."""

    id: str
    kind: str
    intent: str
    session: str | None
    opened: int
    closed: int | None
    summary: str
    events: int

    @property
    def is_open(self) -> bool:
        return self.closed is None


@dataclass(frozen=True)
class PinInfo:
    """A pin in force and the event it pins (None for a capsule summary pin)."""

    pin: Event
    target: str
    target_event: Event | None  # None for summary pins


def capsules_in(source: EventSource, **kw: Unpack[BranchKwargs]) -> list[CapsuleInfo]:
    """The capsules of ``source`` (a :class:`Memory` or an index view), in
    event order; ``kw`` as for ``source.events``. Read through the source's
    window: through the index only the capsule events are decoded, and the
    events per capsule are counted in Arrow."""
    window = source.window(kw)
    events = window.of_types(["capsule_open", "capsule_close"])
    counts = window.capsule_counts()
    closes: dict[str, Event] = {}
    for event in events:
        if event.type == "capsule_close" and event.body is not None:
            closes.setdefault(str(event.field("capsule")), event)
    out = []
    for event in events:
        if event.type != "capsule_open":
            continue
        close = closes.get(event.id)
        out.append(
            CapsuleInfo(
                id=event.id,
                kind=str(event.field("kind", "")),
                intent=str(event.field("intent", "")),
                session=event.scope.get("session"),
                opened=event.time,
                closed=close.time if close else None,
                summary=str(close.field("summary", "")) if close else "",
                events=counts.get(event.id, 0),
            )
        )
    return out


def pins_in_force(source: EventSource, *, now: int, **kw: Unpack[BranchKwargs]) -> list[PinInfo]:
    """Pins in force at ``now`` (µs) on the current branch of ``source`` (a
    :class:`Memory` or an index view): not unpinned, not expired, target not redacted."""
    active: dict[str, Event] = {}
    for event in source.events(EventFilter(types=["pin", "unpin"]), **kw):
        if event.body is None:
            continue
        target = str(event.field("target"))
        if event.type == "unpin":
            active.pop(target, None)
        else:
            active[target] = event
    result = []
    for target, pin in active.items():
        expires = pin.field("expires")
        if isinstance(expires, int) and expires <= now:
            continue
        try:
            target_event = source.get(target.removeprefix("summary:"))
        except (NotFoundError, AmbiguousIdError, UsageError):  # not an event's id
            continue
        if target_event.redacted:
            continue
        result.append(PinInfo(pin, target, None if target.startswith("summary:") else target_event))
    return result


def active_decision_id(source: EventSource, key: str) -> str | None:
    """The id of the active decision on ``key`` on the current branch of
    ``source`` (a :class:`Memory` or an index view), if any."""
    previous = active_decision(source.events(EventFilter(types=["decision"])), key)
    return previous.event.id if previous is not None else None
