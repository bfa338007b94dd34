"""The Parquet export: one row per event, a fixed schema, for Arrow tools.

Unlike a bundle it is for analysis, not for ``import``: it carries each
event's scope ids, tags and paths as first-class columns.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from gitmem.errors import DependencyError
from gitmem.memory.describe import paths_of
from gitmem.memory.event import Event
from gitmem.records import canonical

PARQUET_FORMAT = "gitmem-export-parquet"
PARQUET_VERSION = 1


@dataclass(frozen=True)
class Column:
    """One column of the Parquet export: its type, and how an event fills it.

    ``kind`` names the Arrow type (:func:`parquet_schema` builds it):
    ``string``, ``int64``, ``bool``, ``timestamp`` (microseconds, UTC) or
    ``strings`` (a list of strings)."""

    name: str
    kind: str
    nullable: bool
    description: str
    value: Callable[[Event], Any]


def _json_or_none(value: dict[str, Any] | None) -> str | None:
    return None if value is None else canonical.encode(value).decode()


def _strings(event: Event, name: str) -> list[str]:
    value = event.field(name)
    return [str(v) for v in value] if isinstance(value, list) else []


# The one definition of the Parquet export: export_parquet writes it and
# tools/schema.py documents it in formats/export-parquet.v1.json. The
# schema never depends on the data (a store without sessions still has a
# string `session` column); changing it means a new PARQUET_VERSION.
PARQUET_COLUMNS: tuple[Column, ...] = (
    Column("id", "string", False, "event id (32 hex digits)", lambda e: e.id),
    Column("type", "string", False, "event type (note, decision, ...)", lambda e: e.type),
    Column(
        "time",
        "timestamp",
        False,
        "the event's time, microseconds, UTC (the same instant as time_us)",
        lambda e: e.time,
    ),
    Column(
        "time_us",
        "int64",
        False,
        "the event's hybrid-logical clock value in microseconds since the Unix epoch;"
        " rows are sorted by (time_us, id), the total order of events",
        lambda e: e.time,
    ),
    Column(
        "branch",
        "string",
        True,
        "scope.branch: the git branch the event was recorded on (null: a detached HEAD)",
        lambda e: e.scope.get("branch"),
    ),
    Column(
        "commit",
        "string",
        False,
        "the memory commit that holds the event in the exporting repository",
        lambda e: e.commit,
    ),
    Column("session", "string", True, "scope.session", lambda e: e.scope.get("session")),
    Column("agent", "string", True, "scope.agent", lambda e: e.scope.get("agent")),
    Column("user", "string", True, "scope.user", lambda e: e.scope.get("user")),
    Column("repo", "string", True, "scope.repo", lambda e: e.scope.get("repo")),
    Column(
        "capsule",
        "string",
        True,
        "id of the capsule the event belongs to",
        lambda e: e.capsule,
    ),
    Column(
        "tags",
        "strings",
        False,
        "the body's tags (empty when it has none or is redacted)",
        lambda e: _strings(e, "tags"),
    ),
    Column(
        "paths",
        "strings",
        False,
        "the file paths the event is about: the body's paths and files (empty when"
        " none or redacted)",
        lambda e: paths_of(e.body),
    ),
    Column(
        "redacted", "bool", False, "the payload was removed by a redaction", lambda e: e.redacted
    ),
    Column(
        "summary",
        "string",
        False,
        "one line describing the event, at most 200 characters ('[redacted]' when redacted)",
        lambda e: e.summary(200),
    ),
    Column(
        "body",
        "string",
        True,
        "the body as canonical JSON (null: redacted, or its payload is missing)",
        lambda e: _json_or_none(e.body),
    ),
    Column(
        "envelope",
        "string",
        False,
        "the envelope as canonical JSON, exactly as stored (every field, known or not)",
        lambda e: _json_or_none(e.envelope),
    ),
)


def _pyarrow() -> Any:
    try:
        import pyarrow as pa
    except ImportError as exc:
        raise DependencyError(
            "pyarrow is needed for --format parquet", "pip install pyarrow"
        ) from exc
    return pa


def parquet_schema() -> Any:
    """The Arrow schema of the Parquet export (the same whatever the events)."""
    pa = _pyarrow()
    kinds = {
        "string": pa.string(),
        "int64": pa.int64(),
        "bool": pa.bool_(),
        "timestamp": pa.timestamp("us", tz="UTC"),
        # Parquet names a list's item "element" (a reader hands back that name
        # whatever the writer's), so the schema does too and reads back equal.
        "strings": pa.list_(pa.field("element", pa.string())),
    }
    return pa.schema(
        [pa.field(c.name, kinds[c.kind], nullable=c.nullable) for c in PARQUET_COLUMNS],
        metadata={"gitmem.format": PARQUET_FORMAT, "gitmem.version": str(PARQUET_VERSION)},
    )


def export_parquet(events: Sequence[Event], path: Path) -> None:
    """Write events as a Parquet table (one row per event, in (time, id)
    order) with the fixed schema of :data:`PARQUET_COLUMNS`, for Arrow tools."""
    # An open file, not the path: given a path, pyarrow deletes it when the
    # write fails, and the path is the user's (as root, even /dev/full).
    with open(path, "wb") as handle:
        write_parquet(sorted(events, key=lambda e: e.order_key), handle)


ROWS_PER_GROUP = 20_000  # events held at once: each row group is written when full


def write_parquet(events: Iterable[Event], handle: BinaryIO) -> int:
    """Write ``events``, already in (time, id) order, to ``handle`` as
    Parquet, a row group of :data:`ROWS_PER_GROUP` at a time (so an export
    holds one group, not the store); returns how many."""
    pa = _pyarrow()
    import pyarrow.parquet as pq

    schema = parquet_schema()
    count = 0
    with pq.ParquetWriter(handle, schema) as writer:
        group: list[Event] = []
        for event in events:
            group.append(event)
            if len(group) == ROWS_PER_GROUP:
                writer.write_table(_table(pa, schema, group))
                count += len(group)
                group = []
        if group or not count:  # an empty export still has its schema and one empty group
            writer.write_table(_table(pa, schema, group))
            count += len(group)
    return count


def _table(pa: Any, schema: Any, events: list[Event]) -> Any:
    return pa.Table.from_pydict(
        {c.name: [c.value(e) for e in events] for c in PARQUET_COLUMNS}, schema=schema
    )
