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
the object store. Problems are collected, never raised.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gitmem.errors import GitmemError
from gitmem.records import canonical, layout
from gitmem.storage import spool
from gitmem.storage.envelope import RECORD_VERSION, envelope_problems

if TYPE_CHECKING:
    from gitmem.memory.api import Memory


@dataclass(frozen=True)
class Problem:
    """One thing wrong: where (ref, commit, object, event, field) and what."""

    message: str
    ref: str | None = None
    commit: str | None = None
    object: str | None = None
    event: str | None = None
    field: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    def __str__(self) -> str:
        where = [
            f"{k} {v}"
            for k, v in (
                ("event", self.event),
                ("field", self.field),
                ("object", self.object),
                ("commit", self.commit),
                ("ref", self.ref),
            )
            if v
        ]
        return f"{self.message} [{', '.join(where)}]" if where else self.message


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    refs: int = 0
    commits: int = 0
    events: int = 0
    payloads: int = 0
    redacted: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "refs": self.refs,
            "commits": self.commits,
            "events": self.events,
            "payloads": self.payloads,
            "redacted": self.redacted,
            "problems": [p.to_json() for p in self.problems],
            "warnings": [w.to_json() for w in self.warnings],
        }


def _error_text(exc: BaseException) -> str:
    return exc.message if isinstance(exc, GitmemError) else f"{type(exc).__name__}: {exc}"


def verify(memory: Memory) -> Report:
    """Verify the whole store of ``memory`` and return a report."""
    report = Report()
    ledger = memory.ledger
    backend = memory.backend
    try:
        memory.flush()
    except Exception as exc:  # a broken spool must not stop verification
        report.warnings.append(Problem(f"spool could not be flushed: {_error_text(exc)}"))
    envelopes: dict[str, dict[str, Any]] = {}
    where: dict[str, tuple[str, str]] = {}
    refs = ledger.memory_refs()
    report.refs = len(refs)
    seen_commits: set[str] = set()
    for ref, tip in refs.items():
        _verify_chain(memory, ref, tip, report, envelopes, where, seen_commits)

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
                    f"payload store commit unreadable: {_error_text(exc)}",
                    layout.PAYLOAD_REF,
                    payload_tip,
                    payload_tip,
                )
            )

    redactions: dict[str, str] = {}  # target -> redaction event
    for eid, env in envelopes.items():
        if env.get("type") != "redaction":
            continue
        body = _safe_body(ledger, tree, eid)
        if isinstance(body, dict) and isinstance(body.get("target"), str):
            redactions[body["target"]] = eid
    for target, redaction in redactions.items():
        if target not in envelopes:
            report.problems.append(
                Problem(
                    "redaction names an event that does not exist", event=redaction, field="target"
                )
            )

    for eid, env in envelopes.items():
        ref, commit = where[eid]
        if eid in redactions:
            report.redacted += 1
            try:
                still_there = tree is not None and backend.read_path(tree, layout.payload_path(eid))
            except Exception as exc:
                report.problems.append(
                    Problem(
                        f"payload store unreadable: {_error_text(exc)}",
                        ref,
                        commit,
                        event=eid,
                        field="payload",
                    )
                )
                continue
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
            continue
        _verify_payload(memory, tree, eid, env, ref, commit, report)

    if tree is not None:
        try:
            _verify_store(memory, tree, envelopes, report)
        except Exception as exc:  # an unreadable tree of the store: report, never raise
            report.problems.append(
                Problem(
                    f"payload store unreadable: {_error_text(exc)}", layout.PAYLOAD_REF, payload_tip
                )
            )
    for path in spool.quarantined(memory.location.state_dir):
        report.warnings.append(Problem(f"unreadable spool file kept aside: {path}"))
    return report


