"""The event as the library hands it out: envelope + body + where it was found."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gitmem.memory.describe import summary_text
from gitmem.records import layout


@dataclass(frozen=True, slots=True)
class Event:
    """One memory event.

    ``envelope`` and ``body`` are the raw stored dicts, so fields and event
    types written by a newer gitmem are kept intact. ``body`` is None when the
    event was redacted (``redacted`` is then True) or its payload is missing;
    ``problem`` then says why a payload that is there was not handed out
    (e.g. "payload does not match its envelope").
    """

    envelope: dict[str, Any]
    body: dict[str, Any] | None
    ref: str
    commit: str
    redacted: bool = False
    problem: str | None = None

    @property
    def id(self) -> str:
        return str(self.envelope["id"])

    @property
    def type(self) -> str:
        return str(self.envelope["type"])

    @property
    def time(self) -> int:
        """Hybrid-logical microseconds since the Unix epoch."""
        return int(self.envelope["time"])

    @property
    def scope(self) -> dict[str, str]:
        scope: dict[str, str] = self.envelope.get("scope", {})
        return scope

    @property
    def capsule(self) -> str | None:
        capsule = self.envelope.get("capsule")
        return capsule if isinstance(capsule, str) else None

    @property
    def branch(self) -> str | None:
        """The git branch whose memory holds this event (None: detached HEAD)."""
        return layout.branch_of_ref(self.ref)

    @property
    def actor(self) -> str | None:
        """Who recorded it: the agent if any, else the user."""
        return self.scope.get("agent") or self.scope.get("user")

    @property
    def order_key(self) -> tuple[int, str]:
        """The total order of events: (time, id), the same on every clone."""
        return (self.time, self.id)

    def field(self, name: str, default: Any = None) -> Any:
        """A body field, or ``default`` (also when the body is absent)."""
        return default if self.body is None else self.body.get(name, default)

    def summary(self, width: int = 80) -> str:
        """A one-line description for listings (no newlines)."""
        if self.redacted:
            return "[redacted]"
        if self.body is None:
            return f"[{self.problem}]" if self.problem else "[payload missing]"
        text = summary_text(self.type, self.body)
        text = " ".join(text.split())
        return text if len(text) <= width else text[: width - 1] + "…"

    def to_json(self) -> dict[str, Any]:
        """The export/--json form: envelope, body and redaction state."""
        return {"envelope": self.envelope, "body": self.body, "redacted": self.redacted}
