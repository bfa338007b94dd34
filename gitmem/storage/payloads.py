"""The payload store: event bodies under ``refs/edda/payloads``, apart from
the hashed chains so that redaction can really remove bytes.

The store (spec/storage.md §9) is a parentless commit whose tree names its
partitions, one per ISO week of event time, each a parentless snapshot
commit kept reachable by ``refs/edda/store/<week>``: ``p/`` holds each
stored body by event id, ``b/`` the attachments split out of them by
SHA-256. A format-1 store is read as one partition, ``format1``, and kept
as it is. :class:`PayloadStore` reads the store (:class:`Roots`) and
computes new snapshots from changes ((partition, tree path) -> blob, None
deleting); it is one part of :class:`gitmem.storage.ledger.Ledger`, which
writes the objects and moves the refs.
"""

from __future__ import annotations

import functools
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

Changes = dict[tuple[str, str], str | None]
"""(partition, tree path) -> blob, None deleting it."""


@dataclass(frozen=True)
class Roots:
    """A payload store as read: each partition's commit and tree."""

    tip: str  # the store's commit
    commits: Mapping[str, str]  # partition -> its commit
    trees: Mapping[str, str]  # partition -> its tree
    # partitions whose commit the store names is missing, read from their
    # ref instead (a write killed between the two, then `git gc --prune`)
    substituted: tuple[str, ...] = ()

    @functools.cached_property
    def _newest_first(self) -> tuple[str, ...]:
        weeks = sorted((n for n in self.trees if n != layout.LEGACY_PARTITION), reverse=True)
        if layout.LEGACY_PARTITION in self.trees:
            weeks.append(layout.LEGACY_PARTITION)
        return tuple(weeks)

    def names(self, first: str | None = None) -> list[str]:
        """The partitions in the order a lookup tries them: ``first`` (the
        event's own week), then the newest, the whole format-1 store last."""
        if first is None or first not in self.trees:
            return list(self._newest_first)
        return [first, *(n for n in self._newest_first if n != first)]


class StoreUpdate(NamedTuple):
    """A new payload store: its commit and each partition's commit."""

    tip: str
    commits: dict[str, str]
    empty: bool  # no partition holds anything


STORE_MESSAGE = f"gitmem payload store\n\n{layout.FORMAT_TRAILER}: {layout.STORE_FORMAT}\n"


def partition_message(name: str) -> str:
    """A partition commit's message. The format-1 store keeps the message
    format 1 gave it, so its commit is the same on clones that upgraded and
    clones that did not."""
    if name == layout.LEGACY_PARTITION:
        return f"gitmem payload store\n\n{layout.FORMAT_TRAILER}: 1\n"
    return f"gitmem payload partition {name}\n\n{layout.FORMAT_TRAILER}: {layout.STORE_FORMAT}\n"


def week_of(time: object) -> str | None:
    """The partition an event's ``time`` names (None: not a usable time, or
    none given): where a lookup looks first."""
    if isinstance(time, int) and not isinstance(time, bool) and 0 <= time < 253402300800_000000:
        return layout.partition_of(time)
    return None


