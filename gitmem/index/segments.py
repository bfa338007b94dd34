"""The events table in segments, and writing it with bounded memory.

The events table is a sequence of Arrow IPC files (``events-<hex>.arrow``,
the manifest lists them in order), each at most :data:`SEGMENT_ROWS` rows,
every row of a segment sorting after every row of the segments before it.
Readers memory-map each one and see one table (their concatenation, no
copy). A refresh rewrites only the segments from the first one its changes
touch: new events are nearly always the newest, so an incremental refresh
of a million-event table rewrites its last segment, not the whole table.
A rewritten segment gets a new name; the manifest switches to it last, and
files it no longer names are removed (a refresh that dies leaves the old
ones intact).

A refresh makes rows from memory commits in any order, chain by chain, so
rows go to temporary sorted *runs* of :data:`RUN_ROWS` rows
(:class:`Runs`). :func:`rewrite` then merges the runs with the segments they
touch: it sorts only the ``(time, id)`` keys of every row (about 50 bytes a
row), then writes the output a window at a time, reading each run through a
small cache of its record batches. However large the table, a build holds
the keys, one window, and one batch per run. Duplicates (an event found in
two commits or already in the table) keep the first of the old rows, the
rows replacing old ones, then the new rows in the order they were read.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.index import compute as pc
from gitmem.index import table as tables

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from numpy.typing import NDArray

    from gitmem.index.table import EventRow, TextRow

SEGMENT_ROWS = 32_768  # rows per segment file (~28 MB of a typical store)
RUN_ROWS = 20_000  # rows made in memory before they are sorted into a run file
RUN_BATCH = 1_024  # rows per record batch of a run (what a merge reads at a time)
WINDOW = 8_192  # rows the merge puts in order and writes at a time
SEGMENT_PREFIX = "events-"
TEXT_LIMIT = 100_000  # new texts kept for the full text and vectors; more: re-read the table

BLANKED_COLUMNS = ("text", "line", "body", "key", "target", "paths", "tags")


def segment_name() -> str:
    """A new segment's file name (never reused: see the module docstring)."""
    return f"{SEGMENT_PREFIX}{os.urandom(4).hex()}.arrow"


def is_segment(name: str) -> bool:
    return name.startswith(SEGMENT_PREFIX) and name.endswith(".arrow")


def read_segments(directory: Path, names: Sequence[str]) -> tuple[pa.Table, list[int]]:
    """The events table, every segment memory-mapped and concatenated
    without copying, and the rows of each segment."""
    import pyarrow as pa

    schema = tables.event_schema()
    parts = [tables.read(directory / name, schema) for name in names]
    counts = [part.num_rows for part in parts]
    if not parts:
        return tables.from_rows([], schema), counts
    return (parts[0] if len(parts) == 1 else pa.concat_tables(parts)), counts


def remove_stale(directory: Path, keep: Sequence[str]) -> None:
    """Remove segments ``keep`` does not name and runs left by killed builds."""
    wanted = set(keep)
    for entry in directory.iterdir():
        name = entry.name
        if (is_segment(name) and name not in wanted) or name.startswith(".run-"):
            entry.unlink(missing_ok=True)


def column_batches(
    directory: Path,
    names: Sequence[str],
    columns: Sequence[str],
    size: int = 4096,
    *,
    newest_first: bool = False,
) -> Iterator[pa.Table]:
    """The table's ``columns`` in pieces of at most ``size`` rows, one segment
    mapped at a time (so a pass over a million rows keeps one segment's
    pages, not the whole table's, in memory). ``newest_first``: from the
    last row back to the first (each piece's rows too)."""
    import pyarrow as pa

    schema = tables.event_schema()
    for name in reversed(names) if newest_first else names:
        table = tables.read(directory / name, schema).select(list(columns))
        try:
            starts = range(0, table.num_rows, size)
            for start in reversed(starts) if newest_first else starts:
                piece = table.slice(start, size).combine_chunks()
                if newest_first:
                    piece = piece.take(pa.array(range(piece.num_rows - 1, -1, -1)))
                yield piece
        finally:
            del table


