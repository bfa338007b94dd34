"""The events an export writes, read twice instead of held: every event in
(time, id) order with memory that does not grow with the bodies.

``Memory.events`` reads every envelope and body of the store into memory
(at a million events, gigabytes). An export needs each event only once, in
order, so it reads in two passes: the first walks the chains and keeps, per
event, only what orders and finds it (its time, id, envelope blob, commit and
ref: under 100 bytes); the second reads each event's envelope and body again
in (time, id) order and hands it out. The events are the ones
``Memory.events`` gives, with the same ref, commit, body, redaction state and
problem (an event reachable from several refs belongs to the first ref that
reaches it, in ``memory_refs`` order, at the first commit its walk meets).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitmem.errors import FormatError
from gitmem.memory.event import Event
from gitmem.records import canonical, layout
from gitmem.storage.eventchain import check_format
from gitmem.storage.payloadlist import listed

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from gitmem.memory.api import Memory
    from gitmem.storage.payloads import Roots


@dataclass
class ExportEvents:
    """The events of an export, in (time, id) order; iterating reads them
    (each envelope and body once more), so the memory they came from must
    stay open until the iteration ends."""

    memory: Memory
    tree: Roots | None  # the payload store
    blobs: NDArray[np.uint8]  # per event in order: its envelope blob's raw id
    commit_of: NDArray[np.int32]  # per event in order: its index in ``commits``
    commits: list[str]
    refs: list[str]  # per commit: the ref it was met on
    redacted: frozenset[str]
    # per event in order: its payload's blob (raw id), found when the store
    # was listed; ``found``: 1 found, 0 absent, -1 not listed (looked up)
    payloads: NDArray[np.uint8]
    found: NDArray[np.int8]

    def __len__(self) -> int:
        return len(self.commit_of)

    def __iter__(self) -> Iterator[Event]:
        backend = self.memory.backend
        # Every envelope and body is read once; a body the listing could not
        # place is looked up by path, which needs the store's directories
        # cached (then the cache stays on).
        if len(self.found) and int(self.found.min()) < 0:
            yield from self._events()
        else:
            with backend.streaming():
                yield from self._events()

    def _events(self) -> Iterator[Event]:
        backend, ledger = self.memory.backend, self.memory.ledger
        rows = zip(
            self.blobs, self.commit_of.tolist(), self.payloads, self.found.tolist(), strict=True
        )
        for raw, index, payload, found in rows:
            envelope = canonical.decode(backend.read_blob(raw.tobytes().hex()))
            hidden = envelope["id"] in self.redacted
            if hidden:
                body, problem = None, None
            elif found < 0:
                body, problem = ledger.checked_body(self.tree, envelope)
            else:
                blob = payload.tobytes().hex() if found else None
                body, problem = ledger.checked_body(self.tree, envelope, blob, known=True)
            yield Event(envelope, body, self.refs[index], self.commits[index], hidden, problem)


def export_events(memory: Memory, branch: str | None = None) -> ExportEvents:
    """Every event (or ``branch``'s own, as ``Memory.events(branch=branch,
    trunk="none")`` gives them), plus, for a branch, the redaction events of
    other branches that redact its events: a bundle carries the redaction of
    every event it sends without a body, or import refuses it.

    Reads every envelope once here (raising what reading the chains raises,
    before the caller writes anything) and keeps only what orders and finds
    each event.
    """
    import numpy as np

    memory.flush()
    tips = memory.ledger.memory_refs()
    with memory.backend.streaming():  # every commit and its envelopes, read once
        rows = _walk(memory, tips)
    tree = memory.ledger.payload_roots()
    ids = rows.all_ids()
    # an event met in several commits is the one met first
    first = np.unique(ids, return_index=True)[1]
    first.sort()
    redacted, redactions = _redactions(memory, tree, rows, first)
    commit_of = np.frombuffer(rows.commit_of, dtype=np.int32)
    keep = first
    if branch is not None:
        # the branch's own: every event in a commit its chain reaches
        own = _own_ref(memory, branch, tips)
        reached = _reached(memory, rows, tips.get(own) if own else None)
        pool = np.unique(ids[reached[commit_of]])
        keep = first[np.isin(ids[first], pool)]
        hidden = _among(redacted, pool)
        rows_of = [row for row, _ in redactions]
        outside = ~np.isin(ids[np.asarray(rows_of, dtype=np.int64)], pool)
        extra = [
            row
            for (row, target), out in zip(redactions, outside.tolist(), strict=True)
            if out and target in hidden
        ]
        keep = np.union1d(keep, np.asarray(extra, dtype=np.int64))
    times = np.frombuffer(rows.times, dtype=np.int64)
    order = keep[np.lexsort((ids[keep], times[keep]))]
    blobs = np.frombuffer(rows.blobs, dtype=np.uint8).reshape(-1, rows.width or 1)
    payloads, found = _payloads(memory, tree, ids[order], rows.width or 1)
    return ExportEvents(
        memory,
        tree,
        blobs[order],
        commit_of[order],
        rows.commits,
        rows.refs,
        frozenset(redacted),
        payloads,
        found,
    )


def _payloads(
    memory: Memory, tree: Roots | None, ids: NDArray[np.bytes_], width: int
) -> tuple[NDArray[np.uint8], NDArray[np.int8]]:
    """Per id: its payload's blob in store ``tree`` and whether it has
    one (1) or not (0), from one listing of the store: each fan-out
    directory is read once (a lookup per event reads one of ~3,900 entries
    each time). -1 where the listing cannot say: the store has entries of
    other shapes, or the id is not 32 ASCII characters."""
    import numpy as np

    unknown = (np.zeros((len(ids), width), dtype=np.uint8), np.full(len(ids), -1, dtype=np.int8))
    listing = listed(memory.backend, tree)  # None: each lookup reports its own payload
    if listing is None or not len(ids):
        return unknown
    return listing.find(ids)


def _among(names: set[str], pool: NDArray[np.bytes_]) -> set[str]:
    """The ``names`` that are in ``pool`` (sorted, distinct UTF-8 ids)."""
    import numpy as np

    listed = sorted(names)
    if not listed:
        return set()
    found = np.isin(np.array([n.encode() for n in listed], dtype=bytes), pool)
    return {n for n, hit in zip(listed, found.tolist(), strict=True) if hit}


def _reached(memory: Memory, rows: _Rows, tip: str | None) -> NDArray[np.bool_]:
    """Per commit met: whether ``tip`` reaches it."""
    import numpy as np

    reached = np.zeros(len(rows.commits), dtype=bool)
    if tip is not None:
        for oid in memory.backend.commits_between([tip], []):
            at = rows.commit_index.get(oid)
            if at is not None:
                reached[at] = True
    return reached


def _own_ref(memory: Memory, branch: str, tips: dict[str, str]) -> str | None:
    """The chain whose events are ``branch``'s own: its ref, or for a branch
    without memory yet the one it would start from (as ``Memory.events``)."""
    ref = layout.branch_ref(branch)
    if ref in tips:
        return ref
    plan = memory.plan(branch, tips=tips)
    if plan.kind in ("rename", "fork") and plan.source:
        return layout.branch_ref(plan.source)
    return None


@dataclass
class _Rows:
    """Pass one's findings: one row per event met (an event in several
    commits is met once per commit), in the order met."""

    times: array[int]  # 64-bit, as the index keeps them
    ids: list[bytes]  # the ids met since the last chunk
    id_chunks: list[NDArray[np.bytes_]]  # the others, in arrays (a bytes object each is 65 bytes)
    redactions: list[int]  # the rows of redaction events
    blobs: bytearray
    width: int
    commit_of: array[int]
    commits: list[str]
    commit_index: dict[str, int]
    refs: list[str]

    @property
    def count(self) -> int:
        return len(self.times)

    def add(self, time: int, eid: str) -> None:
        self.times.append(time)
        self.ids.append(eid.encode())
        if len(self.ids) == _CHUNK:
            self._chunk()

    def all_ids(self) -> NDArray[np.bytes_]:
        """Every row's id (UTF-8), in one array."""
        import numpy as np

        self._chunk()
        if not self.id_chunks:
            return np.array([], dtype="S32")
        return np.concatenate(self.id_chunks)

    def _chunk(self) -> None:
        import numpy as np

        if self.ids:
            self.id_chunks.append(np.array(self.ids, dtype=bytes))
            self.ids = []


