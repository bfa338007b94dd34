"""Checks on memory fetched from a remote, made before any of it is merged.

A remote is as hostile as any other input (spec/sync.md, "Incoming checks").
Everything ``verify`` checks is checked here on what a pull would bring in,
and one failure refuses the whole pull with one error naming the ref, the
commit and the problem; nothing local changes:

* every fetched ref under ``refs/edda/`` has a name a valid store can hold
  and points at a commit;
* every incoming chain commit is a memory commit of a known format and shape
  (a code commit, a tree with anything besides ``events/``, a merge carrying
  events are refused: :func:`gitmem.memory.chaincheck.commit_problems`);
* every incoming envelope is canonical and valid, with a time not past the
  local clock plus ``edda.maxClockSkew``, and appears once;
* the fetched payload store is a parentless snapshot of ``p/`` and ``b/``;
* every payload the merge would add is valid for its event and matches the
  envelope's digest (its attachments joined and their names checked), and
  every incoming event that was not redacted has one.

Payloads no known event claims (left by an interrupted write on the other
side) are not merged, rather than refused: they are harmless there and
unverifiable here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gitmem.errors import GitmemError, RejectedError
from gitmem.memory.chaincheck import commit_problems
from gitmem.memory.checkedevents import CheckedEvents
from gitmem.records import canonical, layout
from gitmem.records.validate import (
    Limits,
    event_problems,
    memory_ref_problem,
    payload_problem,
)
from gitmem.storage import clock
from gitmem.storage.eventchain import check_format

if TYPE_CHECKING:
    from gitmem.memory.api import Memory
    from gitmem.storage.payloads import Roots


@dataclass
class Incoming:
    """What the checks learnt: the newest incoming time, and payloads not to merge."""

    newest: int = 0
    skip_payloads: set[str] = field(default_factory=set)
    redactions: set[str] = field(default_factory=set)  # ids of the incoming redaction events


def _refuse(remote: str, what: str, problem: str) -> RejectedError:
    return RejectedError(
        f"refused memory from {remote}: {what}: {problem}",
        "nothing was merged; the remote's memory is damaged or forged: ask whoever "
        "pushed it to run 'git edda verify', and do not push over it",
    )


def check_fetched(
    memory: Memory,
    mirror: dict[str, str],
    remote: str,
    limits: Limits,
    left_out: set[str] | frozenset[str] = frozenset(),
) -> Incoming:
    """Check the fetched refs ``mirror`` (``refs/edda/…`` name -> tip) before a
    merge; raise :class:`RejectedError` on the first problem. ``left_out``:
    ids of events the remote holds in chains this pull leaves out (pruned
    here), whose payloads are not merged."""
    backend = memory.backend
    ledger = memory.ledger
    result = Incoming()
    for ref, tip in sorted(mirror.items()):
        why = memory_ref_problem(ref)
        if why:
            raise _refuse(remote, f"ref {ref}", why)
        if not (
            layout.is_chain_ref(ref) or ref == layout.PAYLOAD_REF or layout.is_partition_ref(ref)
        ):
            continue  # unknown refs are never merged
        try:
            info = backend.read_commit(tip)
        except GitmemError as exc:
            raise _refuse(remote, f"ref {ref} ({tip})", exc.message) from None
        _newer_format(info.message, f"memory ref {ref} on {remote}")

    chains = {ref: tip for ref, tip in mirror.items() if layout.is_chain_ref(ref)}
    local = ledger.memory_refs()
    commits = backend.commits_between(list(chains.values()), list(local.values()))
    now = clock.wall_us()
    checked = CheckedEvents()  # what the payload checks need of each envelope
    for oid in commits:
        what = f"commit {oid}"
        try:
            info = backend.read_commit(oid)
        except GitmemError as exc:
            raise _refuse(remote, what, exc.message) from None
        _newer_format(info.message, f"fetched memory commit {oid}")
        shape, entries = commit_problems(backend, oid, info)
        if shape:
            raise _refuse(remote, what, shape[0][0])
        for entry in entries or ():
            try:
                data = backend.read_blob(entry.oid)
            except GitmemError:
                raise _refuse(remote, f"{what}, event blob {entry.oid}", "unreadable") from None
            envelope = _envelope(data, remote, f"{what}, event blob {entry.oid}")
            problems = event_problems(envelope, None, now_us=now, limits=limits)
            if problems:
                raise _refuse(remote, f"{what}, event blob {entry.oid}", problems[0])
            if not checked.add(envelope["id"], envelope, "", oid):
                raise _refuse(remote, what, f"event {envelope['id'][:12]} appears twice")
            result.newest = max(result.newest, envelope["time"])
            if envelope["type"] == "redaction":
                result.redactions.add(envelope["id"])

    ours = ledger.payload_roots()
    theirs = _payload_roots(memory, mirror, remote, ours)
    redacted = ledger.redaction_targets([ours, theirs]) | _incoming_redactions(
        memory, checked, [theirs, ours]
    )
    # What the fetched store holds that ours lacks, partition by partition
    # (git compares the trees): each copy is checked, as each is what the
    # merge takes (one id offered in two partitions is checked twice).
    offered = [
        (name, eid, blob)
        for name, eid, old, blob in ledger.partition_differences(ours, theirs)
        if old is None and blob is not None and eid not in redacted
    ]
    claimed = {eid for _, eid, _ in offered}
    result.skip_payloads |= claimed & left_out
    claimed -= left_out
    unknown = {event_id for event_id in claimed if event_id not in checked}
    known = _local_envelopes(memory, unknown) if unknown else {}
    for name, event_id, blob in offered:
        if event_id not in claimed:
            continue
        envelope = checked.envelope(event_id) if event_id in checked else known.get(event_id)
        if envelope is None:
            result.skip_payloads.add(event_id)
            continue
        assert theirs is not None
        trees = [theirs.trees[name], *([ours.trees[name]] if ours and name in ours.trees else [])]
        _check_payload(memory, trees, envelope, remote, blob)
    for event_id in sorted(checked):
        if event_id in redacted or event_id in claimed:
            continue
        if ledger.locate(ours, event_id, checked.envelope(event_id).get("time")) is None:
            raise _refuse(
                remote,
                f"event {event_id[:12]}",
                "it has no payload and was not redacted",
            )
    return result


def _envelope(data: bytes, remote: str, what: str) -> Any:
    """The envelope an incoming event blob holds, decoded once; refused
    unless it is JSON in the canonical encoding."""
    try:
        envelope = canonical.decode_exact(data)
    except ValueError:
        try:
            canonical.decode(data)
        except ValueError:
            raise _refuse(remote, what, "unreadable") from None
        raise _refuse(remote, what, "not canonical") from None  # a float: JSON, never canonical
    if not canonical.is_canonical(data, envelope):
        raise _refuse(remote, what, "not canonical")
    return envelope


def _newer_format(message: str, where: str) -> None:
    """FormatTooNewError (exit 6, "upgrade gitmem") only for a readable, higher
    ``Edda-Format``: a missing or unreadable one is a shape problem that
    :func:`commit_problems` refuses (exit 4), never a reason to upgrade."""
    fmt = layout.parse_trailers(message).get(layout.FORMAT_TRAILER)
    if fmt is not None and fmt.isascii() and fmt.isdigit():
        check_format(message, where)


def _payload_roots(
    memory: Memory, mirror: dict[str, str], remote: str, ours: Roots | None
) -> Roots | None:
    """The fetched payload store, after checking its shape: a snapshot of
    format 1, or a store commit whose partitions are the fetched partition
    refs, each a snapshot. Partitions the local store holds alike were
    checked when they came: a pull reads the weeks that changed."""
    tip = mirror.get(layout.PAYLOAD_REF)
    if tip is None:
        return None
    backend = memory.backend
    what = f"payload store {tip}"
    try:
        fmt = _snapshot_format(memory, tip, remote, what)
        info = backend.read_commit(tip)
        if fmt == "1":
            _check_snapshot_tree(memory, info.tree, remote, what)
        else:
            known = set(ours.commits.values()) if ours else set()
            for entry in backend.read_tree(info.tree):
                name = entry.name
                if entry.mode != layout.MODE_GITLINK or not layout.is_partition(name):
                    raise _refuse(remote, what, f"unexpected entry {name!r}")
                ref = layout.partition_ref(name)
                if entry.oid in known:
                    continue
                # A partition is the remote's ref of that name, or one this
                # clone holds already: a server without atomic pushes can
                # take one clone's partition ref and another's store commit.
                if mirror.get(ref) != entry.oid and not backend.has_object(entry.oid):
                    raise _refuse(
                        remote, what, f"partition {name} is neither the remote's {ref} nor here"
                    )
                part = f"payload partition {name} ({entry.oid})"
                _snapshot_format(memory, entry.oid, remote, part)
                _check_snapshot_tree(memory, backend.read_commit(entry.oid).tree, remote, part)
        return memory.ledger.payload_roots(tip)
    except GitmemError as exc:
        if isinstance(exc, RejectedError):
            raise
        raise _refuse(remote, what, exc.message) from None


def _snapshot_format(memory: Memory, tip: str, remote: str, what: str) -> str:
    """A fetched snapshot commit's format, after checking it has no parents."""
    info = memory.backend.read_commit(tip)
    if info.parents:
        raise _refuse(remote, what, "it has parents (it must be a snapshot)")
    fmt = layout.parse_trailers(info.message).get(layout.FORMAT_TRAILER)
    if fmt is None or not (fmt.isascii() and fmt.isdigit()):
        raise _refuse(remote, what, "it has no readable Edda-Format trailer")
    _newer_format(info.message, f"{what} on {remote}")
    return fmt


