"""Every payload of a store snapshot in one pass: for readers of most bodies.

A body is found by its path in its partition, ``p/<id[0:2]>/<id>``, which
parses that fan-out directory (at a million events, ~3,900 entries, 3.8 ms) unless
libgit2 keeps it cached. A pass that reads most bodies once (an export, an
index build) lists the store instead: each directory read once into two
arrays, every event id sorted and its blob beside it, and a body is then
read by its blob id. That also lets such a pass read with libgit2's object
cache off (:meth:`Backend.streaming`), where the cache would only hold on to
commits and trees it never reads again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gitmem.errors import GitError
from gitmem.records import layout
from gitmem.storage.payloads import flat_directory

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from gitmem.storage.backends.base import Backend
    from gitmem.storage.payloads import Roots

FOUND, ABSENT, UNKNOWN = 1, 0, -1
"""What :meth:`PayloadListing.find` says of an id."""


@dataclass(frozen=True)
class PayloadListing:
    """Every payload's event id (UTF-8, sorted, distinct) and its blob (raw id)."""

    names: NDArray[np.bytes_]
    oids: NDArray[np.uint8]

    def __len__(self) -> int:
        return len(self.names)

    def find(self, ids: NDArray[np.bytes_]) -> tuple[NDArray[np.uint8], NDArray[np.int8]]:
        """Per id (UTF-8): its payload's blob (raw; zeros when there is none)
        and :data:`FOUND`, :data:`ABSENT` or :data:`UNKNOWN` (not 32 ASCII
        characters: no listed name can be it, the caller looks it up by path)."""
        import numpy as np

        width = self.oids.shape[1]
        payloads = np.zeros((len(ids), width), dtype=np.uint8)
        if not len(ids):
            return payloads, np.zeros(0, dtype=np.int8)
        at = np.searchsorted(self.names, ids)
        hit = at < len(self.names)
        hit[hit] = self.names[at[hit]] == ids[hit]
        found = hit.astype(np.int8)
        plain = np.char.str_len(ids) == 32
        ascii_ = np.frombuffer(ids.tobytes(), dtype=np.uint8) < 128
        plain &= ascii_.reshape(len(ids), -1).all(axis=1)
        found[~plain] = UNKNOWN
        payloads[hit] = self.oids[at[hit]]
        return payloads, found

    def blob(self, event_id: str) -> tuple[int, str | None]:
        """(:data:`FOUND`, the blob's id), (:data:`ABSENT`, None) or
        (:data:`UNKNOWN`, None) for one event id."""
        import numpy as np

        if len(event_id) != 32 or not event_id.isascii():
            return UNKNOWN, None
        key = event_id.encode()
        at = int(np.searchsorted(self.names, key))
        if at < len(self.names) and self.names[at] == key:
            return FOUND, self.oids[at].tobytes().hex()
        return ABSENT, None


def payload_listing(backend: Backend, tree: str | None, width: int) -> PayloadListing | None:
    """The listing of store tree ``tree`` (None: the empty store; ``width``:
    bytes of an object id), or None when a fan-out directory holds anything
    but payload files or its names are not in order: lookups by path then
    decide, as a reader by path would."""
    import numpy as np

    names: list[NDArray[np.bytes_]] = []
    oids: list[NDArray[np.uint8]] = []
    root = backend.read_path(tree, "p") if tree is not None else None
    for fan in backend.read_tree(root) if root is not None else []:
        if fan.mode != layout.MODE_TREE or len(fan.name) != 2 or not fan.name.isascii():
            continue  # no lookup by path (p/<first two characters>/<id>) goes there
        flat = flat_directory(backend.read_tree_bytes(fan.oid), width)
        if flat is None:
            return None
        rows = np.frombuffer(flat.data, dtype=np.uint8).reshape(flat.count, flat.size)
        named = np.ascontiguousarray(rows[:, flat.NAME_AT : flat.OID_AT - 1]).view("S32").ravel()
        # only the entries a lookup by path finds there
        prefix = np.frombuffer(fan.name.encode(), dtype=np.uint8)
        here = (rows[:, flat.NAME_AT : flat.NAME_AT + 2] == prefix).all(axis=1)
        names.append(named[here])
        oids.append(rows[here, flat.OID_AT :])
    if not names:
        return PayloadListing(np.array([], dtype="S32"), np.zeros((0, width), dtype=np.uint8))
    every = np.concatenate(names)
    del names
    if len(every) > 1 and not (every[1:] > every[:-1]).all():
        return None  # not sorted and distinct: lookups by path decide
    return PayloadListing(every, np.concatenate(oids))


def listed(backend: Backend, roots: Roots | None) -> PayloadListing | None:
    """The listing of every partition of store ``roots``, read with the
    object cache off (each directory is read once), or None: no store, one
    the listing cannot read, an unreadable directory or an id in two
    partitions (a reader by path then decides, and reports)."""
    if roots is None:
        return None
    import numpy as np

    with backend.streaming():
        try:
            parts = []
            for name in sorted(roots.trees):
                tree = roots.trees[name]
                part = payload_listing(backend, tree, len(tree) // 2)
                if part is None:
                    return None
                parts.append(part)
        except GitError:
            return None
    if len(parts) == 1:
        return parts[0]
    if not parts:
        return None
    names = np.concatenate([p.names for p in parts])
    order = np.argsort(names, kind="stable")
    names = names[order]
    if len(names) > 1 and not (names[1:] > names[:-1]).all():
        return None
    return PayloadListing(names, np.concatenate([p.oids for p in parts])[order])
