"""Export and import memory bundles.

A bundle is one JSON document, one event per line so it diffs well::

    {"format":"gitmem-bundle","version":1,"events":[
    {"body":{…},"envelope":{…},"redacted":false},
    …
    ]}

Events are in (time, id) order and every value is canonically encoded, so
the same store always exports the same bytes, and ``export -> import into a
fresh repository -> export`` reproduces them exactly. Redacted events travel
as their envelope with ``"body": null``; their redaction events travel too,
and importing a redaction removes the target's payload where it exists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.errors import ConflictError, DependencyError, UsageError
from gitmem.memory.event import Event
from gitmem.records import canonical
from gitmem.records.validate import Limits, branch_problem, event_problems
from gitmem.storage import clock
from gitmem.storage.eventchain import Sealed
from gitmem.storage.gitconfig import limits as config_limits

if TYPE_CHECKING:
    from gitmem.memory.api import Memory

BUNDLE_FORMAT = "gitmem-bundle"
BUNDLE_VERSION = 1
STRATEGIES = ("skip", "overwrite", "error")


def export_json(events: Sequence[Event]) -> bytes:
    """The bundle bytes for ``events`` (sorted here, whatever order they come in)."""
    lines = [
        canonical.encode({"body": e.body, "envelope": e.envelope, "redacted": e.redacted})
        for e in sorted(events, key=lambda e: e.order_key)
    ]
    head = canonical.encode({"format": BUNDLE_FORMAT, "version": BUNDLE_VERSION})[:-1]
    return head + b',"events":[\n' + b",\n".join(lines) + (b"\n" if lines else b"") + b"]}\n"


def events_to_export(memory: Memory, branch: str | None = None) -> list[Event]:
    """Every event (or ``branch``'s own), plus, for a branch, the redaction
    events of other branches that redact its events: a bundle carries the
    redaction of every event it sends without a body, or import refuses it."""
    from gitmem.memory.query import EventFilter

    if branch is None:
        return memory.events(all_branches=True)
    events = memory.events(branch=branch, trunk="none")
    redacted = {e.id for e in events if e.redacted}
    if redacted:
        have = {e.id for e in events}
        events += [
            e
            for e in memory.events(EventFilter(types=["redaction"]), all_branches=True)
            if e.field("target") in redacted and e.id not in have
        ]
    return events


def export_parquet(events: Sequence[Event], path: Path) -> None:
    """Write events as a Parquet table (one row per event) for Arrow tools."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise DependencyError(
            "pyarrow is needed for --format parquet", "pip install pyarrow"
        ) from exc
    rows = sorted(events, key=lambda e: e.order_key)
    table = pa.table(
        {
            "id": [e.id for e in rows],
            "type": [e.type for e in rows],
            "time_us": pa.array([e.time for e in rows], pa.int64()),
            "time": pa.array([e.time for e in rows], pa.timestamp("us", tz="UTC")),
            "branch": [e.branch for e in rows],
            "repo": [e.scope.get("repo") for e in rows],
            "session": [e.scope.get("session") for e in rows],
            "agent": [e.scope.get("agent") for e in rows],
            "user": [e.scope.get("user") for e in rows],
            "capsule": [e.capsule for e in rows],
            "redacted": [e.redacted for e in rows],
            "summary": [e.summary(200) for e in rows],
            "body": [None if e.body is None else canonical.encode(e.body).decode() for e in rows],
            "envelope": [canonical.encode(e.envelope).decode() for e in rows],
        }
    )
    # An open file, not the path: given a path, pyarrow deletes it when the
    # write fails, and the path is the user's (as root, even /dev/full).
    with open(path, "wb") as handle:
        pq.write_table(table, handle)