def _check_snapshot_tree(memory: Memory, tree: str, remote: str, what: str) -> None:
    """A snapshot's tree holds ``p/`` and ``b/`` of fan-out directories only."""
    backend = memory.backend
    for entry in backend.read_tree(tree):
        if entry.name not in ("p", "b") or entry.mode != layout.MODE_TREE:
            raise _refuse(remote, what, f"unexpected entry {entry.name!r}")
        for fan in backend.read_tree(entry.oid):
            if fan.mode != layout.MODE_TREE:
                raise _refuse(remote, what, f"{entry.name}/{fan.name} is not a directory")


def _incoming_redactions(
    memory: Memory, checked: CheckedEvents, trees: list[Roots | None]
) -> set[str]:
    """Targets of the incoming redaction events (their bodies in either store)."""
    targets: set[str] = set()
    for event_id in checked.redactions:
        envelope = checked.envelope(event_id)
        for tree in trees:
            body, _ = memory.ledger.checked_body(tree, envelope)
            if body is not None:
                if isinstance(body.get("target"), str):
                    targets.add(body["target"])
                break
    return targets


def _local_envelopes(memory: Memory, wanted: set[str]) -> dict[str, dict[str, Any]]:
    """Envelopes of local events among ``wanted`` (a walk, done only when the
    remote offers payloads for events that are not incoming)."""
    found: dict[str, dict[str, Any]] = {}
    for located in memory.ledger.envelopes():
        if located.envelope.get("id") in wanted:
            found[located.envelope["id"]] = located.envelope
            if len(found) == len(wanted):
                break
    return found


