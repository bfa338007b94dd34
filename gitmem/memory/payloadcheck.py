"""``verify``'s checks of the payload store: its commit, every event's
payload against the digest and size its envelope pins, redacted payloads
really gone, attachments matching their names, payloads no event claims.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from gitmem.memory.report import Problem, Report, error_text
from gitmem.records import canonical, layout

if TYPE_CHECKING:
    from gitmem.memory.api import Memory


def store_tree(memory: Memory, report: Report) -> tuple[str | None, str | None]:
    """(payload store commit, its tree) after checking the commit is a
    snapshot of a format this version reads; the tree is None when there is
    no store or it cannot be read."""
    backend = memory.backend
    payload_tip = backend.read_ref(layout.PAYLOAD_REF)
    tree: str | None = None
    if payload_tip is not None:
        try:
            info = backend.read_commit(payload_tip)
            tree = info.tree
            if info.parents:
                report.problems.append(
                    Problem(
                        "the payload store commit has parents (it must be a snapshot)",
                        layout.PAYLOAD_REF,
                        payload_tip,
                    )
                )
            if (
                int(layout.parse_trailers(info.message).get(layout.FORMAT_TRAILER, "0") or 0)
                > layout.FORMAT_VERSION
            ):
                report.problems.append(
                    Problem(
                        "the payload store was written by a newer format",
                        layout.PAYLOAD_REF,
                        payload_tip,
                    )
                )
                tree = None
        except Exception as exc:
            report.problems.append(
                Problem(
                    f"payload store commit unreadable: {error_text(exc)}",
                    layout.PAYLOAD_REF,
                    payload_tip,
                    payload_tip,
                )
            )
    return payload_tip, tree


def check_payloads(
    memory: Memory,
    tree: str | None,
    envelopes: dict[str, dict[str, Any]],
    where: dict[str, tuple[str, str]],
    report: Report,
    *,
    earlier: Callable[[str], bool] | None = None,
    targets: set[str] | frozenset[str] = frozenset(),
    known: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Check the payload of every event in ``envelopes`` (found at ``where``)
    against store tree ``tree``: present and matching its envelope, or, for
    a redacted event, really gone; and every redaction names an event.
    Returns the redactions among ``envelopes`` (target -> redaction id).

    An incremental verification passes the events it checks now as
    ``envelopes``, ``earlier`` (whether an id is among the events verified
    before), ``targets`` (the redaction targets verified before) and
    ``known``: payload blobs already found in ``tree`` (event id -> blob),
    which are not looked up again."""
    ledger = memory.ledger
    redactions: dict[str, str] = {}  # target -> redaction event
    for eid, env in envelopes.items():
        if env.get("type") != "redaction":
            continue
        body = _safe_body(ledger, tree, eid)
        if isinstance(body, dict) and isinstance(body.get("target"), str):
            redactions[body["target"]] = eid
    for target, redaction in redactions.items():
        if target in envelopes:
            continue
        if earlier is not None and earlier(target):
            # an event verified before, redacted since: its payload must be gone
            report.redacted += 1
            _check_gone(memory, tree, target, *where[redaction], report)
            continue
        report.problems.append(
            Problem("redaction names an event that does not exist", event=redaction, field="target")
        )
    redacted = set(redactions) | set(targets)
    for eid, env in envelopes.items():
        ref, commit = where[eid]
        if eid in redacted:
            report.redacted += 1
            _check_gone(memory, tree, eid, ref, commit, report)
            continue
        _check_payload(memory, tree, eid, env, ref, commit, report, (known or {}).get(eid))
    return redactions


def _check_gone(
    memory: Memory, tree: str | None, eid: str, ref: str, commit: str, report: Report
) -> None:
    """A redacted event's payload must be gone from the store."""
    try:
        still_there = tree is not None and memory.backend.read_path(tree, layout.payload_path(eid))
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


def _safe_body(ledger: Any, tree: str | None, eid: str) -> Any:
    try:
        return ledger.body(tree, eid)
    except Exception:
        return None


def _check_payload(
    memory: Memory,
    tree: str | None,
    eid: str,
    env: dict[str, Any],
    ref: str,
    commit: str,
    report: Report,
    blob: str | None = None,
) -> None:
    """Check one event's payload (its blob ``blob`` when already found)."""
    ledger = memory.ledger
    try:
        if blob is None:
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
    payload = env["payload"]
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


def check_store(
    memory: Memory, tree: str, envelopes: dict[str, dict[str, Any]], report: Report
) -> None:
    """Check the store itself: every attachment's bytes match its name, and
    warn about payloads no event in ``envelopes`` claims."""
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
            if entry.name not in envelopes:
                report.warnings.append(
                    Problem(
                        "payload without an event in any memory ref (left by an interrupted write)",
                        layout.PAYLOAD_REF,
                        object=entry.oid,
                        event=entry.name,
                    )
                )
