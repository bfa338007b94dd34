"""What the last clean ``verify`` checked, so the next one checks only what is new.

A verification that found no problem records, in the ``verify`` sidecar
(``<git common dir>/edda/verify/``): the chain tips and the payload store's
tip it checked, the 64-bit keys of every event id it checked (``ids.u64``,
sorted) and every redaction target. ``verify --incremental`` then checks
only the commits added since those tips and the payload-store entries that
changed since that store, exactly as a full verification checks them. A
payload directory that only gained the new events' payloads is recognised
from its new version alone (:func:`_gained`): new events cost reading the
directories their payloads went to, not those directories' old versions too.

It falls back to a full verification whenever what it would have to
re-check is not new: no record (or a damaged one, or one of another
version), a chain ref deleted or moved to a commit that does not descend
from its recorded tip, a new event whose id was already verified (a
duplicate, or a 64-bit collision), an old event's payload changed or gone
without a redaction, an attachment changed or removed. What it does not do
is read old objects again: damage to bytes already verified (a failing
disk) is ``git edda verify``'s (full) and ``git fsck``'s to find.

The record is derived local state, like the index: deleting it costs one
full verification. Its fields carry a checksum; the ids file's CRC-32 is in
the record.
"""

from __future__ import annotations

import json
import sys
import zlib
from array import array
from bisect import bisect_left
from collections.abc import Collection, Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.records import layout
from gitmem.sidecar.generations import prepare_root, sidecar_root
from gitmem.sidecar.manifest import checksum
from gitmem.storage.files import write_atomic
from gitmem.storage.locate import RepoLocation
from gitmem.storage.payloads import FlatDirectory, flat_directory

if TYPE_CHECKING:
    from gitmem.memory.api import Memory
    from gitmem.storage.payloads import Roots

VERIFY_DIR = "verify"
RECORD = "record.json"
IDS = "ids.u64"
VERSION = 1


def key64(event_id: str) -> int:
    """An event id's first 64 bits (as the index's ``key64``)."""
    return int(event_id[:16], 16)


@dataclass
class Verified:
    """The record of the last clean verification (see the module docstring)."""

    version: int
    tips: dict[str, str]  # chain ref -> tip checked
    payloads: str | None  # the payload store's tip checked
    targets: list[str]  # every redaction target checked
    ids_crc: str  # CRC-32 of ids.u64
    events: int  # ids in ids.u64
    checksum: str = ""
    # the keys, sorted: an array, not numpy's (whose import alone is a
    # quarter of an incremental verification with nothing new)
    ids: array[int] = field(default_factory=lambda: array("Q"), repr=False, compare=False)

    def has(self, event_id: str) -> bool:
        """Whether an event with this id (its first 64 bits) was verified."""
        key = key64(event_id)
        at = bisect_left(self.ids, key)
        return at < len(self.ids) and self.ids[at] == key


def _root(location: RepoLocation) -> Path:
    return sidecar_root(location, VERIFY_DIR)


def read(location: RepoLocation) -> Verified | None:
    """The record, or None when there is none or it is damaged."""
    root = _root(location)
    try:
        raw = json.loads((root / RECORD).read_text(encoding="utf-8"))
        data = (root / IDS).read_bytes()
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or raw.get("version") != VERSION:
        return None
    if raw.get("checksum") != checksum(raw):
        return None
    try:
        record = Verified(**raw)
    except TypeError:
        return None
    if (
        not isinstance(record.tips, dict)
        or not isinstance(record.targets, list)
        or f"{zlib.crc32(data):08x}" != record.ids_crc
        or len(data) != 8 * record.events
    ):
        return None
    record.ids = _keys_of(data)
    return record


def write(
    location: RepoLocation,
    tips: dict[str, str],
    payloads: str | None,
    ids: array[int],
    targets: set[str],
) -> None:
    """Record a clean verification (``ids``: sorted, distinct keys)."""
    root = _root(location)
    prepare_root(root)
    data = _bytes_of(ids)
    record: dict[str, Any] = asdict(
        Verified(
            VERSION, dict(tips), payloads, sorted(targets), f"{zlib.crc32(data):08x}", len(ids)
        )
    )
    record.pop("ids")
    record["checksum"] = checksum(record)
    # the ids first: a record naming ids it does not match is ignored
    write_atomic(str(root / IDS), data, fsync=False)
    write_atomic(str(root / RECORD), json.dumps(record, sort_keys=True).encode(), fsync=False)


