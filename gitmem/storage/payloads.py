"""The payload store: event bodies under ``refs/edda/payloads``, apart from
the hashed chains so that redaction can really remove bytes.

The store is one parentless snapshot commit (spec/storage.md §9): ``p/``
holds each stored body by event id, ``b/`` the attachments split out of
them by SHA-256. :class:`PayloadStore` reads it and computes new snapshots
from changes (tree path -> blob, None deleting); it is one part of
:class:`gitmem.storage.ledger.Ledger`, which writes the objects and moves
the ref.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple

from gitmem.errors import GitError
from gitmem.records import canonical, layout
from gitmem.records.layout import MODE_BLOB
from gitmem.records.validate import payload_problem
from gitmem.storage.backends.base import EMPTY_TREE_MARK, Backend, TreeChange, edit_tree
from gitmem.storage.eventchain import Sealed, check_format
from gitmem.storage.objects import ObjectBatch


class PayloadMerge(NamedTuple):
    """What merging another payload store into ours changes."""

    changes: dict[str, str | None]  # tree path -> blob (None: deleted)
    unreachable: list[str]  # blob ids no longer in the store (for the purge list)
    added: int  # payloads taken from the other store
    removed: int  # redacted payloads removed from ours


@dataclass(frozen=True, slots=True)
class FlatDirectory:
    """A fan-out directory's bytes (:meth:`Backend.read_tree_bytes`) whose
    every entry is a payload file named by a 32-character id, so that entry
    ``i`` is bytes ``i * size`` to ``(i + 1) * size``: read by position,
    without making an entry of each (a million-event store's directories
    hold ~3,900 entries)."""

    data: bytes
    size: int  # bytes of an entry
    count: int  # entries

    NAME_AT: ClassVar[int] = len(b"100644 ")
    OID_AT: ClassVar[int] = NAME_AT + 32 + 1  # after the name and the NUL that ends it

    def name(self, at: int) -> bytes:
        start = at * self.size
        return self.data[start + self.NAME_AT : start + self.OID_AT - 1]

    def oid(self, at: int) -> str:
        start = at * self.size
        return self.data[start + self.OID_AT : start + self.size].hex()


def flat_directory(data: bytes, width: int) -> FlatDirectory | None:
    """``data`` (a tree's bytes; ``width``: bytes of an object id) as a
    :class:`FlatDirectory`, or None when any entry is not a payload file
    named by 32 bytes: checked a column at a time (a slice with a step is
    one copy in C), not an entry at a time."""
    mode = b"%o " % MODE_BLOB  # as git writes a file entry's mode: "100644 "
    size = FlatDirectory.OID_AT + width
    count, rest = divmod(len(data), size)
    if rest:
        return None
    for column, byte in enumerate(mode):
        if data[column::size] != bytes((byte,)) * count:
            return None
    if data[FlatDirectory.OID_AT - 1 :: size] != bytes(count):  # each name's NUL
        return None
    names = range(FlatDirectory.NAME_AT, FlatDirectory.OID_AT - 1)
    if any(0 in data[column::size] for column in names):
        return None
    return FlatDirectory(data, size, count)


class PayloadStore:
    """Reading the payload store and building its snapshots (needs only the backend)."""

    backend: Backend

    # reading --------------------------------------------------------------------
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

    def iter_stored_bodies(self, root: str) -> Iterator[tuple[str, tuple[str, Any]]]:
        """(event id, (blob oid, stored body)) of every payload in the store."""
        prefix_tree = self.backend.read_path(root, "p")
        if prefix_tree is None:
            return
        for fan in self.backend.read_tree(prefix_tree):
            for entry in self.backend.read_tree(fan.oid):
                yield entry.name, (entry.oid, canonical.decode(self.backend.read_blob(entry.oid)))

    def attachment(self, tree: str, sha: str) -> bytes | None:
        blob = self.backend.read_path(tree, layout.attachment_path(sha))
        return None if blob is None else self.backend.read_blob(blob)

    def body(
        self, tree: str | None, event_id: str, blob: str | None = None, *, known: bool = False
    ) -> dict[str, Any] | None:
        """The logical body of an event (attachments joined), None when absent.
        ``known``: its payload's blob in ``tree`` is ``blob`` (None: it has
        none), already found, not looked up again."""
        if known:
            found = None if blob is None else (blob, canonical.decode(self.backend.read_blob(blob)))
        else:
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
        self,
        tree: str | None,
        envelope: dict[str, Any],
        blob: str | None = None,
        *,
        known: bool = False,
    ) -> tuple[dict[str, Any] | None, str | None]:
        """(body, None) when the event's payload is present and is exactly what
        its envelope pins; (None, None) when it is absent; (None, why) when it
        is unreadable, lacks an attachment or does not match its envelope.

        What readers hand out: damaged or forged bytes are never shown as the
        event's text, and one bad payload never stops a listing. ``blob`` and
        ``known`` as for :meth:`body`.
        """
        try:
            body = self.body(tree, envelope["id"], blob, known=known)
        except GitError as exc:
            return None, exc.message
        except ValueError:  # not UTF-8, not JSON
            return None, "payload is unreadable"
        if body is None:
            return None, None
        why = payload_problem(envelope, body)
        return (None, why) if why else (body, None)

    # comparing two stores -------------------------------------------------------
    def payload_differences(
        self, root: str | None, other: str | None
    ) -> dict[str, tuple[str | None, str | None]]:
        """event id -> (its payload's object in store tree ``root``, in ``other``;
        None when absent) for every id whose payload differs between the two.

        git compares the trees (:meth:`Backend.diff_trees`) and skips the
        fan-out directories both share, so the cost follows what differs,
        not the stores' size. An id whose entry is a directory on one side
        (a damaged or forged store) is looked up on both sides.
        """
        ours = self.backend.read_path(root, "p") if root else None
        theirs = self.backend.read_path(other, "p") if other else None
        found: dict[str, tuple[str | None, str | None]] = {}
        odd: dict[str, str] = {}  # event id -> its fan-out directory
        for change in self._diff_memo(ours, theirs):
            parts = change.path.split("/")
            if len(parts) < 2:
                continue  # a file beside the fan-out directories: not a payload
            if len(parts) > 2:
                odd[parts[1]] = parts[0]
            else:
                found[parts[1]] = (change.old, change.new)
        for event_id, fan in odd.items():
            path = f"{fan}/{event_id}"
            before = self.backend.read_path(ours, path) if ours else None
            after = self.backend.read_path(theirs, path) if theirs else None
            if before != after:
                found[event_id] = (before, after)
        return found

    def _diff_memo(self, old: str | None, new: str | None) -> list[TreeChange]:
        """:meth:`Backend.diff_trees`, remembered: a sync compares the same two
        stores while checking, merging and pushing (a second at a million
        events each time)."""
        if old == new:
            return []
        memo: dict[tuple[str | None, str | None], list[TreeChange]]
        memo = self.__dict__.setdefault("_diffs", {})
        if (old, new) not in memo:
            if len(memo) >= 4:
                memo.clear()
            memo[old, new] = self.backend.diff_trees(old, new)
        return memo[old, new]

    def missing_payloads(self, root: str | None, other: str | None) -> Iterator[tuple[str, str]]:
        """(event id, blob) of payloads in store ``other`` that ``root`` lacks,
        by id."""
        if other is None:  # (comparing would list every payload of ``root``)
            return
        differences = self.payload_differences(root, other)
        for event_id in sorted(differences):
            before, after = differences[event_id]
            if before is None and after is not None:
                yield event_id, after

    def changed_payloads(self, old: str, new: str | None) -> Iterator[str]:
        """Ids whose payload blob differs between two payload-store trees while
        present in both. Payloads never change for an id (its envelope pins
        them), so these were altered behind gitmem's back."""
        differences = self.payload_differences(old, new)
        for event_id in sorted(differences):
            before, after = differences[event_id]
            if before is not None and after is not None:
                yield event_id

    # building snapshots ---------------------------------------------------------
    def payload_snapshot(
        self,
        batch: ObjectBatch,
        root: str | None,
        changes: Mapping[str, str | None],
        *,
        like: str | None = None,
    ) -> str:
        """A new payload-store commit: ``root`` with ``changes`` applied.

        Parentless, fixed identity and time 0: the same payloads give the same
        commit on every clone, and replaced snapshots become unreachable, which
        is what lets redaction really remove bytes.

        ``like`` is a store tree the result may be (the fetched store's): when
        ``changes`` are exactly what sets ``root`` apart from it, that tree is
        the result, and none of the fan-out directories (234 KB each at a
        million events) is read and written again.
        """
        if like is not None and self._becomes(root, like, changes):
            tree = like
        else:
            tree = edit_tree(self.backend, batch, root, changes)
        if tree == EMPTY_TREE_MARK:
            tree = batch.tree([])
        message = f"gitmem payload store\n\n{layout.FORMAT_TRAILER}: {layout.FORMAT_VERSION}\n"
        return batch.commit(tree, [], message, 0)

    def payload_base(self, batch: ObjectBatch, old: str | None, new: str) -> str:
        """The commit pushed as ``refs/edda/payloads-base`` beside snapshot
        ``new``, which replaces snapshot ``old`` on a remote.

        Its tree is empty and its parent is ``old`` when ``new`` holds every
        file ``old`` holds: a fetch or push of both then has ``old`` as an edge,
        and git sends only what ``new`` adds instead of nearly every payload
        (a snapshot has no parent of its own). When ``new`` dropped something
        (a redaction), the commit has no parent: it must not keep the removed
        bytes reachable on the remote. Fixed identity and time 0, so it
        depends only on ``old``.
        """
        parents: list[str] = []
        if old is not None:
            before, after = self.payload_tree(old), self.payload_tree(new)
            # by id, as the sync's checks already compared the two stores
            kept = all(
                theirs is None for _, theirs in self.payload_differences(after, before).values()
            )
            attachments = self._diff_memo(
                self.backend.read_path(before, "b") if before else None,
                self.backend.read_path(after, "b") if after else None,
            )
            tops = self.backend.read_tree(before) if before else []
            others = [e.name for e in tops if e.name not in ("p", "b")]
            if kept and not others and all(d.old is None for d in attachments):
                parents = [old]
        message = f"gitmem payload base\n\n{layout.FORMAT_TRAILER}: {layout.FORMAT_VERSION}\n"
        return batch.commit(batch.tree([]), parents, message, 0)

    def _becomes(self, root: str | None, other: str, changes: Mapping[str, str | None]) -> bool:
        """Whether tree ``root`` with ``changes`` applied is tree ``other``: the
        files that differ are exactly the changes, each a plain file. (An empty
        directory in ``other``, which no diff shows, is kept: it holds nothing.)"""
        if not changes:
            return False
        tops = {e.name: e for e in self.backend.read_tree(other)}
        mine = {e.name: e for e in self.backend.read_tree(root)} if root else {}
        if any(
            (tops.get(name) != mine.get(name)) if name not in ("p", "b") else False
            for name in tops.keys() | mine.keys()
        ):
            return False
        differences: list[tuple[str, TreeChange]] = []
        for top in ("p", "b"):
            here, there = mine.get(top), tops.get(top)
            for entry in (here, there):
                if entry is not None and entry.mode != layout.MODE_TREE:
                    return False
            for d in self._diff_memo(here.oid if here else None, there.oid if there else None):
                differences.append((f"{top}/{d.path}", d))
        return len(differences) == len(changes) and all(
            d.mode == MODE_BLOB and path in changes and changes[path] == d.new
            for path, d in differences
        )

    def payload_commit(
        self, batch: ObjectBatch, tip: str | None, events: Sequence[Sealed], remove: Sequence[str]
    ) -> tuple[str, list[str]]:
        """The snapshot after store commit ``tip`` that adds the bodies of
        ``events`` and removes the payloads ``remove``, and the blob ids the
        removal makes unreachable."""
        root = self.payload_tree(tip)
        changes, removed = self.removal(root, remove)
        for item in events:
            if item.body is None:
                continue
            stored, attachments = layout.split_attachments(item.body)
            for sha, data in attachments.items():
                changes[layout.attachment_path(sha)] = batch.blob(data)
            changes[layout.payload_path(item.envelope["id"])] = batch.blob(canonical.encode(stored))
        return self.payload_snapshot(batch, root, changes), removed

    def merge_changes(
        self,
        root: str | None,
        other: str | None,
        redacted: set[str],
        skip: set[str] | frozenset[str] = frozenset(),
    ) -> PayloadMerge:
        """Changes to store tree ``root`` that take in every payload of store
        tree ``other`` it lacks, except those in ``redacted`` or ``skip``, and
        remove those in ``redacted`` with the attachments only they used."""
        removing = sorted(e for e in redacted if self.stored_body(root, e) is not None)
        changes, removed = self.removal(root, removing)
        added = self.adopt(root, other, changes, redacted | skip)
        unreachable = [oid for oid in removed if oid not in changes.values()]
        return PayloadMerge(changes, unreachable, added, len(removing))

    def adopt(
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
            for sha in self.attachments_of(blob):
                path = layout.attachment_path(sha)
                have = self.backend.read_path(root, path) if root else None
                if have is None or changes.get(path, have) is None:
                    theirs = self.backend.read_path(other, path) if other else None
                    if theirs is not None:
                        changes[path] = theirs
        return added

    def attachments_of(self, blob: str, stored: Any = None) -> list[str]:
        """The attachments stored body ``blob`` refers to (``stored``: its
        decoded form, when the caller has it). Remembered by blob id, which
        fixes the bytes: a pull's checks decode every payload it merges."""
        memo: dict[str, list[str]] = self.__dict__.setdefault("_attachments", {})
        if blob not in memo:
            if len(memo) >= 1 << 16:
                memo.clear()
            memo[blob] = (
                layout.attachment_refs(stored)
                if stored is not None
                else _attachment_refs(self.backend.read_blob(blob))
            )
        return memo[blob]

    def removal(
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


def _attachment_refs(data: bytes) -> list[str]:
    """The attachments a stored body's bytes refer to. Most bodies have none,
    and bytes that hold neither the reference key nor a ``\\u`` escape (which
    could spell the key) cannot: those are not decoded."""
    if layout.ATTACHMENT_KEY.encode() not in data and b"\\u" not in data:
        return []
    return layout.attachment_refs(canonical.decode(data))
