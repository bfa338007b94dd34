"""What ``verify`` reports: the problems and warnings it found, each with
where (ref, commit, object, event, field), and how much it checked."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gitmem.errors import GitmemError


@dataclass(frozen=True)
class Problem:
    """One thing wrong: where (ref, commit, object, event, field) and what."""

    message: str
    ref: str | None = None
    commit: str | None = None
    object: str | None = None
    event: str | None = None
    field: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    def __str__(self) -> str:
        where = [
            f"{k} {v}"
            for k, v in (
                ("event", self.event),
                ("field", self.field),
                ("object", self.object),
                ("commit", self.commit),
                ("ref", self.ref),
            )
            if v
        ]
        return f"{self.message} [{', '.join(where)}]" if where else self.message


@dataclass
class Report:
    """What ``verify`` found: problems (damage), warnings (worth knowing,
    not damage) and how much it checked."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    refs: int = 0
    commits: int = 0
    events: int = 0
    payloads: int = 0
    redacted: int = 0
    # "full", or "incremental": only what was new since the last clean verification
    mode: str = "full"
    fallback: str = ""  # why an incremental verification checked everything instead

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "refs": self.refs,
            "commits": self.commits,
            "events": self.events,
            "payloads": self.payloads,
            "redacted": self.redacted,
            "mode": self.mode,
            "fallback": self.fallback or None,
            "problems": [p.to_json() for p in self.problems],
            "warnings": [w.to_json() for w in self.warnings],
        }


def error_text(exc: BaseException) -> str:
    """How an exception reads in a problem's message."""
    return exc.message if isinstance(exc, GitmemError) else f"{type(exc).__name__}: {exc}"