def _verify_chain(
    memory: Memory,
    ref: str,
    tip: str,
    report: Report,
    envelopes: dict[str, dict[str, Any]],
    where: dict[str, tuple[str, str]],
    seen_commits: set[str],
) -> None:
    backend = memory.backend
    chain_ids: set[str] = set()
    stack = [tip]
    visited = {tip}
    while stack:
        oid = stack.pop()
        try:
            info = backend.read_commit(oid)
        except Exception as exc:
            report.problems.append(Problem(f"commit unreadable: {_error_text(exc)}", ref, oid, oid))
            continue
        for parent in info.parents:
            if parent not in visited:
                visited.add(parent)
                stack.append(parent)
        fmt = layout.parse_trailers(info.message).get(layout.FORMAT_TRAILER)
        if fmt is not None and fmt.isdigit() and int(fmt) > layout.FORMAT_VERSION:
            report.problems.append(
                Problem(f"commit written in newer format {fmt}; upgrade gitmem", ref, oid, oid)
            )
            continue
        first_visit = oid not in seen_commits
        seen_commits.add(oid)
        if first_visit:
            report.commits += 1
        shape, entries = commit_problems(backend, oid, info)
        report.problems.extend(Problem(text, ref, oid, obj) for text, obj in shape)
        if entries is None:
            continue
        for entry in sorted(entries):
            try:
                data = backend.read_blob(entry.oid)
                env = canonical.decode(data)
            except Exception as exc:
                report.problems.append(
                    Problem(f"envelope unreadable: {_error_text(exc)}", ref, oid, entry.oid)
                )
                continue
            problems = envelope_problems(env, strict=False)
            eid = env.get("id") if isinstance(env, dict) else None
            eid = eid if isinstance(eid, str) else None
            if not problems:
                # Rules only new events must meet (spec/storage.md §17): memory
                # an older gitmem wrote may break them without being damaged.
                for text in envelope_problems(env):
                    report.warnings.append(
                        Problem(f"written before today's rules: {text}", ref, oid, entry.oid, eid)
                    )
            if not canonical.is_canonical(data):
                problems.append("envelope is not in canonical encoding")
            if (
                isinstance(env, dict)
                and isinstance(env.get("v"), int)
                and env["v"] > RECORD_VERSION
            ):
                report.warnings.append(
                    Problem(
                        f"event written with record version {env['v']}", ref, oid, entry.oid, eid
                    )
                )
            for text in problems:
                fld = text.split("'")[1] if text.startswith("field '") else None
                report.problems.append(Problem(text, ref, oid, entry.oid, eid, fld))
            if problems or eid is None:
                continue
            if eid in chain_ids and first_visit:
                report.problems.append(
                    Problem("event appears twice in the chain", ref, oid, entry.oid, eid)
                )
            chain_ids.add(eid)
            if eid not in envelopes:
                envelopes[eid] = env
                where[eid] = (ref, oid)
                report.events += 1


def commit_problems(
    backend: Any, oid: str, info: Any
) -> tuple[list[tuple[str, str]], list[Any] | None]:
    """What is wrong with the shape of memory commit ``oid`` (spec/storage.md §3
    and spec/sync.md): (problem, object) pairs, and the ``events/`` entries
    (None when the tree cannot be read). Shared by ``verify`` and by the
    checks a pull makes on incoming commits: a code commit, a tree with
    anything besides ``events/``, a merge that carries events, entries out
    of sequence or a wrong ``Edda-Events`` count are all refused.
    """
    problems: list[tuple[str, str]] = []
    trailers = layout.parse_trailers(info.message)
    fmt = trailers.get(layout.FORMAT_TRAILER)
    if fmt is None or not fmt.isdigit():
        problems.append(("commit has no Edda-Format trailer (not a memory commit)", oid))
    try:
        root = backend.read_tree(info.tree)
        events_tree = next((e.oid for e in root if e.name == layout.EVENTS_DIR), None)
        entries = backend.read_tree(events_tree) if events_tree else []
    except Exception as exc:
        return [*problems, (f"commit tree unreadable: {_error_text(exc)}", info.tree)], None
    if any(e.name != layout.EVENTS_DIR or e.mode != layout.MODE_TREE for e in root):
        problems.append(("commit tree holds more than events/ (not a memory commit)", info.tree))
    if len(info.parents) > 1 and entries:
        problems.append(("a merge commit carries events (merges must not)", oid))
    if len(info.parents) <= 1 and not entries and layout.BRANCH_TRAILER not in trailers:
        problems.append(("commit holds no events and is not a fork commit", oid))
    if len(info.parents) <= 1:
        names = sorted(e.name for e in entries)
        if names != [layout.entry_name(i) for i in range(len(names))]:
            problems.append(("event entries are not numbered 000000, 000001, …", str(events_tree)))
        if any(e.mode != layout.MODE_BLOB for e in entries):
            problems.append(("an event entry is not a file", str(events_tree)))
        count = trailers.get(layout.COUNT_TRAILER)
        if count is not None and count != str(len(entries)):
            problems.append((f"Edda-Events says {count} but the commit holds {len(entries)}", oid))
    return problems, entries


def _safe_body(ledger: Any, tree: str | None, eid: str) -> Any:
    try:
        return ledger.body(tree, eid)
    except Exception:
        return None


def _verify_payload(
    memory: Memory,
    tree: str | None,
    eid: str,
    env: dict[str, Any],
    ref: str,
    commit: str,
    report: Report,
) -> None:
    ledger = memory.ledger
    try:
        found = ledger.stored_body(tree, eid)
    except Exception as exc:
        report.problems.append(
            Problem(
                f"payload unreadable: {_error_text(exc)}", ref, commit, event=eid, field="payload"
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
            Problem(f"attachment unreadable: {_error_text(exc)}", ref, commit, blob, eid, "payload")
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


def _verify_store(
    memory: Memory, tree: str, envelopes: dict[str, dict[str, Any]], report: Report
) -> None:
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
                            f"attachment unreadable: {_error_text(exc)}",
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
