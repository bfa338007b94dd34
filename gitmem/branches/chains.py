"""Branch operations on memory chains: fork, merge, what git hooks recorded,
and the memory of branches whose code was merged.

They work on any :class:`ChainStore` (the store,
:class:`gitmem.memory.api.Memory`, is one), so this layer sits below the
store: every append may have to start a new branch's chain where its fork
says, and apply the forks and merges hooks recorded first.
"""

from __future__ import annotations

import json
import os
import weakref
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from gitmem.branches.store import ChainStore
from gitmem.errors import NotFoundError, UsageError
from gitmem.records import layout
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg, CurrentBranch
from gitmem.storage.files import write_atomic
from gitmem.storage.objects import ObjectBatch

# Stores applying intents right now: reading memory while applying one flushes,
# which would apply the same intents again.
_APPLYING: weakref.WeakSet[ChainStore] = weakref.WeakSet()

# Events a git hook could not seal because the clock lock did not come in
# time (gitmem.githooks.run._spool): only the kinds hooks record.
DEFERRED_TYPES = ("commit_link", "commit_rewrite")


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


def chain_start(
    store: ChainStore,
    batch: ObjectBatch,
    ref: str,
    hint: str | None = None,
    code: str | None = None,
) -> str | None:
    """The parent commit for memory ref ``ref``'s chain, which does not exist
    yet: a fork commit recording where it forked, or None for a new root."""
    from gitmem.storage import heads

    branch = layout.branch_of_ref(ref)
    if branch is None:
        return None
    tips = store.ledger.memory_refs()
    plan = store.plan(branch, hint, code, tips)
    source_tip = tips.get(layout.branch_ref(plan.source)) if plan.source else None
    if plan.kind == "rename":
        # The old chain continues; a fork commit under the new name carries
        # the old one's fork record, which merge detection needs.
        assert plan.source is not None and source_tip is not None
        origin = heads.find_fork(store.backend, source_tip, plan.source)
        return heads.fork_commit(
            store.backend,
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
        store.backend,
        batch,
        branch,
        source=plan.source,
        source_tip=source_tip,
        code=plan.code,
    )


def fork(
    store: ChainStore, branch: str, *, hint: str | None = None, code: str | None = None
) -> str | None:
    """Start ``branch``'s memory now (what post-checkout does for a new
    branch); returns its tip, or None when it starts empty. A branch that
    already has memory is left alone."""
    from gitmem.storage.backends.base import transact
    from gitmem.storage.objects import ObjectBatch

    ref = layout.branch_ref(branch)
    with store.ledger.locked():

        def build(current: Any) -> dict[str, str | None]:
            if current[ref] is not None:
                return {ref: current[ref]}
            batch = ObjectBatch()
            tip = chain_start(store, batch, ref, hint, code)
            store.ledger.write_objects(batch)
            return {ref: tip}

        existing = store.backend.read_ref(ref)
        if existing is not None:
            return existing
        return transact(store.backend, [ref], build)[ref]


def merge(store: ChainStore, source: str, into: BranchArg = CURRENT_BRANCH) -> MergeResult:
    """Merge ``source``'s memory into ``into`` (default: the current branch).

    For squash and rebase merges, which git cannot tell apart from new
    work. The merge commit is canonical (spec/sync.md): merging the same
    memory anywhere gives the same commit.
    """
    target = store.branch if isinstance(into, CurrentBranch) else into
    if not target:
        raise UsageError(
            "HEAD is detached: there is no branch to merge memory into",
            "check out the branch, or pass --into BRANCH",
        )
    if source == target:
        raise UsageError(f"cannot merge {source!r} into itself")
    with store.ledger.locked():
        store.flush()
        tips = store.ledger.memory_refs()
        source_tip = tips.get(layout.branch_ref(source))
        if source_tip is None:
            raise NotFoundError(
                f"branch {source!r} has no memory",
                "list memory branches with 'git edda branches'",
            )
        return _join(store, source, target, source_tip)


def _join(store: ChainStore, source: str, target: str, source_tip: str) -> MergeResult:
    ref = layout.branch_ref(target)
    before, after = store.ledger.join(ref, [source_tip])
    if before == after:
        outcome = "up-to-date"
    elif before is None:
        outcome = "created"
    elif after == source_tip:
        outcome = "fast-forward"
    else:
        outcome = "merged"
    gained = store.ledger.count_events([after], [before] if before else []) if after else 0
    return MergeResult(source, target, outcome, before, after, gained if before != after else 0)


def apply_intents(store: ChainStore) -> list[MergeResult]:
    """Act on what git hooks recorded: fork new branches, merge merged ones."""
    from gitmem.branches import intents

    if store in _APPLYING or not intents.has_pending(store.location.state_path):
        return []  # reading memory while applying an intent flushes, which lands here again
    results: list[MergeResult] = []
    with store.ledger.locked():
        _APPLYING.add(store)
        try:
            for path, intent in intents.pending_intents(store.location.state_path):
                if intent is not None:
                    results.extend(_apply_intent(store, intent))
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
        finally:
            _APPLYING.discard(store)
    return results