@dataclass
class ImportResult:
    imported: int = 0
    skipped: int = 0
    overwritten: int = 0
    redactions_applied: int = 0
    redacts: list[str] = field(default_factory=list)  # existing events whose text it removes
    dry_run: bool = False
    conflicts: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def parse_bundle(
    data: bytes, *, now_us: int | None = None, limits: Limits | None = None
) -> list[dict[str, Any]]:
    """Validate a bundle and return its entries (UsageError on anything wrong).

    Every event gets the same check as one arriving by capture or by pull
    (:func:`gitmem.records.validate.event_problems`, with times bounded by
    ``now_us`` plus the allowed skew). An event may come without a body only
    when it is marked redacted and the bundle carries its redaction.
    """
    try:
        doc = canonical.decode(data)
    except (ValueError, RecursionError) as exc:
        reason = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise UsageError(
            f"the bundle is not valid JSON: {reason}", "pass a file written by 'git edda export'"
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != BUNDLE_FORMAT:
        raise UsageError("this is not a gitmem bundle", "pass a file written by 'git edda export'")
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UsageError(
            "the bundle has no valid version", "pass a file written by 'git edda export'"
        )
    if version > BUNDLE_VERSION:
        raise UsageError(
            f"bundle version {version} is newer than this gitmem reads", "upgrade gitmem"
        )
    entries = doc.get("events")
    if not isinstance(entries, list):
        raise UsageError("the bundle has no event list")
    targets: set[str] = set()
    for n, entry in enumerate(entries, 1):
        if not isinstance(entry, dict):
            raise UsageError(f"bundle event #{n} is not a JSON object", "export it again")
        env, body = entry.get("envelope"), entry.get("body")
        problems = event_problems(env, body, now_us=now_us, limits=limits)
        if not problems and isinstance(env, dict):
            # An imported event is committed to the chain its branch names,
            # so here the branch must be one git accepts (unlike in a pull,
            # where the chain is the remote's ref, checked on its own).
            branch = env["scope"].get("branch")
            why = branch_problem(branch) if branch is not None else None
            problems = [f"field 'scope.branch' {why}"] if why else []
        if problems:
            eid = env.get("id") if isinstance(env, dict) else None
            which = f"{eid[:12]}" if isinstance(eid, str) else f"#{n}"
            raise UsageError(
                f"bundle event {which}: {problems[0]}",
                "the bundle is damaged or was altered; nothing was imported",
            )
        assert isinstance(env, dict)  # event_problems said so
        if env["type"] == "redaction" and isinstance(body, dict):
            targets.add(body["target"])
    for entry in entries:
        if entry.get("body") is None and entry["envelope"]["id"] not in targets:
            raise UsageError(
                f"bundle event {entry['envelope']['id'][:12]} has no body and the bundle "
                "does not redact it",
                "the bundle is damaged or was altered; nothing was imported",
            )
    return entries


def import_bundle(
    memory: Memory, data: bytes, *, strategy: str = "skip", dry_run: bool = False
) -> ImportResult:
    """Import a bundle. ``strategy`` for ids that exist already:

    * ``skip``: keep the local event;
    * ``overwrite``: restore the bundle's payload where the local one is missing
      (the id binds the envelope, so nothing else can differ);
    * ``error``: import nothing and raise ConflictError.
    """
    if strategy not in STRATEGIES:
        raise UsageError(
            f"unknown conflict strategy {strategy!r}", f"use one of: {', '.join(STRATEGIES)}"
        )
    limits = config_limits(memory.config)
    entries = parse_bundle(data, now_us=clock.wall_us(), limits=limits)
    result = ImportResult(dry_run=dry_run)
    with memory.ledger.locked():
        existing = {e.id: e for e in memory.events(all_branches=True)}
        new: list[Sealed] = []
        restore: list[Sealed] = []
        removals: list[str] = []
        bundle_ids = set()
        for entry in entries:
            env, body = entry["envelope"], entry.get("body")
            eid = env["id"]
            if eid in bundle_ids:
                continue
            bundle_ids.add(eid)
            if env["type"] == "redaction" and body is not None:
                removals.append(body["target"])  # parse_bundle checked its type
            local = existing.get(eid)
            if local is None:
                new.append(Sealed(env, body))
                result.imported += 1
                continue
            result.conflicts.append(eid)
            if strategy == "error":
                raise ConflictError(
                    f"event {eid[:12]} already exists ({len(result.conflicts)} conflict so far)",
                    "use --on-conflict skip or overwrite",
                )
            if (
                strategy == "overwrite"
                and body is not None
                and local.body is None
                and not local.redacted
            ):
                restore.append(Sealed(env, body))
                result.overwritten += 1
            else:
                result.skipped += 1
        removals = [t for t in removals if t in existing or t in bundle_ids]
        restore = [s for s in restore if s.envelope["id"] not in removals]
        new = [s if s.envelope["id"] not in removals else Sealed(s.envelope, None) for s in new]
        # Reported before anything is applied (and by --dry-run): which events
        # already here lose their text. One already redacted is not counted,
        # so importing the same bundle twice reports nothing the second time.
        result.redacts = sorted(
            t for t in removals if t in existing and existing[t].body is not None
        )
        result.redactions_applied = len(result.redacts)
        if dry_run or not (new or restore or removals):
            return result
        memory.ledger.commit(new, remove_payloads=removals, restore_payloads=restore)
        if new:
            newest = max(s.envelope["time"] for s in new)
            clock.observe(memory.location.state_dir, newest, skew_us=limits.skew_us)
    return result