def forget(location: RepoLocation) -> None:
    """Drop the record (the next verification is full)."""
    (_root(location) / RECORD).unlink(missing_ok=True)


def merged(ids: array[int], new: array[int]) -> array[int]:
    """Sorted distinct ``ids`` with sorted distinct ``new`` added, in one
    pass: the runs between insertion points are copied whole (re-sorting a
    million keys to add a few was 1.7 s of an incremental verification)."""
    if not len(new):
        return ids
    out = array("Q")
    start = 0
    for key in new:
        at = bisect_left(ids, key, start)
        if at < len(ids) and ids[at] == key:
            continue
        out += ids[start:at]
        out.append(key)
        start = at
    out += ids[start:]
    return out


def keys(event_ids: Iterable[str]) -> array[int]:
    """Sorted, distinct 64-bit keys of event ids."""
    return array("Q", sorted({key64(e) for e in event_ids}))


def _keys_of(data: bytes) -> array[int]:
    """The keys stored little-endian in ``data``."""
    out = array("Q")
    out.frombytes(data)
    if sys.byteorder == "big":
        out.byteswap()
    return out


def _bytes_of(ids: array[int]) -> bytes:
    if sys.byteorder == "big":
        ids = array("Q", ids)
        ids.byteswap()
    return ids.tobytes()


@dataclass
class Plan:
    """What an incremental verification checks: per chain, its new commits."""

    commits: dict[str, list[str]]


def plan(memory: Memory, record: Verified, refs: dict[str, str]) -> Plan | str:
    """The new commits per chain since ``record``, or why a full verification is needed."""
    backend = memory.backend
    for ref, tip in record.tips.items():
        if ref not in refs:
            return f"{ref} was deleted"
        if refs[ref] != tip and not backend.has_object(tip):
            # a record copied from another clone, or history rewritten and pruned
            return f"the verified tip of {ref} is not in this repository"
        if refs[ref] != tip and not backend.is_ancestor(tip, refs[ref]):
            return f"{ref} no longer descends from the verified tip"
    old = sorted(set(record.tips.values()))
    commits: dict[str, list[str]] = {}
    for ref, tip in sorted(refs.items()):
        if record.tips.get(ref) == tip:
            continue
        # anything reachable from a verified tip was verified
        commits[ref] = backend.commits_between([tip], old)
    return Plan(commits)


def payload_changes(
    memory: Memory,
    old_store: Roots | None,
    new_store: Roots | None,
    prefix: str,
    added: Collection[str] = (),
) -> list[tuple[str, str | None, str | None]]:
    """(name, old blob, new blob) of every entry under ``prefix`` (``p`` or
    ``b``) that differs between the same partition of two payload stores,
    by name; only the partitions, and in them the fan-out directories,
    whose ids differ are read. ``added``: the events whose payloads are
    expected to be new (see :func:`_gained`)."""
    old = old_store.trees if old_store else {}
    new = new_store.trees if new_store else {}
    changes: list[tuple[str, str | None, str | None]] = []
    for name in sorted(old.keys() | new.keys()):
        if old.get(name) != new.get(name):
            changes.extend(_partition_changes(memory, old.get(name), new.get(name), prefix, added))
    changes.sort(key=lambda c: c[0])
    return changes


def _partition_changes(
    memory: Memory,
    old_tree: str | None,
    new_tree: str | None,
    prefix: str,
    added: Collection[str],
) -> list[tuple[str, str | None, str | None]]:
    backend = memory.backend
    old_root = backend.read_path(old_tree, prefix) if old_tree else None
    new_root = backend.read_path(new_tree, prefix) if new_tree else None
    if old_root == new_root:
        return []
    changes = _by_directory(backend, old_root, new_root, added) if old_root and new_root else None
    if changes is None:
        # git's tree comparison skips the fan-out directories whose ids did not
        # change, and compares the others in C (a million-event store's
        # directories hold ~3,900 entries each: 4.7 s read in Python)
        changes = [
            (change.path.rsplit("/", 1)[-1], change.old, change.new)
            for change in backend.diff_trees(old_root, new_root)
        ]
    return changes


