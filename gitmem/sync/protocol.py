"""``git edda pull | push | sync``: share memory through a git remote.

One round (spec/sync.md, "Sync protocol"):

1. flush local work (spool, hook intents);
2. fetch the remote's memory into the private mirror; repair it first when a
   shallow fetch truncated it;
3. check everything a merge would bring in, as ``verify`` would, and refuse
   the whole pull on the first problem (:mod:`gitmem.sync.incoming`);
4. under the writer lock, merge each mirrored chain into the local chain of
   the same name (canonical merges: fast-forward when possible), then merge
   the payload stores minus every redacted payload, and advance the clock;
   Chains pruned here (:mod:`gitmem.branches.prune`) that bring nothing new
   are left out;
5. with ``pull``, merge the memory of branches whose code has been merged;
6. push every local ref that ``edda.push`` selects (:mod:`gitmem.sync.selection`)
   and the remote lacks or is behind on, without force (the payload
   partitions that changed and the store commit naming them, each with a
   lease on the value just fetched, and beside each partition
   ``refs/edda/store-base/<partition>``, whose parent is the partition it
   replaces, so that git sends only what the partition adds); when the
   remote moved meanwhile, go back to 2, up to ``attempts`` times.

What a round reads grows with what is new, not with the store: the checks
read the incoming commits only, the payload stores are compared a
partition at a time, only where they differ, by git's tree diff, and the redaction record, the fork records and the last code-merge
detection are remembered in the state directory (spec/sync.md §7).
"""

from __future__ import annotations

import random
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from gitmem.branches.chains import MergeResult, merge_code_merges
from gitmem.branches.prune import events_between, read_pruned, skip_on_pull, write_pruned
from gitmem.errors import ConflictError, GitmemError
from gitmem.records import canonical, layout
from gitmem.storage import clock, redactions
from gitmem.storage.gitconfig import limits as config_limits
from gitmem.storage.locate import run_git
from gitmem.storage.lock import mirror_lock
from gitmem.storage.purgelist import add_to_purge_list
from gitmem.sync import shallow, transport
from gitmem.sync.incoming import check_fetched
from gitmem.sync.selection import push_mode, select_push

if TYPE_CHECKING:
    from gitmem.memory.api import Memory
    from gitmem.storage.payloads import Roots


