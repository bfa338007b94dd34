"""The typed writers every store offers: one method per event type people record.

Each builds the body (empty optional fields left out, so stored bodies stay
minimal) and hands it to :meth:`Writers.append`, which the store implements.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gitmem.errors import UsageError
from gitmem.memory.event import Event
from gitmem.memory.source import EventSource
from gitmem.memory.state import active_decision_id, capsules_in
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg
from gitmem.records.names import KNOWLEDGE_TYPES

_LOOK_UP = object()  # Writers.decide: find the decision superseded


class Writers(EventSource):
    """Mixin: typed writers over ``append`` (and ``get``/``events`` for lookups)."""

    def append(
        self,
        event_type: str,
        body: dict[str, Any],
        *,
        session: str | None = None,
        agent: str | None = None,
        capsule: str | None = None,
        branch: BranchArg = CURRENT_BRANCH,
    ) -> Event:
        """Validate, scrub, seal and durably commit one event (the store's job)."""
        raise NotImplementedError

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
        supersedes: str | object | None = _LOOK_UP,
        **kw: Any,
    ) -> Event:
        """Record a decision; it supersedes the active decision on the same key.

        ``supersedes`` is that decision's id (None: there is none) when the
        caller has already looked it up, e.g. through the index; otherwise it
        is looked up here, which reads every event of the branch."""
        if supersedes is _LOOK_UP:
            supersedes = active_decision_id(self, key)
        body = _compact(
            key=key, value=value, reason=reason, scope=scope, paths=list(paths), tags=list(tags)
        )
        if supersedes is not None:
            body["supersedes"] = str(supersedes)
        return self.append("decision", body, **kw)

    def ratify(self, target: str | Event, *, note: str = "", **kw: Any) -> Event:
        """Make a decision binding: ``target`` is its id (or a unique prefix),
        or the event itself when the caller already looked it up (e.g.
        through the index; resolving an id here reads every event)."""
        decision = target if isinstance(target, Event) else self.get(target)
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

    def close_capsule(
        self, capsule: str | Event, summary: str = "", *, closed: bool | None = None, **kw: Any
    ) -> Event:
        """Close a capsule (its id, or its ``capsule_open`` event).

        ``closed`` says whether the current branch already closed it, when the
        caller has looked that up (e.g. :func:`capsules_in` over the index);
        otherwise it is looked up here, which reads every event."""
        opened = capsule if isinstance(capsule, Event) else self.get(capsule)
        if opened.type != "capsule_open":
            raise UsageError(
                f"{opened.id[:12]} is not a capsule", "pass the id of a capsule_open event"
            )
        if closed is None:
            closed = any(i.id == opened.id and not i.is_open for i in capsules_in(self))
        if closed:
            raise UsageError(f"capsule {opened.id[:12]} is already closed")
        return self.append(
            "capsule_close", _compact(capsule=opened.id, summary=summary), capsule=opened.id, **kw
        )

    def pin(
        self,
        target: str | Event,
        *,
        reason: str = "",
        expires: int | None = None,
        summary: bool = False,
        **kw: Any,
    ) -> Event:
        """Pin an event, or a capsule's summary with ``summary:<capsule id>``.

        ``target`` may also be the event itself, already looked up (then
        ``summary`` says whether its summary is pinned)."""
        resolved = self._pin_target(target, summary)
        return self.append("pin", _compact(target=resolved, reason=reason, expires=expires), **kw)

    def unpin(self, target: str | Event, *, summary: bool = False, **kw: Any) -> Event:
        """Remove a pin (``target`` as for :meth:`pin`)."""
        return self.append("unpin", {"target": self._pin_target(target, summary)}, **kw)

    def _pin_target(self, target: str | Event, summary: bool) -> str:
        if isinstance(target, Event):
            return ("summary:" if summary else "") + target.id
        if target.startswith("summary:"):
            return "summary:" + self.get(target[len("summary:") :]).id
        return ("summary:" if summary else "") + self.get(target).id

    def link_commit(
        self, sha: str, *, branch: str = "", session: str = "", message: str = "", **kw: Any
    ) -> Event:
        """Record that code commit ``sha`` belongs to this memory (by SHA string only)."""
        return self.append(
            "commit_link", _compact(sha=sha, branch=branch, session=session, message=message), **kw
        )


def _compact(**fields: Any) -> dict[str, Any]:
    """Drop empty optional fields so bodies stay minimal (defaults are not stored)."""
    return {k: v for k, v in fields.items() if v not in ("", None, [], {})}
