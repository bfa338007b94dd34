"""``verify``'s checks of the payload store: its commit, every event's
payload against the digest and size its envelope pins, redacted payloads
really gone, attachments matching their names, payloads no event claims.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gitmem.errors import FormatTooNewError
from gitmem.memory.checkedevents import CheckedEvents
from gitmem.memory.report import Problem, Report, error_text
from gitmem.records import canonical, layout
from gitmem.storage.payloadlist import ABSENT, FOUND, UNKNOWN, PayloadListing

if TYPE_CHECKING:
    from gitmem.memory.api import Memory
    from gitmem.storage.payloads import Roots


def store_roots(memory: Memory, report: Report) -> tuple[str | None, Roots | None]:
    """(payload store commit, the store as read) after checking that it and
    its partitions are snapshots of a format this version reads; the store
    is None when there is none or it cannot be read. A partition ref that
    does not name what the store does (a write killed between the two) is
    warned about: the next write sets it."""
    backend = memory.backend
    payload_tip = backend.read_ref(layout.PAYLOAD_REF)
    if payload_tip is None:
        return None, None
    try:
        roots = memory.ledger.payload_roots(payload_tip)
        assert roots is not None
        for name, commit in {"": payload_tip, **roots.commits}.items():
            if backend.read_commit(commit).parents:
                what = f"partition {name}" if name else "commit"
                report.problems.append(
                    Problem(
                        f"the payload store {what} has parents (it must be a snapshot)",
                        layout.PAYLOAD_REF,
                        payload_tip,
                        commit,
                    )
                )
    except FormatTooNewError:
        report.problems.append(
            Problem(
                "the payload store was written by a newer format", layout.PAYLOAD_REF, payload_tip
            )
        )
        return payload_tip, None
    except Exception as exc:
        report.problems.append(
            Problem(
                f"payload store commit unreadable: {error_text(exc)}",
                layout.PAYLOAD_REF,
                payload_tip,
                payload_tip,
            )
        )
        return payload_tip, None
    for name in roots.substituted:
        report.warnings.append(
            Problem(
                "the payload store names a partition commit that is missing (a write was "
                "interrupted, then git pruned it); read from the partition's ref, which lacks "
                "only what that write added (the next write names it, a sync brings back "
                "what a pull had added)",
                layout.partition_ref(name),
                payload_tip,
            )
        )
    if roots.tip != roots.commits.get(layout.LEGACY_PARTITION):  # format 2: partition refs
        refs = backend.list_refs(layout.PARTITION_PREFIX)
        wanted = {layout.partition_ref(n): c for n, c in roots.commits.items()}
        for ref in sorted(refs.keys() | wanted.keys()):
            if refs.get(ref) != wanted.get(ref):
                report.warnings.append(
                    Problem(
                        "partition ref does not match the payload store (a write was "
                        "interrupted; the next write sets it)",
                        ref,
                        refs.get(ref),
                        wanted.get(ref),
                    )
                )
    return payload_tip, roots


def check_payloads(
    memory: Memory,
    tree: Roots | None,
    checked: CheckedEvents,
    report: Report,
    *,
    earlier: Callable[[str], bool] | None = None,
    targets: set[str] | frozenset[str] = frozenset(),
    known: Mapping[str, str] | None = None,
    listing: PayloadListing | None = None,
) -> dict[str, str]:
    """Check the payload of every event in ``checked`` against store
    ``tree``: present and matching its envelope, or, for a redacted event,
    really gone; and every redaction names an event. Returns the redactions
    among ``checked`` (target -> redaction id).

    An incremental verification passes the events it checks now as
    ``checked``, ``earlier`` (whether an id is among the events verified
    before), ``targets`` (the redaction targets verified before) and
    ``known``: payload blobs already found in ``tree`` (event id -> blob),
    which are not looked up again. A full verification passes ``listing``,
    the store listed (see :mod:`gitmem.storage.payloadlist`): a payload it
    places is not looked up by path."""
    ledger = memory.ledger
    redactions: dict[str, str] = {}  # target -> redaction event
    for eid in checked.redactions:
        body = _safe_body(ledger, tree, eid)
        if isinstance(body, dict) and isinstance(body.get("target"), str):
            redactions[body["target"]] = eid
    for target, redaction in redactions.items():
        if target in checked:
            continue
        if earlier is not None and earlier(target):
            # an event verified before, redacted since: its payload must be gone
            report.redacted += 1
            _check_gone(memory, tree, target, *checked.where(redaction), report)
            continue
        report.problems.append(
            Problem("redaction names an event that does not exist", event=redaction, field="target")
        )
    redacted = set(redactions) | set(targets)
    for eid in checked:
        ref, commit = checked.where(eid)
        listed, blob = listing.blob(eid) if listing is not None else (UNKNOWN, None)
        if eid in redacted:
            report.redacted += 1
            present = None if listed == UNKNOWN else listed == FOUND
            _check_gone(memory, tree, eid, ref, commit, report, present)
            continue
        if known is not None and eid in known:
            listed, blob = FOUND, known[eid]
        payload = checked.payload(eid)
        _check_payload(memory, tree, eid, payload, ref, commit, report, blob, listed == ABSENT)
    return redactions


def _check_gone(
    memory: Memory,
    tree: Roots | None,
    eid: str,
    ref: str,
    commit: str,
    report: Report,
    present: bool | None = None,
) -> None:
    """A redacted event's payload must be gone from the store (``present``:
    whether it is there, when already known)."""
    try:
        if present is None:
            present = memory.ledger.locate(tree, eid) is not None
        still_there = present
    except Exception as exc:
        report.problems.append(
            Problem(
                f"payload store unreadable: {error_text(exc)}",
                ref,
                commit,
                event=eid,
                field="payload",
            )
        )
        return
    if still_there:
        report.problems.append(
            Problem(
                "payload of a redacted event is still in the store (redact it again to finish)",
                ref,
                commit,
                event=eid,
                field="payload",
            )
        )


def _safe_body(ledger: Any, tree: Roots | None, eid: str) -> Any:
    try:
        return ledger.body(tree, eid)
    except Exception:
        return None


def _check_payload(
    memory: Memory,
    tree: Roots | None,
    eid: str,
    payload: dict[str, Any],
    ref: str,
    commit: str,
    report: Report,
    blob: str | None = None,
    absent: bool = False,
) -> None:
    """Check one event's payload against its envelope's record ``payload``
    (its blob ``blob`` when already found; ``absent``: known to have none)."""
    ledger = memory.ledger
    try:
        if absent:
            found = None
        elif blob is None:
            found = ledger.stored_body(tree, eid)
        else:
            found = blob, canonical.decode(memory.backend.read_blob(blob))
    except Exception as exc:
        report.problems.append(
            Problem(
                f"payload unreadable: {error_text(exc)}", ref, commit, event=eid, field="payload"
            )
        )
        return
    if found is None:
        report.problems.append(
            Problem(
                "payload is missing and the event was not redacted",
                ref,
                commit,
                event=eid,
                field="payload",
            )
        )
        return
    blob, stored = found
    assert tree is not None
    try:
        body = layout.join_attachments(stored, lambda sha: ledger.attachment(tree, sha))
    except KeyError as exc:
        report.problems.append(
            Problem(f"attachment {exc} is missing", ref, commit, blob, eid, "payload")
        )
        return
    except Exception as exc:
        report.problems.append(
            Problem(f"attachment unreadable: {error_text(exc)}", ref, commit, blob, eid, "payload")
        )
        return
    report.payloads += 1
    data = canonical.encode(body)
    if len(data) != payload["size"]:
        report.problems.append(
            Problem(
                f"payload is {len(data)} bytes, the envelope records {payload['size']}",
                ref,
                commit,
                blob,
                eid,
                "payload.size",
            )
        )
    if canonical.payload_digest(payload["salt"], data) != payload["digest"]:
        report.problems.append(
            Problem(
                "payload does not match the digest recorded in its envelope",
                ref,
                commit,
                blob,
                eid,
                "payload.digest",
            )
        )


def check_store(memory: Memory, roots: Roots, checked: CheckedEvents, report: Report) -> None:
    """Check the store itself: every attachment's bytes match its name, and
    warn about payloads no event in ``checked`` claims."""
    for name in sorted(roots.trees):
        _check_partition(memory, roots.trees[name], checked, report)


def _check_partition(memory: Memory, tree: str, checked: CheckedEvents, report: Report) -> None:
    backend = memory.backend
    sub = backend.read_path(tree, "b")
    if sub is not None:
        for fan in backend.read_tree(sub):
            for entry in backend.read_tree(fan.oid):
                try:
                    data = backend.read_blob(entry.oid)
                except Exception as exc:
                    report.problems.append(
                        Problem(
                            f"attachment unreadable: {error_text(exc)}",
                            layout.PAYLOAD_REF,
                            object=entry.oid,
                        )
                    )
                    continue
                if canonical.sha256_hex(data) != entry.name:
                    report.problems.append(
                        Problem(
                            "attachment bytes do not match its name",
                            layout.PAYLOAD_REF,
                            object=entry.oid,
                            field=f"b/{fan.name}/{entry.name}",
                        )
                    )
    sub = backend.read_path(tree, "p")
    if sub is None:
        return
    for fan in backend.read_tree(sub):
        for entry in backend.read_tree(fan.oid):
            if entry.name not in checked:
                report.warnings.append(
                    Problem(
                        "payload without an event in any memory ref (left by an interrupted write)",
                        layout.PAYLOAD_REF,
                        object=entry.oid,
                        event=entry.name,
                    )
                )