def _by_directory(
    backend: Any, old_root: str, new_root: str, added: Collection[str]
) -> list[tuple[str, str | None, str | None]] | None:
    """The changes between two fan-out roots, one directory at a time: by
    :func:`_gained` where a directory only gained payloads of ``added``,
    else by git's comparison of the two directories. None when either root
    holds anything but directories (git's comparison of the roots then)."""
    old = {e.name: e for e in backend.read_tree(old_root)}
    new = {e.name: e for e in backend.read_tree(new_root)}
    if any(e.mode != layout.MODE_TREE for e in (*old.values(), *new.values())):
        return None
    expected: dict[str, list[str]] = {}
    for eid in added:
        expected.setdefault(eid[:2], []).append(eid)
    changes: list[tuple[str, str | None, str | None]] = []
    for name in sorted(old.keys() | new.keys()):
        before, after = old.get(name), new.get(name)
        if before is not None and after is not None:
            if before.oid == after.oid:
                continue
            gained = _gained(backend, before.oid, after.oid, expected.get(name, []))
            if gained is not None:
                changes.extend((eid, None, blob) for eid, blob in gained)
                continue
        changes.extend(
            (change.path.rsplit("/", 1)[-1], change.old, change.new)
            for change in backend.diff_trees(
                before.oid if before else None, after.oid if after else None
            )
        )
    return changes


def _gained(backend: Any, old: str, new: str, ids: list[str]) -> list[tuple[str, str]] | None:
    """(id, blob) of the payloads of ``ids`` that fan-out directory ``new``
    holds, when ``new`` is exactly ``old`` plus those entries; None when it
    is not (or when ``new`` is not a plain, sorted list of payload files).

    Proved without reading ``old``: ``new``'s entries less those are hashed
    as a tree, and the hash must be ``old``'s id, as git's comparison of two
    trees trusts equal ids. An incremental verification of 100 new events
    at a million reads the 83 directories they went to instead of those
    and their 83 old versions (0.6 s with libgit2's comparison)."""
    import hashlib

    if not ids:
        return None
    width = len(new) // 2  # bytes of an object id: SHA-1 or SHA-256
    flat = flat_directory(backend.read_tree_bytes(new), width)
    if flat is None:
        return None  # entries of other shapes: git's comparison instead
    data, size, count = flat.data, flat.size, flat.count
    found = []
    for wanted in sorted({e.encode() for e in ids}):
        at = _entry(flat, wanted)
        if at is None:
            continue
        # in order among its neighbours: the directory stays sorted and its
        # names distinct (what it had before was, when it was verified)
        if (at and flat.name(at - 1) >= wanted) or (at + 1 < count and flat.name(at + 1) <= wanted):
            return None
        found.append(at)
    found.sort()
    parts, start = [], 0
    for at in found:
        parts.append(data[start : at * size])
        start = (at + 1) * size
    parts.append(data[start:])
    left = b"".join(parts)
    algorithm = hashlib.sha1 if width == 20 else hashlib.sha256
    if algorithm(b"tree %d\0" % len(left) + left).hexdigest() != old:
        return None
    return [(flat.name(at).decode(), flat.oid(at)) for at in found]


def _entry(flat: FlatDirectory, name: bytes) -> int | None:
    """The index of the entry named ``name`` in a flat directory, or None."""
    head = flat.data[: flat.NAME_AT] + name + b"\0"
    start = flat.data.find(head)
    while start >= 0:
        if start % flat.size == 0:
            return int(start // flat.size)
        start = flat.data.find(head, start + 1)
    return None


def payload_ref_tip(memory: Memory) -> str | None:
    return memory.backend.read_ref(layout.PAYLOAD_REF)


__all__ = ["Plan", "Verified", "forget", "keys", "plan", "read", "write"]
