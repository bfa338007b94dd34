"""Which events the chains redact, remembered between calls.

A sync asks twice for every redaction target in memory (before merging what
it fetched, and after), and finding them means reading every envelope of
every chain: at a million events, minutes. The ids of the redaction events
and the targets their bodies name are kept in ``<common dir>/edda/redactions.json``
with the chain tips they were read up to; the next call reads only the
commits added since. A recorded tip that is gone, or that the chain no
longer descends from (a rewound or pruned chain), means reading everything
again. The record is a cache: deleting it costs one full read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.storage.eventchain import check_format
from gitmem.storage.files import write_atomic
from gitmem.storage.payloads import Roots

if TYPE_CHECKING:
    from gitmem.storage.ledger import Ledger

RECORD = "redactions.json"
VERSION = 1


def _read(state_dir: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((state_dir / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if (
        not isinstance(data, dict)
        or data.get("version") != VERSION
        or not isinstance(data.get("tips"), dict)
        or not isinstance(data.get("events"), dict)
    ):
        return None
    return data


def redaction_events(ledger: Ledger) -> tuple[dict[str, str], dict[str, str | None]]:
    """The chain tips read up to, and every redaction event in those chains
    -> the target its body names (None while no payload store read so far
    held its body; "" when the body names none)."""
    tips = ledger.memory_refs()
    record = _read(ledger.state_dir)
    events: dict[str, str | None] = {}
    since: list[str] = []
    if record is not None and _still_ahead(ledger, record["tips"], tips):
        events = {str(k): (v if isinstance(v, str) else None) for k, v in record["events"].items()}
        since = sorted(set(record["tips"].values()))
    changed = [
        tip for ref, tip in sorted(tips.items()) if record is None or record["tips"].get(ref) != tip
    ]
    if record is None or not since:
        commits = _all_commits(ledger, list(tips.values()))
    else:
        commits = ledger.backend.commits_between(changed, since) if changed else []
    for oid in commits:
        info = ledger.backend.read_commit(oid)
        check_format(info.message, f"memory commit {oid}")
        for _blob, envelope in ledger.commit_envelopes(oid, info):
            if isinstance(envelope, dict) and envelope.get("type") == "redaction":
                eid = envelope.get("id")
                if isinstance(eid, str):
                    events.setdefault(eid, None)
    if record is None or commits or record["tips"] != tips:
        remember(ledger, tips, events)
    return tips, events


def remember(ledger: Ledger, tips: dict[str, str], events: dict[str, str | None]) -> None:
    """Write the record (a cache: a failed write only costs a read next time)."""
    data = {"version": VERSION, "tips": dict(sorted(tips.items())), "events": events}
    try:
        write_atomic(
            str(ledger.state_dir / RECORD), json.dumps(data, sort_keys=True).encode(), fsync=False
        )
    except OSError:
        pass


def advance(ledger: Ledger, before: dict[str, str], redaction_ids: Iterable[str]) -> None:
    """Bring the record from the chain tips ``before`` to the current ones
    without reading what was added in between, when the caller read it: a
    pull's merge adds the incoming commits, whose envelopes its checks read
    (``redaction_ids``: the redaction events among them), and merge commits,
    which carry none. Does nothing unless the record was at ``before``."""
    record = _read(ledger.state_dir)
    if record is None or record["tips"] != before:
        return
    events = {str(k): (v if isinstance(v, str) else None) for k, v in record["events"].items()}
    for eid in redaction_ids:
        events.setdefault(eid, None)
    remember(ledger, ledger.memory_refs(), events)


def _still_ahead(ledger: Ledger, recorded: dict[str, Any], tips: dict[str, str]) -> bool:
    """Whether every recorded tip is still its chain's tip or an ancestor of it."""
    for ref, old in recorded.items():
        new = tips.get(ref)
        if not isinstance(old, str) or new is None:
            return False
        # nothing reachable from the old tip that the new one lacks: a
        # cheap check when the chain only moved forward
        if new != old and ledger.backend.commits_between([old], [new]):
            return False
    return True


def _all_commits(ledger: Ledger, tips: Sequence[str]) -> Iterable[str]:
    return ledger.backend.commits_between(list(tips), []) if tips else []


def targets(ledger: Ledger, trees: Sequence[Roots | None]) -> set[str]:
    """Every id a redaction event in the chains names, each redaction's body
    looked up in ``trees`` (payload-store roots) in turn; bodies found are
    remembered (a redaction's body is pinned by its envelope)."""
    tips, events = redaction_events(ledger)
    found: set[str] = set()
    learned = False
    for eid in sorted(events):
        target = events[eid]
        if target is None:
            for tree in trees:
                stored = ledger.stored_body(tree, eid)
                if stored is not None:
                    body = stored[1]
                    value = body.get("target") if isinstance(body, dict) else None
                    target = value if isinstance(value, str) else ""
                    events[eid], learned = target, True
                    break
        if target:
            found.add(target)
    if learned:
        remember(ledger, tips, events)
    return found


__all__ = ["advance", "redaction_events", "targets"]
