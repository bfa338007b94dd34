"""A read capability of every source: a branch's events fetched by need, not all at once.

Context packs and ``ask`` need only some of a branch's events: the events of
a few types (pins, capsules), the decisions shown, the newest checkpoint, the
learnings about the files in play, the tail of the recent sessions, events
related to a few decisions, plus a few counts. Decision states come from a
:class:`DecisionLedger` (ids, keys and ratify targets as light columns), so
only the decisions shown are decoded (:class:`DecisionBook`).
Every :class:`~gitmem.memory.source.EventSource` offers
``source.window(branch_kwargs)`` returning a :class:`BranchWindow`: the index
selects from Arrow columns (:class:`gitmem.index.window.IndexWindow`), the
store and plain lists read a list
(:class:`gitmem.memory.listwindow.ListWindow`). Both give the same answers.

**Sessions** (for the context pack's history) are keyed as
:func:`session_key` says: an event's scope session (``s:<name>``), else the
session of the capsule it belongs to (the capsule open's scope session, or
``c:<capsule id>`` for a ``session`` capsule without one), else, for the open
of such a capsule, its own key, else the UTC day (``d:YYYY-MM-DD``). Only
*showable* events count: visible (not redacted, payload present), not a
``redaction``, and not pointing (``target``, ``summary:`` prefix removed) at
an event of the branch that is not visible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from gitmem.memory.decisions import DecisionState
from gitmem.memory.describe import LINE_WIDTH, describe, iso_date, paths_of, visible
from gitmem.memory.event import Event

__all__ = [
    "BranchWindow",
    "DecisionBook",
    "DecisionLedger",
    "DecisionOutline",
    "OlderSessions",
    "SessionStats",
    "SessionWindow",
    "capsule_sessions",
    "scope_session",
    "session_key",
]


@dataclass(frozen=True)
class SessionStats:
    """One session: exact count and span of its showable events, and its tail.

    ``tail`` is the session's newest showable events (at most the number
    asked for, at least one), oldest first.
    """

    key: str
    count: int
    first: int  # time of its first showable event
    last: int  # time of its last showable event
    tail: tuple[Event, ...]


@dataclass(frozen=True)
class OlderSessions:
    """Sessions aggregated into one history line: how many, their events, their span."""

    sessions: int
    events: int
    first: int
    last: int

    def plus(self, other: OlderSessions | None) -> OlderSessions:
        """Both aggregates as one."""
        if other is None:
            return self
        return OlderSessions(
            self.sessions + other.sessions,
            self.events + other.events,
            min(self.first, other.first),
            max(self.last, other.last),
        )


@dataclass(frozen=True)
class SessionWindow:
    """The most recent sessions (oldest last activity first) and the rest, aggregated."""

    recent: tuple[SessionStats, ...]
    older: OlderSessions | None


@dataclass(frozen=True)
class DecisionLedger:
    """The branch's visible ``decision`` and ``ratify`` events as light columns,
    in (time, id) order: no body is decoded. ``keys`` holds a decision's key
    ("" for a ratify), ``targets`` a ratify's target ("" for a decision),
    ``agents`` the scope agent (None when a person recorded it), ``paths``
    the files the event is about and ``lines`` a decision's
    :func:`~gitmem.memory.describe.describe` text at
    :data:`~gitmem.memory.describe.LINE_WIDTH` ("" for a ratify)."""

    ids: tuple[str, ...]
    types: tuple[str, ...]
    keys: tuple[str, ...]
    targets: tuple[str, ...]
    times: tuple[int, ...]
    agents: tuple[str | None, ...]
    paths: tuple[tuple[str, ...], ...]
    lines: tuple[str, ...]


@dataclass(frozen=True)
class DecisionOutline:
    """A decision's standing, known without decoding its event: enough to
    order, claim and show it on a compact line (``text`` is its
    :func:`~gitmem.memory.describe.describe` text at
    :data:`~gitmem.memory.describe.LINE_WIDTH`)."""

    id: str
    time: int
    key: str
    agent: str | None
    paths: tuple[str, ...]
    text: str
    superseded_by: str | None
    ratified_by: tuple[str, ...]

    @property
    def active(self) -> bool:
        return self.superseded_by is None

    @property
    def binding(self) -> bool:
        """As :attr:`~gitmem.memory.decisions.DecisionState.binding`."""
        return bool(self.ratified_by) or not self.agent

    @classmethod
    def of(cls, state: DecisionState, width: int = LINE_WIDTH) -> DecisionOutline:
        """The outline of a decoded decision (``text`` described at ``width``)."""
        event = state.event
        agent = event.scope.get("agent")
        return cls(
            event.id,
            event.time,
            state.key,
            agent if isinstance(agent, str) else None,
            tuple(paths_of(event.body)),
            describe(event, width),
            state.superseded_by,
            tuple(state.ratified_by),
        )


class BranchWindow(Protocol):
    """Selective reads of one branch's events (what the branch sees, trunk
    included, as ``source.events(**branch_kwargs)`` would return them). Every
    list is in (time, id) order."""

    def of_types(self, types: Sequence[str]) -> list[Event]:
        """Every event of these types, visible or not."""
        ...

    def newest(self, event_type: str, count: int) -> list[Event]:
        """The newest ``count`` visible events of one type."""
        ...

    def by_ids(self, ids: Iterable[str]) -> list[Event]:
        """The branch's events with these (full) ids."""
        ...

    def touching(self, types: Sequence[str], paths: Sequence[str]) -> list[Event]:
        """Visible events of these types whose paths overlap ``paths`` (either way round)."""
        ...

    def related(
        self,
        types: Sequence[str],
        *,
        capsules: Iterable[str] = (),
        sessions: Iterable[str] = (),
        paths: Iterable[str] = (),
    ) -> list[Event]:
        """Visible events of these types in one of ``capsules`` or ``sessions``
        (scope session, or for a commit link a ``session`` body field), or
        whose paths overlap ``paths``; a superset is allowed (callers check
        the relation again)."""
        ...

    def hidden(self) -> frozenset[str]:
        """Ids of the branch's events that are not visible."""
        ...

    def decisions(self) -> DecisionLedger:
        """The ledger of the branch's visible decisions and ratifications."""
        ...

    def book(self) -> DecisionBook:
        """The decision states of :meth:`decisions`, computed once per window
        (a hot search asks for them on every query)."""
        ...

    def capsule_counts(self, capsules: Iterable[str] | None = None) -> dict[str, int]:
        """Events per capsule id (every event, visible or not), of ``capsules``
        only when given (a capsule without events is left out)."""
        ...

    def sessions(self, recent: int, session: str | None, tail: int) -> SessionWindow:
        """The ``recent`` sessions of latest activity plus ``session`` (a scope
        session name) when it has events, each with its newest ``tail`` events;
        every other session aggregated."""
        ...

    def everything(self) -> list[Event]:
        """All the branch's events (for the rare caller with no index-backed search)."""
        ...


