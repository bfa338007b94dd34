"""The Arrow tables of the index: events and chain membership.

The events table has one row per event, sorted by (time, id), stored in
segments (:mod:`gitmem.index.segments`): the envelope
and body as JSON (so the library's :class:`~gitmem.memory.event.Event` can be
rebuilt), plus the columns queries filter on. ``members.arrow`` says which
memory chain reaches which memory commit, one (ref, commit) row each: an
event belongs to every chain that reaches the commit that added it, so a
fork that inherits 100,000 events adds rows here instead of rewriting every
event row.

Both are Arrow IPC files, written to a temporary name and renamed into
place, and memory-mapped by readers (opening costs no copy).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, TypedDict

from gitmem.errors import IndexDamagedError

if TYPE_CHECKING:
    import pyarrow as pa

MEMBERS_FILE = "members.arrow"


class EventRow(TypedDict):
    """One row of the events table (:func:`event_schema`) as a dict, plus two
    keys of the refresh's own that :func:`from_rows` leaves out."""

    id: str
    key64: int
    type: str
    time: int
    commit: str
    ref: str
    session: str | None
    agent: str | None
    user: str | None
    capsule: str | None
    key: str | None
    target: str | None
    paths: list[str]
    tags: list[str]
    redacted: bool
    missing: bool
    text: str
    line: str | None
    envelope: str
    body: str | None
    was_missing: NotRequired[bool]  # the body was missing when the row was read
    _old_text: NotRequired[str]  # the text a redaction or a changed payload took away


class MemberRow(TypedDict):
    """One row of ``members.arrow``: a memory chain reaches a memory commit."""

    ref: str
    commit: str


class TextRow(TypedDict):
    """What the full text and the vectors need of a row."""

    id: str
    key64: int
    type: str  # which event types get vectors is configurable (edda.embed.types)
    text: str


def event_schema() -> pa.Schema:
    import pyarrow as pa

    nullable = [("session", True), ("agent", True), ("user", True), ("capsule", True)]
    return pa.schema(
        [
            ("id", pa.string()),
            ("key64", pa.uint64()),  # the vector index's key (first 64 bits of the id)
            ("type", pa.string()),
            ("time", pa.int64()),
            ("commit", pa.string()),
            ("ref", pa.string()),
            *[pa.field(name, pa.string(), nullable=n) for name, n in nullable],
            ("key", pa.string()),
            ("target", pa.string()),
            ("paths", pa.list_(pa.string())),
            ("tags", pa.list_(pa.string())),
            ("redacted", pa.bool_()),
            ("missing", pa.bool_()),
            ("text", pa.string()),
            # a decision as context packs show it (describe() at LINE_WIDTH), so
            # thousands of active decisions need no JSON decoding
            ("line", pa.string()),
            ("envelope", pa.string()),
            ("body", pa.string()),
        ]
    )


def member_schema() -> pa.Schema:
    import pyarrow as pa

    return pa.schema([("ref", pa.string()), ("commit", pa.string())])


def member_table(ref: str, commits: Sequence[str]) -> pa.Table:
    """``members.arrow`` rows: chain ``ref`` reaches each of ``commits``."""
    import pyarrow as pa

    return pa.table(
        {
            "ref": pa.array([ref] * len(commits), pa.string()),
            "commit": pa.array(commits, pa.string()),
        },
        schema=member_schema(),
    )


def from_rows(rows: Sequence[Mapping[str, object]], schema: pa.Schema) -> pa.Table:
    """A table from row dicts (missing keys are null)."""
    import pyarrow as pa

    columns = {name: [row.get(name) for row in rows] for name in schema.names}
    return pa.Table.from_pydict(columns, schema=schema)


def sort_events(table: pa.Table) -> pa.Table:
    """Rows in the total order of events, the same on every clone."""
    return table.sort_by([("time", "ascending"), ("id", "ascending")])


def write(path: Path, table: pa.Table, *, fsync: bool = False) -> None:
    """Write an IPC file atomically (temporary name, then rename)."""
    import pyarrow as pa

    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    try:
        with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table, max_chunksize=65536)
        if fsync:
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()


def read(path: Path, schema: pa.Schema) -> pa.Table:
    """A memory-mapped table; IndexDamagedError when the file is not what we
    wrote. (Arrow checks the file's structure, not its data: callers check
    the file against the manifest's checksum first.)"""
    import pyarrow as pa

    try:
        source = pa.memory_map(str(path), "r")
        try:
            table = pa.ipc.open_file(source).read_all()
        finally:
            # The table's buffers keep the mapping alive; the file handle is
            # not needed, and without it dropping the table unmaps the file.
            source.close()
    except (OSError, pa.ArrowInvalid) as exc:
        raise IndexDamagedError(f"{path.name}: {exc}") from None
    if not table.schema.equals(schema):
        raise IndexDamagedError(f"{path.name}: unexpected schema")
    return table
