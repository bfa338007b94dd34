"""Flushing the capture spool (:mod:`gitmem.storage.spool`) into the memory refs.

Under the writer lock, first finish or undo what a crashed flush left (its
journal names the spool files each ref's new commit carries), then commit
the pending spool files in batches, each through
:meth:`gitmem.storage.ledger.Ledger.commit` with the journal written before
any ref moves. A spool file that no longer passes the event rules is set
aside, never committed. See spec/storage.md, "Capture spool".
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gitmem.errors import FormatError
from gitmem.records import canonical
from gitmem.records.validate import event_problems
from gitmem.storage import files, spool
from gitmem.storage.eventchain import Sealed

if TYPE_CHECKING:
    from gitmem.storage.ledger import Ledger

MAX_EVENTS_PER_FLUSH = 5000


@dataclass
class FlushResult:
    events: int = 0
    files: int = 0
    quarantined: list[str] = field(default_factory=list)
    recovered: int = 0  # spool files a crashed flush had already committed


def flush_locked(ledger: Ledger) -> FlushResult:
    """Commit every spooled event into ``ledger``; the caller holds the writer lock."""
    result = FlushResult(recovered=_recover_journal(ledger))
    while True:
        pending = spool.pending(ledger.state_dir)
        if not pending:
            return result
        batch: list[Sealed] = []
        by_ref: dict[str, list[str]] = {}
        taken: list[str] = []
        for path in pending:
            name = os.path.basename(path)
            try:
                items = [_sealed_from_spool(raw, name) for raw in spool.read_spool_file(path)]
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
            ledger.commit(batch, journal_files=by_ref)
        for path in taken:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        spool.clear_journal(ledger.state_dir)
        result.events += len(batch)
        result.files += len(taken)


def _recover_journal(ledger: Ledger) -> int:
    """Finish a flush that crashed after writing its journal: drop from the
    spool the events whose commits landed; returns how many files went."""
    journal = spool.read_journal(ledger.state_dir)
    if journal is None:
        return 0
    backend = ledger.backend
    removed = 0
    landed_refs: set[str] = set()
    named: dict[str, set[str]] = {}  # spool file -> refs whose commit carries its events
    for ref, entry in journal.items():
        if not isinstance(entry, dict):
            continue
        commit = entry.get("commit")
        tip = backend.read_ref(ref)
        landed = (
            isinstance(commit, str)
            and tip is not None
            and backend.has_object(commit)
            and backend.is_ancestor(commit, tip)
        )
        if landed:
            landed_refs.add(ref)
        for name in entry.get("files", []):
            named.setdefault(name, set()).add(ref)
    for name, refs in named.items():
        path = os.path.join(spool.spool_dir(ledger.state_dir), name)
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
            files.write_atomic(path, data, fsync=ledger.fsync)
            continue
        try:
            os.unlink(path)
            removed += 1
        except FileNotFoundError:
            pass
    spool.clear_journal(ledger.state_dir)
    return removed


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
