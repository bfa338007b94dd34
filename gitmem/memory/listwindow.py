"""The branch window over a plain list of events, and a source over such a list.

:class:`ListWindow` implements :class:`~gitmem.memory.window.BranchWindow`
over the events one branch sees, already selected and in (time, id) order:
what :meth:`Memory.window <gitmem.memory.api.Memory.window>` returns, and
what :class:`ListSource` (an :class:`~gitmem.memory.source.EventSource` over
hand-made events) returns. Its answers are exactly those of the index's
:class:`~gitmem.index.window.IndexWindow`, read off the events instead of
Arrow columns, so a context pack or an ``ask`` answer is the same whichever
source it reads. Where the index reads a column it derived from the body,
this module derives the same value the same way (see :func:`_text`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from gitmem.errors import AmbiguousIdError, NotFoundError
from gitmem.memory.describe import LINE_WIDTH, describe, paths_of, visible
from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter, paths_overlap
from gitmem.memory.source import BranchKwargs
from gitmem.memory.window import (
    BranchWindow,
    DecisionBook,
    DecisionLedger,
    OlderSessions,
    SessionStats,
    SessionWindow,
    capsule_sessions,
    scope_session,
    session_key,
)
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg

__all__ = ["ListSource", "ListWindow"]


def _text(value: object) -> str | None:
    """A field as the index's string columns hold it: a non-empty string, else None."""
    return value if isinstance(value, str) and value else None


def _points_at(event: Event, hidden: frozenset[str]) -> bool:
    """Whether ``event``'s ``target`` field names one of ``hidden`` (``summary:`` allowed)."""
    target = event.field("target")
    return isinstance(target, str) and target.removeprefix("summary:") in hidden


def _names_session(event: Event, needles: Sequence[str]) -> bool:
    """Whether a commit link's body names one of the sessions, as the index
    matches it: a ``"session": <name>`` member anywhere in the stored JSON."""
    if event.body is None:
        return False
    stored = json.dumps(event.body, sort_keys=True, ensure_ascii=False)
    return any(needle in stored for needle in needles)


