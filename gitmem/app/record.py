"""Recording: notes, decisions, ratifications, checkpoints, learnings, pins, capsules.

Every use case checks what the store cannot know alone (a decision already
superseded, a pin already in force, an empty checkpoint) through the index
where it can, then writes one event. A request that would change nothing
returns :class:`Unchanged` and writes nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from gitmem.app.session import Repo, open_writer, reader
from gitmem.errors import UsageError
from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter
from gitmem.memory.source import EventSource
from gitmem.memory.state import (
    CapsuleInfo,
    PinInfo,
    active_decision_id,
    capsules_in,
    pins_in_force,
)

Kind = Literal["learning", "pattern", "mistake"]
CapsuleKind = Literal["session", "workflow", "node"]


@dataclass(frozen=True)
class Who:
    """Who records an event: scope ids (None: the defaults, ``$GITMEM_SESSION``,
    ``$GITMEM_AGENT``) and the capsule it belongs to (an id or unique prefix)."""

    session: str | None = None
    capsule: str | None = None
    agent: str | None = None

    def scope(self, source: EventSource) -> dict[str, Any]:
        """Keyword arguments for the store's writers (the capsule resolved)."""
        out: dict[str, Any] = {"session": self.session, "agent": self.agent}
        if self.capsule:
            out["capsule"] = source.get(self.capsule).id
        return out


NOBODY = Who()


@dataclass(frozen=True)
class Unchanged:
    """Nothing written: the state asked for is already there."""

    event: Event
    why: str


@dataclass(frozen=True)
class Decided:
    """A decision recorded, and the one it superseded (if any)."""

    event: Event
    supersedes: str | None
    binding: bool  # False: proposed by an agent, binding once ratified


def note(
    repo: Repo,
    text: str,
    *,
    tags: Sequence[str] = (),
    paths: Sequence[str] = (),
    who: Who = NOBODY,
) -> Event:
    """Record a note (refused when it has no text)."""
    if not text.strip():
        raise UsageError("the note is empty", 'git edda note "what you learnt"')
    with open_writer(repo) as mem:
        return mem.note(text, tags=tags, paths=paths, **who.scope(mem))


def decide(
    repo: Repo,
    key: str,
    value: str,
    *,
    reason: str = "",
    scope: str = "",
    paths: Sequence[str] = (),
    tags: Sequence[str] = (),
    who: Who = NOBODY,
) -> Decided:
    """Record decision ``key = value``, superseding the active decision on ``key``."""
    with reader(repo) as source:  # the index: no walk over every event
        previous = active_decision_id(source, key)
    with open_writer(repo) as mem:
        event = mem.decide(
            key,
            value,
            reason=reason,
            scope=scope,
            paths=list(paths),
            tags=list(tags),
            supersedes=previous,
            **who.scope(mem),
        )
    return Decided(event, previous, binding=not event.scope.get("agent"))


def _not_superseded(source: EventSource, decision: Event, verb: str) -> None:
    """A usage error when a later decision on the same key replaced ``decision``."""
    active = active_decision_id(source, str(decision.field("key", "")))
    if active is not None and active != decision.id:
        raise UsageError(
            f"decision {decision.id[:12]} was superseded by {active[:12]} "
            f"on {decision.field('key')!r}: nothing to {verb}",
            f"{verb} the active decision ('git edda ask {decision.field('key')}' shows it)",
        )


def ratify(repo: Repo, id: str, *, note: str = "", who: Who = NOBODY) -> Event | Unchanged:
    """Ratify a decision (make an agent's proposal binding)."""
    with reader(repo) as source:  # resolving the id through the index
        decision = source.get(id)
        if decision.type == "decision":
            _not_superseded(source, decision, "ratify")
            done = next(
                (
                    e
                    for e in source.events(EventFilter(types=["ratify"]))
                    if e.field("target") == decision.id
                ),
                None,
            )
            if done is not None:
                return Unchanged(decision, f"already ratified by {done.id[:12]}")
    with open_writer(repo) as mem:
        return mem.ratify(decision, note=note, **who.scope(mem))