def _check_payload(
    memory: Memory, trees: list[str], envelope: dict[str, Any], remote: str, blob: str
) -> None:
    """The fetched payload of ``envelope`` (``blob``) is valid and is what
    the envelope pins, with its attachments from ``trees``: the fetched
    partition it is in, then the local one of that name (where the merge
    takes them from)."""
    event_id = envelope["id"]
    what = f"payload of event {event_id[:12]}"
    backend = memory.backend

    def attachment(sha: str) -> bytes | None:
        path = layout.attachment_path(sha)
        found = (backend.read_path(tree, path) for tree in trees)
        oid = next((oid for oid in found if oid is not None), None)
        data = backend.read_blob(oid) if oid is not None else None
        if data is not None and canonical.sha256_hex(data) != sha:
            raise _refuse(remote, what, f"attachment {sha[:12]} does not match its name")
        return data

    try:
        stored = canonical.decode(memory.backend.read_blob(blob))
        memory.ledger.attachments_of(blob, stored)  # the merge needs them: no second read
        body = layout.join_attachments(stored, attachment)
    except KeyError as exc:
        raise _refuse(remote, what, f"attachment {exc} is missing") from None
    except (GitmemError, ValueError) as exc:
        if isinstance(exc, RejectedError):
            raise
        raise _refuse(remote, what, "it is unreadable (not UTF-8 JSON)") from None
    why = payload_problem(envelope, body)
    if why:
        raise _refuse(remote, what, why)
