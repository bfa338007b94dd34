"""Tables stored as shards: the rows of a table split by file, one Parquet
file per shard, so that a build after a change rewrites only the shards
holding the changed files' rows and links the others from the previous
generation.

A row belongs to the shard of its file (its ``path`` column: a node's
file, an edge's source file, a chunk's file): CRC-32 of the path's UTF-8
bytes modulo the number of shards (:func:`shard_of`; an external module,
path ``""``, lands in shard 0). The number of shards depends on the number
of files indexed alone (:func:`shard_count`), so the same files give the
same shards whichever build wrote them, and a table is its shards
concatenated in order: ``<table>/00.parquet``, ``<table>/01.parquet``, ….
Within a shard, rows keep the table's sort order.

Why these numbers. On the standard library (2,273 files; nodes 4.7 MB,
edges 2.7 MB, chunks 12 MB as whole files) the shard holding one file takes
8 ms to write for the nodes and edges together at 16 shards (4.5 ms at 32,
15 at 8; 142 ms for the whole tables), and its chunks about as much; but
every shard costs a reader ~0.5 ms of CPU to open and decode, so reading
the nodes and edges takes 84 ms of CPU at 16 shards, 105 at 32, against
71 for whole files. At most 16 shards, about 64 files each below that:
a small repository keeps one shard a table, the layout of one file.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    import pyarrow as pa

__all__ = [
    "FILES_PER_SHARD",
    "MAX_SHARDS",
    "parts",
    "shard_count",
    "shard_name",
    "shard_names",
    "shard_of",
    "sort",
    "split",
    "write_all",
]

FILES_PER_SHARD = 64
MAX_SHARDS = 16


def shard_count(files: int) -> int:
    """How many shards a table of ``files`` files' rows has: a power of two,
    about :data:`FILES_PER_SHARD` files each, at most :data:`MAX_SHARDS`."""
    count = 1
    while count < MAX_SHARDS and count * FILES_PER_SHARD < files:
        count *= 2
    return count


def shard_of(path: str, count: int) -> int:
    """The shard of a file's rows."""
    return zlib.crc32(path.encode("utf-8", "surrogatepass")) % count


def shard_name(table: str, shard: int) -> str:
    """A shard's path inside a generation: ``nodes/03.parquet``."""
    return f"{table}/{shard:02d}.parquet"


def shard_names(table: str, count: int) -> list[str]:
    """Every shard of a table, in order."""
    return [shard_name(table, s) for s in range(count)]


def sort(table: pa.Table, keys: list[str]) -> pa.Table:
    """Rows in the tables' order, in one chunk (Parquet pages are cut by the
    chunks written, so equal rows must come in equal chunks to give equal
    bytes). Strings compare by code point, as Python sorts them."""
    import pyarrow.compute as pc

    order = pc.sort_indices(table, sort_keys=[(k, "ascending") for k in keys])
    return table.take(order).combine_chunks()


def split(table: pa.Table, count: int, keys: list[str]) -> list[pa.Table]:
    """``table``'s rows by shard of their ``path``, each shard sorted by ``keys``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if count == 1:
        return [sort(table, keys)]
    encoded = pc.dictionary_encode(table.column("path")).combine_chunks()
    of_value = pa.array([shard_of(p, count) for p in encoded.dictionary.to_pylist()], pa.int32())
    shard = pc.take(of_value, encoded.indices)
    ordered = table.append_column("_shard", shard)
    order = pc.sort_indices(
        ordered, sort_keys=[("_shard", "ascending"), *((k, "ascending") for k in keys)]
    )
    ordered = table.take(order)
    sizes = pc.value_counts(shard).to_pylist()
    per = {int(v["values"]): int(v["counts"]) for v in sizes}
    out: list[pa.Table] = []
    start = 0
    for s in range(count):
        size = per.get(s, 0)
        out.append(ordered.slice(start, size).combine_chunks())
        start += size
    return out


def parts(table: pa.Table, count: int) -> dict[int, pa.Table]:
    """The rows of a small table (a few files' rows) by shard, for the shards
    that have any, in the table's order: :func:`split` costs a slice per
    shard, this a row."""
    import pyarrow as pa

    shard_by_path: dict[str, int] = {}
    rows: dict[int, list[int]] = {}
    for row, path in enumerate(table.column("path").to_pylist()):
        shard = shard_by_path.get(path)
        if shard is None:
            shard = shard_by_path[path] = shard_of(path, count)
        rows.setdefault(shard, []).append(row)
    return {s: table.take(pa.array(r, pa.int64())) for s, r in rows.items()}


def write_all(
    jobs: Sequence[tuple[pa.Table, Path]], write: Callable[[pa.Table, Path], None]
) -> None:
    """``write(table, path)`` for every job, two at a time when there are
    several: Parquet's encoding and compression let go of the GIL, so a
    branch switch that rewrites a dozen shards per table takes about half
    the time on two cores. The files are the same whatever the order."""
    if len(jobs) < 2 or (os.cpu_count() or 1) < 2:
        for table, path in jobs:
            write(table, path)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2, thread_name_prefix="gitmem-shards") as pool:
        for done in [pool.submit(write, table, path) for table, path in jobs]:
            done.result()  # the first failure, once every write has ended