def checkpoint(
    repo: Repo,
    *,
    next: str = "",
    summary: str = "",
    hypotheses: Sequence[str] = (),
    rejected: Sequence[tuple[str, str]] = (),
    open_questions: Sequence[str] = (),
    paths: Sequence[str] = (),
    who: Who = NOBODY,
) -> Event:
    """Record where work stands; ``rejected`` holds (idea, why) pairs."""
    given = [next, summary, *hypotheses, *open_questions, *(idea for idea, _ in rejected)]
    if not any(text.strip() for text in given):
        raise UsageError(
            "an empty checkpoint says nothing (and would hide the current one)",
            "give at least --next, --summary, --hypothesis, --rejected or --question",
        )
    with open_writer(repo) as mem:
        return mem.checkpoint(
            next=next,
            summary=summary,
            hypotheses=list(hypotheses),
            rejected=list(rejected),
            open_questions=list(open_questions),
            paths=list(paths),
            **who.scope(mem),
        )


def learn(
    repo: Repo,
    text: str,
    *,
    kind: Kind = "learning",
    topic: str = "",
    paths: Sequence[str] = (),
    tags: Sequence[str] = (),
    who: Who = NOBODY,
) -> Event:
    """Record a learning, pattern or mistake."""
    if not text.strip():
        raise UsageError(f"the {kind} is empty", f'git edda learn "what you learnt" --kind {kind}')
    with open_writer(repo) as mem:
        return mem.learn(
            kind, text, topic=topic, paths=list(paths), tags=list(tags), **who.scope(mem)
        )


@dataclass(frozen=True)
class PinTarget:
    """What a pin names: an event, or with ``summary`` the summary of a capsule."""

    event: Event
    summary: bool

    @property
    def key(self) -> str:
        return ("summary:" if self.summary else "") + self.event.id


def pin_target(source: EventSource, id: str) -> PinTarget:
    """The event ``id`` (or ``summary:ID``) names."""
    summary = id.startswith("summary:")
    return PinTarget(source.get(id.removeprefix("summary:")), summary)


def pin(
    repo: Repo,
    id: str,
    *,
    reason: str = "",
    expires: int | None = None,
    now: int,
    who: Who = NOBODY,
) -> Event | Unchanged:
    """Pin an event (or ``summary:CAPSULE``) into every context pack, until
    ``expires`` (µs) when given; refused when that is not after ``now``."""
    if expires is not None and expires <= now:
        raise UsageError(
            "the expiry is in the past: the pin would be over at once",
            "give a later date, or an age ahead such as 7d",
        )
    with reader(repo) as source:
        target = pin_target(source, id)
        if target.event.type == "decision" and not target.summary:
            _not_superseded(source, target.event, "pin")
        pinned = any(p.target == target.key for p in pins_in_force(source, now=now))
        if pinned and expires is None:
            return Unchanged(target.event, "already pinned")
    with open_writer(repo) as mem:
        return mem.pin(
            target.event,
            reason=reason,
            expires=expires,
            summary=target.summary,
            **who.scope(mem),
        )


def unpin(repo: Repo, id: str, *, now: int, who: Who = NOBODY) -> Event | Unchanged:
    """Remove a pin (nothing written when ``id`` is not pinned)."""
    with reader(repo) as source:
        target = pin_target(source, id)
        if not any(p.target == target.key for p in pins_in_force(source, now=now)):
            return Unchanged(target.event, "not pinned")
    with open_writer(repo) as mem:
        return mem.unpin(target.event, summary=target.summary, **who.scope(mem))


def pins(repo: Repo, *, now: int) -> list[PinInfo]:
    """The pins in force at ``now`` (µs) on the current branch."""
    with reader(repo) as source:
        return pins_in_force(source, now=now)


def capsules(
    repo: Repo, *, open_only: bool = False, all_branches: bool = False
) -> list[CapsuleInfo]:
    """The capsules, open ones only with ``open_only``."""
    with reader(repo) as source:
        found = capsules_in(source, all_branches=all_branches)
    return [c for c in found if c.is_open or not open_only]


