"""What the last clean ``verify`` checked, so the next one checks only what is new.

A verification that found no problem records, in the ``verify`` sidecar
(``<git common dir>/edda/verify/``): the chain tips and the payload store's
tip it checked, the 64-bit keys of every event id it checked (``ids.u64``,
sorted) and every redaction target. ``verify --incremental`` then checks
only the commits added since those tips and the payload-store entries that
changed since that store, exactly as a full verification checks them.

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
import zlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.records import layout
from gitmem.sidecar.generations import prepare_root, sidecar_root
from gitmem.sidecar.manifest import checksum
from gitmem.storage.files import write_atomic
from gitmem.storage.locate import RepoLocation

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from gitmem.memory.api import Memory

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
    ids: Any = field(default=None, repr=False, compare=False)  # NDArray[np.uint64], sorted

    def has(self, event_id: str) -> bool:
        """Whether an event with this id (its first 64 bits) was verified."""
        import numpy as np

        key = np.uint64(key64(event_id))
        at = int(np.searchsorted(self.ids, key))
        return at < len(self.ids) and bool(self.ids[at] == key)


def _root(location: RepoLocation) -> Path:
    return sidecar_root(location, VERIFY_DIR)


def read(location: RepoLocation) -> Verified | None:
    """The record, or None when there is none or it is damaged."""
    import numpy as np

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
    record.ids = np.frombuffer(data, dtype="<u8")
    return record


def write(
    location: RepoLocation,
    tips: dict[str, str],
    payloads: str | None,
    ids: NDArray[np.uint64],
    targets: set[str],
) -> None:
    """Record a clean verification (``ids``: sorted, distinct keys)."""
    import numpy as np

    root = _root(location)
    prepare_root(root)
    data = np.asarray(ids, dtype="<u8").tobytes()
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


def merged(ids: NDArray[np.uint64], new: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """Sorted distinct ``ids`` with sorted distinct ``new`` added, in one
    pass (``np.union1d`` sorts a million keys again: 1.7 s of an incremental
    verification with nothing new)."""
    import numpy as np

    if not len(new):
        return ids
    at = np.searchsorted(ids, new)
    known = (at < len(ids)) & (ids[np.minimum(at, len(ids) - 1)] == new) if len(ids) else at < 0
    out: NDArray[np.uint64] = np.insert(ids, at[~known], new[~known]).astype(np.uint64)
    return out


def keys(event_ids: Any) -> NDArray[np.uint64]:
    """Sorted, distinct 64-bit keys of event ids."""
    import numpy as np

    return np.unique(np.fromiter((key64(e) for e in event_ids), dtype=np.uint64))


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
    memory: Memory, old_tree: str | None, new_tree: str | None, prefix: str
) -> list[tuple[str, str | None, str | None]]:
    """(name, old blob, new blob) of every entry under ``prefix`` (``p`` or
    ``b``) that differs between two payload-store trees, by name; only the
    fan-out directories whose ids differ are read."""
    backend = memory.backend
    old_root = backend.read_path(old_tree, prefix) if old_tree else None
    new_root = backend.read_path(new_tree, prefix) if new_tree else None
    if old_root == new_root:
        return []
    # git's tree comparison skips the fan-out directories whose ids did not
    # change, and compares the others in C (a million-event store's
    # directories hold ~3,900 entries each: 4.7 s read in Python)
    changes = [
        (change.path.rsplit("/", 1)[-1], change.old, change.new)
        for change in backend.diff_trees(old_root, new_root)
    ]
    changes.sort(key=lambda c: c[0])
    return changes


def payload_ref_tip(memory: Memory) -> str | None:
    return memory.backend.read_ref(layout.PAYLOAD_REF)


__all__ = ["Plan", "Verified", "forget", "keys", "plan", "read", "write"]