_CHUNK = 1 << 16


def _walk(memory: Memory, tips: dict[str, str]) -> _Rows:
    """Walk every chain once, refs in order, each commit at the first ref
    that reaches it, newest first (``ChainReader.envelopes``' order)."""
    ledger, backend = memory.ledger, memory.backend
    rows = _Rows(array("q"), [], [], [], bytearray(), 0, array("i"), [], {}, [])
    seen: set[str] = set()
    for ref, tip in tips.items():
        if tip in seen:
            continue
        seen.add(tip)
        stack = [tip]
        while stack:
            oid = stack.pop()
            info = backend.read_commit(oid)
            for parent in info.parents:
                if parent not in seen:
                    seen.add(parent)
                    stack.append(parent)
            check_format(info.message, f"memory commit {oid} on {ref}")
            index = len(rows.commits)
            rows.commits.append(oid)
            rows.commit_index[oid] = index
            rows.refs.append(ref)
            for blob, envelope in ledger.commit_envelopes(oid, info):
                eid = envelope.get("id") if isinstance(envelope, dict) else None
                if not isinstance(eid, str):
                    continue
                raw = bytes.fromhex(blob)
                if not rows.width:
                    rows.width = len(raw)
                if envelope.get("type") == "redaction":
                    rows.redactions.append(rows.count)
                time = int(envelope["time"])
                if not -(1 << 63) <= time < 1 << 63:
                    raise FormatError(
                        f"event {eid} in memory commit {oid} has a time beyond 64 bits",
                        "git edda verify reports what else is wrong with it",
                    )
                rows.add(time, eid)
                rows.blobs += raw
                rows.commit_of.append(index)
    return rows


def _redactions(
    memory: Memory, tree: Roots | None, rows: _Rows, first: NDArray[np.intp]
) -> tuple[set[str], list[tuple[int, Any]]]:
    """(the ids of redacted events, (row, target) of each redaction event not
    itself redacted), from the checked bodies of the redaction events among
    the rows ``first`` (sorted)."""
    import numpy as np

    candidates = np.asarray(rows.redactions, dtype=np.int64)
    at = np.searchsorted(first, candidates)
    met_first = (at < len(first)) & (first[np.minimum(at, len(first) - 1)] == candidates)
    width = rows.width
    found: list[tuple[int, dict[str, Any], dict[str, Any]]] = []
    for row in candidates[met_first].tolist():
        blob = bytes(rows.blobs[row * width : (row + 1) * width]).hex()
        envelope = canonical.decode(memory.backend.read_blob(blob))
        body, _ = memory.ledger.checked_body(tree, envelope)
        if body is not None:
            found.append((row, envelope, body))
    redacted = {str(body.get("target")) for _, _, body in found}
    targets = [(row, body.get("target")) for row, env, body in found if env["id"] not in redacted]
    return redacted, targets
