"""Decision semantics: supersession and ratification.

* Decisions on the same ``key`` form a timeline in event order; the newest is
  *active*, every earlier one is *superseded*. (The ``supersedes`` field a
  writer records is informational: after branches merge, order decides.)
* A decision is *binding* when a ``ratify`` event targets it, or when it was
  recorded by a person (no agent in its scope). An agent's decision is
  recorded, not binding, until ratified: "recorded is not ratified".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from gitmem.memory.describe import ref
from gitmem.memory.event import Event


@dataclass
class DecisionState:
    """One decision with what later events say about it."""

    event: Event
    superseded_by: str | None = None
    ratified_by: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return str(self.event.field("key", ""))

    @property
    def active(self) -> bool:
        return self.superseded_by is None

    @property
    def binding(self) -> bool:
        return bool(self.ratified_by) or not self.event.scope.get("agent")

    @property
    def status(self) -> str:
        if not self.active:
            return "superseded"
        return "binding" if self.binding else "proposed"


def decision_states(events: Iterable[Event]) -> list[DecisionState]:
    """Decision states, in event order, from any iterable of events."""
    ordered = sorted(events, key=lambda e: e.order_key)
    states: dict[str, DecisionState] = {}
    latest: dict[str, DecisionState] = {}
    for event in ordered:
        if event.redacted or event.body is None:
            continue
        if event.type == "decision":
            state = DecisionState(event)
            previous = latest.get(state.key)
            if previous is not None:
                previous.superseded_by = event.id
            latest[state.key] = state
            states[event.id] = state
        elif event.type == "ratify":
            target = states.get(str(event.field("target", "")))
            if target is not None:
                target.ratified_by.append(event.id)
    return list(states.values())


def active_decision(events: Iterable[Event], key: str) -> DecisionState | None:
    """The active decision on ``key``, if any."""
    for state in decision_states(events):
        if state.key == key and state.active:
            return state
    return None


def superseded_note(by: str, show_id: Callable[[str], str] = ref) -> str:
    """How every listing marks a superseded decision: ``superseded by
    [a1b2c3d4e5f6]`` (``show_id`` renders the superseding decision's id)."""
    return f"superseded by {show_id(by)}"
