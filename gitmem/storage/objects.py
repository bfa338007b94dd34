"""Build git objects in memory and write them as one packfile.

Writing thousands of loose objects (one file, one rename and, for
durability, one fsync each) capped batched appends at a few hundred events
per second and left thousands of loose files behind. A transaction collects
its blobs, trees and commits in an :class:`ObjectBatch`; :meth:`ObjectBatch.write`
then does what git itself does: a small batch becomes loose objects (a pack
per tiny write would leave thousands of packs, and every lookup searches
them all), a large one a single ``pack-*.pack`` + ``.idx`` pair (version 2,
no deltas), two files and one fsync whatever its size. ``git gc --auto``,
started in the background when objects pile up, consolidates both.

Object ids are computed here with git's own serialisation, so they are the
same whichever backend later reads them (libgit2 or the git CLI) and the same
on every clone.
"""

from __future__ import annotations

import hashlib
import os
import struct
import zlib
from collections.abc import Iterable, Sequence

from gitmem.records.layout import IDENTITY_EMAIL, IDENTITY_NAME, MODE_TREE
from gitmem.storage.files import fsync_dir, write_atomic

TYPE_CODES = {"commit": 1, "tree": 2, "blob": 3}
# Batches with at least this many new objects are written as a pack. A single
# append makes about ten objects; a batched flush or import makes thousands.
PACK_THRESHOLD = 256


def object_id(kind: str, data: bytes) -> str:
    """The SHA-1 object id git gives ``data`` of type ``kind``."""
    return hashlib.sha1(f"{kind} {len(data)}\0".encode() + data, usedforsecurity=False).hexdigest()


def tree_bytes(entries: Iterable[tuple[str, int, str]]) -> bytes:
    """Serialise tree entries ``(name, mode, oid)`` in git's canonical order
    (by name, where a subtree sorts as if its name ended in ``/``)."""
    ordered = sorted(entries, key=lambda e: e[0] + "/" if e[1] == MODE_TREE else e[0])
    return b"".join(
        f"{mode:o} {name}\0".encode() + bytes.fromhex(oid) for name, mode, oid in ordered
    )


def commit_bytes(tree: str, parents: Sequence[str], message: str, time_s: int) -> bytes:
    """Serialise a commit by gitmem's fixed identity at ``time_s`` (+0000)."""
    who = f"{IDENTITY_NAME} <{IDENTITY_EMAIL}> {time_s} +0000"
    lines = [f"tree {tree}", *(f"parent {p}" for p in parents), f"author {who}", f"committer {who}"]
    return ("\n".join(lines) + "\n\n" + message).encode()


class ObjectBatch:
    """Objects waiting to be written together."""

    def __init__(self) -> None:
        self.objects: dict[str, tuple[str, bytes]] = {}

    def __len__(self) -> int:
        return len(self.objects)

    def add(self, kind: str, data: bytes) -> str:
        oid = object_id(kind, data)
        self.objects.setdefault(oid, (kind, data))
        return oid

    def blob(self, data: bytes) -> str:
        return self.add("blob", data)

    def tree(self, entries: Iterable[tuple[str, int, str]]) -> str:
        return self.add("tree", tree_bytes(entries))

    def commit(self, tree: str, parents: Sequence[str], message: str, time_s: int) -> str:
        return self.add("commit", commit_bytes(tree, parents, message, time_s))

    def write(self, objects_dir: str, *, fsync: bool = True, skip: Iterable[str] = ()) -> None:
        """Write every object not in ``skip``: loose when few, else as one pack."""
        skipped = set(skip)
        if len(self.objects) - len(skipped) >= PACK_THRESHOLD:
            self.write_pack(objects_dir, fsync=fsync, skip=skipped)
        else:
            self.write_loose(objects_dir, fsync=fsync, skip=skipped)

    def write_loose(self, objects_dir: str, *, fsync: bool = True, skip: Iterable[str] = ()) -> int:
        """Write objects as loose files (zlib, renamed into place); return how many."""
        skipped = set(skip)
        dirs: set[str] = set()
        count = 0
        for oid, (kind, data) in sorted(self.objects.items()):
            if oid in skipped:
                continue
            directory = os.path.join(objects_dir, oid[:2])
            path = os.path.join(directory, oid[2:])
            if os.path.exists(path):
                continue
            os.makedirs(directory, exist_ok=True)
            payload = zlib.compress(f"{kind} {len(data)}\0".encode() + data, 1)
            write_atomic(
                path, payload, fsync=fsync, mode=0o444, tmp_prefix="tmp_obj_", sync_dir=False
            )
            dirs.add(directory)
            count += 1
        if fsync:
            for directory in dirs:
                fsync_dir(directory)
        return count

    def write_pack(
        self, objects_dir: str, *, fsync: bool = True, skip: Iterable[str] = ()
    ) -> str | None:
        """Write every object not in ``skip`` into one new pack under
        ``objects_dir/pack``; return the pack's name (None when empty)."""
        skipped = set(skip)
        items = sorted((oid, kd) for oid, kd in self.objects.items() if oid not in skipped)
        if not items:
            return None
        pack = bytearray(b"PACK" + struct.pack(">II", 2, len(items)))
        offsets: list[int] = []
        crcs: list[int] = []
        for _, (kind, data) in items:
            offsets.append(len(pack))
            entry = _entry_header(TYPE_CODES[kind], len(data)) + zlib.compress(data, 1)
            crcs.append(zlib.crc32(entry))
            pack += entry
        pack_sum = hashlib.sha1(pack, usedforsecurity=False).digest()
        pack += pack_sum
        index = _index_bytes([bytes.fromhex(oid) for oid, _ in items], crcs, offsets, pack_sum)
        name = "pack-" + pack_sum.hex()
        directory = os.path.join(objects_dir, "pack")
        os.makedirs(directory, exist_ok=True)
        # The .idx makes a pack visible to git, so it goes in last.
        pack_path = os.path.join(directory, name + ".pack")
        write_atomic(
            pack_path, bytes(pack), fsync=fsync, mode=0o444, tmp_prefix="tmp_pack_", sync_dir=False
        )
        write_atomic(
            pack_path[:-5] + ".idx",
            index,
            fsync=fsync,
            mode=0o444,
            tmp_prefix="tmp_idx_",
            sync_dir=False,
        )
        if fsync:
            fsync_dir(directory)
        return name


def _entry_header(type_code: int, size: int) -> bytes:
    byte = (type_code << 4) | (size & 0x0F)
    size >>= 4
    out = bytearray()
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def _index_bytes(oids: list[bytes], crcs: list[int], offsets: list[int], pack_sum: bytes) -> bytes:
    """A version-2 pack index for objects already sorted by id."""
    fanout = [0] * 256
    for oid in oids:
        fanout[oid[0]] += 1
    total = 0
    for i in range(256):
        total += fanout[i]
        fanout[i] = total
    large = [off for off in offsets if off >= 0x80000000]
    small = []
    for off in offsets:
        small.append(off if off < 0x80000000 else 0x80000000 | large.index(off))
    body = bytearray(b"\xfftOc" + struct.pack(">I", 2))
    body += struct.pack(">256I", *fanout)
    body += b"".join(oids)
    body += struct.pack(f">{len(crcs)}I", *crcs)
    body += struct.pack(f">{len(small)}I", *small)
    body += struct.pack(f">{len(large)}Q", *large)
    body += pack_sum
    body += hashlib.sha1(body, usedforsecurity=False).digest()
    return bytes(body)
