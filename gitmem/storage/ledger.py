"""The ledger: sealed events in, commits and payloads out, and back again.

This is the storage layer's core. It knows refs, commits, trees and the
payload store; it does not know what a decision or a pin means (that is
:mod:`gitmem.memory`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitmem.errors import FormatError, FormatTooNewError, GitError
from gitmem.records import canonical, layout
from gitmem.records.validate import event_problems, payload_problem
from gitmem.storage import files, maintenance, spool
from gitmem.storage.backends.base import (
    EMPTY_TREE_MARK,
    Backend,
    edit_tree,
    transact,
)
from gitmem.storage.locate import RepoLocation
from gitmem.storage.lock import writer_lock
from gitmem.storage.objects import ObjectBatch
from gitmem.storage.purgelist import add_to_purge_list

MAX_EVENTS_PER_FLUSH = 5000


@dataclass(frozen=True)
class Sealed:
    """An event ready to commit: its envelope and its logical body."""

    envelope: dict[str, Any]
    body: dict[str, Any] | None  # None: committed without a payload (imported redacted)
    ref_override: str | None = None

    @property
    def ref(self) -> str:
        if self.ref_override is not None:
            return self.ref_override
        return layout.branch_ref(self.envelope.get("scope", {}).get("branch"))


@dataclass(frozen=True)
class Located:
    """An envelope as found in the chain: where it lives."""

    envelope: dict[str, Any]
    ref: str
    commit: str
    blob: str


@dataclass
class FlushResult:
    events: int = 0
    files: int = 0
    quarantined: list[str] = field(default_factory=list)
    recovered: int = 0  # spool files a crashed flush had already committed


def check_format(message: str, where: str) -> None:
    """Raise FormatTooNewError when a commit was written by a newer format."""
    trailer = layout.parse_trailers(message).get(layout.FORMAT_TRAILER)
    try:
        version = int(trailer) if trailer is not None else layout.FORMAT_VERSION
    except ValueError:
        version = layout.FORMAT_VERSION + 1  # unreadable marker: treat as unknown
    if version > layout.FORMAT_VERSION:
        raise FormatTooNewError(
            f"{where} was written in storage format {trailer}; this gitmem reads format "
            f"{layout.FORMAT_VERSION}",
            "upgrade gitmem (pip install -U git-edda) to read and write this memory",
        )


class Ledger:
    """Event chains and the payload store of one repository."""

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

            def build_payloads(current: Mapping[str, str | None]) -> dict[str, str | None]:
                batch = ObjectBatch()
                tip, _ = self._payload_commit(batch, current[layout.PAYLOAD_REF], stored, ())
                self._write(batch)
                return {layout.PAYLOAD_REF: tip}

            transact(self.backend, [layout.PAYLOAD_REF], build_payloads)

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
                    new[ref] = self._event_commit(batch, items, tip, layout.branch_of_ref(ref))
                self._write(batch)
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

            def build_removal(current: Mapping[str, str | None]) -> dict[str, str | None]:
                batch = ObjectBatch()
                tip, removed = self._payload_commit(
                    batch, current[layout.PAYLOAD_REF], (), remove_payloads
                )
                self._write(batch)
                removed_blobs[:] = removed
                return {layout.PAYLOAD_REF: tip}

            transact(self.backend, [layout.PAYLOAD_REF], build_removal)
            if removed_blobs:
                add_to_purge_list(self.state_dir, removed_blobs)
        return {ref: made[ref] for ref in groups}

    def _write(self, batch: ObjectBatch) -> None:
        """Write a transaction's new objects (before any ref moves)."""
        present = [oid for oid in batch.objects if self.backend.has_object(oid)]
        objects_dir = os.path.join(self.location.common_path, "objects")
        batch.write(objects_dir, fsync=self.fsync, skip=present)
        maintenance.maybe_gc(self.location, objects_dir)

    def _event_commit(
        self, batch: ObjectBatch, items: list[Sealed], parent: str | None, branch: str | None
    ) -> str:
        entries = [
            (layout.entry_name(i), layout.MODE_BLOB, batch.blob(canonical.encode(s.envelope)))
            for i, s in enumerate(items)
        ]
        root = batch.tree([(layout.EVENTS_DIR, layout.MODE_TREE, batch.tree(entries))])
        message = layout.commit_message([s.envelope for s in items], branch)
        when = max(s.envelope["time"] for s in items) // 1_000_000
        return batch.commit(root, [parent] if parent else [], message, when)

    def _payload_commit(
        self, batch: ObjectBatch, tip: str | None, events: Sequence[Sealed], remove: Sequence[str]
    ) -> tuple[str, list[str]]:
        root = self.payload_tree(tip)
        changes, removed = self._removal(root, remove)
        for item in events:
            if item.body is None:
                continue
            stored, attachments = layout.split_attachments(item.body)
            for sha, data in attachments.items():
                changes[layout.attachment_path(sha)] = batch.blob(data)
            changes[layout.payload_path(item.envelope["id"])] = batch.blob(canonical.encode(stored))
        return self.payload_snapshot(batch, root, changes), removed

    def _removal(
        self, root: str | None, remove: Sequence[str]
    ) -> tuple[dict[str, str | None], list[str]]:
        """Tree changes deleting the payloads ``remove`` and the attachments only
        they use, and the blob ids that become unreachable (for the purge list)."""
        changes: dict[str, str | None] = {}
        removed: list[str] = []
        for event_id in remove:
            found = self.stored_body(root, event_id)
            if found is None:
                continue
            blob, stored = found
            changes[layout.payload_path(event_id)] = None
            removed.append(blob)
            for sha in self._orphaned_attachments(
                root, event_id, layout.attachment_refs(stored), remove
            ):
                path = layout.attachment_path(sha)
                changes[path] = None
                oid = self.backend.read_path(root, path) if root else None
                if oid:
                    removed.append(oid)
        return changes, removed

    def _orphaned_attachments(
        self, root: str | None, event_id: str, shas: list[str], removing: Sequence[str]
    ) -> list[str]:
        """Attachments of ``event_id`` that no payload outside ``removing`` uses."""
        if not shas or root is None:
            return []
        wanted = set(shas)
        gone = set(removing)
        for eid, (_, stored) in self.iter_stored_bodies(root):
            if eid not in gone:
                wanted -= set(layout.attachment_refs(stored))
                if not wanted:
                    break
        return sorted(wanted)

    def iter_stored_bodies(self, root: str) -> Iterator[tuple[str, tuple[str, Any]]]:
        """(event id, (blob oid, stored body)) of every payload in the store."""
        prefix_tree = self.backend.read_path(root, "p")
        if prefix_tree is None:
            return
        for fan in self.backend.read_tree(prefix_tree):
            for entry in self.backend.read_tree(fan.oid):
                yield entry.name, (entry.oid, canonical.decode(self.backend.read_blob(entry.oid)))

    def payload_snapshot(
        self, batch: ObjectBatch, root: str | None, changes: Mapping[str, str | None]
    ) -> str:
        """A new payload-store commit: ``root`` with ``changes`` applied.

        Parentless, fixed identity and time 0: the same payloads give the same
        commit on every clone, and replaced snapshots become unreachable, which
        is what lets redaction really remove bytes.
        """
        tree = edit_tree(self.backend, batch, root, changes)
        if tree == EMPTY_TREE_MARK:
            tree = batch.tree([])
        message = f"gitmem payload store\n\n{layout.FORMAT_TRAILER}: {layout.FORMAT_VERSION}\n"
        return batch.commit(tree, [], message, 0)

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
            self._write(batch)
            return {ref: new}

        current = self.backend.read_ref(ref)
        if current is not None and all(self.backend.is_ancestor(t, current) for t in others):
            return current, current
        after = transact(self.backend, [ref], build)[ref]
        return seen["before"], after

    def redaction_targets(self, trees: Sequence[str | None]) -> set[str]:
        """Ids named by every redaction event in every chain; each redaction's
        body is looked up in ``trees`` (payload store roots) in turn."""
        targets: set[str] = set()
        for located in self.envelopes():
            if located.envelope.get("type") != "redaction":
                continue
            for tree in trees:
                found = self.stored_body(tree, located.envelope["id"])
                if found is not None and isinstance(found[1], dict):
                    target = found[1].get("target")
                    if isinstance(target, str):
                        targets.add(target)
                    break
        return targets

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
        counts = [0, 0]
        removed_blobs: list[str] = []

        def build(current: Mapping[str, str | None]) -> dict[str, str | None]:
            batch = ObjectBatch()
            root = self.payload_tree(current[layout.PAYLOAD_REF])
            other = self.payload_tree(other_tip) if other_tip else None
            removing = sorted(e for e in redacted if self.stored_body(root, e) is not None)
            changes, removed = self._removal(root, removing)
            added = self._adopt(root, other, changes, redacted | skip)
            counts[:] = [added, len(removing)]
            removed_blobs[:] = [oid for oid in removed if oid not in changes.values()]
            if not changes:
                return {layout.PAYLOAD_REF: current[layout.PAYLOAD_REF]}
            tip = self.payload_snapshot(batch, root, changes)
            self._write(batch)
            return {layout.PAYLOAD_REF: tip}

        transact(self.backend, [layout.PAYLOAD_REF], build)
        if removed_blobs:
            add_to_purge_list(self.state_dir, removed_blobs)
        return counts[0], counts[1]

    def _adopt(
        self,
        root: str | None,
        other: str | None,
        changes: dict[str, str | None],
        leave: set[str] | frozenset[str],
    ) -> int:
        """Add to ``changes`` every payload of store tree ``other`` that ``root``
        lacks and ``leave`` does not name, with the attachments it needs;
        returns how many payloads."""
        added = 0
        for event_id, blob in self.missing_payloads(root, other):
            if event_id in leave:
                continue
            changes[layout.payload_path(event_id)] = blob
            added += 1
            for sha in layout.attachment_refs(canonical.decode(self.backend.read_blob(blob))):
                path = layout.attachment_path(sha)
                have = self.backend.read_path(root, path) if root else None
                if have is None or changes.get(path, have) is None:
                    theirs = self.backend.read_path(other, path) if other else None
                    if theirs is not None:
                        changes[path] = theirs
        return added

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
        root = self.payload_tree(tip) if tip else None
        other = self.payload_tree(other_tip) if other_tip else None
        leaving = [e for e in drop if other is None or self.stored_body(other, e) is None]
        changes, _ = self._removal(root, leaving)
        self._adopt(root, other, changes, redacted)
        if not changes:
            return tip
        batch = ObjectBatch()
        if other is None and edit_tree(self.backend, batch, root, changes) == EMPTY_TREE_MARK:
            return None  # nothing to send to a remote that has no store yet
        snapshot = self.payload_snapshot(batch, root, changes)
        self._write(batch)
        return snapshot

    def missing_payloads(self, root: str | None, other: str | None) -> Iterator[tuple[str, str]]:
        """(event id, blob) of payloads in store ``other`` that ``root`` lacks."""
        if other is None:
            return
        theirs = self.backend.read_path(other, "p")
        if theirs is None:
            return
        ours = self.backend.read_path(root, "p") if root else None
        our_fans = {e.name: e.oid for e in self.backend.read_tree(ours)} if ours else {}
        for fan in self.backend.read_tree(theirs):
            if our_fans.get(fan.name) == fan.oid:
                continue  # identical subtree: nothing new in it
            mine = (
                {e.name for e in self.backend.read_tree(our_fans[fan.name])}
                if fan.name in our_fans
                else set()
            )
            for entry in self.backend.read_tree(fan.oid):
                if entry.name not in mine:
                    yield entry.name, entry.oid

    def changed_payloads(self, old: str, new: str | None) -> Iterator[str]:
        """Ids whose payload blob differs between two payload-store trees while
        present in both. Payloads never change for an id (its envelope pins
        them), so these were altered behind gitmem's back."""
        theirs = self.backend.read_path(new, "p") if new else None
        ours = self.backend.read_path(old, "p")
        if theirs is None or ours is None or theirs == ours:
            return
        old_fans = {e.name: e.oid for e in self.backend.read_tree(ours)}
        for fan in self.backend.read_tree(theirs):
            before = old_fans.get(fan.name)
            if before is None or before == fan.oid:
                continue
            was = {e.name: e.oid for e in self.backend.read_tree(before)}
            for entry in self.backend.read_tree(fan.oid):
                if was.get(entry.name, entry.oid) != entry.oid:
                    yield entry.name

    def count_events(self, include: Sequence[str], exclude: Sequence[str]) -> int:
        """Events added by commits reachable from ``include`` but not ``exclude``."""
        total = 0
        for oid in self.backend.commits_between(include, exclude):
            count = layout.parse_trailers(self.backend.read_commit(oid).message).get(
                layout.COUNT_TRAILER
            )
            total += int(count) if count and count.isdigit() else 0
        return total

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

    # spool ----------------------------------------------------------------------
    def flush_spool(self) -> FlushResult:
        """Commit every spooled event; safe to run anywhere, any number of times."""
        if not spool.pending(self.state_dir) and spool.read_journal(self.state_dir) is None:
            return FlushResult()
        with writer_lock(self.state_dir):
            return self._flush_locked()

    def _recover_journal(self) -> int:
        journal = spool.read_journal(self.state_dir)
        if journal is None:
            return 0
        removed = 0
        landed_refs: set[str] = set()
        named: dict[str, set[str]] = {}  # spool file -> refs whose commit carries its events
        for ref, entry in journal.items():
            if not isinstance(entry, dict):
                continue
            commit = entry.get("commit")
            tip = self.backend.read_ref(ref)
            landed = (
                isinstance(commit, str)
                and tip is not None
                and self.backend.has_object(commit)
                and self.backend.is_ancestor(commit, tip)
            )
            if landed:
                landed_refs.add(ref)
            for name in entry.get("files", []):
                named.setdefault(name, set()).add(ref)
        for name, refs in named.items():
            path = os.path.join(spool.spool_dir(self.state_dir), name)
            if not refs & landed_refs:
                continue
            if not refs <= landed_refs:
                # The ref transaction landed in part (refs move one by one) and
                # this file has events for several refs: keep the ones not landed.
                try:
                    keep = [
                        raw
                        for raw in spool.read_spool_file(path)
                        if Sealed(raw["envelope"], None).ref not in landed_refs
                    ]
                except FormatError:
                    continue
                data = canonical.encode({"v": spool.SPOOL_VERSION, "events": keep})
                files.write_atomic(path, data, fsync=self.fsync)
                continue
            try:
                os.unlink(path)
                removed += 1
            except FileNotFoundError:
                pass
        spool.clear_journal(self.state_dir)
        return removed

    def _flush_locked(self) -> FlushResult:
        result = FlushResult(recovered=self._recover_journal())
        while True:
            files = spool.pending(self.state_dir)
            if not files:
                return result
            batch: list[Sealed] = []
            by_ref: dict[str, list[str]] = {}
            taken: list[str] = []
            for path in files:
                name = os.path.basename(path)
                try:
                    items = [
                        self._sealed_from_spool(raw, name) for raw in spool.read_spool_file(path)
                    ]
                except FormatError:
                    result.quarantined.append(str(spool.quarantine(path)))
                    continue
                batch.extend(items)
                taken.append(path)
                for item in items:
                    by_ref.setdefault(item.ref, []).append(name)
                if len(batch) >= MAX_EVENTS_PER_FLUSH:
                    break
            if batch:
                self.commit(batch, journal_files=by_ref)
            for path in taken:
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
            spool.clear_journal(self.state_dir)
            result.events += len(batch)
            result.files += len(taken)

    @staticmethod
    def _sealed_from_spool(raw: dict[str, Any], name: str) -> Sealed:
        envelope, body = raw.get("envelope"), raw.get("body")
        # The same check capture made before acknowledging (spec/storage.md,
        # "What a valid event is"): only a file altered since fails it. Times
        # are not bounded by the clock here: capture already did that.
        problems = event_problems(envelope, body) if body is not None else ["body missing"]
        if problems:
            raise FormatError(f"spool file {name}: {'; '.join(problems)}")
        assert isinstance(envelope, dict) and isinstance(body, dict)
        return Sealed(envelope, body)

    # reading ------------------------------------------------------------------
    def memory_refs(self) -> dict[str, str]:
        """Every event-chain ref and its tip (the payload ref excluded)."""
        refs = self.backend.list_refs(layout.REF_ROOT)
        return {r: t for r, t in refs.items() if layout.is_chain_ref(r)}

    def walk(self, tip: str) -> Iterator[tuple[str, Any]]:
        """Every commit reachable from ``tip`` once, newest first (parents after children)."""
        seen = {tip}
        stack = [tip]
        while stack:
            oid = stack.pop()
            info = self.backend.read_commit(oid)
            yield oid, info
            for parent in info.parents:
                if parent not in seen:
                    seen.add(parent)
                    stack.append(parent)

    def commit_envelopes(self, commit: str, info: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        """(blob oid, decoded envelope) of every event a commit adds."""
        events_tree = self.backend.read_path(info.tree, layout.EVENTS_DIR)
        if events_tree is None:
            return
        for entry in sorted(self.backend.read_tree(events_tree)):
            data = self.backend.read_blob(entry.oid)
            try:
                envelope = canonical.decode(data)
            except ValueError as exc:
                raise FormatError(f"event blob {entry.oid} in commit {commit} is not JSON") from exc
            yield entry.oid, envelope

    def envelopes(self, refs: Sequence[str] | None = None) -> Iterator[Located]:
        """Every distinct event reachable from ``refs`` (default: all memory refs).

        An event reachable from several refs is yielded once, at the first ref.
        """
        tips = self.memory_refs()
        chosen = list(tips) if refs is None else [r for r in refs if r in tips]
        seen_commits: set[str] = set()
        seen_ids: set[str] = set()
        for ref in chosen:
            for oid, info in self.walk(tips[ref]):
                if oid in seen_commits:
                    continue
                seen_commits.add(oid)
                check_format(info.message, f"memory commit {oid} on {ref}")
                for blob, envelope in self.commit_envelopes(oid, info):
                    eid = envelope.get("id") if isinstance(envelope, dict) else None
                    if not isinstance(eid, str) or eid in seen_ids:
                        continue
                    seen_ids.add(eid)
                    yield Located(envelope, ref, oid, blob)

    # payloads -------------------------------------------------------------------
    def payload_tree(self, tip: str | None = None) -> str | None:
        """The payload store's root tree (None when there is no store yet)."""
        if tip is None:
            tip = self.backend.read_ref(layout.PAYLOAD_REF)
            if tip is None:
                return None
        info = self.backend.read_commit(tip)
        check_format(info.message, "the payload store")
        return info.tree

    def stored_body(self, tree: str | None, event_id: str) -> tuple[str, Any] | None:
        """(blob oid, stored form) of an event's body, or None when absent."""
        if tree is None:
            return None
        blob = self.backend.read_path(tree, layout.payload_path(event_id))
        if blob is None:
            return None
        return blob, canonical.decode(self.backend.read_blob(blob))

    def attachment(self, tree: str, sha: str) -> bytes | None:
        blob = self.backend.read_path(tree, layout.attachment_path(sha))
        return None if blob is None else self.backend.read_blob(blob)

    def body(self, tree: str | None, event_id: str) -> dict[str, Any] | None:
        """The logical body of an event (attachments joined), None when absent."""
        found = self.stored_body(tree, event_id)
        if found is None or tree is None:
            return None
        _, stored = found
        try:
            body = layout.join_attachments(stored, lambda sha: self.attachment(tree, sha))
        except KeyError as exc:
            raise GitError(f"attachment {exc} of event {event_id} is missing") from exc
        return body if isinstance(body, dict) else None

    def checked_body(
        self, tree: str | None, envelope: dict[str, Any]
    ) -> tuple[dict[str, Any] | None, str | None]:
        """(body, None) when the event's payload is present and is exactly what
        its envelope pins; (None, None) when it is absent; (None, why) when it
        is unreadable, lacks an attachment or does not match its envelope.

        What readers hand out: damaged or forged bytes are never shown as the
        event's text, and one bad payload never stops a listing.
        """
        try:
            body = self.body(tree, envelope["id"])
        except GitError as exc:
            return None, exc.message
        except ValueError:  # not UTF-8, not JSON
            return None, "payload is unreadable"
        if body is None:
            return None, None
        why = payload_problem(envelope, body)
        return (None, why) if why else (body, None)
