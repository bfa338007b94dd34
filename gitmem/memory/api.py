"""``Memory``: the Python API over one repository's memory.

    from gitmem import Memory
    with Memory.open(".") as mem:
        mem.note("the flaky test is a timezone bug", paths=["tests/test_time.py"])
        for event in mem.events(EventFilter(types=["note"])):
            print(event.id, event.summary())

Library functions return values and raise :mod:`gitmem.errors`; they never
print and never exit.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gitmem.capture.sealer import _UNSET, Draft, Sealer
from gitmem.errors import AmbiguousIdError, NotFoundError, UsageError
from gitmem.memory.decisions import DecisionState, active_decision, decision_states
from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter
from gitmem.records.names import KNOWLEDGE_TYPES
from gitmem.storage import layout, spool
from gitmem.storage.backends import open_backend
from gitmem.storage.gitconfig import Config, get_bool, read_config
from gitmem.storage.ledger import FlushResult, Ledger, Located, Sealed
from gitmem.storage.locate import RepoLocation, head_branch, locate

MIN_PREFIX = 4


@dataclass(frozen=True)
class CapsuleInfo:
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
    pin: Event
    target: str
    target_event: Event | None  # None for summary pins


class Memory:
    """Memory of one repository (any worktree of it shares the same memory)."""

    def __init__(
        self, location: RepoLocation, config: Config, backend_name: str | None = None
    ) -> None:
        self.location = location
        self.config = config
        self.fsync = get_bool(config, "edda.fsync", True)
        self.backend = open_backend(location, backend_name, fsync=self.fsync)
        self.ledger = Ledger(location, self.backend, fsync=self.fsync)
        self._sealer: Sealer | None = None
        # The cache reflects these ref tips (event chains and payload store):
        # any write, by this process or another, changes them.
        self._cache_key: tuple[tuple[str, str | None], ...] | None = None
        self._per_ref: dict[str, list[Located]] = {}
        self._events: dict[str, Event] = {}

    @classmethod
    def open(
        cls, path: str | os.PathLike[str] | None = None, *, backend: str | None = None
    ) -> Memory:
        """Open the memory of the repository containing ``path`` (default: cwd)."""
        location = locate(path)
        return cls(location, read_config(location), backend)

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # where ----------------------------------------------------------------------
    @property
    def branch(self) -> str | None:
        """The checked-out git branch (None when HEAD is detached)."""
        return head_branch(self.location)

    @property
    def sealer(self) -> Sealer:
        if self._sealer is None:
            self._sealer = Sealer(self.location, self.config)
        return self._sealer

    def init(self) -> dict[str, Any]:
        """Create gitmem's state dir and flush any spool; returns what exists."""
        self.location.state_dir.mkdir(parents=True, exist_ok=True)
        self.flush()
        return {
            "repository": str(self.location.workdir or self.location.git_dir),
            "state_dir": str(self.location.state_dir),
            "branch": self.branch,
            "memory_ref": layout.branch_ref(self.branch),
            "backend": self.backend.name,
        }

    # writing --------------------------------------------------------------------
    def append(
        self,
        event_type: str,
        body: dict[str, Any],
        *,
        session: str | None = None,
        agent: str | None = None,
        capsule: str | None = None,
        branch: Any = _UNSET,
    ) -> Event:
        """Validate, scrub, seal and durably commit one event."""
        return self.append_many([Draft(event_type, body, session, agent, capsule, branch)])[0]

    def append_many(self, drafts: Sequence[Draft]) -> list[Event]:
        """Commit several events atomically (one commit per memory ref touched)."""
        from gitmem.records.types import BODY_TYPES

        checked = []
        for draft in drafts:
            if draft.type not in BODY_TYPES:
                raise UsageError(
                    f"unknown event type {draft.type!r}", f"use one of: {', '.join(BODY_TYPES)}"
                )
            checked.append(
                Draft(
                    draft.type,
                    _validated(draft.type, draft.body),
                    draft.session,
                    draft.agent,
                    draft.capsule,
                    draft.branch,
                    draft.time,
                )
            )
        sealed = [Sealed(env, body) for env, body in self.sealer.seal(checked)]
        commits = self.ledger.append(sealed)
        return [Event(s.envelope, s.body, s.ref, commits[s.ref]) for s in sealed]

    def flush(self) -> FlushResult:
        """Commit events waiting in the capture spool."""
        return self.ledger.flush_spool()

    # typed helpers ----------------------------------------------------------------
    def note(
        self, text: str, *, tags: Sequence[str] = (), paths: Sequence[str] = (), **scope: Any
    ) -> Event:
        return self.append("note", _compact(text=text, tags=list(tags), paths=list(paths)), **scope)

    def decide(
        self,
        key: str,
        value: str,
        *,
        reason: str = "",
        scope: str = "",
        paths: Sequence[str] = (),
        tags: Sequence[str] = (),
        **kw: Any,
    ) -> Event:
        """Record a decision; it supersedes the active decision on the same key."""
        previous = active_decision(self.events(EventFilter(types=["decision"])), key)
        body = _compact(
            key=key, value=value, reason=reason, scope=scope, paths=list(paths), tags=list(tags)
        )
        if previous is not None:
            body["supersedes"] = previous.event.id
        return self.append("decision", body, **kw)

    def ratify(self, target: str, *, note: str = "", **kw: Any) -> Event:
        """Make a decision binding."""
        decision = self.get(target)
        if decision.type != "decision":
            raise UsageError(
                f"{decision.id[:12]} is a {decision.type}, not a decision", "ratify a decision id"
            )
        return self.append("ratify", _compact(target=decision.id, note=note), **kw)

    def checkpoint(
        self,
        *,
        next: str = "",
        summary: str = "",
        hypotheses: Sequence[str] = (),
        rejected: Sequence[tuple[str, str]] = (),
        open_questions: Sequence[str] = (),
        paths: Sequence[str] = (),
        **kw: Any,
    ) -> Event:
        body = _compact(
            next=next,
            summary=summary,
            hypotheses=list(hypotheses),
            rejected=[_compact(idea=i, reason=r) for i, r in rejected],
            open_questions=list(open_questions),
            paths=list(paths),
        )
        return self.append("checkpoint", body, **kw)

    def learn(
        self,
        kind: str,
        text: str,
        *,
        topic: str = "",
        paths: Sequence[str] = (),
        tags: Sequence[str] = (),
        **kw: Any,
    ) -> Event:
        """Record a learning, pattern or mistake."""
        if kind not in KNOWLEDGE_TYPES:
            raise UsageError(f"unknown kind {kind!r}", f"use one of: {', '.join(KNOWLEDGE_TYPES)}")
        return self.append(
            kind, _compact(text=text, topic=topic, paths=list(paths), tags=list(tags)), **kw
        )

    def open_capsule(
        self,
        kind: str,
        intent: str = "",
        *,
        parent: str | None = None,
        scope_ids: dict[str, str] | None = None,
        **kw: Any,
    ) -> Event:
        """Open a capsule; its id is the returned event's id."""
        body = _compact(kind=kind, intent=intent, parent=parent, scope_ids=scope_ids or {})
        return self.append("capsule_open", body, **kw)

    def close_capsule(self, capsule: str, summary: str = "", **kw: Any) -> Event:
        opened = self.get(capsule)
        if opened.type != "capsule_open":
            raise UsageError(
                f"{opened.id[:12]} is not a capsule", "pass the id of a capsule_open event"
            )
        for info in self.capsules():
            if info.id == opened.id and not info.is_open:
                raise UsageError(f"capsule {opened.id[:12]} is already closed")
        return self.append(
            "capsule_close", _compact(capsule=opened.id, summary=summary), capsule=opened.id, **kw
        )

    def pin(self, target: str, *, reason: str = "", expires: int | None = None, **kw: Any) -> Event:
        """Pin an event, or a capsule's summary with ``summary:<capsule id>``."""
        resolved = self._pin_target(target)
        return self.append("pin", _compact(target=resolved, reason=reason, expires=expires), **kw)

    def unpin(self, target: str, **kw: Any) -> Event:
        return self.append("unpin", {"target": self._pin_target(target)}, **kw)

    def _pin_target(self, target: str) -> str:
        if target.startswith("summary:"):
            return "summary:" + self.get(target[len("summary:") :]).id
        return self.get(target).id

    def link_commit(
        self, sha: str, *, branch: str = "", session: str = "", message: str = "", **kw: Any
    ) -> Event:
        """Record that code commit ``sha`` belongs to this memory (by SHA string only)."""
        return self.append(
            "commit_link", _compact(sha=sha, branch=branch, session=session, message=message), **kw
        )

    # reading ----------------------------------------------------------------------
    def _load(self) -> None:
        self.flush()
        tips = self.ledger.memory_refs()
        payloads = self.backend.read_ref(layout.PAYLOAD_REF)
        key: tuple[tuple[str, str | None], ...] = (
            *sorted(tips.items()),
            (layout.PAYLOAD_REF, payloads),
        )
        if key == self._cache_key:
            return
        self._per_ref = {ref: list(self.ledger.envelopes([ref])) for ref in tips}
        unique: dict[str, Located] = {}
        for located in (loc for locs in self._per_ref.values() for loc in locs):
            unique.setdefault(located.envelope["id"], located)
        tree = self.ledger.payload_tree()
        bodies = {eid: self.ledger.body(tree, eid) for eid in unique}
        redacted = {
            str(body.get("target"))
            for eid, body in bodies.items()
            if body is not None and unique[eid].envelope.get("type") == "redaction"
        }
        self._events = {
            eid: Event(
                loc.envelope,
                None if eid in redacted else bodies[eid],
                loc.ref,
                loc.commit,
                eid in redacted,
            )
            for eid, loc in unique.items()
        }
        self._cache_key = key

    def events(
        self,
        where: EventFilter | None = None,
        *,
        branch: Any = _UNSET,
        all_branches: bool = False,
        limit: int | None = None,
    ) -> list[Event]:
        """Events in (time, id) order on the current branch (or ``branch``, or all)."""
        self._load()
        if all_branches:
            pool: Iterable[Event] = self._events.values()
        else:
            ref = layout.branch_ref(self.branch if branch is _UNSET else branch)
            pool = (self._events[loc.envelope["id"]] for loc in self._per_ref.get(ref, []))
        chosen = sorted(
            (e for e in pool if where is None or where.matches(e)), key=lambda e: e.order_key
        )
        return chosen[-limit:] if limit else chosen

    def get(self, event_id: str) -> Event:
        """An event by id or unique id prefix (at least 4 hex characters), on any branch."""
        prefix = event_id.strip().lower()
        if len(prefix) < MIN_PREFIX or any(c not in "0123456789abcdef" for c in prefix):
            raise UsageError(
                f"{event_id!r} is not an event id",
                f"give at least {MIN_PREFIX} hex characters of an id",
            )
        self._load()
        if prefix in self._events:
            return self._events[prefix]
        found = sorted(eid for eid in self._events if eid.startswith(prefix))
        if not found:
            raise NotFoundError(
                f"no event with id {event_id}", "list ids with 'git edda log --all-branches'"
            )
        if len(found) > 1:
            raise AmbiguousIdError(
                f"id prefix {event_id} matches {len(found)} events: {', '.join(f[:12] for f in found[:5])}",
                "give more characters of the id",
            )
        return self._events[found[0]]

    def decisions(self, *, include_superseded: bool = False, **kw: Any) -> list[DecisionState]:
        states = decision_states(self.events(EventFilter(types=["decision", "ratify"]), **kw))
        return states if include_superseded else [s for s in states if s.active]

    def capsules(self, **kw: Any) -> list[CapsuleInfo]:
        events = self.events(**kw)
        closes: dict[str, Event] = {}
        counts: dict[str, int] = {}
        for event in events:
            if event.type == "capsule_close" and event.body is not None:
                closes.setdefault(str(event.field("capsule")), event)
            if event.capsule:
                counts[event.capsule] = counts.get(event.capsule, 0) + 1
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

    def pins(self, *, now: int, **kw: Any) -> list[PinInfo]:
        """Pins in force at ``now`` (µs): not unpinned, not expired, target not redacted."""
        self._load()
        active: dict[str, Event] = {}
        for event in self.events(EventFilter(types=["pin", "unpin"]), **kw):
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
            target_id = target.removeprefix("summary:")
            target_event = self._events.get(target_id)
            if target_event is None or target_event.redacted:
                continue
            result.append(
                PinInfo(pin, target, None if target.startswith("summary:") else target_event)
            )
        return result

    # maintenance ------------------------------------------------------------------
    def redact(self, event_id: str, reason: str, **kw: Any) -> Event:
        """Remove an event's payload for good; its envelope and provenance stay.

        The bytes stay in the local object store until :meth:`purge`.
        Redacting an already redacted event returns the earlier redaction.
        """
        if not reason.strip():
            raise UsageError("a redaction needs a reason", "pass --reason TEXT")
        with self.ledger.locked():
            target = self.get(event_id)
            if target.type == "redaction":
                raise UsageError("a redaction record cannot itself be redacted")
            if target.redacted:
                # A crash between recording a redaction and removing the
                # payload leaves the payload behind: finish the job.
                if self.ledger.stored_body(self.ledger.payload_tree(), target.id) is not None:
                    self.ledger.commit([], remove_payloads=[target.id])
                for event in self._events.values():
                    if event.type == "redaction" and event.field("target") == target.id:
                        return event
            draft = Draft("redaction", {"target": target.id, "reason": reason}, **kw)
            envelope, body = self.sealer.seal([draft])[0]
            item = Sealed(envelope, body)
            commits = self.ledger.commit([item], remove_payloads=[target.id])
        return Event(envelope, body, item.ref, commits[item.ref])

    def purge(self) -> dict[str, Any]:
        """Destroy removed payload bytes in the local object store (see gitmem.memory.purge)."""
        from gitmem.memory.purge import purge

        return purge(self)

    def verify(self) -> Any:
        """Check every digest and link; returns a :class:`~gitmem.memory.verify.Report`."""
        from gitmem.memory.verify import verify

        return verify(self)

    def status(self) -> dict[str, Any]:
        """A summary of this repository's memory."""
        self._load()
        ref = layout.branch_ref(self.branch)
        on_branch = len(self._per_ref.get(ref, []))
        last = max((e.time for e in self._events.values()), default=None)
        state = self.location.state_dir
        return {
            "repository": str(self.location.workdir or self.location.git_dir),
            "branch": self.branch,
            "memory_ref": ref,
            "backend": self.backend.name,
            "format": layout.FORMAT_VERSION,
            "events_on_branch": on_branch,
            "events_total": len(self._events),
            "redacted": sum(e.redacted for e in self._events.values()),
            "memory_refs": len(self._per_ref),
            "spool_pending": len(spool.pending(state)),
            "spool_quarantined": len(spool.quarantined(state)),
            "last_event_time": last,
        }


def _compact(**fields: Any) -> dict[str, Any]:
    """Drop empty optional fields so bodies stay minimal (defaults are not stored)."""
    return {k: v for k, v in fields.items() if v not in ("", None, [], {})}


def _validated(event_type: str, body: dict[str, Any]) -> dict[str, Any]:
    """The body in stored form; a UsageError naming the field when it is invalid."""
    import msgspec

    from gitmem.records.types import validate_body

    try:
        result = validate_body(event_type, body)
    except msgspec.ValidationError as exc:
        raise UsageError(f"invalid {event_type} event: {exc}") from None
    return result
