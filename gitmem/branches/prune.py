"""Pruning the memory of deleted branches: ``git edda branches --prune``.

Deleting a git branch deletes no memory (spec/sync.md §3), so renamed
branches, removed worktrees' branches and squash-merged branches leave
their chains behind. Pruning removes them, but only when nothing is lost
(spec/sync.md §3, "Pruning"):

* a chain is a *candidate* when its branch is neither the trunk nor the
  current branch and exists neither locally nor as a remote-tracking branch
  (a teammate's branch still on the remote is not deleted); the detached
  chain is never pruned;
* a candidate goes when every event it holds is also held by a chain that
  stays (it was merged, or renamed: fork and merge commits carry no events,
  so a branch that never had memory of its own goes too);
* the others stay unless ``force``, which drops their own events; a chain
  holding the only copy of a redaction of an event that is not dropped with
  it stays even then: without the redaction the payload would be merged back
  from any clone that still has it;
* everything happens under the writer lock, and each ref is deleted with a
  compare-and-swap on the tip the decision was made on;
* with ``force``, the payloads of the events dropped leave the payload store
  like redacted ones (their blob ids go to the purge list, so ``git edda gc``
  destroys the bytes);
* the remote is left alone. The pruned tips are recorded in
  ``<common dir>/edda/pruned`` so that a pull does not bring back a chain the
  remote still has when it holds nothing this clone lacks
  (:func:`skip_on_pull`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from gitmem.branches.store import ChainStore
from gitmem.records import layout
from gitmem.storage.backends.base import Backend
from gitmem.storage.ledger import Ledger
from gitmem.storage.payloads import Roots

PRUNED_FILE = "pruned"

PRUNED = "pruned"
WOULD_PRUNE = "would prune"
KEPT = "kept"


@dataclass(frozen=True)
class PruneEntry:
    """What pruning did (or, in a dry run, would do) to one memory branch."""

    name: str | None  # None: the detached-HEAD chain
    ref: str
    tip: str
    action: str  # "pruned", "would prune" or "kept"
    reason: str
    lost: int  # events no chain that stays holds: dropped (with force) or the reason to stay

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def events_between(
    ledger: Ledger, include: Sequence[str], exclude: Sequence[str]
) -> Iterator[dict[str, Any]]:
    """Envelopes of the events that commits reachable from ``include`` and not
    from ``exclude`` add (each commit once, in no particular order)."""
    backend = ledger.backend
    for oid in backend.commits_between(include, exclude):
        info = backend.read_commit(oid)
        for _, envelope in ledger.commit_envelopes(oid, info):
            if isinstance(envelope, dict):
                yield envelope


def redacts_outside(
    ledger: Ledger, envelopes: Iterable[dict[str, Any]], leaving: set[str] | frozenset[str]
) -> bool:
    """Whether ``envelopes`` hold a redaction of an event that is not in
    ``leaving`` (or of one it cannot name: a redaction without its body).

    Such a redaction must stay where that event is, or the payload it removed
    comes back from any store that still has it."""
    tree: Roots | None = None
    loaded = False
    for envelope in envelopes:
        if envelope.get("type") != "redaction":
            continue
        if not loaded:
            tree, loaded = ledger.payload_roots(), True
        body = ledger.body(tree, envelope["id"], time=envelope.get("time")) if tree else None
        target = body.get("target") if body else None
        if not isinstance(target, str) or target not in leaving:
            return True
    return False


def prune(store: ChainStore, *, force: bool = False, dry_run: bool = False) -> list[PruneEntry]:
    """Remove the memory of deleted branches that other memory branches
    contain (all of it with ``force``); returns one entry per memory branch,
    what happened to it and why. ``dry_run`` changes nothing."""
    ledger = store.ledger
    with ledger.locked():
        store.flush()
        tips = ledger.memory_refs()
        entries = _decide(store, tips, force=force)
        doomed = {e.ref: e.tip for e in entries if e.action == PRUNED}
        if dry_run or not doomed:
            return [_as_dry(e) if dry_run else e for e in entries]
        gone = _delete(store.backend, doomed)
        if force:
            remaining = [tip for ref, tip in ledger.memory_refs().items() if ref not in gone]
            dropped = sorted(
                {
                    e["id"]
                    for e in events_between(ledger, list(gone.values()), remaining)
                    if isinstance(e.get("id"), str)
                }
            )
            if dropped:
                # After the refs: a crash in between leaves payloads no event
                # claims (harmless), never an event without its payload.
                ledger.commit([], remove_payloads=dropped)
        record_pruned(store.location.state_dir, gone, ledger.memory_refs(), fsync=ledger.fsync)
        return [e if e.action != PRUNED or e.ref in gone else _moved(e) for e in entries]


def _as_dry(entry: PruneEntry) -> PruneEntry:
    if entry.action != PRUNED:
        return entry
    return PruneEntry(entry.name, entry.ref, entry.tip, WOULD_PRUNE, entry.reason, entry.lost)


def _moved(entry: PruneEntry) -> PruneEntry:
    return PruneEntry(
        entry.name, entry.ref, entry.tip, KEPT, "it moved while pruning: run prune again", 0
    )


def _delete(backend: Backend, doomed: Mapping[str, str]) -> dict[str, str]:
    """Delete each ref still at the tip it was judged on; returns those deleted."""
    from gitmem.storage.backends.base import transact

    gone: dict[str, str] = {}

    def build(current: Mapping[str, str | None]) -> dict[str, str | None]:
        gone.clear()
        new: dict[str, str | None] = {}
        for ref, tip in doomed.items():
            if current[ref] == tip:
                new[ref] = None
                gone[ref] = tip
            else:
                new[ref] = current[ref]
        return new

    transact(backend, list(doomed), build)
    return gone


def _decide(store: ChainStore, tips: Mapping[str, str], *, force: bool) -> list[PruneEntry]:
    from gitmem.branches.gitinfo import local_branches, remote_branches

    ledger = store.ledger
    local = local_branches(store.backend)
    remote = remote_branches(store.backend)
    current, trunk = store.branch, store.trunk
    decided: dict[str, PruneEntry] = {}

    def decide(ref: str, action: str, reason: str, lost: int = 0) -> None:
        decided[ref] = PruneEntry(layout.branch_of_ref(ref), ref, tips[ref], action, reason, lost)

    undecided: list[str] = []
    for ref in sorted(tips):
        name = layout.branch_of_ref(ref)
        if name is None:
            decide(ref, KEPT, "the detached HEAD chain")
        elif name == trunk:
            decide(ref, KEPT, "the trunk")
        elif name == current:
            decide(ref, KEPT, "the current branch")
        elif name in local:
            decide(ref, KEPT, "its git branch exists")
        elif name in remote:
            decide(ref, KEPT, f"its code is still on {remote[name][0]}")
        else:
            undecided.append(ref)
    keep = [ref for ref in tips if ref not in undecided]

    # Holders named in reasons: the trunk first, then the current branch.
    def rank(ref: str) -> tuple[bool, bool, str]:
        name = layout.branch_of_ref(ref)
        return (name != trunk, name != current, ref)

    while undecided:
        keep_tips = [tips[k] for k in keep]
        contained = [r for r in undecided if ledger.count_events([tips[r]], keep_tips) == 0]
        if contained:
            for ref in contained:
                holder = next(
                    (
                        k
                        for k in sorted(keep, key=rank)
                        if ledger.count_events([tips[ref]], [tips[k]]) == 0
                    ),
                    None,
                )
                where = _label(holder) if holder else "memory branches that stay"
                decide(ref, PRUNED, f"every event it holds is also in {where}")
                undecided.remove(ref)
            continue
        # Every chain left has events the chains that stay lack.
        if force:
            own = {r: list(events_between(ledger, [tips[r]], keep_tips)) for r in undecided}
            dropping = {e["id"] for found in own.values() for e in found if "id" in e}
            redacting = [r for r in undecided if redacts_outside(ledger, own[r], dropping)]
            for ref in redacting:
                decide(
                    ref,
                    KEPT,
                    "it holds a redaction of an event other branches hold: merge it first "
                    f"(git edda merge {_label(ref)})",
                    ledger.count_events([tips[ref]], keep_tips),
                )
                undecided.remove(ref)
                keep.append(ref)
            if redacting:
                continue
            for ref in undecided:
                lost = ledger.count_events([tips[ref]], keep_tips)
                decide(
                    ref,
                    PRUNED,
                    f"--force: {lost} event{'' if lost == 1 else 's'} found in no branch that stays",
                    lost,
                )
            break
        # Keep those holding events no other chain has; when every one shares
        # its events with another (identical chains), keep the first.
        unique = [
            r
            for r in undecided
            if ledger.count_events([tips[r]], [tips[o] for o in [*keep, *undecided] if o != r])
        ]
        for ref in unique or undecided[:1]:
            lost = ledger.count_events([tips[ref]], keep_tips)
            decide(
                ref,
                KEPT,
                f"not merged: {lost} event{'' if lost == 1 else 's'} only here; merge them "
                f"(git edda merge {_label(ref)}) or use --force",
                lost,
            )
            undecided.remove(ref)
            keep.append(ref)
    return [decided[ref] for ref in sorted(decided)]


def _label(ref: str) -> str:
    name = layout.branch_of_ref(ref)
    return name if name is not None else "the detached HEAD chain"


# The record of pruned tips ---------------------------------------------------------------
def read_pruned(state_dir: Path) -> dict[str, str]:
    """Memory ref -> the tip it had when it was pruned here (an unreadable
    record reads as empty: it only saves a pull from bringing back what was
    pruned, which a second prune would remove again)."""
    try:
        data = json.loads((state_dir / PRUNED_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        ref: tip
        for ref, tip in data.items()
        if isinstance(ref, str) and layout.is_chain_ref(ref) and isinstance(tip, str)
    }


def write_pruned(state_dir: Path, pruned: Mapping[str, str], *, fsync: bool = True) -> None:
    """Replace the record (callers hold the writer lock)."""
    from gitmem.storage import files

    path = state_dir / PRUNED_FILE
    if not pruned:
        path.unlink(missing_ok=True)
        return
    data = json.dumps(dict(sorted(pruned.items())), indent=0).encode("utf-8")
    files.write_atomic(str(path), data, fsync=fsync)


def record_pruned(
    state_dir: Path, gone: Mapping[str, str], live: Iterable[str], *, fsync: bool = True
) -> None:
    """Add the refs just pruned to the record, and drop the ones that have a
    chain again (``live``): their branch was re-created."""
    alive = set(live)
    kept = {ref: tip for ref, tip in read_pruned(state_dir).items() if ref not in alive}
    write_pruned(state_dir, {**kept, **gone}, fsync=fsync)


def skip_on_pull(
    ledger: Ledger, pruned: Mapping[str, str], ref: str, tip: str, local: Mapping[str, str]
) -> bool:
    """Whether a pull leaves out the remote's chain ``ref`` at ``tip``: it was
    pruned here, has no local chain again, and brings no event this clone
    lacks (it is the pruned tip, or all its events are in local chains)."""
    if ref not in pruned or ref in local:
        return False
    was = pruned[ref]
    if tip == was:
        return True
    backend = ledger.backend
    if backend.has_object(was) and backend.is_ancestor(tip, was):
        return True  # the remote is behind what was pruned here
    return ledger.count_events([tip], list(local.values())) == 0
