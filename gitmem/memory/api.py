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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from gitmem.capture.sealer import Draft, Sealer
from gitmem.errors import AmbiguousIdError, NotFoundError, UsageError
from gitmem.memory.decisions import DecisionState, decision_states
from gitmem.memory.event import Event
from gitmem.memory.follow import TRUNK_TYPES, follow_mode, id_prefix
from gitmem.memory.query import EventFilter
from gitmem.memory.state import CapsuleInfo, PinInfo, active_decision_id, capsules_in, pins_in_force
from gitmem.records import layout
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg, CurrentBranch
from gitmem.records.names import KNOWLEDGE_TYPES
from gitmem.storage import spool
from gitmem.storage.backends import open_backend
from gitmem.storage.gitconfig import Config, get_bool, read_config
from gitmem.storage.ledger import FlushResult, Ledger, Located, Sealed
from gitmem.storage.locate import RepoLocation, locate, memory_branch

if TYPE_CHECKING:
    from gitmem.branches.fork import StartPlan
    from gitmem.memory.source import BranchKwargs
    from gitmem.memory.window import BranchWindow
    from gitmem.sync.protocol import SyncReport


_LOOK_UP = object()  # Memory.decide: find the decision superseded


@dataclass(frozen=True)
class MergeResult:
    """What ``git edda merge`` (or a hook, or a pull) did to one memory branch."""

    source: str
    into: str
    outcome: str  # "up-to-date", "fast-forward", "merged" or "created"
    before: str | None
    after: str | None
    events: int  # events the target gained

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class BranchInfo:
    """One memory branch, as ``git edda branches`` lists it."""

    name: str | None  # None: the detached-HEAD chain
    ref: str
    tip: str
    events: int
    git_branch: bool  # a local git branch of this name exists
    current: bool
    trunk: bool
    fork_source: str | None
    fork_code: str | None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


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
        self.ledger.chain_start = self._chain_start
        self._applying = False

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
        """The branch whose memory is current: the checked-out branch, the branch
        being rebased or bisected, or None on a detached HEAD."""
        return memory_branch(self.location)

    @property
    def sealer(self) -> Sealer:
        if self._sealer is None:
            self._sealer = Sealer(self.location, self.config)
        return self._sealer

    def init(
        self,
        *,
        hooks: bool = True,
        pre_push: bool = False,
        bootstrap: bool = True,
        hooks_path_ok: bool = False,
    ) -> dict[str, Any]:
        """Set gitmem up (idempotent): state dir, git hooks, and when this clone
        has no memory but its remote does, a first pull. Returns what was done.

        Refuses (UsageError, before anything is written) to install hooks into
        a ``core.hooksPath`` inside the work tree unless ``hooks_path_ok``."""
        if hooks and not hooks_path_ok:
            from gitmem.githooks.install import check_hooks_dir

            check_hooks_dir(self.location)
        self.location.state_dir.mkdir(parents=True, exist_ok=True)
        self.flush()
        info: dict[str, Any] = {
            "repository": str(self.location.workdir or self.location.git_dir),
            "state_dir": str(self.location.state_dir),
            "branch": self.branch,
            "memory_ref": layout.branch_ref(self.branch),
            "backend": self.backend.name,
            "hooks": None,
            "bootstrap": None,
        }
        if hooks:
            from gitmem.githooks.install import install

            report = install(self.location, pre_push=pre_push, shared_ok=hooks_path_ok)
            info["hooks"] = report.to_json()
        if bootstrap and not self.ledger.memory_refs():
            info["bootstrap"] = self._bootstrap()
        return info

    def _bootstrap(self) -> dict[str, Any] | None:
        """Pull from the default remote when it has memory and we have none."""
        from gitmem.errors import GitmemError
        from gitmem.sync import transport

        try:
            remote = transport.resolve_remote(self.location, self.config, None)
        except UsageError:
            return None  # no remote: nothing to bootstrap from
        try:
            if not transport.remote_has_memory(self.location, remote, prompt=False):
                return {"remote": remote.name, "pulled": False}
            report = self.sync(remote.name, push=False)
        except GitmemError as exc:
            return {"remote": remote.name, "pulled": False, "error": str(exc)}
        return {"remote": remote.name, "pulled": True, "report": report.to_json()}

    def uninstall_hooks(self) -> dict[str, Any]:
        """Remove gitmem's git hooks, restoring the ones they chained. Memory stays."""
        from gitmem.githooks.install import uninstall

        return uninstall(self.location).to_json()

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
        self.apply_intents()
        commits = self.ledger.append(sealed)
        return [Event(s.envelope, s.body, s.ref, commits[s.ref]) for s in sealed]

    def flush(self) -> FlushResult:
        """Apply what git hooks recorded (forks, merges), then commit events
        waiting in the capture spool."""
        self.apply_intents()
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
        from gitmem.storage import heads

        branch = layout.branch_of_ref(ref)
        if branch is None:
            return None
        tips = self.ledger.memory_refs()
        plan = self.plan(branch, hint, code, tips)
        source_tip = tips.get(layout.branch_ref(plan.source)) if plan.source else None
        if plan.kind == "rename":
            # The old chain continues; a fork commit under the new name carries
            # the old one's fork record, which merge detection needs.
            assert plan.source is not None and source_tip is not None
            origin = heads.find_fork(self.backend, source_tip, plan.source)
            return heads.fork_commit(
                self.backend,
                batch,
                branch,
                source=origin[0] if origin else None,
                source_tip=source_tip,
                code=origin[1] if origin else plan.code,
                renamed_from=plan.source,
            )
        if plan.kind == "root" or (source_tip is None and plan.code is None):
            return None
        return heads.fork_commit(
            self.backend,
            batch,
            branch,
            source=plan.source,
            source_tip=source_tip,
            code=plan.code,
        )

    def fork(self, branch: str, *, hint: str | None = None, code: str | None = None) -> str | None:
        """Start ``branch``'s memory now (what post-checkout does for a new
        branch); returns its tip, or None when it starts empty. A branch that
        already has memory is left alone."""
        from gitmem.storage.backends.base import transact
        from gitmem.storage.objects import ObjectBatch

        ref = layout.branch_ref(branch)
        with self.ledger.locked():

            def build(current: Any) -> dict[str, str | None]:
                if current[ref] is not None:
                    return {ref: current[ref]}
                batch = ObjectBatch()
                tip = self._chain_start(batch, ref, hint, code)
                self.ledger._write(batch)
                return {ref: tip}

            existing = self.backend.read_ref(ref)
            if existing is not None:
                return existing
            return transact(self.backend, [ref], build)[ref]

    def merge(self, source: str, into: BranchArg = CURRENT_BRANCH) -> MergeResult:
        """Merge ``source``'s memory into ``into`` (default: the current branch).

        For squash and rebase merges, which git cannot tell apart from new
        work. The merge commit is canonical (spec/sync.md): merging the same
        memory anywhere gives the same commit.
        """
        target = self.branch if isinstance(into, CurrentBranch) else into
        if not target:
            raise UsageError(
                "HEAD is detached: there is no branch to merge memory into",
                "check out the branch, or pass --into BRANCH",
            )
        if source == target:
            raise UsageError(f"cannot merge {source!r} into itself")
        with self.ledger.locked():
            self.flush()
            tips = self.ledger.memory_refs()
            source_tip = tips.get(layout.branch_ref(source))
            if source_tip is None:
                raise NotFoundError(
                    f"branch {source!r} has no memory",
                    "list memory branches with 'git edda branches'",
                )
            return self._join(source, target, source_tip)

    def _join(self, source: str, target: str, source_tip: str) -> MergeResult:
        ref = layout.branch_ref(target)
        before, after = self.ledger.join(ref, [source_tip])
        if before == after:
            outcome = "up-to-date"
        elif before is None:
            outcome = "created"
        elif after == source_tip:
            outcome = "fast-forward"
        else:
            outcome = "merged"
        gained = self.ledger.count_events([after], [before] if before else []) if after else 0
        return MergeResult(source, target, outcome, before, after, gained if before != after else 0)

    def apply_intents(self) -> list[MergeResult]:
        """Act on what git hooks recorded: fork new branches, merge merged ones."""
        from gitmem.branches import intents

        if self._applying or not intents.has_pending(self.location.state_path):
            return []  # _applying: reading memory while applying one flushes again
        results: list[MergeResult] = []
        with self.ledger.locked():
            self._applying = True
            try:
                for path, intent in intents.pending_intents(self.location.state_path):
                    if intent is not None:
                        results.extend(self._apply_intent(intent))
                    try:
                        os.unlink(path)
                    except FileNotFoundError:
                        pass
            finally:
                self._applying = False
        return results

    def _apply_intent(self, intent: dict[str, Any]) -> list[MergeResult]:
        from gitmem.branches.detect import merged_into

        if intent.get("kind") == "event":
            self._apply_event_intent(intent)
            return []
        branch = intent.get("branch")
        if not isinstance(branch, str) or not branch:
            return []
        code = intent.get("code") if isinstance(intent.get("code"), str) else None
        if intent.get("kind") == "fork":
            hint = intent.get("from") if isinstance(intent.get("from"), str) else None
            self.fork(branch, hint=hint, code=code)
            return []
        if intent.get("kind") != "merge":
            return []
        head = intent.get("head") if isinstance(intent.get("head"), str) else None
        orig = intent.get("orig") if isinstance(intent.get("orig"), str) else None
        tips = self.ledger.memory_refs()
        results = []
        for source in merged_into(self, branch, target_code=head, before=orig):
            results.append(self._join(source, branch, tips[layout.branch_ref(source)]))
        return results

    # Events a git hook could not seal because the clock lock did not come in
    # time (gitmem.githooks.run._spool): only the kinds hooks record.
    _DEFERRED_TYPES = ("commit_link", "commit_rewrite")

    def _apply_event_intent(self, intent: dict[str, Any]) -> None:
        """Record an event a git hook deferred (sealed now, with the clock now).
        A malformed intent is dropped: nothing acknowledged it."""
        event_type, body = intent.get("type"), intent.get("body")
        if event_type not in self._DEFERRED_TYPES or not isinstance(body, dict):
            return
        scope = {k: intent.get(k) for k in ("session", "agent", "capsule", "branch")}
        if not all(v is None or isinstance(v, str) for v in scope.values()):
            return
        try:
            self.append(str(event_type), body, **scope)
        except UsageError:
            return  # the sealer refuses it (a field no longer valid): drop it

    def merge_code_merges(self) -> list[MergeResult]:
        """Merge the memory of every branch whose code has been merged into the
        current branch, the trunk or a branch with memory (``git edda pull``)."""
        from gitmem.branches.detect import code_merges
        from gitmem.branches.gitinfo import local_branches

        with self.ledger.locked():
            self.flush()
            local = local_branches(self.backend)
            targets = {
                name for name in (self.branch, self.trunk) if name is not None and name in local
            }
            for ref in self.ledger.memory_refs():
                name = layout.branch_of_ref(ref)
                if name is not None and name in local:
                    targets.add(name)
            results = []
            for source, target in code_merges(self, sorted(targets)):
                tip = self.ledger.memory_refs()[layout.branch_ref(source)]
                result = self._join(source, target, tip)
                if result.outcome != "up-to-date":
                    results.append(result)
            return results

    def last_linked_commit(self, branch: str) -> str | None:
        """The newest code commit linked in ``branch``'s own memory."""
        self._load()
        newest: tuple[int, str] | None = None
        for loc in self._per_ref.get(layout.branch_ref(branch), []):
            if loc.envelope.get("type") != "commit_link":
                continue
            event = self._events[loc.envelope["id"]]
            sha = event.field("sha")
            if isinstance(sha, str) and (newest is None or event.time > newest[0]):
                newest = (event.time, self.resolve_commit(sha))
        return None if newest is None else newest[1]

    def commit_rewrites(self) -> dict[str, str]:
        """old code sha -> newest sha it was rewritten to (amend, rebase)."""
        mapping: dict[str, str] = {}
        for event in self.events(EventFilter(types=["commit_rewrite"]), all_branches=True):
            for pair in event.field("map", []) or []:
                if (
                    isinstance(pair, list)
                    and len(pair) == 2
                    and all(isinstance(p, str) for p in pair)
                ):
                    mapping[pair[0]] = pair[1]
        return mapping

    def resolve_commit(self, sha: str, rewrites: dict[str, str] | None = None) -> str:
        """Follow amend/rebase rewrites from ``sha`` to the commit that replaced it."""
        mapping = self.commit_rewrites() if rewrites is None else rewrites
        seen = {sha}
        while sha in mapping and mapping[sha] not in seen:
            sha = mapping[sha]
            seen.add(sha)
        return sha

    def branches(self, sizes: Callable[[str], int] | None = None) -> list[BranchInfo]:
        """Every memory branch with its size, fork point and git status.

        ``sizes`` gives a chain's number of events (e.g.
        :meth:`IndexView.chain_size <gitmem.index.view.IndexView.chain_size>`);
        without it every event is read to count them."""
        from gitmem.branches.gitinfo import local_branches
        from gitmem.storage import heads

        if sizes is None:
            self._load()
            sizes = self._chain_size
        local = local_branches(self.backend)
        current, trunk = self.branch, self.trunk
        out = []
        for ref, tip in sorted(self.ledger.memory_refs().items()):
            name = layout.branch_of_ref(ref)
            fork = heads.find_fork(self.backend, tip, name) if name else None
            out.append(
                BranchInfo(
                    name=name,
                    ref=ref,
                    tip=tip,
                    events=sizes(ref),
                    git_branch=name in local if name else False,
                    current=name == current,
                    trunk=name is not None and name == trunk,
                    fork_source=fork[0] if fork else None,
                    fork_code=fork[1] if fork else None,
                )
            )
        return out

    def _chain_size(self, ref: str) -> int:
        return len(self._per_ref.get(ref, []))

    # sharing ----------------------------------------------------------------------
    def sync(
        self,
        remote: str | None = None,
        *,
        pull: bool = True,
        push: bool = True,
        prompt: bool = True,
    ) -> SyncReport:
        """Fetch, merge and (with ``push``) push memory through a git remote.

        See :mod:`gitmem.sync.protocol`. ``prompt=False`` never asks for
        credentials (background runs).
        """
        from gitmem.sync.protocol import sync

        return sync(self, remote, pull=pull, push=push, prompt=prompt)

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
            closed = any(i.id == opened.id and not i.is_open for i in self.capsules())
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

    def _branch_locs(self, branch: str | None) -> list[Located]:
        """A branch's own events; a branch without memory yet shows what it
        would start from (its fork source's memory)."""
        ref = layout.branch_ref(branch)
        if ref in self._per_ref or branch is None:
            return self._per_ref.get(ref, [])
        plan = self.plan(branch)
        if plan.kind in ("rename", "fork") and plan.source:
            return self._per_ref.get(layout.branch_ref(plan.source), [])
        return []

    def _branch_pool(self, branch: str | None, trunk: str | None) -> list[Event]:
        own = [self._events[loc.envelope["id"]] for loc in self._branch_locs(branch)]
        mode = self._follow_trunk(trunk)
        trunk_name = self.trunk if mode != "none" else None
        if trunk_name is None or trunk_name == branch:
            return own
        seen = {e.id for e in own}
        extra = [
            self._events[loc.envelope["id"]]
            for loc in self._per_ref.get(layout.branch_ref(trunk_name), [])
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

    def status(self, counts: dict[str, Any] | None = None) -> dict[str, Any]:
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
        return {
            "repository": str(self.location.workdir or self.location.git_dir),
            "branch": self.branch,
            "memory_ref": ref,
            "backend": self.backend.name,
            "format": layout.FORMAT_VERSION,
            **counts,
            "spool_pending": len(spool.pending(state)),
            "spool_quarantined": len(spool.quarantined(state)),
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
