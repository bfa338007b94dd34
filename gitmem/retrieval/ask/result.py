"""What :func:`~gitmem.retrieval.ask.ask` answers: decisions as ``ask``
reports them, a key's timeline, related events, and their markdown and JSON."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gitmem.memory.decisions import DecisionState
from gitmem.memory.describe import iso_date, iso_minute, ref, short_id
from gitmem.retrieval.context import decision_line

__all__ = ["AskResult", "DecisionView", "RelatedEvent", "TimelineEntry"]


@dataclass(frozen=True)
class RelatedEvent:
    """An event related to a decision, and how (``capsule``, ``session`` or ``paths``)."""

    id: str
    type: str
    time: int
    text: str
    relation: str

    def to_json(self) -> dict[str, Any]:
        """``{id, short_id, type, time, text, relation}``."""
        return {
            "id": self.id,
            "short_id": short_id(self.id),
            "type": self.type,
            "time": self.time,
            "text": self.text,
            "relation": self.relation,
        }


@dataclass(frozen=True)
class DecisionView:
    """A decision as ``ask`` reports it."""

    id: str
    key: str
    value: str
    reason: str
    time: int
    agent: str | None
    status: str  # "binding", "proposed" or "superseded"
    binding: bool
    superseded_by: str | None
    ratified_by: tuple[str, ...]
    line: str  # the markdown line, without the leading "- "
    related: tuple[RelatedEvent, ...] = ()
    paths: tuple[str, ...] = ()
    changed: tuple[str, ...] | None = None  # stale: files changed since (None: not checked)

    @classmethod
    def of(cls, state: DecisionState, related: Sequence[RelatedEvent] = ()) -> DecisionView:
        """The view of one decision state."""
        event = state.event
        return cls(
            id=event.id,
            key=state.key,
            value=str(event.field("value", "")),
            reason=str(event.field("reason", "") or ""),
            time=event.time,
            agent=event.scope.get("agent") or None,
            status=state.status,
            binding=state.binding,
            superseded_by=state.superseded_by,
            ratified_by=tuple(state.ratified_by),
            line=f"{ref(event.id)} {decision_line(state)}",
            related=tuple(related),
            paths=tuple(p for p in event.field("paths", []) or [] if isinstance(p, str)),
        )

    def to_json(self) -> dict[str, Any]:
        """The view as JSON-ready data."""
        return {
            "id": self.id,
            "short_id": short_id(self.id),
            "key": self.key,
            "value": self.value,
            "reason": self.reason,
            "time": self.time,
            "agent": self.agent,
            "status": self.status,
            "binding": self.binding,
            "superseded_by": self.superseded_by,
            "ratified_by": list(self.ratified_by),
            "text": self.line,
            "related": [r.to_json() for r in self.related],
            "paths": list(self.paths),
            "stale": bool(self.changed),
            "changed": list(self.changed or ()),
        }


@dataclass(frozen=True)
class TimelineEntry:
    """One step of a key's timeline: a decision or a ratification."""

    id: str
    type: str  # "decision" or "ratify"
    time: int
    text: str
    decision: DecisionView | None = None

    def to_json(self) -> dict[str, Any]:
        """The entry as JSON-ready data."""
        return {
            "id": self.id,
            "short_id": short_id(self.id),
            "type": self.type,
            "time": self.time,
            "text": self.text,
            "decision": self.decision.to_json() if self.decision else None,
        }


@dataclass(frozen=True)
class AskResult:
    """What :func:`ask` found; render with :meth:`to_markdown` or :meth:`to_json`."""

    mode: str  # "overview", "key" or "search"
    query: str | None
    branch: str | None
    include_superseded: bool
    decisions: tuple[DecisionView, ...]
    timeline: tuple[TimelineEntry, ...] = ()
    keys: tuple[str, ...] = ()  # key mode: the keys matched
    hidden: int = 0  # search mode: superseded matches left out

    def to_markdown(self) -> str:
        """The answer as markdown."""
        where = f"branch {self.branch}" if self.branch else "detached HEAD"
        lines: list[str] = []
        if self.mode == "overview":
            active = sum(1 for d in self.decisions if d.status != "superseded")
            old = len(self.decisions) - active
            title = f"# Decisions on {where}: {active} active"
            lines.append(title + (f", {old} superseded" if self.include_superseded else ""))
            lines.append("")
            lines.extend(f"- {d.line}" for d in self.decisions)
            if not self.decisions:
                lines.append("_No decisions recorded._")
        elif self.mode == "key":
            keys = ", ".join(f"`{k}`" for k in self.keys)
            lines.append(f"# Decision timeline of {keys} on {where}")
            lines.append("")
            lines.extend(f"- {iso_minute(t.time)} {t.text}" for t in self.timeline)
        else:
            lines.append(f"# Decisions matching “{self.query}” on {where}: {len(self.decisions)}")
            lines.append("")
            for number, view in enumerate(self.decisions, 1):
                lines.append(f"{number}. {view.line}")
                lines.extend(
                    f"   - {ref(r.id)} {r.text} ({r.relation}, {iso_date(r.time)})"
                    for r in view.related
                )
            if not self.decisions:
                lines.append("_No decisions match._")
            if self.hidden:
                lines.append("")
                lines.append(
                    f"_{self.hidden} superseded decision{' also matches' if self.hidden == 1 else 's also match'}"
                    " (show with --all)._"
                )
        return "\n".join(lines) + "\n"

    def to_json(self) -> dict[str, Any]:
        """The answer as JSON-ready data."""
        return {
            "mode": self.mode,
            "query": self.query,
            "branch": self.branch,
            "include_superseded": self.include_superseded,
            "keys": list(self.keys),
            "decisions": [d.to_json() for d in self.decisions],
            "timeline": [t.to_json() for t in self.timeline],
            "hidden": self.hidden,
        }