DEFAULT_CAPSULE_IDLE = "12h"
"""``edda.capsuleIdle``: how long an open capsule may see no events before
the next ``capsule open`` closes it (an age: 90m, 12h, 2d; 0 never)."""


@dataclass(frozen=True)
class Opened:
    """A capsule opened (now the current one), the capsules still open beside
    it, and those closed because nothing happened in them for too long."""

    event: Event
    still_open: list[CapsuleInfo]
    auto_closed: list[Event]


def idle_limit_us(config: dict[str, list[str]]) -> int | None:
    """``edda.capsuleIdle`` in microseconds (None: never close idle capsules)."""
    from gitmem.memory.timespec import parse_time
    from gitmem.storage.gitconfig import get_last

    text = (get_last(config, "edda.capsuleIdle") or DEFAULT_CAPSULE_IDLE).strip().lower()
    if text in ("0", "never", "off"):
        return None
    if text.isdigit():
        return int(text) * 1_000_000  # seconds
    if not re.fullmatch(r"\d{1,9}\s*[smhdw]", text):
        raise UsageError(
            f"git config edda.capsuleIdle = {text!r} is not an age",
            "set it to an age such as 90m, 12h or 2d, or 0 to never close idle capsules",
        )
    return -parse_time(text, 0)


def last_activity(source: EventSource, capsule: CapsuleInfo) -> int:
    """When anything last happened in ``capsule`` (its open, else its newest event)."""
    inside = source.events(EventFilter(capsules=[capsule.id]), limit=1)
    return max([capsule.opened, *(e.time for e in inside)])


def open_capsule(
    repo: Repo,
    kind: CapsuleKind,
    *,
    intent: str = "",
    parent: str | None = None,
    who: Who = NOBODY,
    now: int | None = None,
) -> Opened:
    """Open a capsule and make it the current one of this worktree: events
    recorded here (in its session, when it has one) belong to it until it is
    closed. Open capsules idle for longer than ``edda.capsuleIdle`` are
    closed first, with a summary saying so."""
    from gitmem.capture.active import write_active
    from gitmem.storage.clock import wall_us

    now = wall_us() if now is None else now
    with reader(repo) as source:  # the index: no walk over every event
        others = [c for c in capsules_in(source) if c.is_open]
        activity = {c.id: last_activity(source, c) for c in others}
        openings = {c.id: source.get(c.id) for c in others}
    with open_writer(repo) as mem:
        limit = idle_limit_us(mem.config)
        stale = [c for c in others if limit is not None and now - activity[c.id] > limit]
        closed = [
            mem.close_capsule(
                openings[c.id],  # as found: an id alone would be looked up in every event
                f"closed automatically: no events for {_age(now - activity[c.id])}"
                f" (edda.capsuleIdle is {_age(limit or 0)})",
                closed=False,
            )
            for c in stale
        ]
        parent_id = mem.resolve_id(parent) if parent else None  # not every event read
        event = mem.open_capsule(kind, intent, parent=parent_id, **who.scope(mem))
        # Events recorded here, and commits git hooks link, go to the capsule opened last.
        write_active(
            mem.location,
            session=event.scope.get("session"),
            capsule=event.id,
            agent=event.scope.get("agent"),
        )
    still = [c for c in others if c not in stale]
    return Opened(event, still, closed)


def _age(us: int) -> str:
    seconds = max(us // 1_000_000, 0)
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def close_capsule(repo: Repo, id: str, *, summary: str = "", who: Who = NOBODY) -> Event:
    """Close a capsule with a summary."""
    from gitmem.capture.active import clear_active

    with reader(repo) as source:  # the index: no walk over every event
        opened = source.get(id)
        closed = any(c.id == opened.id and not c.is_open for c in capsules_in(source))
    with open_writer(repo) as mem:
        scope = who.scope(mem)
        scope.pop("capsule", None)
        event = mem.close_capsule(opened, summary, closed=closed, **scope)
        clear_active(mem.location, capsule=event.capsule)
        return event
