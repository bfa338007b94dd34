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
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Self

from gitmem.branches.chains import apply_intents, chain_start
from gitmem.capture.sealer import Draft, Sealer
from gitmem.errors import AmbiguousIdError, NotFoundError, UsageError
from gitmem.memory.decisions import DecisionState, decision_states
from gitmem.memory.event import Event
from gitmem.memory.follow import TRUNK_TYPES, follow_mode, id_prefix
from gitmem.memory.query import EventFilter
from gitmem.memory.state import CapsuleInfo, PinInfo, capsules_in, pins_in_force
from gitmem.memory.writers import Writers
from gitmem.records import layout
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg, CurrentBranch
from gitmem.storage import spool
from gitmem.storage.backends import open_backend
from gitmem.storage.eventchain import Located, Sealed
from gitmem.storage.gitconfig import Config, get_bool, read_config
from gitmem.storage.ledger import Ledger
from gitmem.storage.locate import RepoLocation, locate, memory_branch
from gitmem.storage.spoolflush import FlushResult

if TYPE_CHECKING:
    from gitmem.branches.fork import StartPlan
    from gitmem.memory.purge import PurgeReport
    from gitmem.memory.report import Report
    from gitmem.memory.source import BranchKwargs
    from gitmem.memory.window import BranchWindow
    from gitmem.storage.payloads import Roots