def _apply_intent(store: ChainStore, intent: dict[str, Any]) -> list[MergeResult]:
    from gitmem.branches.detect import merged_into

    if intent.get("kind") == "event":
        _apply_event_intent(store, intent)
        return []
    branch = intent.get("branch")
    if not isinstance(branch, str) or not branch:
        return []
    code = intent.get("code") if isinstance(intent.get("code"), str) else None
    if intent.get("kind") == "fork":
        hint = intent.get("from") if isinstance(intent.get("from"), str) else None
        fork(store, branch, hint=hint, code=code)
        return []
    if intent.get("kind") != "merge":
        return []
    head = intent.get("head") if isinstance(intent.get("head"), str) else None
    orig = intent.get("orig") if isinstance(intent.get("orig"), str) else None
    tips = store.ledger.memory_refs()
    results = []
    for source in merged_into(store, branch, target_code=head, before=orig):
        results.append(_join(store, source, branch, tips[layout.branch_ref(source)]))
    return results


def _apply_event_intent(store: ChainStore, intent: dict[str, Any]) -> None:
    """Record an event a git hook deferred (sealed now, with the clock now).
    A malformed intent is dropped: nothing acknowledged it."""
    event_type, body = intent.get("type"), intent.get("body")
    if event_type not in DEFERRED_TYPES or not isinstance(body, dict):
        return
    scope = {k: intent.get(k) for k in ("session", "agent", "capsule", "branch")}
    if not all(v is None or isinstance(v, str) for v in scope.values()):
        return
    try:
        store.append(str(event_type), body, **scope)
    except UsageError:
        return  # the sealer refuses it (a field no longer valid): drop it


def merge_code_merges(store: ChainStore) -> list[MergeResult]:
    """Merge the memory of every branch whose code has been merged into the
    current branch, the trunk or a branch with memory (``git edda pull``)."""
    from gitmem.branches.detect import code_merges
    from gitmem.branches.gitinfo import local_branches

    with store.ledger.locked():
        store.flush()
        local = local_branches(store.backend)
        targets = {
            name for name in (store.branch, store.trunk) if name is not None and name in local
        }
        for ref in store.ledger.memory_refs():
            name = layout.branch_of_ref(ref)
            if name is not None and name in local:
                targets.add(name)
        inputs = _detection_inputs(store, local, sorted(targets))
        if inputs == _read_detection(store):
            return []  # nothing it depends on moved since it last found nothing to merge
        results = []
        for source, target in code_merges(store, sorted(targets)):
            tip = store.ledger.memory_refs()[layout.branch_ref(source)]
            result = _join(store, source, target, tip)
            if result.outcome != "up-to-date":
                results.append(result)
        if not results:
            _write_detection(store, inputs)
        return results


DETECTION_RECORD = "code-merges.json"


def _detection_inputs(
    store: ChainStore, local: dict[str, str], targets: list[str]
) -> dict[str, Any]:
    """Everything the code-merge detection of a pull reads: memory tips (and
    through them fork records and linked commits), code tips (local and
    remote-tracking branches), the trunk and the targets. Commits never
    change, so the same inputs find the same merges."""
    from gitmem.branches.gitinfo import REMOTES

    return {
        "version": 1,
        "memory": store.ledger.memory_refs(),
        "heads": local,
        "remotes": store.backend.list_refs(REMOTES),
        "trunk": store.trunk,
        "targets": targets,
    }


def _read_detection(store: ChainStore) -> Any:
    try:
        with open(store.location.state_dir / DETECTION_RECORD, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _write_detection(store: ChainStore, inputs: dict[str, Any]) -> None:
    """Remember inputs that found nothing to merge (a cache: losing it costs
    one detection)."""
    try:
        write_atomic(
            str(store.location.state_dir / DETECTION_RECORD),
            json.dumps(inputs, sort_keys=True).encode(),
            fsync=False,
        )
    except OSError:
        pass


def branches(store: ChainStore, sizes: Callable[[str], int] | None = None) -> list[BranchInfo]:
    """Every memory branch with its size, fork point and git status.

    ``sizes`` gives a chain's number of events (e.g.
    :meth:`IndexView.chain_size <gitmem.index.view.IndexView.chain_size>`);
    without it every event is read to count them."""
    from gitmem.branches.detect import fork_points
    from gitmem.branches.gitinfo import local_branches

    if sizes is None:
        sizes = store.chain_size
    local = local_branches(store.backend)
    current, trunk = store.branch, store.trunk
    chains = sorted(store.ledger.memory_refs().items())
    named = [(name, tip) for ref, tip in chains if (name := layout.branch_of_ref(ref))]
    forks = fork_points(store, named)
    out = []
    for ref, tip in chains:
        name = layout.branch_of_ref(ref)
        fork = forks.get(name) if name else None
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
