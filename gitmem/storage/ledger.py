"""The ledger: sealed events in, commits and payloads out, and back again.

This is the storage layer's core. It knows refs, commits, trees and the
payload store; it does not know what a decision or a pin means (that is
:mod:`gitmem.memory`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gitmem.errors import FormatError, FormatTooNewError, GitError
from gitmem.storage import canonical, layout, spool
from gitmem.storage.backends.base import (
    EMPTY_TREE_MARK,
    Backend,
    TreeEntry,
    edit_tree,
    transact,
)
from gitmem.storage.envelope import envelope_problems
from gitmem.storage.locate import RepoLocation
from gitmem.storage.lock import writer_lock

MAX_EVENTS_PER_FLUSH = 5000
PURGE_LIST = "purge-list"  # blob ids of removed payloads, for purge()


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
            "upgrade gitmem (pip install -U gitmem) to read and write this memory",
        )


class Ledger:
    """Event chains and the payload store of one repository."""

    def __init__(self, location: RepoLocation, backend: Backend, *, fsync: bool = True) -> None:
        self.location = location
        self.backend = backend
        self.fsync = fsync

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
        payloads: the payload store first, then the event refs in one ref
        transaction (all in one when removing payloads). Caller holds the writer lock.

        ``remove_payloads`` names events whose payloads leave the store
        (redaction); the removed blob ids are appended to the purge list so
        ``purge()`` can destroy them. ``restore_payloads`` puts back payloads of
        events already in the chain (import with overwrite).
        With ``journal_files`` (ref -> spool file names), the flush journal is
        written after the commits exist and before any ref moves.
        Returns ref -> new commit.
        """
        groups: dict[str, list[Sealed]] = {}
        for item in events:
            groups.setdefault(item.ref, []).append(item)
        for items in groups.values():
            items.sort(key=lambda s: (s.envelope["time"], s.envelope["id"]))
        refs = [*groups, layout.PAYLOAD_REF]
        made: dict[str, str] = {}
        removed_blobs: list[str] = []
        if not remove_payloads:
            # A transaction over several refs is not atomic (git and libgit2
            # rename the ref locks one by one): land the payloads first, so a
            # crash in between leaves at worst an orphan payload, never an
            # event (maybe an acknowledged spooled one) without its payload.
            for ref in groups:
                tip = self.backend.read_ref(ref)
                if tip is not None:
                    check_format(self.backend.read_commit(tip).message, f"memory ref {ref}")
            stored = [*events, *restore_payloads]
            transact(
                self.backend,
                [layout.PAYLOAD_REF],
                lambda cur: {
                    layout.PAYLOAD_REF: self._payload_commit(cur[layout.PAYLOAD_REF], stored, ())[0]
                },
            )
            refs = list(groups)

        def build(current: Mapping[str, str | None]) -> dict[str, str | None]:
            new: dict[str, str | None] = {}
            for ref, items in groups.items():
                tip = current[ref]
                if tip is not None:
                    check_format(self.backend.read_commit(tip).message, f"memory ref {ref}")
                new[ref] = self._event_commit(items, tip, layout.branch_of_ref(ref))
            if layout.PAYLOAD_REF in current:
                new[layout.PAYLOAD_REF], removed = self._payload_commit(
                    current[layout.PAYLOAD_REF], [*events, *restore_payloads], remove_payloads
                )
                removed_blobs[:] = removed
            if journal_files is not None:
                entries = {
                    ref: {"commit": new[ref], "files": sorted(journal_files.get(ref, []))}
                    for ref in groups
                }
                spool.write_journal(self.state_dir, entries, fsync=self.fsync)
            made.clear()
            made.update({r: c for r, c in new.items() if c is not None})
            return new

        if refs:
            transact(self.backend, refs, build)
        if removed_blobs:
            with open(self.state_dir / PURGE_LIST, "a", encoding="ascii") as handle:
                handle.write("".join(f"{oid}\n" for oid in removed_blobs))
        return {ref: made[ref] for ref in groups}

    def _event_commit(self, items: list[Sealed], parent: str | None, branch: str | None) -> str:
        entries = [
            TreeEntry(
                layout.entry_name(i),
                layout.MODE_BLOB,
                self.backend.write_blob(canonical.encode(s.envelope)),
            )
            for i, s in enumerate(items)
        ]
        events_tree = self.backend.write_tree(entries)
        root = self.backend.write_tree(
            [TreeEntry(layout.EVENTS_DIR, layout.MODE_TREE, events_tree)]
        )
        message = layout.commit_message([s.envelope for s in items], branch)
        when = max(s.envelope["time"] for s in items) // 1_000_000
        return self.backend.write_commit(root, [parent] if parent else [], message, when)

    def _payload_commit(
        self, tip: str | None, events: Sequence[Sealed], remove: Sequence[str]
    ) -> tuple[str, list[str]]:
        root = self.payload_tree(tip)
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
        for item in events:
            if item.body is None:
                continue
            stored, attachments = layout.split_attachments(item.body)
            for sha, data in attachments.items():
                changes[layout.attachment_path(sha)] = self.backend.write_blob(data)
            changes[layout.payload_path(item.envelope["id"])] = self.backend.write_blob(
                canonical.encode(stored)
            )
        return self.write_payload_tree(root, changes), removed

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

    def write_payload_tree(self, root: str | None, changes: Mapping[str, str | None]) -> str:
        """A new payload-store commit: ``root`` with ``changes`` applied.

        Parentless, fixed identity and time 0: the same payloads give the same
        commit on every clone, and replaced snapshots become unreachable, which
        is what lets redaction really remove bytes.
        """
        tree = edit_tree(self.backend, root, changes)
        if tree == EMPTY_TREE_MARK:
            tree = self.backend.write_tree([])
        message = f"gitmem payload store\n\n{layout.FORMAT_TRAILER}: {layout.FORMAT_VERSION}\n"
        return self.backend.write_commit(tree, [], message, 0)

    def append(self, events: Sequence[Sealed]) -> dict[str, str]:
        """Commit sealed events under the writer lock (first flushing the spool,
        so spooled events keep their place in each chain)."""
        with writer_lock(self.state_dir):
            self._flush_locked()
            return self.commit(events)

    def locked(self) -> Any:
        """The writer lock, for callers composing several steps (redaction, import)."""
        return writer_lock(self.state_dir)

    def flush_locked(self) -> FlushResult:
        """Flush the spool; the caller already holds :meth:`locked`."""
        return self._flush_locked()

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
                spool.write_atomic(path, data, fsync=self.fsync)
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
        problems = envelope_problems(envelope)
        if problems or not isinstance(body, dict):
            raise FormatError(f"spool file {name}: {'; '.join(problems) or 'body missing'}")
        assert isinstance(envelope, dict)
        payload = envelope["payload"]
        if canonical.payload_digest(payload["salt"], canonical.encode(body)) != payload["digest"]:
            raise FormatError(f"spool file {name}: body does not match its digest")
        return Sealed(envelope, body)

    # reading ------------------------------------------------------------------
    def memory_refs(self) -> dict[str, str]:
        """Every event-chain ref and its tip (the payload ref excluded)."""
        refs = self.backend.list_refs(layout.REF_ROOT)
        return {
            r: t
            for r, t in refs.items()
            if r.startswith(layout.BRANCH_PREFIX) or r == layout.DETACHED_REF
        }

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