class DecisionBook:
    """Decision states computed from a :class:`DecisionLedger`, exactly as
    :func:`~gitmem.memory.decisions.decision_states` computes them from
    events (later decisions on a key supersede earlier ones; a ratify counts
    for a decision before it), decoding a decision's event only when its
    state is asked for. (A decision whose body has ``"key": null`` is keyed
    "" here, "None" there: the index stores no difference.)
    """

    def __init__(self, ledger: DecisionLedger, fetch: Callable[[Iterable[str]], list[Event]]):
        self.fetch = fetch
        self.standing: dict[str, DecisionOutline] = {}  # decision id -> outline, in event order
        latest: dict[str, str] = {}
        superseded: dict[str, str] = {}
        ratified: dict[str, list[str]] = {}
        self.ratifies: list[tuple[str, str]] = []  # (ratify id, target), in event order
        for event_id, kind, key, target in zip(
            ledger.ids, ledger.types, ledger.keys, ledger.targets, strict=True
        ):
            if kind == "decision":
                if key in latest:
                    superseded[latest[key]] = event_id
                latest[key] = event_id
                ratified[event_id] = []
            elif kind == "ratify":
                self.ratifies.append((event_id, target))
                if target in ratified:
                    ratified[target].append(event_id)
        rows = {event_id: n for n, event_id in enumerate(ledger.ids)}
        for event_id, ratifications in ratified.items():
            n = rows[event_id]
            self.standing[event_id] = DecisionOutline(
                event_id,
                ledger.times[n],
                ledger.keys[n],
                ledger.agents[n],
                ledger.paths[n],
                ledger.lines[n],
                superseded.get(event_id),
                tuple(ratifications),
            )

    def keys(self) -> set[str]:
        """Every decision key."""
        return {standing.key for standing in self.standing.values()}

    def ids(self, *, superseded: bool = True, keys: Iterable[str] | None = None) -> list[str]:
        """Decision ids in event order (active only unless ``superseded``; on ``keys``)."""
        wanted = None if keys is None else set(keys)
        return [
            event_id
            for event_id, standing in self.standing.items()
            if (superseded or standing.superseded_by is None)
            and (wanted is None or standing.key in wanted)
        ]

    def outlines(self, *, superseded: bool = True) -> list[DecisionOutline]:
        """Every decision's outline in event order (active only unless ``superseded``)."""
        return [o for o in self.standing.values() if superseded or o.active]

    def state(self, event: Event) -> DecisionState | None:
        """The state of a decision event (None for any other event)."""
        standing = self.standing.get(event.id)
        if standing is None or event.type != "decision" or not visible(event):
            return None
        return DecisionState(event, standing.superseded_by, list(standing.ratified_by))

    def states(self, ids: Iterable[str]) -> list[DecisionState]:
        """The states of these decisions, in event order (their events decoded)."""
        wanted = [i for i in dict.fromkeys(ids) if i in self.standing]
        states = [self.state(event) for event in self.fetch(wanted)]
        return sorted((s for s in states if s is not None), key=lambda s: s.event.order_key)


def scope_session(event: Event) -> str | None:
    """The event's scope session as the index's ``session`` column holds it
    (a non-empty string, else None: older memory may hold other values)."""
    scoped = event.scope.get("session")
    return scoped if isinstance(scoped, str) and scoped else None


def capsule_sessions(events: Iterable[Event]) -> dict[str, str]:
    """Capsule id -> session key, from the capsule opens among ``events``."""
    found: dict[str, str] = {}
    for event in events:
        if event.type == "capsule_open":
            scoped = scope_session(event)
            if scoped:
                found[event.id] = "s:" + scoped
            elif event.field("kind") == "session":
                found[event.id] = "c:" + event.id
    return found


def session_key(event: Event, capsules: dict[str, str]) -> str:
    """The session key of ``event`` given :func:`capsule_sessions` (see the module docstring)."""
    scoped = scope_session(event)
    if scoped:
        return "s:" + scoped
    if event.capsule and event.capsule in capsules:
        return capsules[event.capsule]
    if event.id in capsules:
        return capsules[event.id]
    return "d:" + iso_date(event.time)
