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

import io
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from gitmem.errors import ConflictError, UsageError
from gitmem.memory.event import Event
from gitmem.records import canonical, layout
from gitmem.records.validate import Limits, branch_problem, event_problems
from gitmem.storage import clock
from gitmem.storage.eventchain import Sealed
from gitmem.storage.gitconfig import limits as config_limits

if TYPE_CHECKING:
    from gitmem.branches.chains import MergeResult
    from gitmem.memory.api import Memory
    from gitmem.storage.payloads import Roots

BUNDLE_FORMAT = "gitmem-bundle"
BUNDLE_VERSION = 1
STRATEGIES = ("skip", "overwrite", "error")
_CHUNK = 1 << 20  # bytes of bundle per write


def export_json(events: Sequence[Event]) -> bytes:
    """The bundle bytes for ``events`` (sorted here, whatever order they come in)."""
    out = io.BytesIO()
    write_bundle(sorted(events, key=lambda e: e.order_key), out)
    return out.getvalue()


class Sink(Protocol):
    """Where a bundle is written: a binary file, standard output, a buffer."""

    def write(self, data: bytes, /) -> object: ...


def write_bundle(events: Iterable[Event], out: Sink) -> int:
    """Write the bundle of ``events``, already in (time, id) order, to ``out``
    as they come (so an export holds one event at a time, not the store);
    returns how many. The bytes are :func:`export_json`'s."""
    head = canonical.encode({"format": BUNDLE_FORMAT, "version": BUNDLE_VERSION})[:-1]
    chunk = [head + b',"events":[\n']
    size = count = 0
    for event in events:
        line = canonical.encode(
            {"body": event.body, "envelope": event.envelope, "redacted": event.redacted}
        )
        chunk.append(b",\n" + line if count else line)
        count += 1
        size += len(line)
        if size >= _CHUNK:  # a write per MiB, not per event
            out.write(b"".join(chunk))
            chunk, size = [], 0
    chunk.append((b"\n" if count else b"") + b"]}\n")
    out.write(b"".join(chunk))
    return count


@dataclass
class ImportResult:
    """What an import did (or, with ``dry_run``, would do)."""

    imported: int = 0
    skipped: int = 0
    overwritten: int = 0
    # events already here whose payload the bundle's redactions removed this
    # time (0 when the same bundle is imported again)
    redactions_applied: int = 0
    redacts: list[str] = field(default_factory=list)
    dry_run: bool = False
    conflicts: list[str] = field(default_factory=list)
    # the bundle's events per memory branch they belong to (detached-HEAD
    # events are counted in ``detached``)
    branches: dict[str, int] = field(default_factory=dict)
    detached: int = 0
    branch: str | None = None  # the branch checked out here (None: detached HEAD)
    visible: int = 0  # the bundle's events that branch's memory shows (would show)
    onto: str | None = None
    merged: list[MergeResult] = field(default_factory=list)  # with onto: what moved

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["merged"] = [m.to_json() for m in self.merged]
        return out


BUNDLE_HINT = "pass a file written by 'git edda export'"
_READS = "import reads JSON bundles written by 'git edda export'"
PARQUET_MAGIC = b"PAR1"