TEXT_COLUMNS = ("id", "key64", "type", "text")
"""What the full text and the vectors read of a row (see :class:`gitmem.index.table.TextRow`)."""


def with_text(piece: pa.Table, types: frozenset[str] | None = None) -> pa.Table:
    """The rows of ``piece`` with text (and, given ``types``, of one of those types)."""
    import pyarrow as pa

    mask = pc.not_equal(piece.column("text"), "")
    if types is not None:
        of_type = pc.false_if_null(pc.is_in(piece.column("type"), pa.array(sorted(types))))
        mask = pc.and_(mask, of_type)
    return pc.filter(piece, mask)


def text_pieces(
    directory: Path,
    names: Sequence[str],
    types: frozenset[str] | None = None,
    *,
    newest_first: bool = False,
    size: int = 4096,
) -> Iterator[pa.Table]:
    """:data:`TEXT_COLUMNS` of every row with text (of ``types``, None:
    any), in tables of at most ``size`` rows."""
    for piece in column_batches(directory, names, TEXT_COLUMNS, size, newest_first=newest_first):
        piece = with_text(piece, types)
        if piece.num_rows:
            yield piece


def to_text_rows(piece: pa.Table) -> list[TextRow]:
    cols = piece.to_pydict()
    return [
        {"id": i, "key64": k, "type": y, "text": t}
        for i, k, y, t in zip(cols["id"], cols["key64"], cols["type"], cols["text"], strict=True)
    ]


def text_rows(directory: Path, names: Sequence[str], size: int = 4096) -> Iterator[list[TextRow]]:
    """(id, key64, type, text) of every row with text, in lists of at most ``size``."""
    for piece in text_pieces(directory, names, size=size):
        yield to_text_rows(piece)


def count_texts(directory: Path, names: Sequence[str]) -> int:
    """Rows with text (one segment mapped at a time)."""
    total = 0
    for piece in column_batches(directory, names, ("text",), 65_536):
        total += len(pc.filter(piece.column("text"), pc.not_equal(piece.column("text"), "")))
    return total


