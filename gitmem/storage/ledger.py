"""The ledger: sealed events in, commits and payloads out, and back again.

This is the storage layer's core. It knows refs, commits, trees and the
payload store; it does not know what a decision or a pin means (that is
:mod:`gitmem.memory`). Its parts: reading the event chains
(:mod:`gitmem.storage.eventchain`), reading and building payload-store
snapshots (:mod:`gitmem.storage.payloads`) and flushing the capture spool
(:mod:`gitmem.storage.spoolflush`); this module holds what moves refs.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from gitmem.errors import ConflictError
from gitmem.records import layout
from gitmem.storage import maintenance, spool, spoolflush
from gitmem.storage.backends.base import Backend, transact
from gitmem.storage.eventchain import ChainReader, Sealed, check_format, event_commit
from gitmem.storage.locate import RepoLocation
from gitmem.storage.lock import writer_lock
from gitmem.storage.objects import ObjectBatch
from gitmem.storage.payloads import PayloadMerge, PayloadStore, Roots, StoreUpdate
from gitmem.storage.purgelist import add_to_purge_list
from gitmem.storage.spoolflush import FlushResult


class Ledger(ChainReader, PayloadStore):
    """Event chains and the payload store of one repository.

    Reading comes from :class:`ChainReader` and :class:`PayloadStore`; the
    methods here write objects and move refs.
    """

    def __init__(self, location: RepoLocation, backend: Backend, *, fsync: bool = True) -> None:
        self.location = location
        self.backend = backend
        self.fsync = fsync
        # Where a chain that does not exist yet starts: (batch, ref) -> parent
        # commit or None. The memory layer sets it to fork from the branch the
        # git branch was created from (spec/sync.md); storage alone starts roots.
        self.chain_start: Callable[[ObjectBatch, str], str | None] | None = None

    @property
    def state_dir(self) -> Path:
        return self.location.state_dir

    # writing ------------------------------------------------------------------
    def commit(
        self,
        events: Sequence[Sealed],
        *,
        journal_files: Mapping[str, list[str]] | None = None,
        remove_payloads: Sequence[str] = (),
        restore_payloads: Sequence[Sealed] = (),
    ) -> dict[str, str]:
        """Commit ``events`` (grouped per memory ref, one commit each) and their
        payloads. Caller holds the writer lock. Returns ref -> new commit.

        A transaction over several refs is not atomic (git and libgit2 rename
        the ref locks one by one), so the steps are ordered for safe crashes:

        1. new payloads (and ``restore_payloads``) land in the payload store;
        2. the event refs move; with ``journal_files`` (ref -> spool file
           names) the flush journal is written first, before any ref moves;
        3. ``remove_payloads`` (redaction) leave the payload store; their blob
           ids go to the purge list for ``purge()``.

        A crash between steps leaves an orphan payload (after 1) or a recorded
        redaction whose payload is still present (after 2, completed by
        redacting again), never an event without its payload.
        """
        groups: dict[str, list[Sealed]] = {}
        for item in events:
            groups.setdefault(item.ref, []).append(item)
        for items in groups.values():
            items.sort(key=lambda s: (s.envelope["time"], s.envelope["id"]))
        for ref in groups:  # refuse before anything moves
            tip = self.backend.read_ref(ref)
            if tip is not None:
                check_format(self.backend.read_commit(tip).message, f"memory ref {ref}")

        stored = [s for s in [*events, *restore_payloads] if s.body is not None]
        if stored:
            self._move_store(lambda batch, tip: self.payload_commit(batch, tip, stored, ())[0])

        made: dict[str, str] = {}
        if groups:

            def build_events(current: Mapping[str, str | None]) -> dict[str, str | None]:
                batch = ObjectBatch()
                new: dict[str, str | None] = {}
                for ref, items in groups.items():
                    tip = current[ref]
                    if tip is not None:
                        check_format(self.backend.read_commit(tip).message, f"memory ref {ref}")
                    elif self.chain_start is not None:
                        tip = self.chain_start(batch, ref)
                    new[ref] = event_commit(batch, items, tip, layout.branch_of_ref(ref))
                self.write_objects(batch)
                if journal_files is not None:
                    entries = {
                        ref: {"commit": new[ref], "files": sorted(journal_files.get(ref, []))}
                        for ref in groups
                    }
                    spool.write_journal(self.state_dir, entries, fsync=self.fsync)
                made.clear()
                made.update({r: c for r, c in new.items() if c is not None})
                return new

            transact(self.backend, list(groups), build_events)

        if remove_payloads:
            removed_blobs: list[str] = []

            def removal(batch: ObjectBatch, tip: str | None) -> StoreUpdate:
                update, removed = self.payload_commit(batch, tip, (), remove_payloads)
                removed_blobs[:] = removed
                return update

            self._move_store(removal)
            if removed_blobs:
                add_to_purge_list(self.state_dir, removed_blobs)
        return {ref: made[ref] for ref in groups}

    def _move_store(
        self, compute: Callable[[ObjectBatch, str | None], StoreUpdate | None]
    ) -> str | None:
        """Move the payload store to what ``compute`` makes of its current
        commit (None: unchanged), with the partition refs that keep its
        partitions reachable. Caller holds the writer lock, under which
        nothing else moves these refs. Returns the store's commit.

        The store commit is what readers follow; the refs under
        ``refs/edda/store/`` only keep each partition reachable (and make git
        transfer it). Every move also sets any of them that a killed move
        left behind."""
        old = self.backend.read_ref(layout.PAYLOAD_REF)
        batch = ObjectBatch()
        update = compute(batch, old)
        tip: str | None
        commits: Mapping[str, str]
        if update is not None:
            tip, commits = update.tip, update.commits
        else:
            roots = self.payload_roots(old) if old else None
            tip, commits = old, dict(roots.commits) if roots else {}
        wanted = {layout.partition_ref(name): oid for name, oid in commits.items()}
        existing = self.backend.list_refs(layout.PARTITION_PREFIX)
        stale = sorted(
            ref for ref in wanted.keys() | existing.keys() if wanted.get(ref) != existing.get(ref)
        )
        if tip == old and not stale:
            return tip
        self.write_objects(batch)

        def build(current: Mapping[str, str | None]) -> dict[str, str | None]:
            if current[layout.PAYLOAD_REF] != old:
                raise ConflictError(
                    "the payload store moved during a write",
                    "another writer did not take gitmem's lock; run the command again",
                )
            return {layout.PAYLOAD_REF: tip}

        # The store commit first, the partition refs after, in two steps (one
        # transaction would move them in no set order). A crash in between
        # leaves new partitions that only the store commit names: objects
        # written just now, which git keeps for two weeks unreferenced, and
        # the next write sets their refs. The other order would leave the
        # store naming old partitions that no ref holds, which `git gc` may
        # drop at once when their packs are old.
        if tip != old:
            transact(self.backend, [layout.PAYLOAD_REF], build)
        if stale:
            transact(self.backend, stale, lambda current: {ref: wanted.get(ref) for ref in stale})
        return tip

    def write_objects(self, batch: ObjectBatch) -> None:
        """Write a transaction's new objects (before any ref moves)."""
        present = [oid for oid in batch.objects if self.backend.has_object(oid)]
        objects_dir = os.path.join(self.location.common_path, "objects")
        batch.write(objects_dir, fsync=self.fsync, skip=present)
        maintenance.maybe_gc(self.location, objects_dir)

    def join(self, ref: str, others: Sequence[str]) -> tuple[str | None, str | None]:
        """Merge the chains ``others`` into ``ref`` (canonical merge, no events).

        Caller holds the writer lock. Returns (before, after).
        """
        from gitmem.storage import heads

        for tip in others:
            check_format(self.backend.read_commit(tip).message, f"memory commit {tip}")
        seen: dict[str, str | None] = {}

        def build(current: Mapping[str, str | None]) -> dict[str, str | None]:
            batch = ObjectBatch()
            seen["before"] = current[ref]
            new = heads.merge_tips(self.backend, batch, [current[ref], *others])
            self.write_objects(batch)
            return {ref: new}

        current = self.backend.read_ref(ref)
        if current is not None and all(self.backend.is_ancestor(t, current) for t in others):
            return current, current
        after = transact(self.backend, [ref], build)[ref]
        return seen["before"], after

    def redaction_targets(self, trees: Sequence[Roots | None]) -> set[str]:
        """Ids named by every redaction event in every chain; each redaction's
        body is looked up in ``trees`` (payload store roots) in turn. Only
        the commits added since the last call are read
        (:mod:`gitmem.storage.redactions`)."""
        from gitmem.storage import redactions

        return redactions.targets(self, trees)

    def merge_payloads(
        self,
        other_tip: str | None,
        redacted: set[str],
        skip: set[str] | frozenset[str] = frozenset(),
    ) -> tuple[int, int]:
        """Merge another payload store (a fetched one) into ours. Caller holds the lock.

        The result is the union of both stores minus every payload in
        ``redacted`` and the attachments only they used: a clone that still
        holds a redacted payload can never bring it back. Payloads in ``skip``
        (claimed by no known event) are not taken. Returns (payloads added,
        payloads removed).
        """
        merged = [PayloadMerge({}, [], 0, 0)]
        other = self.payload_roots(other_tip) if other_tip else None

        def merge(batch: ObjectBatch, tip: str | None) -> StoreUpdate | None:
            root = self.payload_roots(tip) if tip else None
            merged[0] = self.merge_changes(root, other, redacted, skip)
            if not merged[0].changes and not self.lacks_partitions(root, other):
                return None
            # a clone that only receives ends with the fetched partitions' trees
            return self.payload_snapshot(batch, root, merged[0].changes, like=other)

        self._move_store(merge)
        if merged[0].unreachable:
            add_to_purge_list(self.state_dir, merged[0].unreachable)
        return merged[0].added, merged[0].removed

    def outgoing_payloads(
        self,
        tip: str | None,
        other_tip: str | None,
        drop: Sequence[str],
        redacted: set[str],
    ) -> str | None:
        """The payload store to push to a remote whose store is ``other_tip``.

        It is the store ``tip`` without the payloads ``drop`` (events that
        stay local) that the remote lacks, plus every payload the remote holds
        that ``tip`` lacks and ``redacted`` does not name: a push never takes
        from the remote a payload that one of its events may need. The
        snapshot's objects are written, no ref moves; it depends only on its
        tree, so two computations of the same store give the same commit.
        None when there is nothing to send to a remote that has no store.
        """
        if not drop and (other_tip is None or other_tip == tip):
            return tip
        root = self.payload_roots(tip) if tip else None
        other = self.payload_roots(other_tip) if other_tip else None
        leaving = [e for e in drop if self.locate(other, e) is None]
        changes, _ = self.removal(root, leaving)
        self.adopt(root, other, changes, redacted)
        if not changes and not self.lacks_partitions(root, other):
            return tip
        batch = ObjectBatch()
        update = self.payload_snapshot(batch, root, changes, like=other)
        if other is None and update.empty:
            return None  # nothing to send to a remote that has no store yet
        self.write_objects(batch)
        return update.tip

    def append(self, events: Sequence[Sealed]) -> dict[str, str]:
        """Commit sealed events under the writer lock (first flushing the spool,
        so spooled events keep their place in each chain)."""
        with writer_lock(self.state_dir):
            self.flush_spool()
            return self.commit(events)

    def locked(self) -> Any:
        """The writer lock (re-entrant), for callers composing several steps
        (redaction, import); reads inside it still flush the spool."""
        return writer_lock(self.state_dir)

    def flush_spool(self) -> FlushResult:
        """Commit every spooled event; safe to run anywhere, any number of times."""
        if not spool.pending(self.state_dir) and spool.read_journal(self.state_dir) is None:
            return FlushResult()
        with writer_lock(self.state_dir):
            return spoolflush.flush_locked(self)
