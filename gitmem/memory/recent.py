"""One capsule's events, read from the newest memory commits back.

A session's capsule is recent: its events are in the last commits of the
chains. Reading every event of the store for them (``Memory.events`` with a
capsule filter) took minutes and gigabytes at a million events, which a hook
at the end of a session cannot spend. So the commits of every chain are
read newest first (by commit time, across chains), and the walk stops at the
first commit older than the capsule's opening once that is found: a commit's
time is the newest time of its events, and a capsule's events are never
older than its opening (one session, one machine, its monotonic clock).

One case is left out: events behind a commit whose time is older than the
capsule's opening (an ``import`` of older events made during the session
would hide the session's events recorded before it). Such a walk stops
early and the capsule's summary misses them; nothing else reads this.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING, Any

from gitmem.memory.event import Event
from gitmem.storage.eventchain import check_format

if TYPE_CHECKING:
    from gitmem.memory.api import Memory


def capsule_events(memory: Memory, capsule: str) -> list[Event]:
    """The events of ``capsule`` (its opening, and every event whose
    envelope names it) on every chain, in (time, id) order."""
    ledger, backend = memory.ledger, memory.backend
    tips = ledger.memory_refs()
    infos: dict[str, Any] = {}  # queued commits, read
    seen: set[str] = set()  # every commit queued
    queue: list[tuple[int, str, str]] = []  # (-commit time, commit, ref)
    for ref, tip in sorted(tips.items()):
        if tip not in seen:
            seen.add(tip)
            infos[tip] = backend.read_commit(tip)
            heapq.heappush(queue, (-infos[tip].time, tip, ref))
    opened: int | None = None  # the opening's time, in seconds, once found
    found: dict[str, tuple[dict[str, Any], str, str]] = {}
    while queue:
        negative, oid, ref = heapq.heappop(queue)
        if opened is not None and -negative < opened:
            break  # this commit and every one after it are older than the opening
        info = infos.pop(oid)
        check_format(info.message, f"memory commit {oid} on {ref}")
        for _blob, envelope in ledger.commit_envelopes(oid, info):
            if not isinstance(envelope, dict) or not isinstance(envelope.get("id"), str):
                continue
            eid = envelope["id"]
            if eid == capsule and isinstance(envelope.get("time"), int):
                opened = envelope["time"] // 1_000_000
            if (eid == capsule or envelope.get("capsule") == capsule) and eid not in found:
                found[eid] = (envelope, ref, oid)
        for parent in info.parents:
            if parent not in seen:
                seen.add(parent)
                infos[parent] = backend.read_commit(parent)
                heapq.heappush(queue, (-infos[parent].time, parent, ref))
    tree = ledger.payload_roots()
    redacted = ledger.redaction_targets([tree]) if found else set()
    events = []
    for eid, (envelope, ref, oid) in found.items():
        if eid in redacted:
            events.append(Event(envelope, None, ref, oid, True, None))
        else:
            body, problem = ledger.checked_body(tree, envelope)
            events.append(Event(envelope, body, ref, oid, False, problem))
    return sorted(events, key=lambda e: e.order_key)