class Runs:
    """Rows made by a refresh, sorted into temporary run files in the generation."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.paths: list[Path] = []
        self.rows: list[EventRow] = []
        self.count = 0

    def add(self, row: EventRow) -> None:
        self.rows.append(row)
        if len(self.rows) >= RUN_ROWS:
            self.flush()

    def flush(self) -> None:
        """Sort the rows made so far into a run file."""
        if not self.rows:
            return
        table = tables.sort_events(tables.from_rows(self.rows, tables.event_schema()))
        self.count += len(self.rows)
        self.rows = []
        path = self.directory / f".run-{os.getpid()}-{len(self.paths)}-{os.urandom(3).hex()}.tmp"
        _write_batches(path, table, RUN_BATCH)
        self.paths.append(path)

    def close(self) -> None:
        for path in self.paths:
            path.unlink(missing_ok=True)
        self.paths = []


def _write_batches(path: Path, table: pa.Table, batch: int) -> None:
    import pyarrow as pa

    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=batch)


class _Run:
    """A run file read a record batch at a time, the last batches kept."""

    def __init__(self, path: Path) -> None:
        import pyarrow as pa

        self.file = pa.OSFile(str(path), "rb")
        self.reader = pa.ipc.open_file(self.file)
        self.cached: dict[int, pa.RecordBatch] = {}

    def keys(self) -> pa.Table:
        """The run's time and id columns, copied: a column read from a batch
        shares the batch's buffer, and fifty runs' whole batches would be
        the whole table in memory."""
        import pyarrow as pa

        times, ids = [], []
        for i in range(self.reader.num_record_batches):
            batch = self.reader.get_batch(i)
            times.append(batch.column("time"))
            ids.append(batch.column("id"))
        if not times:
            return pa.table({"time": pa.array([], pa.int64()), "id": pa.array([], pa.string())})
        # concat_arrays allocates new buffers (so do the empty arrays: one array alone is kept as is)
        time = pa.concat_arrays([*times, pa.array([], pa.int64())])
        ident = pa.concat_arrays([*ids, pa.array([], pa.string())])
        return pa.table({"time": time, "id": ident})

    def rows(self, lo: int, hi: int) -> pa.Table:
        """Rows ``lo`` … ``hi`` (inclusive); batches before ``lo`` are let go."""
        import pyarrow as pa

        first, last = lo // RUN_BATCH, hi // RUN_BATCH
        for old in [b for b in self.cached if b < first]:
            del self.cached[old]
        batches = []
        for b in range(first, last + 1):
            if b not in self.cached:
                self.cached[b] = self.reader.get_batch(b)
            batches.append(self.cached[b])
        table = pa.Table.from_batches(batches)
        return table.slice(lo - first * RUN_BATCH, hi - lo + 1)

    def close(self) -> None:
        self.cached = {}
        self.file.close()


@dataclass
class NewTexts:
    """What the full text and the vectors need of the rows a refresh added
    (:data:`TEXT_COLUMNS` of those with text), oldest first: kept up to
    :data:`TEXT_LIMIT` rows; beyond, ``overflow`` says to read the table
    instead. ``types`` counts them all by event type."""

    pieces: list[pa.Table] = field(default_factory=list)
    count: int = 0
    overflow: bool = False
    types: dict[str, int] = field(default_factory=dict)

    def add(self, piece: pa.Table) -> None:
        if not piece.num_rows:
            return
        for kind, n in zip(*_value_counts(piece.column("type")), strict=True):
            self.types[kind] = self.types.get(kind, 0) + n
        if self.overflow:
            return
        self.count += piece.num_rows
        if self.count > TEXT_LIMIT:
            self.overflow, self.pieces = True, []
        else:
            self.pieces.append(piece)

    def wanted(self, types: frozenset[str] | None) -> int:
        """How many of the new texts are of ``types`` (None: any)."""
        return sum(n for kind, n in self.types.items() if types is None or kind in types)

    def batches(self, size: int = 4096) -> Iterator[list[TextRow]]:
        for piece in self.pieces:
            rows = to_text_rows(piece)
            for start in range(0, len(rows), size):
                yield rows[start : start + size]

    def newest_first(self, types: frozenset[str] | None) -> Iterator[pa.Table]:
        """The kept texts of ``types`` (None: any), newest first."""
        import pyarrow as pa

        for piece in reversed(self.pieces):
            piece = with_text(piece, types)
            if piece.num_rows:
                yield piece.take(pa.array(range(piece.num_rows - 1, -1, -1)))


def _value_counts(column: Any) -> tuple[list[str], list[int]]:
    counted = pc.call("value_counts", [column])
    if hasattr(counted, "combine_chunks"):
        counted = counted.combine_chunks()
    return counted.field("values").to_pylist(), counted.field("counts").to_pylist()


@dataclass
class Rewritten:
    """What :func:`rewrite` did."""

    segments: list[str]  # the table's segments now, in order
    counts: list[int]  # rows per segment
    added: int = 0  # new rows written (duplicates dropped)
    texts: NewTexts = field(default_factory=NewTexts)


def rewrite(
    directory: Path,
    existing: pa.Table,
    segments: Sequence[str],
    counts: Sequence[int],
    runs: Sequence[Path],
    *,
    replacing: int = 0,
    drop: set[str] | frozenset[str] = frozenset(),
    blank: set[str] | frozenset[str] = frozenset(),
) -> Rewritten:
    """Merge the sorted ``runs`` into the table ``existing`` (its ``segments``
    of ``counts`` rows each) and write the segments that change.

    The first ``replacing`` runs hold rows that replace old ones: rows of
    ``existing`` whose id is in ``drop`` go. New rows (not from
    ``existing``) whose id is in ``blank`` are written blanked (a redaction
    read in the same refresh). See the module docstring for the order of
    duplicates; the texts of the new rows are collected for the full text
    and the vectors.
    """
    import numpy as np
    import pyarrow as pa

    readers = [_Run(path) for path in runs]
    try:
        run_keys = [r.keys() for r in readers]
        if not any(k.num_rows for k in run_keys) and not drop:
            return Rewritten(list(segments), list(counts))
        offsets = np.concatenate([[0], np.cumsum(np.asarray(counts, dtype=np.int64))])
        first = _first_touched(existing, offsets, run_keys, drop)
        tail = existing.slice(int(offsets[first]))
        sources = [tail.select(["time", "id"]), *run_keys]
        keys = pa.concat_tables([s.combine_chunks() for s in sources]).combine_chunks()
        origin = np.repeat(np.arange(len(sources), dtype=np.int64), [s.num_rows for s in sources])
        position = np.concatenate(
            [np.arange(s.num_rows, dtype=np.int64) for s in sources] or [np.zeros(0, np.int64)]
        )
        del sources, run_keys
        # Arrow's sort is stable: equal (time, id) keep the order above.
        order = pc.call(
            "sort_indices",
            [keys],
            _sort_options(),
        ).to_numpy()
        if drop:  # old rows being replaced go first, so their replacements are kept
            old = origin[order] == 0
            ids = pc.call("take", [keys.column("id"), pa.array(order)])
            dropped = _numpy_bool(pc.false_if_null(pc.is_in(ids, pa.array(sorted(drop)))))
            order = order[~(dropped & old)]
        ids = pc.call("take", [keys.column("id"), pa.array(order)])
        if len(order) > 1:
            keep = np.ones(len(order), dtype=bool)
            same = pc.call("equal", [ids.slice(1), ids.slice(0, len(ids) - 1)])
            keep[1:] = ~_numpy_bool(same)
            order = order[keep]
        del ids, keys
        src, pos = origin[order], position[order]
        del order, origin, position
        result = Rewritten(list(segments[:first]), list(counts[:first]))
        _write_windows(directory, tail, readers, src, pos, replacing, blank, result)
        return result
    finally:
        for reader in readers:
            reader.close()


def _sort_options() -> Any:
    import pyarrow._compute as _c

    return _c.SortOptions([("time", "ascending"), ("id", "ascending")])


def _numpy_bool(mask: Any) -> NDArray[np.bool_]:
    import numpy as np
    import pyarrow as pa

    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    return np.asarray(mask.to_numpy(zero_copy_only=False), dtype=bool)


def _first_touched(
    existing: pa.Table,
    offsets: NDArray[np.int64],
    run_keys: list[pa.Table],
    drop: set[str] | frozenset[str],
) -> int:
    """The first segment the merge must rewrite: the first whose last row
    sorts at or after the smallest new row, or that holds a dropped id."""
    import numpy as np
    import pyarrow as pa

    segments = len(offsets) - 1
    firsts = [
        (k.column("time")[0].as_py(), k.column("id")[0].as_py()) for k in run_keys if k.num_rows
    ]
    first = segments
    if firsts:
        # New rows fill the last segment up before a new one starts: one
        # small segment per refresh would make thousands of files.
        if segments and int(offsets[-1] - offsets[-2]) < SEGMENT_ROWS:
            first = segments - 1
        smallest = min(firsts)
        times, ids = existing.column("time"), existing.column("id")
        for s in range(first):
            end = int(offsets[s + 1]) - 1
            if end >= int(offsets[s]) and (times[end].as_py(), ids[end].as_py()) >= smallest:
                first = s
                break
    if drop:
        hit = _numpy_bool(pc.false_if_null(pc.is_in(existing.column("id"), pa.array(sorted(drop)))))
        rows = np.flatnonzero(hit)
        if len(rows):
            first = min(first, int(np.searchsorted(offsets, rows[0], side="right")) - 1)
    return first


def _write_windows(
    directory: Path,
    tail: pa.Table,
    readers: list[_Run],
    src: NDArray[np.int64],
    pos: NDArray[np.int64],
    replacing: int,
    blank: set[str] | frozenset[str],
    result: Rewritten,
) -> None:
    """Write rows in the merged order (``src``: 0 the old tail, k the run
    k-1; ``pos``: the row within it) into new segments."""
    import numpy as np
    import pyarrow as pa

    schema = tables.event_schema()
    blank_ids = pa.array(sorted(blank), pa.string()) if blank else None
    out = _SegmentWriter(directory, schema)
    base = np.zeros(len(readers) + 1, dtype=np.int64)
    try:
        for start in range(0, len(src), WINDOW):
            s, p = src[start : start + WINDOW], pos[start : start + WINDOW]
            # each source's rows of the window are one range of it (every
            # source is sorted): read the ranges, then put them in order
            pieces, at = [], 0
            for source in np.unique(s).tolist():
                mine = p[s == source]
                lo, hi = int(mine.min()), int(mine.max())
                piece = (
                    tail.slice(lo, hi - lo + 1) if source == 0 else readers[source - 1].rows(lo, hi)
                )
                pieces.append(piece.select(schema.names))
                base[source] = at - lo
                at += hi - lo + 1
            whole = pa.concat_tables(pieces).combine_chunks()
            window = pc.call("take", [whole, pa.array(p + base[s])])
            del whole, pieces
            new = s > 0
            if blank_ids is not None:
                window = _blanked(window, new, blank_ids)
            added = new & (s > replacing)
            result.added += int(added.sum())
            if new.any():
                fresh = pc.filter(window.select(list(TEXT_COLUMNS)), pa.array(new))
                result.texts.add(with_text(fresh))
            out.write(window, result)
    except BaseException:
        out.abort()
        raise
    out.close(result)


def _blanked(window: pa.Table, new: NDArray[np.bool_], ids: pa.Array) -> pa.Table:
    """``window`` with the new rows whose id is in ``ids`` blanked (see
    :func:`gitmem.index.eventrow.blank`)."""
    import pyarrow as pa

    hit = _numpy_bool(pc.false_if_null(pc.is_in(window.column("id"), ids))) & new
    hit &= ~_numpy_bool(window.column("redacted"))
    if not hit.any():
        return window
    mask = pa.array(hit)
    schema = window.schema
    columns = []
    for name in schema.names:
        column = window.column(name)
        kind = schema.field(name).type
        if name == "redacted":
            value = pa.scalar(True)
        elif name == "missing":
            value = pa.scalar(False)
        elif name == "text":
            value = pa.scalar("", kind)
        elif name in ("paths", "tags"):
            value = pa.scalar([], kind)
        elif name in BLANKED_COLUMNS:
            value = pa.scalar(None, kind)
        else:
            columns.append(column)
            continue
        columns.append(pc.call("if_else", [mask, value, column]))
    return pa.Table.from_arrays(columns, schema=schema)


class _SegmentWriter:
    """New segment files of at most :data:`SEGMENT_ROWS` rows."""

    def __init__(self, directory: Path, schema: pa.Schema) -> None:
        self.directory = directory
        self.schema = schema
        self.writer: Any = None
        self.sink: Any = None
        self.name = ""
        self.rows = 0

    def write(self, table: pa.Table, result: Rewritten) -> None:
        start = 0
        while start < table.num_rows:
            if self.writer is None:
                self._open()
            take = min(SEGMENT_ROWS - self.rows, table.num_rows - start)
            self.writer.write_table(table.slice(start, take), max_chunksize=WINDOW)
            self.rows += take
            start += take
            if self.rows >= SEGMENT_ROWS:
                self._finish(result)

    def _open(self) -> None:
        import pyarrow as pa

        self.name = segment_name()
        self.tmp = self.directory / f".{self.name}.{os.getpid()}.tmp"
        self.sink = pa.OSFile(str(self.tmp), "wb")
        self.writer = pa.ipc.new_file(self.sink, self.schema)
        self.rows = 0

    def _finish(self, result: Rewritten) -> None:
        self.writer.close()
        self.sink.close()
        os.replace(self.tmp, self.directory / self.name)
        result.segments.append(self.name)
        result.counts.append(self.rows)
        self.writer = self.sink = None
        self.rows = 0

    def close(self, result: Rewritten) -> None:
        """Finish the last segment."""
        if self.writer is not None:
            self._finish(result)

    def abort(self) -> None:
        """Drop the segment being written (finished ones go with the next
        cleanup: the manifest never named them)."""
        if self.writer is not None:
            self.writer.close()
            self.sink.close()
            self.tmp.unlink(missing_ok=True)
            self.writer = None