class PayloadMerge(NamedTuple):
    """What merging another payload store into ours changes."""

    changes: Changes
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
    def payload_roots(self, tip: str | None = None) -> Roots | None:
        """The payload store at commit ``tip`` (default: the current one), or
        None when there is no store yet. Raises GitError when it is damaged
        and FormatTooNewError when a newer gitmem wrote it."""
        if tip is None:
            tip = self.backend.read_ref(layout.PAYLOAD_REF)
            if tip is None:
                return None
        memo: dict[str, Roots] = self.__dict__.setdefault("_roots", {})
        if tip in memo:
            return memo[tip]
        info = self.backend.read_commit(tip)
        check_format(info.message, "the payload store")
        fmt = layout.parse_trailers(info.message).get(layout.FORMAT_TRAILER)
        if fmt == "1":  # a format-1 store: one snapshot, read as one partition
            roots = Roots(tip, {layout.LEGACY_PARTITION: tip}, {layout.LEGACY_PARTITION: info.tree})
        else:
            commits: dict[str, str] = {}
            trees: dict[str, str] = {}
            substituted: list[str] = []
            local = tip == self.backend.read_ref(layout.PAYLOAD_REF)
            for entry in self.backend.read_tree(info.tree):
                if entry.mode != layout.MODE_GITLINK or not layout.is_partition(entry.name):
                    raise GitError(
                        f"the payload store {tip} has an unexpected entry {entry.name!r}"
                    )
                commit = entry.oid
                if local and not self.backend.has_object(commit):
                    # The store moves before the partition refs: a write
                    # killed in between, then a prune, leaves the store
                    # naming a partition no ref held. Its ref holds the one
                    # before, which lacks only what that write added.
                    held = self.backend.read_ref(layout.partition_ref(entry.name))
                    if held is not None and self.backend.has_object(held):
                        commit = held
                        substituted.append(entry.name)
                part = self.backend.read_commit(commit)
                check_format(part.message, f"payload partition {entry.name}")
                commits[entry.name] = commit
                trees[entry.name] = part.tree
            roots = Roots(tip, commits, trees, tuple(substituted))
        if len(memo) >= 8:
            memo.clear()
        memo[tip] = roots
        return roots

    def locate(
        self, roots: Roots | None, event_id: str, time: object = None
    ) -> tuple[str, str] | None:
        """(partition, blob) of an event's stored body, or None when absent.
        ``time``: the event's time, whose week is looked in first."""
        if roots is None:
            return None
        path = layout.payload_path(event_id)
        week = week_of(time)
        if week is not None and week in roots.trees:  # where an event's payload is
            blob = self.backend.read_path(roots.trees[week], path)
            if blob is not None:
                return week, blob
        for name in roots.names():
            if name == week:
                continue
            blob = self.backend.read_path(roots.trees[name], path)
            if blob is not None:
                return name, blob
        return None

    def stored_body(
        self, roots: Roots | None, event_id: str, time: object = None
    ) -> tuple[str, Any] | None:
        """(blob oid, stored form) of an event's body, or None when absent."""
        found = self.locate(roots, event_id, time)
        if found is None:
            return None
        return found[1], canonical.decode(self.backend.read_blob(found[1]))

    def iter_stored_bodies(self, root: str) -> Iterator[tuple[str, tuple[str, Any]]]:
        """(event id, (blob oid, stored body)) of every payload in one partition's tree."""
        prefix_tree = self.backend.read_path(root, "p")
        if prefix_tree is None:
            return
        for fan in self.backend.read_tree(prefix_tree):
            for entry in self.backend.read_tree(fan.oid):
                yield entry.name, (entry.oid, canonical.decode(self.backend.read_blob(entry.oid)))

    def attachment(self, roots: Roots, sha: str, first: str | None = None) -> bytes | None:
        """An attachment's bytes, from partition ``first`` (the body's) or any other."""
        path = layout.attachment_path(sha)
        for name in roots.names(first):
            blob = self.backend.read_path(roots.trees[name], path)
            if blob is not None:
                return self.backend.read_blob(blob)
        return None

    def body(
        self,
        roots: Roots | None,
        event_id: str,
        blob: str | None = None,
        *,
        known: bool = False,
        time: object = None,
    ) -> dict[str, Any] | None:
        """The logical body of an event (attachments joined), None when absent.
        ``known``: its payload's blob in the store is ``blob`` (None: it has
        none), already found, not looked up again. ``time``: the event's."""
        first = week_of(time)
        if known:
            found = None if blob is None else (blob, canonical.decode(self.backend.read_blob(blob)))
        else:
            located = self.locate(roots, event_id, time)
            if located is not None:
                first = located[0]
                found = (located[1], canonical.decode(self.backend.read_blob(located[1])))
            else:
                found = None
        if found is None or roots is None:
            return None
        _, stored = found
        try:
            body = layout.join_attachments(stored, lambda sha: self.attachment(roots, sha, first))
        except KeyError as exc:
            raise GitError(f"attachment {exc} of event {event_id} is missing") from exc
        return body if isinstance(body, dict) else None

    def checked_body(
        self,
        roots: Roots | None,
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
            body = self.body(roots, envelope["id"], blob, known=known, time=envelope.get("time"))
        except GitError as exc:
            return None, exc.message
        except ValueError:  # not UTF-8, not JSON
            return None, "payload is unreadable"
        if body is None:
            return None, None
        why = payload_problem(envelope, body)
        return (None, why) if why else (body, None)

    # comparing two stores -------------------------------------------------------
    def partition_differences(
        self, root: Roots | None, other: Roots | None
    ) -> Iterator[tuple[str, str, str | None, str | None]]:
        """(partition, event id, its payload's object in ``root``, in ``other``)
        for every payload that differs between the same partition of the two
        stores. Partitions both hold alike are not read: a sync compares the
        week it added to, whatever the size of the store."""
        ours = root.trees if root else {}
        theirs = other.trees if other else {}
        for name in sorted(ours.keys() | theirs.keys()):
            a, b = ours.get(name), theirs.get(name)
            if a == b:
                continue
            for event_id, (old, new) in sorted(self._tree_differences(a, b).items()):
                yield name, event_id, old, new

    def payload_differences(
        self, root: Roots | None, other: Roots | None
    ) -> dict[str, tuple[str | None, str | None]]:
        """event id -> (its payload's object in store ``root``, in ``other``;
        None when absent) for every id whose payload differs between the two
        (an id found in another partition on one side counts as found)."""
        found: dict[str, tuple[str | None, str | None]] = {}
        for _, event_id, old, new in self.partition_differences(root, other):
            if event_id in found:
                was_old, was_new = found[event_id]
                old, new = was_old or old, was_new or new
            found[event_id] = (old, new)
        return {e: (old, new) for e, (old, new) in found.items() if old != new}

    def _tree_differences(
        self, root: str | None, other: str | None
    ) -> dict[str, tuple[str | None, str | None]]:
        """As :meth:`payload_differences`, for two partitions' trees.

        git compares the trees (:meth:`Backend.diff_trees`) and skips the
        fan-out directories both share, so the cost follows what differs,
        not the partitions' size. An id whose entry is a directory on one
        side (a damaged or forged store) is looked up on both sides.
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
        partitions while checking, merging and pushing."""
        if old == new:
            return []
        memo: dict[tuple[str | None, str | None], list[TreeChange]]
        memo = self.__dict__.setdefault("_diffs", {})
        if (old, new) not in memo:
            if len(memo) >= 16:
                memo.clear()
            memo[old, new] = self.backend.diff_trees(old, new)
        return memo[old, new]

    def missing_payloads(
        self, root: Roots | None, other: Roots | None
    ) -> Iterator[tuple[str, str]]:
        """(event id, blob) of payloads in store ``other`` that ``root``
        lacks, by id."""
        if other is None:  # (comparing would list every payload of ``root``)
            return
        differences = self.payload_differences(root, other)
        for event_id in sorted(differences):
            before, after = differences[event_id]
            if before is None and after is not None:
                yield event_id, after

    def changed_payloads(self, old: Roots, new: Roots | None) -> Iterator[str]:
        """Ids whose payload blob differs between two stores while present in
        both. Payloads never change for an id (its envelope pins them), so
        these were altered behind gitmem's back."""
        differences = self.payload_differences(old, new)
        for event_id in sorted(differences):
            before, after = differences[event_id]
            if before is not None and after is not None:
                yield event_id

    # building snapshots ---------------------------------------------------------
    def payload_snapshot(
        self,
        batch: ObjectBatch,
        root: Roots | None,
        changes: Changes,
        *,
        like: Roots | None = None,
    ) -> StoreUpdate:
        """A new payload store: ``root`` with ``changes`` applied.

        Only the partitions ``changes`` name are rewritten; a partition left
        empty stays, with an empty tree. Every commit is parentless, with a fixed identity
        and time 0: the same payloads give the same commits on every clone,
        and replaced snapshots become unreachable, which is what lets
        redaction really remove bytes.

        ``like`` is a store the result may be (the fetched one): a partition
        whose changes are exactly what sets it apart from ``like``'s takes
        that tree, and none of its fan-out directories is read and written
        again.
        """
        grouped: dict[str, dict[str, str | None]] = {}
        for (name, path), blob in changes.items():
            grouped.setdefault(name, {})[path] = blob
        commits = dict(root.commits) if root else {}
        empty = {name: False for name in commits}
        for name, edits in sorted(grouped.items()):
            tree = root.trees.get(name) if root else None
            other = like.trees.get(name) if like else None
            if other is not None and like is not None and self._becomes(tree, other, edits):
                new = other
                commits[name] = self._partition_commit(batch, like, name)
            else:
                new = edit_tree(self.backend, batch, tree, edits)
                if new == EMPTY_TREE_MARK:
                    # kept, empty: a remote's partition ref is replaced on the
                    # next push, never left holding what was redacted
                    new = batch.tree([])
                if new != tree or name not in commits:
                    commits[name] = batch.commit(new, [], partition_message(name), 0)
            empty[name] = new == batch.tree([])
        for name in sorted(set(like.trees) - set(commits) if like else ()):
            # a partition only ``like`` names, of which nothing was taken (it
            # is empty, or all it holds was redacted): it stays, empty, so
            # that a push replaces the remote's and clones converge
            assert like is not None
            if like.trees[name] == batch.tree([]):
                commits[name] = self._partition_commit(batch, like, name)
            else:
                commits[name] = batch.commit(batch.tree([]), [], partition_message(name), 0)
            empty[name] = True
        return self.store_commit(batch, commits, empty)

    def _partition_commit(self, batch: ObjectBatch, like: Roots, name: str) -> str:
        """Partition ``name`` of store ``like`` as this gitmem writes it: the
        fetched commit when it is one (the same tree gives the same commit on
        every clone), else a commit of its tree made here."""
        commit = like.commits[name]
        info = self.backend.read_commit(commit)
        if not info.parents and info.message == partition_message(name):
            return commit
        return batch.commit(like.trees[name], [], partition_message(name), 0)

    @staticmethod
    def lacks_partitions(root: Roots | None, other: Roots | None) -> bool:
        """Whether store ``other`` names a partition ``root`` does not."""
        return other is not None and not set(other.trees) <= set(root.trees if root else ())

    def store_commit(
        self, batch: ObjectBatch, commits: Mapping[str, str], empty: Mapping[str, bool]
    ) -> StoreUpdate:
        """The store commit naming partition commits ``commits`` (``empty``:
        which of them hold nothing)."""
        entries = [(name, layout.MODE_GITLINK, oid) for name, oid in commits.items()]
        tip = batch.commit(batch.tree(entries), [], STORE_MESSAGE, 0)
        return StoreUpdate(tip, dict(commits), all(empty.values()))

    def partition_base(self, batch: ObjectBatch, old: str | None, new: str) -> str:
        """The commit pushed as ``refs/edda/store-base/<partition>`` beside
        partition commit ``new``, which replaces ``old`` on a remote.

        Its tree is empty and its parent is ``old`` when ``new`` holds every
        file ``old`` holds: a fetch or push of both then has ``old`` as an
        edge, and git sends only what ``new`` adds instead of nearly every
        payload (a partition has no parent of its own). When ``new`` dropped
        something (a redaction), the commit has no parent: it must not keep
        the removed bytes reachable on the remote. Fixed identity and time
        0, so it depends only on ``old``.
        """
        parents: list[str] = []
        if old is not None:
            before = self.backend.read_commit(old).tree
            after = self.backend.read_commit(new).tree
            # by id, as the sync's checks already compared the two
            kept = all(
                theirs is None for _, theirs in self._tree_differences(after, before).values()
            )
            attachments = self._diff_memo(
                self.backend.read_path(before, "b"), self.backend.read_path(after, "b")
            )
            tops = self.backend.read_tree(before)
            others = [e.name for e in tops if e.name not in ("p", "b")]
            if kept and not others and all(d.old is None for d in attachments):
                parents = [old]
        message = f"gitmem payload base\n\n{layout.FORMAT_TRAILER}: {layout.STORE_FORMAT}\n"
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
    ) -> tuple[StoreUpdate, list[str]]:
        """The store after store commit ``tip`` that adds the bodies of
        ``events`` (each to the partition of its time) and removes the
        payloads ``remove``, and the blob ids the removal makes unreachable."""
        root = self.payload_roots(tip) if tip else None
        changes, removed = self.removal(root, remove)
        for item in events:
            if item.body is None:
                continue
            name = layout.partition_of(item.envelope["time"])
            stored, attachments = layout.split_attachments(item.body)
            for sha, data in attachments.items():
                changes[name, layout.attachment_path(sha)] = batch.blob(data)
            changes[name, layout.payload_path(item.envelope["id"])] = batch.blob(
                canonical.encode(stored)
            )
        return self.payload_snapshot(batch, root, changes), removed

    def merge_changes(
        self,
        root: Roots | None,
        other: Roots | None,
        redacted: set[str],
        skip: set[str] | frozenset[str] = frozenset(),
    ) -> PayloadMerge:
        """Changes to store ``root`` that take in every payload of store
        ``other`` it lacks, except those in ``redacted`` or ``skip``, and
        remove those in ``redacted`` with the attachments only they used."""
        removing = sorted(e for e in redacted if self.locate(root, e) is not None)
        changes, removed = self.removal(root, removing)
        added = self.adopt(root, other, changes, redacted | skip)
        unreachable = [oid for oid in removed if oid not in changes.values()]
        return PayloadMerge(changes, unreachable, added, len(removing))

    def adopt(
        self,
        root: Roots | None,
        other: Roots | None,
        changes: Changes,
        leave: set[str] | frozenset[str],
    ) -> int:
        """Add to ``changes`` every payload of store ``other`` that ``root``
        lacks and ``leave`` does not name, with the attachments it needs, in
        the partition ``other`` keeps it in; returns how many payloads."""
        if other is None:
            return 0
        differences = list(self.partition_differences(root, other))
        elsewhere = {event_id for _, event_id, old, _ in differences if old is not None}
        added = 0
        for name, event_id, old, blob in differences:
            if old is not None or blob is None or event_id in leave or event_id in elsewhere:
                continue  # (elsewhere: ours holds it in another partition)
            changes[name, layout.payload_path(event_id)] = blob
            added += 1
            mine = root.trees.get(name) if root else None
            theirs = other.trees[name]
            for sha in self.attachments_of(blob):
                path = layout.attachment_path(sha)
                have = self.backend.read_path(mine, path) if mine else None
                if have is None or changes.get((name, path), have) is None:
                    found = self.backend.read_path(theirs, path)
                    if found is not None:
                        changes[name, path] = found
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

    def removal(self, root: Roots | None, remove: Sequence[str]) -> tuple[Changes, list[str]]:
        """Changes deleting the payloads ``remove`` (from every partition that
        holds one) and the attachments only they use there, and the blob ids
        that become unreachable (for the purge list)."""
        changes: Changes = {}
        removed: list[str] = []
        if root is None:
            return changes, removed
        for event_id in remove:
            path = layout.payload_path(event_id)
            for name in root.names():
                tree = root.trees[name]
                blob = self.backend.read_path(tree, path)
                if blob is None:
                    continue
                stored = canonical.decode(self.backend.read_blob(blob))
                changes[name, path] = None
                removed.append(blob)
                for sha in self._orphaned_attachments(
                    tree, event_id, layout.attachment_refs(stored), remove
                ):
                    apath = layout.attachment_path(sha)
                    changes[name, apath] = None
                    oid = self.backend.read_path(tree, apath)
                    if oid:
                        removed.append(oid)
        return changes, removed

    def _orphaned_attachments(
        self, root: str, event_id: str, shas: list[str], removing: Sequence[str]
    ) -> list[str]:
        """Attachments of ``event_id`` that no payload of partition tree
        ``root`` outside ``removing`` uses."""
        if not shas:
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