def _document(data: bytes, name: str) -> Any:
    """The JSON document ``data`` holds, or a usage error saying what the
    input is instead (Parquet, compressed, binary, empty, broken JSON)."""
    if data.startswith(PARQUET_MAGIC):
        raise UsageError(
            f"{name} is a Parquet export, which is for analysis; {_READS}",
            "write a bundle instead: git edda export --output FILE",
        )
    if data.startswith(b"\x1f\x8b"):
        raise UsageError(
            f"{name} is gzip-compressed; {_READS}", "decompress it first, e.g. with gunzip"
        )
    if data.startswith(b"PK\x03\x04"):
        raise UsageError(
            f"{name} is a zip archive; {_READS}", "extract the bundle first, e.g. with unzip"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is None or "\x00" in text:
        raise UsageError(f"{name} is binary data, not a JSON bundle; {_READS}", BUNDLE_HINT)
    if not text.strip():
        raise UsageError(f"{name} is empty; {_READS}", BUNDLE_HINT)
    try:
        return canonical.decode(data)
    except RecursionError:
        raise UsageError(
            f"{name} is not a bundle: its JSON is nested too deeply; {_READS}", BUNDLE_HINT
        ) from None
    except json.JSONDecodeError as exc:
        if exc.pos >= len(text.rstrip()):
            raise UsageError(
                f"{name} is not valid JSON: it ends in the middle of the document"
                " (a truncated or partly written file?)",
                "export the bundle again with 'git edda export --output FILE'",
            ) from None
        raise UsageError(
            f"{name} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno};"
            f" {_READS}",
            BUNDLE_HINT,
        ) from None
    except ValueError as exc:
        raise UsageError(f"{name} is not valid JSON: {exc}; {_READS}", BUNDLE_HINT) from None


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "a JSON array"
    if isinstance(value, str):
        return "a JSON string"
    if isinstance(value, bool) or value is None:
        return f"JSON {json.dumps(value)}"
    if isinstance(value, int | float):
        return "a JSON number"
    return "a JSON object"


def parse_bundle(
    data: bytes,
    *,
    now_us: int | None = None,
    limits: Limits | None = None,
    name: str = "the input",
) -> list[dict[str, Any]]:
    """Validate a bundle and return its entries (UsageError on anything wrong;
    ``name`` says in the message which input it was, e.g. the file's path).

    Every event gets the same check as one arriving by capture or by pull
    (:func:`gitmem.records.validate.event_problems`, with times bounded by
    ``now_us`` plus the allowed skew). An event may come without a body only
    when it is marked redacted and the bundle carries its redaction.
    """
    doc = _document(data, name)
    if not isinstance(doc, dict):
        raise UsageError(
            f"{name} is {_json_kind(doc)}, not a gitmem bundle; {_READS}"
            ' (a JSON object with "format": "gitmem-bundle")',
            BUNDLE_HINT,
        )
    if doc.get("format") != BUNDLE_FORMAT:
        what = doc.get("format")
        kind = f'of "format" {what[:40]!r}' if isinstance(what, str) else 'without "format"'
        raise UsageError(
            f"{name} is a JSON object {kind}, not a gitmem bundle; {_READS}"
            ' (a JSON object with "format": "gitmem-bundle")',
            BUNDLE_HINT,
        )
    version = doc.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UsageError("the bundle has no valid version", BUNDLE_HINT)
    if version > BUNDLE_VERSION:
        raise UsageError(
            f"bundle version {version} is newer than this gitmem reads", "upgrade gitmem"
        )
    entries = doc.get("events")
    if not isinstance(entries, list):
        raise UsageError("the bundle has no event list", BUNDLE_HINT)
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
    memory: Memory,
    data: bytes,
    *,
    strategy: str = "skip",
    dry_run: bool = False,
    onto: str | None = None,
    name: str = "the input",
) -> ImportResult:
    """Import a bundle. ``strategy`` for ids that exist already:

    * ``skip``: keep the local event;
    * ``overwrite``: restore the bundle's payload where the local one is missing
      (the id binds the envelope, so nothing else can differ);
    * ``error``: import nothing and raise ConflictError.

    Events keep the branch they were recorded on (the id binds it), so a
    bundle from ``main`` lands in memory branch ``main`` even where the
    trunk is ``master``; ``onto`` then merges the memory of every branch the
    bundle has events on into that branch's, as ``git edda merge`` does.
    The result says how many of the bundle's events the checked-out
    branch's memory shows (``visible``), so a caller can tell the user when
    it is none.
    """
    from gitmem.branches.chains import merge

    if strategy not in STRATEGIES:
        raise UsageError(
            f"unknown conflict strategy {strategy!r}", f"use one of: {', '.join(STRATEGIES)}"
        )
    if onto is not None and (why := branch_problem(onto)):
        raise UsageError(f"{onto[:80]!r} is not a branch name: it {why}", "name a git branch")
    limits = config_limits(memory.config)
    entries = parse_bundle(data, now_us=clock.wall_us(), limits=limits, name=name)
    result = ImportResult(dry_run=dry_run, branch=memory.branch, onto=onto)
    with memory.ledger.locked():
        # Only the bundle's events, and the events its redactions name, are
        # looked up here (by their envelopes: every event with its body took
        # minutes and gigabytes at a million events).
        asked = {entry["envelope"]["id"] for entry in entries} | {
            entry["body"]["target"]
            for entry in entries
            if entry["envelope"]["type"] == "redaction" and entry.get("body") is not None
        }
        existing = memory.located(asked)
        tree = memory.ledger.payload_roots()
        redacted_here = memory.ledger.redaction_targets([tree]) if existing else set()
        new: list[Sealed] = []
        restore: list[Sealed] = []
        removals: set[str] = set()
        bundle_ids: set[str] = set()
        for entry in entries:
            env, body = entry["envelope"], entry.get("body")
            eid = env["id"]
            if eid in bundle_ids:
                continue
            bundle_ids.add(eid)
            branch = env["scope"].get("branch")
            if branch is None:
                result.detached += 1
            else:
                result.branches[branch] = result.branches.get(branch, 0) + 1
            if env["type"] == "redaction" and body is not None:
                removals.add(body["target"])  # parse_bundle checked its type
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
                and eid not in redacted_here
                and memory.ledger.checked_body(tree, local.envelope)[0] is None
            ):
                restore.append(Sealed(env, body))
                result.overwritten += 1
            else:
                result.skipped += 1
        removals = {t for t in removals if t in existing or t in bundle_ids}
        restore = [s for s in restore if s.envelope["id"] not in removals]
        new = [s if s.envelope["id"] not in removals else Sealed(s.envelope, None) for s in new]
        # Reported before anything is applied (and by --dry-run): which events
        # already here lose their payload now. Only a payload that is in the
        # store counts, so importing the same bundle again reports nothing,
        # and one whose redaction is here but whose payload a crash left
        # (spec/storage.md §13) counts when this import removes it.
        result.redacts = sorted(
            t for t in removals if t in existing and _has_payload(memory, tree, t)
        )
        result.redactions_applied = len(result.redacts)
        merge_from = sorted(b for b in result.branches if b != onto) if onto else []
        if dry_run:
            here = memory.visible(bundle_ids)
            if onto is not None and onto == result.branch:
                here |= bundle_ids
            else:
                here |= {
                    s.envelope["id"]
                    for s in new
                    if s.envelope["scope"].get("branch") == result.branch
                }
            result.visible = len(bundle_ids & here)
            return result
        if new or restore or removals:
            memory.ledger.commit(new, remove_payloads=sorted(removals), restore_payloads=restore)
            if new:
                newest = max(s.envelope["time"] for s in new)
                clock.observe(memory.location.state_dir, newest, skew_us=limits.skew_us)
        chains = memory.ledger.memory_refs()
        for source in merge_from:
            if layout.branch_ref(source) in chains:
                result.merged.append(merge(memory, source, onto))
        result.visible = len(memory.visible(bundle_ids))
    return result


def _has_payload(memory: Memory, tree: Roots | None, event_id: str) -> bool:
    """Whether the payload store ``tree`` holds ``event_id``'s payload."""
    return memory.ledger.locate(tree, event_id) is not None