class ListWindow:
    """Selective reads of one branch's events held in a list (see the module docstring).

    ``events`` are what the branch sees (trunk included), in (time, id) order.
    """

    def __init__(self, events: Iterable[Event]) -> None:
        self.events = list(events)
        self._hidden: frozenset[str] | None = None
        self._book: DecisionBook | None = None

    def of_types(self, types: Sequence[str]) -> list[Event]:
        """Every event of these types, visible or not."""
        wanted = set(types)
        return [e for e in self.events if e.type in wanted]

    def newest(self, event_type: str, count: int) -> list[Event]:
        """The newest ``count`` visible events of one type."""
        if count <= 0:
            return []
        found = [e for e in self.events if e.type == event_type and visible(e)]
        return found[-count:]

    def by_ids(self, ids: Iterable[str]) -> list[Event]:
        """The branch's events with these (full) ids."""
        wanted = set(ids)
        return [e for e in self.events if e.id in wanted] if wanted else []

    def touching(self, types: Sequence[str], paths: Sequence[str]) -> list[Event]:
        """Visible events of these types whose paths overlap ``paths`` (either way round)."""
        if not types or not paths:
            return []
        wanted = set(types)
        return [
            e
            for e in self.events
            if e.type in wanted and visible(e) and paths_overlap(paths_of(e.body), paths)
        ]

    def related(
        self,
        types: Sequence[str],
        *,
        capsules: Iterable[str] = (),
        sessions: Iterable[str] = (),
        paths: Iterable[str] = (),
    ) -> list[Event]:
        """Visible events of these types in one of ``capsules`` or ``sessions``
        (scope session, or for a commit link a ``session`` member of its body,
        matched as the index matches it), or whose paths overlap ``paths``."""
        wanted = set(types)
        capsule_set, session_set = set(capsules), set(sessions)
        path_list = sorted(set(paths))
        needles = ['"session": ' + json.dumps(s, ensure_ascii=False) for s in sorted(session_set)]
        found = []
        for event in self.events:
            if event.type not in wanted or not visible(event):
                continue
            if (
                _text(event.capsule) in capsule_set
                or scope_session(event) in session_set
                or (event.type == "commit_link" and needles and _names_session(event, needles))
                or (path_list and paths_overlap(paths_of(event.body), path_list))
            ):
                found.append(event)
        return found

    def hidden(self) -> frozenset[str]:
        """Ids of the branch's events that are not visible."""
        if self._hidden is None:
            self._hidden = frozenset(e.id for e in self.events if not visible(e))
        return self._hidden

    def book(self) -> DecisionBook:
        """The decision states of :meth:`decisions`, computed once."""
        if self._book is None:
            self._book = DecisionBook(self.decisions(), self.by_ids)
        return self._book

    def decisions(self) -> DecisionLedger:
        """The ledger of the branch's visible decisions and ratifications."""
        chosen = [e for e in self.events if e.type in ("decision", "ratify") and visible(e)]

        def key(event: Event) -> str:
            value = event.field("key") if event.type == "decision" else None
            return "" if value is None else str(value)

        def target(event: Event) -> str:
            value = event.field("target")
            return value if isinstance(value, str) else ""

        return DecisionLedger(
            tuple(e.id for e in chosen),
            tuple(e.type for e in chosen),
            tuple(key(e) for e in chosen),
            tuple(target(e) for e in chosen),
            tuple(e.time for e in chosen),
            tuple(_text(e.scope.get("agent")) for e in chosen),
            tuple(tuple(paths_of(e.body)) for e in chosen),
            tuple(describe(e, LINE_WIDTH) if e.type == "decision" else "" for e in chosen),
        )

    def capsule_counts(self, capsules: Iterable[str] | None = None) -> dict[str, int]:
        """Events per capsule id (every event of the branch, visible or not),
        of ``capsules`` only when given."""
        wanted = None if capsules is None else set(capsules)
        counts: dict[str, int] = {}
        for event in self.events:
            capsule = _text(event.capsule)
            if capsule and (wanted is None or capsule in wanted):
                counts[capsule] = counts.get(capsule, 0) + 1
        return counts

    def everything(self) -> list[Event]:
        """All the branch's events."""
        return list(self.events)

    def showable(self, event: Event) -> bool:
        """Whether a context pack may show ``event``: visible, not a
        ``redaction``, not pointing at an invisible event of the branch."""
        return visible(event) and event.type != "redaction" and not _points_at(event, self.hidden())

    def sessions(self, recent: int, session: str | None, tail: int) -> SessionWindow:
        """The ``recent`` sessions of latest activity plus ``session`` when it
        has events, each with its newest ``tail`` events; the rest aggregated."""
        mapping = capsule_sessions(self.of_types(["capsule_open"]))
        grouped: dict[str, list[Event]] = {}
        for event in self.events:
            if self.showable(event):
                grouped.setdefault(session_key(event, mapping), []).append(event)
        # events are in order, so a session's last event is its newest
        order = sorted(grouped, key=lambda k: grouped[k][-1].order_key)
        chosen = order[-recent:] if recent > 0 else []
        wanted = "s:" + session if session else None
        if wanted is not None and wanted in grouped and wanted not in chosen:
            chosen = sorted([*chosen, wanted], key=lambda k: grouped[k][-1].order_key)
        taken = set(chosen)
        rest = [grouped[k] for k in order if k not in taken]
        older = (
            OlderSessions(
                len(rest),
                sum(len(events) for events in rest),
                min(events[0].time for events in rest),
                max(events[-1].time for events in rest),
            )
            if rest
            else None
        )
        newest = max(tail, 1)
        stats = tuple(
            SessionStats(
                k,
                len(grouped[k]),
                grouped[k][0].time,
                grouped[k][-1].time,
                tuple(grouped[k][-newest:]),
            )
            for k in chosen
        )
        return SessionWindow(stats, older)


class ListSource:
    """An :class:`~gitmem.memory.source.EventSource` over a plain list of events,
    all on one branch (``branch``): for tests and for callers holding events
    already read. Branch arguments select nothing (there is one branch)."""

    def __init__(self, events: Iterable[Event], branch: str | None = "main") -> None:
        self._events = sorted(events, key=lambda e: e.order_key)
        self._branch = branch

    @property
    def branch(self) -> str | None:
        return self._branch

    def events(
        self,
        where: EventFilter | None = None,
        *,
        branch: BranchArg = CURRENT_BRANCH,
        all_branches: bool = False,
        limit: int | None = None,
        trunk: str | None = None,
    ) -> list[Event]:
        """Events in (time, id) order matching ``where``; ``limit`` keeps the last n."""
        chosen = [e for e in self._events if where is None or where.matches(e)]
        return chosen[-limit:] if limit else chosen

    def get(self, event_id: str) -> Event:
        """An event by id or unique id prefix; ``NotFoundError`` when none matches."""
        found = [e for e in self._events if e.id == event_id]
        if not found:
            found = [e for e in self._events if event_id and e.id.startswith(event_id)]
        if not found:
            raise NotFoundError(f"no event with id {event_id}")
        if len(found) > 1:
            raise AmbiguousIdError(f"id prefix {event_id} matches {len(found)} events")
        return found[0]

    def window(self, branch_kwargs: BranchKwargs) -> BranchWindow:
        """The branch's events as a :class:`ListWindow` (``branch_kwargs`` as for :meth:`events`)."""
        return ListWindow(self.events(**branch_kwargs))
