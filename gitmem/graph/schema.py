"""The stored graph: three Parquet tables in a sidecar generation
(``formats/graph-tables.v1.json``), readable by pyarrow, DuckDB and Polars.

Rows are sorted (files by path; nodes by id; edges by src, kind, dst, line) so
the same code gives byte-identical files.

Ids are stable: 16 hex digits of SHA-256 over ``path NUL qualname NUL kind``
(:func:`node_id`); a file's node is ``(path, "", "file")``; an external module
is ``("", module name, "module")``.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

SCHEMA_VERSION = 1


def node_id(path: str, qualname: str, kind: str) -> str:
    """The stable id of a node (16 hex digits)."""
    data = f"{path}\0{qualname}\0{kind}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()[:16]


def files_schema() -> pa.Schema:
    """``files.parquet``: one row per indexed file."""
    import pyarrow as pa

    return pa.schema(
        [
            ("path", pa.string()),  # relative to the work tree, '/'-separated
            ("blob", pa.string()),  # git blob id (hex) of the content indexed
            ("language", pa.string()),
            ("size", pa.int64()),
            ("lines", pa.int32()),
            ("source", pa.string()),  # "commit" or "worktree" (an uncommitted change)
            ("error", pa.string()),  # why it was not parsed ("" when it was)
        ]
    )


def nodes_schema() -> pa.Schema:
    """``nodes.parquet``: files, modules and symbols."""
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.string()),
            ("kind", pa.string()),
            ("name", pa.string()),
            ("qualname", pa.string()),
            ("path", pa.string()),  # "" for an external module
            ("language", pa.string()),
            ("start_line", pa.int32()),
            ("end_line", pa.int32()),
            ("signature", pa.string()),
            ("doc", pa.string()),
        ]
    )


def edges_schema() -> pa.Schema:
    """``edges.parquet``: one row per distinct (src, kind, dst, line)."""
    import pyarrow as pa

    return pa.schema(
        [
            ("src", pa.string()),
            ("dst", pa.string()),
            ("kind", pa.string()),
            ("confidence", pa.float32()),  # 1.0 certain … 0.0; contains is 1.0
            # how it was resolved: "syntax" (contains, a relative import),
            # "local", "same-file", "self", "import", "module-path",
            # "same-package", "unique-name", "external", "mention"
            # ("ambiguous-name" is reserved: several candidates give no edge)
            ("reason", pa.string()),
            ("line", pa.int32()),  # where in src's file (0 for contains)
            ("path", pa.string()),  # src's file
        ]
    )