class Memory(Writers):
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
        self.ledger.chain_start = self._chain_start

    @classmethod
    def open(
        cls, path: str | os.PathLike[str] | None = None, *, backend: str | None = None
    ) -> Self:
        """Open the memory of the repository containing ``path`` (default: cwd)."""
        location = locate(path)
        return cls(location, read_config(location), backend)

    def close(self) -> None:
        self.backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # where ----------------------------------------------------------------------
    @property
    def branch(self) -> str | None:
        """The branch whose memory is current: the checked-out branch, the branch
        being rebased or bisected, or None on a detached HEAD."""
        return memory_branch(self.location)

    @property
    def sealer(self) -> Sealer:
        if self._sealer is None:
            self._sealer = Sealer(self.location, self.config)
        return self._sealer

    # writing --------------------------------------------------------------------
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
        apply_intents(self)
        commits = self.ledger.append(sealed)
        return [Event(s.envelope, s.body, s.ref, commits[s.ref]) for s in sealed]

    def flush(self) -> FlushResult:
        """Apply what git hooks recorded (forks, merges), then commit events
        waiting in the capture spool."""
        apply_intents(self)
        return self.ledger.flush_spool()

    # branches -------------------------------------------------------------------
    @property
    def trunk(self) -> str | None:
        """The repository's default branch (``edda.trunk`` overrides)."""
        from gitmem.branches.gitinfo import trunk_branch

        return trunk_branch(self.location, self.backend, self.config)

    def plan(
        self,
        branch: str,
        hint: str | None = None,
        code: str | None = None,
        tips: dict[str, str] | None = None,
    ) -> StartPlan:
        """Where ``branch``'s memory starts (or would start): a fork of another
        branch's memory, a rename, or a new root (see :mod:`gitmem.branches.fork`).
        ``tips``: the memory ref tips to plan against (default: the current ones)."""
        from gitmem.branches.fork import plan_start

        return plan_start(
            self.location,
            self.backend,
            branch,
            self.ledger.memory_refs() if tips is None else tips,
            trunk=self.trunk,
            hint=hint,
            code=code,
        )

    def _chain_start(
        self, batch: Any, ref: str, hint: str | None = None, code: str | None = None
    ) -> str | None:
        """The parent for a chain that does not exist yet (Ledger.chain_start)."""
        return chain_start(self, batch, ref, hint, code)

    def chain_size(self, ref: str) -> int:
        """Events on memory ref ``ref``'s chain (inherited ones included)."""
        self._load()
        return len(self._per_ref.get(ref, []))

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
        self._per_ref = self.ledger.chains(tips)
        unique: dict[str, Located] = {}
        for located in (loc for locs in self._per_ref.values() for loc in locs):
            unique.setdefault(located.envelope["id"], located)
        tree = self.ledger.payload_roots()
        checked = {eid: self.ledger.checked_body(tree, loc.envelope) for eid, loc in unique.items()}
        bodies = {eid: body for eid, (body, _) in checked.items()}
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
                None if eid in redacted else checked[eid][1],
            )
            for eid, loc in unique.items()
        }
        self._cache_key = key

    def events(
        self,
        where: EventFilter | None = None,
        *,
        branch: BranchArg = CURRENT_BRANCH,
        all_branches: bool = False,
        limit: int | None = None,
        trunk: str | None = None,
    ) -> list[Event]:
        """Events in (time, id) order on the current branch (or ``branch``, or all).

        A branch sees its own history, including what it inherited at its fork,
        plus what it follows from the trunk after the fork: ``trunk`` is
        ``decisions`` (decisions, ratifications, pins; the default, or
        ``edda.followTrunk``), ``all`` or ``none``.
        """
        self._load()
        if all_branches:
            pool: Iterable[Event] = self._events.values()
        else:
            pool = self._branch_pool(
                self.branch if isinstance(branch, CurrentBranch) else branch, trunk
            )
        chosen = sorted(
            (e for e in pool if where is None or where.matches(e)), key=lambda e: e.order_key
        )
        return chosen[-limit:] if limit else chosen

    def _follow_trunk(self, trunk: str | None) -> str:
        return follow_mode(self.config, trunk)

    def _own_ref(self, branch: str | None, chains: Collection[str]) -> str | None:
        """The chain (among ``chains``) whose events are a branch's own; a
        branch without memory yet shows what it would start from (its fork
        source's memory)."""
        ref = layout.branch_ref(branch)
        if ref in chains or branch is None:
            return ref
        plan = self.plan(branch)
        if plan.kind in ("rename", "fork") and plan.source:
            return layout.branch_ref(plan.source)
        return None

    def _followed(self, branch: str | None, trunk: str | None) -> tuple[str | None, str]:
        """(the trunk's chain a branch follows, None when none; the follow mode)."""
        mode = self._follow_trunk(trunk)
        trunk_name = self.trunk if mode != "none" else None
        if trunk_name is None or trunk_name == branch:
            return None, mode
        return layout.branch_ref(trunk_name), mode

    def _branch_locs(self, branch: str | None) -> list[Located]:
        """A branch's own events (see :meth:`_own_ref`)."""
        return self._per_ref.get(self._own_ref(branch, self._per_ref) or "", [])

    def _branch_pool(self, branch: str | None, trunk: str | None) -> list[Event]:
        own = [self._events[loc.envelope["id"]] for loc in self._branch_locs(branch)]
        trunk_ref, mode = self._followed(branch, trunk)
        if trunk_ref is None:
            return own
        seen = {e.id for e in own}
        extra = [
            self._events[loc.envelope["id"]]
            for loc in self._per_ref.get(trunk_ref, [])
            if loc.envelope["id"] not in seen
            and (mode == "all" or loc.envelope.get("type") in TRUNK_TYPES)
        ]
        return own + extra

    def get(self, event_id: str) -> Event:
        """An event by id or unique id prefix (at least 4 hex characters), on any branch."""
        prefix = id_prefix(event_id)
        self._load()
        if prefix in self._events:
            return self._events[prefix]
        found = [eid for eid in self._events if eid.startswith(prefix)]
        return self._events[_one(event_id, found)]

    def capsule_events(self, capsule: str) -> list[Event]:
        """The events of a recent capsule (its opening and every event that
        names it) on every branch, in (time, id) order, read from the newest
        commits back to its opening, not from the whole store (see
        :mod:`gitmem.memory.recent`)."""
        from gitmem.memory.recent import capsule_events

        self.flush()
        return capsule_events(self, capsule)

    def resolve_id(self, event_id: str) -> str:
        """The full id of the event with id (or unique id prefix) ``event_id``,
        found by reading envelopes alone (see :meth:`_located`); raises as
        :meth:`get` does."""
        self.flush()
        return str(self._located(event_id).envelope["id"])

    def located(self, event_ids: Collection[str]) -> dict[str, Located]:
        """Where each of ``event_ids`` that exists is (id -> its envelope,
        first ref and commit), found by reading envelopes alone, one at a
        time (an import asks about its bundle's events: reading every event
        with its body took minutes and gigabytes at a million events)."""
        self.flush()
        wanted = set(event_ids)
        found: dict[str, Located] = {}
        if not wanted:
            return found
        with self.backend.streaming():  # each commit and envelope read once
            for located in self.ledger.envelopes():
                eid = located.envelope["id"]
                if eid in wanted:
                    found[eid] = located
                    if len(found) == len(wanted):
                        break
        return found

    def visible(self, event_ids: Collection[str]) -> set[str]:
        """Which of ``event_ids`` the current branch's memory shows (what
        :meth:`events` gives by default), found by reading the envelopes of
        its chain and its trunk's alone."""
        self.flush()
        wanted = set(event_ids)
        tips = self.ledger.memory_refs()
        own = self._own_ref(self.branch, tips)
        trunk_ref, mode = self._followed(self.branch, None)
        shown: set[str] = set()
        with self.backend.streaming():
            if own is not None:  # (envelopes() skips a ref that has no chain)
                shown |= {
                    loc.envelope["id"]
                    for loc in self.ledger.envelopes([own])
                    if loc.envelope["id"] in wanted
                }
            if trunk_ref is not None:
                shown |= {
                    loc.envelope["id"]
                    for loc in self.ledger.envelopes([trunk_ref])
                    if loc.envelope["id"] in wanted
                    and (mode == "all" or loc.envelope.get("type") in TRUNK_TYPES)
                }
        return shown

    def _located(self, event_id: str) -> Located:
        """Where the event with id (or unique id prefix) ``event_id`` is, found
        by reading envelopes alone, one at a time: :meth:`get` reads every
        event with its body first (gigabytes at a million events). A full id
        stops the walk where it is found."""
        prefix = id_prefix(event_id)
        found: dict[str, Located] = {}
        with self.backend.streaming():  # each commit and envelope read once
            for located in self.ledger.envelopes():
                eid = located.envelope["id"]
                if eid.startswith(prefix):
                    found.setdefault(eid, located)
                    if len(eid) == len(prefix):
                        break
        return found[_one(event_id, list(found))]

    def _redaction_of(self, target: str, tree: Roots | None) -> Event | None:
        """The redaction event recorded for ``target``, if any."""
        from gitmem.storage.redactions import redaction_events

        _, events = redaction_events(self.ledger)
        for redaction in sorted(eid for eid, named in events.items() if named == target):
            located = self._located(redaction)
            body, problem = self.ledger.checked_body(tree, located.envelope)
            return Event(located.envelope, body, located.ref, located.commit, False, problem)
        return None

    def window(self, branch_kwargs: BranchKwargs) -> BranchWindow:
        """One branch's events for context packs and ``ask`` (``branch_kwargs``
        as for :meth:`events`): read whole, then selected in a
        :class:`~gitmem.memory.listwindow.ListWindow`."""
        from gitmem.memory.listwindow import ListWindow

        return ListWindow(self.events(**branch_kwargs))

    def decisions(self, *, include_superseded: bool = False, **kw: Any) -> list[DecisionState]:
        states = decision_states(self.events(EventFilter(types=["decision", "ratify"]), **kw))
        return states if include_superseded else [s for s in states if s.active]

    def capsules(self, **kw: Any) -> list[CapsuleInfo]:
        """The capsules of the current branch (``kw`` as for :meth:`events`)."""
        return capsules_in(self, **kw)

    def pins(self, *, now: int, **kw: Any) -> list[PinInfo]:
        """Pins in force at ``now`` (µs): not unpinned, not expired, target not redacted."""
        return pins_in_force(self, now=now, **kw)

    # maintenance ------------------------------------------------------------------
    def redact(self, event_id: str, reason: str, **kw: Any) -> Event:
        """Remove an event's payload for good; its envelope and provenance stay.

        The bytes stay in the local object store until :meth:`purge`.
        Redacting an already redacted event returns the earlier redaction.
        """
        if not reason.strip():
            raise UsageError("a redaction needs a reason", "pass --reason TEXT")
        with self.ledger.locked():
            self.flush()
            # Found by its envelope alone: a redaction needs no other event's body.
            target = self._located(event_id).envelope
            if target.get("type") == "redaction":
                raise UsageError("a redaction record cannot itself be redacted")
            tree = self.ledger.payload_roots()
            if target["id"] in self.ledger.redaction_targets([tree]):
                # A crash between recording a redaction and removing the
                # payload leaves the payload behind: finish the job.
                if self.ledger.locate(tree, target["id"], target.get("time")) is not None:
                    self.ledger.commit([], remove_payloads=[target["id"]])
                earlier = self._redaction_of(target["id"], self.ledger.payload_roots())
                if earlier is not None:
                    return earlier
            draft = Draft("redaction", {"target": target["id"], "reason": reason}, **kw)
            envelope, body = self.sealer.seal([draft])[0]
            item = Sealed(envelope, body)
            commits = self.ledger.commit([item], remove_payloads=[target["id"]])
        return Event(envelope, body, item.ref, commits[item.ref])

    def purge(self) -> PurgeReport:
        """Destroy removed payload bytes in the local object store (see gitmem.memory.purge)."""
        from gitmem.memory.purge import purge

        return purge(self)

    def verify(self, *, incremental: bool = False) -> Report:
        """Check every digest and link (see :mod:`gitmem.memory.verify`); with
        ``incremental``, only those new since the last clean verification."""
        from gitmem.memory.verify import verify

        return verify(self, incremental=incremental)

    def status(self, counts: Mapping[str, Any] | None = None) -> Status:
        """A summary of this repository's memory.

        ``counts`` (``events_on_branch``, ``events_total``, ``redacted``,
        ``memory_refs``, ``last_event_time``) may come from the index
        (:meth:`IndexView.counts <gitmem.index.view.IndexView.counts>`);
        without them every event is read."""
        ref = layout.branch_ref(self.branch)
        if counts is None:
            self._load()
            counts = {
                "events_on_branch": len(self._per_ref.get(ref, [])),
                "events_total": len(self._events),
                "redacted": sum(e.redacted for e in self._events.values()),
                "memory_refs": len(self._per_ref),
                "last_event_time": max((e.time for e in self._events.values()), default=None),
            }
        state = self.location.state_dir
        return Status(
            repository=str(self.location.workdir or self.location.git_dir),
            branch=self.branch,
            memory_ref=ref,
            backend=self.backend.name,
            format=layout.FORMAT_VERSION,
            events_on_branch=int(counts["events_on_branch"]),
            events_total=int(counts["events_total"]),
            redacted=int(counts["redacted"]),
            memory_refs=int(counts["memory_refs"]),
            last_event_time=counts["last_event_time"],
            spool_pending=len(spool.pending(state)),
            spool_quarantined=len(spool.quarantined(state)),
        )


@dataclass(frozen=True)
class Status:
    """What ``git edda status`` reports."""

    repository: str
    branch: str | None
    memory_ref: str
    backend: str
    format: int
    events_on_branch: int
    events_total: int
    redacted: int
    memory_refs: int
    last_event_time: int | None
    spool_pending: int
    spool_quarantined: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _validated(event_type: str, body: dict[str, Any]) -> dict[str, Any]:
    """The body in stored form; a UsageError naming the field when it is invalid."""
    import msgspec

    from gitmem.records.types import validate_body

    try:
        result = validate_body(event_type, body)
    except msgspec.ValidationError as exc:
        raise UsageError(f"invalid {event_type} event: {exc}") from None
    return result


def _one(event_id: str, found: Sequence[str]) -> str:
    """The one id among ``found`` (the ids ``event_id`` is a prefix of), or
    the error saying none or several are."""
    if not found:
        raise NotFoundError(
            f"no event with id {event_id}", "list ids with 'git edda log --all-branches'"
        )
    if len(found) > 1:
        found = sorted(found)
        raise AmbiguousIdError(
            f"id prefix {event_id} matches {len(found)} events: {', '.join(f[:12] for f in found[:5])}",
            "give more characters of the id",
        )
    return found[0]
