"""``verify``: re-derive every digest and link of every reachable memory object.

Checks, for each memory ref (spec/storage.md, "Verification"):

* every commit is readable and in a format this version understands;
* its tree has the ``events/`` layout, with entries ``000000``… in sequence and
  a matching ``Edda-Events`` trailer;
* every envelope blob is readable, canonical JSON, structurally sound, and its
  ``id`` re-derives from its content; no id appears twice in one chain;
* every event's payload is present (unless redacted) and its salted digest
  and size match; every attachment's name is the SHA-256 of its bytes;
* redactions point at existing events and their payloads are really gone.

git's own object hashes are checked by reading each object (libgit2 verifies
the hash of what it inflates); ``git fsck`` remains the check for the rest of
the object store. Problems are collected, never raised. The checks live
in :mod:`gitmem.memory.chaincheck` and :mod:`gitmem.memory.payloadcheck`;
:mod:`gitmem.memory.report` holds what they report.

A verification that finds no problem is recorded
(:mod:`gitmem.memory.verified`); ``incremental=True`` then checks only the
commits and payload-store entries new since the recorded tips, the same way,
and falls back to everything when that cannot be sound.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING

from gitmem.memory import verified
from gitmem.memory.chaincheck import check_chain, check_commits
from gitmem.memory.checkedevents import CheckedEvents
from gitmem.memory.payloadcheck import check_payloads, check_store, store_roots
from gitmem.memory.report import Problem, Report, error_text
from gitmem.records import canonical, layout
from gitmem.storage import spool
from gitmem.storage.payloadlist import listed

if TYPE_CHECKING:
    from gitmem.memory.api import Memory
    from gitmem.storage.payloads import Roots


def verify(memory: Memory, *, incremental: bool = False) -> Report:
    """Verify the store of ``memory`` and return a report: all of it, or with
    ``incremental`` only what is new since the last clean verification."""
    report = Report()
    try:
        memory.flush()
    except Exception as exc:  # a broken spool must not stop verification
        report.warnings.append(Problem(f"spool could not be flushed: {error_text(exc)}"))
    refs = memory.ledger.memory_refs()
    report.refs = len(refs)
    record = verified.read(memory.location) if incremental else None
    if incremental:
        if record is None:
            report.fallback = "no record of an earlier clean verification"
        elif _incremental(memory, report, refs, record):
            _quarantined(memory, report)
            return report
        else:
            report = Report(warnings=report.warnings, refs=report.refs, fallback=report.fallback)
    _full(memory, report, refs)
    _quarantined(memory, report)
    return report


def _full(memory: Memory, report: Report, refs: dict[str, str]) -> None:
    checked = CheckedEvents()
    seen_commits: set[str] = set()
    backend = memory.backend
    # Every commit, envelope, directory and payload is read once: libgit2's
    # cache would only keep them (~250 MB at a million events). Payloads are
    # found by a listing of the store, not by path (which needs the cache).
    with backend.streaming():
        for ref, tip in refs.items():
            check_chain(memory, ref, tip, report, checked, seen_commits)
    payload_tip, tree = store_roots(memory, report)
    listing = listed(backend, tree)
    with backend.streaming() if listing is not None else nullcontext():
        redactions = check_payloads(memory, tree, checked, report, listing=listing)
    del listing
    if tree is not None:
        try:
            with backend.streaming():  # each directory and attachment, read once
                check_store(memory, tree, checked, report)
        except Exception as exc:  # an unreadable tree of the store: report, never raise
            report.problems.append(
                Problem(
                    f"payload store unreadable: {error_text(exc)}", layout.PAYLOAD_REF, payload_tip
                )
            )
    if report.ok:
        verified.write(memory.location, refs, payload_tip, verified.keys(checked), set(redactions))


def _incremental(
    memory: Memory, report: Report, refs: dict[str, str], record: verified.Verified
) -> bool:
    """Check what is new since ``record``; False (having recorded why in
    ``report.fallback``) when only a full verification can be sound."""
    plan = verified.plan(memory, record, refs)
    if isinstance(plan, str):
        report.fallback = plan
        return False
    report.mode = "incremental"
    checked = CheckedEvents()
    seen_commits: set[str] = set()
    for ref, commits in plan.commits.items():
        check_commits(memory, ref, commits, report, checked, seen_commits)
    again = next((eid for eid in checked if record.has(eid)), None)
    if again is not None:
        report.fallback = f"event {again} was verified before (in another commit)"
        return False
    payload_tip, tree = store_roots(memory, report)
    old_tree = _old_store(memory, record)
    if record.payloads is not None and old_tree is None:
        report.fallback = "the payload store verified last time is gone"
        return False
    targets = set(record.targets)
    try:
        payloads = verified.payload_changes(memory, old_tree, tree, "p", added=checked)
        # the new events' payloads as the comparison found them: no lookup by path
        known = {eid: after for eid, _, after in payloads if after is not None}
        redactions = check_payloads(
            memory, tree, checked, report, earlier=record.has, targets=targets, known=known
        )
        why = _store_changes(
            memory, report, old_tree, tree, payloads, checked, record, targets | set(redactions)
        )
    except Exception as exc:  # an unreadable tree of the store: report, never raise
        report.problems.append(
            Problem(f"payload store unreadable: {error_text(exc)}", layout.PAYLOAD_REF, payload_tip)
        )
        return True
    if why:
        report.fallback = why
        return False
    if report.ok:
        ids = verified.merged(record.ids, verified.keys(checked))
        verified.write(memory.location, refs, payload_tip, ids, targets | set(redactions))
    return True


def _old_store(memory: Memory, record: verified.Verified) -> Roots | None:
    if record.payloads is None:
        return None
    try:
        return memory.ledger.payload_roots(record.payloads)
    except Exception:  # pruned since: nothing to compare with
        return None


def _store_changes(
    memory: Memory,
    report: Report,
    old: Roots | None,
    new: Roots | None,
    payloads: list[tuple[str, str | None, str | None]],
    checked: CheckedEvents,
    record: verified.Verified,
    targets: set[str],
) -> str:
    """Check the payload store's entries that changed since the verified one
    (new attachments' names; ``payloads``, the changes under ``p``: payloads
    no event claims); returns why a full verification is needed instead (""
    when none is)."""
    for sha, before, after in verified.payload_changes(memory, old, new, "b"):
        if before is not None:
            return f"attachment {sha} changed or went since the last verification"
        assert after is not None
        if canonical.sha256_hex(memory.backend.read_blob(after)) != sha:
            report.problems.append(
                Problem(
                    "attachment bytes do not match its name",
                    layout.PAYLOAD_REF,
                    object=after,
                    field=f"b/{sha[:2]}/{sha}",
                )
            )
    for eid, _before, after in payloads:
        if eid in checked:
            continue  # a new event: checked against its envelope already
        if record.has(eid):
            if after is None and eid in targets:
                continue  # redacted
            return f"the payload of event {eid}, verified before, changed since"
        if after is not None:
            report.warnings.append(
                Problem(
                    "payload without an event in any memory ref (left by an interrupted write)",
                    layout.PAYLOAD_REF,
                    object=after,
                    event=eid,
                )
            )
    return ""


def _quarantined(memory: Memory, report: Report) -> None:
    for path in spool.quarantined(memory.location.state_dir):
        report.warnings.append(Problem(f"unreadable spool file kept aside: {path}"))
