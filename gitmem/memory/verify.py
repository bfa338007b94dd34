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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gitmem.memory.chaincheck import check_chain
from gitmem.memory.payloadcheck import check_payloads, check_store, store_tree
from gitmem.memory.report import Problem, Report, error_text
from gitmem.records import layout
from gitmem.storage import spool

if TYPE_CHECKING:
    from gitmem.memory.api import Memory


def verify(memory: Memory) -> Report:
    """Verify the whole store of ``memory`` and return a report."""
    report = Report()
    try:
        memory.flush()
    except Exception as exc:  # a broken spool must not stop verification
        report.warnings.append(Problem(f"spool could not be flushed: {error_text(exc)}"))
    envelopes: dict[str, dict[str, Any]] = {}
    where: dict[str, tuple[str, str]] = {}
    refs = memory.ledger.memory_refs()
    report.refs = len(refs)
    seen_commits: set[str] = set()
    for ref, tip in refs.items():
        check_chain(memory, ref, tip, report, envelopes, where, seen_commits)
    payload_tip, tree = store_tree(memory, report)
    check_payloads(memory, tree, envelopes, where, report)
    if tree is not None:
        try:
            check_store(memory, tree, envelopes, report)
        except Exception as exc:  # an unreadable tree of the store: report, never raise
            report.problems.append(
                Problem(
                    f"payload store unreadable: {error_text(exc)}", layout.PAYLOAD_REF, payload_tip
                )
            )
    for path in spool.quarantined(memory.location.state_dir):
        report.warnings.append(Problem(f"unreadable spool file kept aside: {path}"))
    return report