@dataclass(frozen=True)
class RefMove:
    """One ref that moved: locally on pull, on the remote on push."""

    ref: str
    before: str | None
    after: str | None
    outcome: str  # created, fast-forward, merged
    events: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SyncReport:
    """What a pull, push or sync moved."""

    remote: str
    pulled: list[RefMove] = field(default_factory=list)
    pushed: list[RefMove] = field(default_factory=list)
    payloads_added: int = 0
    payloads_removed: int = 0
    payloads_pushed: bool = False
    code_merges: list[MergeResult] = field(default_factory=list)
    bootstrapped: bool = False
    shallow_repaired: bool = False
    push_mode: str | None = None  # edda.push, when pushing
    held_back: list[str] = field(default_factory=list)  # refs edda.push kept local
    skipped_pruned: list[str] = field(default_factory=list)  # pruned here: not pulled
    remote_has_memory: bool = False
    attempts: int = 0

    @property
    def changed(self) -> bool:
        return bool(
            self.pulled
            or self.pushed
            or self.payloads_added
            or self.payloads_removed
            or self.payloads_pushed
            or self.code_merges
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # nested RefMove and MergeResult dataclasses too


def sync(
    memory: Memory,
    remote: str | None = None,
    *,
    pull: bool = True,
    push: bool = True,
    attempts: int = 5,
    prompt: bool = True,
) -> SyncReport:
    """Fetch and merge the remote's memory; with ``push``, send ours back.

    Pushing always fetches and merges first (memory is never force-pushed),
    so ``push`` without ``pull`` only skips the code-merge detection.
    """
    target = transport.resolve_remote(memory.location, memory.config, remote)
    if push:
        push_mode(memory.config)  # a bad setting fails before anything moves
    report = SyncReport(target.name)
    memory.flush()
    had_memory = bool(memory.ledger.memory_refs())
    delay = 0.05
    for attempt in range(1, attempts + 1):
        report.attempts = attempt
        # From the fetch to the last mirror update: purge must not delete a
        # blob that a mirror is about to point at (see gitmem.storage.lock.mirror_lock).
        with mirror_lock(memory.location.state_dir):
            transport.fetch(memory.location, target, prompt=prompt)
            if shallow.truncated_memory(memory.location, memory.backend):
                shallow.repair(memory.location, target)
                report.shallow_repaired = True
            mirror = _mirror(memory, target)
            report.remote_has_memory = report.remote_has_memory or bool(mirror)
            redacted = _merge_mirror(memory, mirror, report)
            if pull:
                # before pushing, so the memory merges that follow code merges travel too
                report.code_merges.extend(merge_code_merges(memory))
            if not push or _push(memory, target, mirror, redacted, report, prompt=prompt):
                break
        time.sleep(delay * (0.5 + random.random()))
        delay *= 2
    else:
        raise ConflictError(
            f"memory on {target.name} kept moving during {attempts} attempts",
            "another clone is pushing right now; run the command again",
        )
    report.bootstrapped = not had_memory and bool(memory.ledger.memory_refs())
    return report


def _mirror(memory: Memory, target: transport.Remote) -> dict[str, str]:
    """The remote's refs as last fetched: ``refs/edda/…`` name -> tip."""
    prefix = target.mirror_prefix
    return {
        layout.unmirror_ref(target.key, ref): tip
        for ref, tip in memory.backend.list_refs(prefix).items()
    }


def _merge_mirror(memory: Memory, mirror: dict[str, str], report: SyncReport) -> set[str]:
    """Merge the fetched chains and payloads; returns the ids every redaction names."""
    ledger = memory.ledger
    state_dir = memory.location.state_dir
    with ledger.locked():
        memory.flush()
        pruned = read_pruned(state_dir)
        local = ledger.memory_refs()
        skipped = {
            ref
            for ref, tip in mirror.items()
            if layout.is_chain_ref(ref) and skip_on_pull(ledger, pruned, ref, tip, local)
        }
        report.skipped_pruned = sorted(skipped)
        # What was pruned here and brings nothing new is not merged, nor checked:
        # its events stay out, so its payloads are claimed by none and left out too.
        left_out = {
            e["id"]
            for e in events_between(ledger, [mirror[r] for r in skipped], list(local.values()))
            if isinstance(e.get("id"), str)
        }
        mirror = {ref: tip for ref, tip in mirror.items() if ref not in skipped}
        chains = {ref: tip for ref, tip in mirror.items() if layout.is_chain_ref(ref)}
        limits = config_limits(memory.config)
        checked = check_fetched(memory, mirror, report.remote, limits, left_out)
        remote_payload = mirror.get(layout.PAYLOAD_REF)
        for ref, tip in sorted(chains.items()):
            before, after = ledger.join(ref, [tip])
            if before == after or after is None:
                continue
            outcome = "created" if before is None else "fast-forward" if after == tip else "merged"
            events = ledger.count_events([after], [before] if before else [])
            report.pulled.append(RefMove(ref, before, after, outcome, events))
        # the checks read every incoming envelope: the redaction record need not
        redactions.advance(ledger, local, checked.redactions)
        redacted = ledger.redaction_targets(
            [
                ledger.payload_roots(),
                ledger.payload_roots(remote_payload) if remote_payload else None,
            ]
        )
        added, removed = ledger.merge_payloads(remote_payload, redacted, checked.skip_payloads)
        report.payloads_added += added
        report.payloads_removed += removed
        if remote_payload is not None and redacted:
            add_to_purge_list(
                memory.location.state_dir, _fetched_redacted_blobs(memory, remote_payload, redacted)
            )
        if checked.newest:
            clock.observe(memory.location.state_path, checked.newest, skew_us=limits.skew_us)
        if pruned:
            alive = ledger.memory_refs()
            if any(ref in alive for ref in pruned):  # re-created, or brought back with news
                write_pruned(
                    state_dir,
                    {r: t for r, t in pruned.items() if r not in alive},
                    fsync=ledger.fsync,
                )
        return redacted


def _fetched_redacted_blobs(memory: Memory, remote_payload: str, redacted: set[str]) -> list[str]:
    """Blobs of redacted payloads (and of their attachments) that the fetched
    store still holds and the local store does not use.

    merge_payloads lists what it removes from the local store, but a remote
    that has not seen the redaction yet sends the bytes again, for instance
    to a clone that already destroyed them. They are on disk now, reachable
    from the mirror only: listed, the next purge destroys them.
    """
    ledger = memory.ledger
    backend = memory.backend
    theirs = ledger.payload_roots(remote_payload)
    ours = ledger.payload_roots()
    blobs: list[str] = []
    if theirs is None:
        return blobs
    for event_id in sorted(redacted):
        for name in theirs.names():
            tree = theirs.trees[name]
            blob = backend.read_path(tree, layout.payload_path(event_id))
            if blob is None:
                continue
            blobs.append(blob)
            try:
                stored = canonical.decode(backend.read_blob(blob))
            except (GitmemError, ValueError):
                continue  # the remote's bytes, not a body: no attachments to find
            for sha in layout.attachment_refs(stored):
                oid = backend.read_path(tree, layout.attachment_path(sha))
                if oid is not None and oid not in _attachment_blobs(memory, ours, sha):
                    blobs.append(oid)
    return blobs


def _attachment_blobs(memory: Memory, roots: Roots | None, sha: str) -> set[str]:
    """The blobs store ``roots`` keeps attachment ``sha`` in (any partition)."""
    if roots is None:
        return set()
    path = layout.attachment_path(sha)
    found = (memory.backend.read_path(tree, path) for tree in roots.trees.values())
    return {oid for oid in found if oid is not None}


def _partition_base(memory: Memory, old: str | None, new: str) -> str | None:
    """The ``refs/edda/store-base/<partition>`` commit to push with partition
    commit ``new`` (see :meth:`gitmem.storage.payloads.PayloadStore.partition_base`);
    None when the remote has no such partition, with nothing to build on."""
    if old is None:
        return None
    from gitmem.storage.objects import ObjectBatch

    batch = ObjectBatch()
    try:
        base = memory.ledger.partition_base(batch, old, new)
    except GitmemError:
        return None  # the remote's partition is unreadable here: push without a base
    memory.ledger.write_objects(batch)
    return base


def _payload_leases(
    memory: Memory, mirror: dict[str, str], payload: str
) -> tuple[dict[str, str | None], dict[str, str]]:
    """(ref -> the remote's value, ref -> what to push) that put store
    ``payload`` on a remote whose refs are ``mirror``: the partitions that
    differ, each with its base, then the store commit naming them."""
    leases: dict[str, str | None] = {}
    sources: dict[str, str] = {}
    roots = memory.ledger.payload_roots(payload)
    assert roots is not None
    for name, commit in sorted(roots.commits.items()):
        ref = layout.partition_ref(name)
        if mirror.get(ref) == commit:
            continue
        leases[ref], sources[ref] = mirror.get(ref), commit
        base = _partition_base(memory, mirror.get(ref), commit)
        base_ref = layout.partition_base_ref(name)
        if base is not None and mirror.get(base_ref) != base:
            leases[base_ref], sources[base_ref] = mirror.get(base_ref), base
    for ref in sorted(mirror):
        name = ref[len(layout.PARTITION_PREFIX) :]
        if layout.is_partition_ref(ref) and name not in roots.commits:
            # a partition ref the remote's store does not name (left by a
            # push that did not finish): it may hold what was redacted since
            leases[ref], sources[ref] = mirror[ref], ""
    leases[layout.PAYLOAD_REF] = mirror.get(layout.PAYLOAD_REF)
    sources[layout.PAYLOAD_REF] = payload  # may differ from the local store
    if mirror.get(layout.PAYLOAD_BASE_REF) is not None:
        # format 1's one base: it keeps a format-1 snapshot reachable on the
        # remote, redacted payloads and all, so it goes ("": a deletion)
        leases[layout.PAYLOAD_BASE_REF] = mirror[layout.PAYLOAD_BASE_REF]
        sources[layout.PAYLOAD_BASE_REF] = ""
    return leases, sources


def _push(
    memory: Memory,
    target: transport.Remote,
    mirror: dict[str, str],
    redacted: set[str],
    report: SyncReport,
    *,
    prompt: bool,
) -> bool:
    """Push what the remote lacks; False when it moved and we must go again."""
    ledger = memory.ledger
    local = dict(ledger.memory_refs())
    selection = select_push(memory, target, local, mirror)
    report.push_mode = selection.mode
    report.held_back = [ref for ref in selection.held_back if mirror.get(ref) != local[ref]]
    refs = [ref for ref in selection.refs if mirror.get(ref) != local[ref]]
    payload = ledger.outgoing_payloads(
        memory.backend.read_ref(layout.PAYLOAD_REF),
        mirror.get(layout.PAYLOAD_REF),
        selection.local_only,
        redacted,
    )
    leases: dict[str, str | None] = {}
    sources: dict[str, str] = {}
    if payload is not None and mirror.get(layout.PAYLOAD_REF) != payload:
        leases, sources = _payload_leases(memory, mirror, payload)
    if not refs and not leases:
        return True
    # Payloads first: a remote never holds an event whose payload is missing.
    order = [*leases, *refs]
    outcome = transport.push(memory.location, target, order, leases, prompt=prompt, sources=sources)
    if outcome.message == "atomic-unsupported":
        for group in ([*leases], refs):
            if not group:
                continue
            outcome = transport.push(
                memory.location,
                target,
                group,
                {r: leases[r] for r in group if r in leases},
                prompt=prompt,
                atomic=False,
                sources=sources,
            )
            if not outcome.ok:
                break
    if not outcome.ok:
        return False
    updates = []
    for ref in refs:
        before = mirror.get(ref)
        after = local[ref]
        if before is None:
            kind = "created"
        elif memory.backend.is_ancestor(before, after):
            kind = "fast-forward"
        else:
            kind = "merged"
        events = ledger.count_events([after], [before] if before else [])
        report.pushed.append(RefMove(ref, before, after, kind, events))
        updates.append(f"update {layout.mirror_ref(target.key, ref)} {after}\n")
    if leases and payload is not None:
        report.payloads_pushed = True
        for ref, source in sources.items():
            mirrored = layout.mirror_ref(target.key, ref)
            updates.append(f"update {mirrored} {source}\n" if source else f"delete {mirrored}\n")
    # Record what the remote now holds, as git does for remote-tracking refs.
    run_git(["update-ref", "--stdin"], memory.location.cwd, "".join(updates).encode())
    return True
