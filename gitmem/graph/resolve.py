"""Every file's facts -> the graph's nodes and edges.

``resolve(files)`` takes, for each indexed path, its language and
:class:`~gitmem.graph.facts.FileFacts`, and returns the ``nodes`` and
``edges`` tables (:mod:`gitmem.graph.schema`), sorted.

This first version makes the file nodes, the definition nodes and the
``contains`` edges; imports, calls, inheritance, references and documents
come next (issue 13).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from gitmem.graph.facts import FileFacts
from gitmem.graph.schema import edges_schema, node_id, nodes_schema

if TYPE_CHECKING:
    import pyarrow as pa


def resolve(files: Mapping[str, FileFacts]) -> tuple[pa.Table, pa.Table]:
    """``(nodes, edges)`` for ``files`` (path -> facts)."""
    import pyarrow as pa

    nodes: list[dict[str, object]] = []
    edges: list[dict[str, object]] = []
    for path in sorted(files):
        facts = files[path]
        file_id = node_id(path, "", "file")
        nodes.append(
            {
                "id": file_id,
                "kind": "file",
                "name": path.rsplit("/", 1)[-1],
                "qualname": "",
                "path": path,
                "language": facts.language,
                "start_line": 1,
                "end_line": facts.lines,
                "signature": "",
                "doc": "",
            }
        )
        ids = {"": file_id}
        for d in facts.definitions:
            ids[d.qualname] = node_id(path, d.qualname, d.kind)
        for d in facts.definitions:
            nodes.append(
                {
                    "id": ids[d.qualname],
                    "kind": d.kind,
                    "name": d.name,
                    "qualname": d.qualname,
                    "path": path,
                    "language": facts.language,
                    "start_line": d.start_line,
                    "end_line": d.end_line,
                    "signature": d.signature,
                    "doc": d.doc,
                }
            )
            parent = ids.get(d.parent, file_id)
            edges.append(
                {
                    "src": parent,
                    "dst": ids[d.qualname],
                    "kind": "contains",
                    "confidence": 1.0,
                    "reason": "syntax",
                    "line": 0,
                    "path": path,
                }
            )
    nodes.sort(key=lambda n: str(n["id"]))
    edges.sort(key=lambda e: (str(e["src"]), str(e["kind"]), str(e["dst"]), int(e["line"])))  # type: ignore[call-overload]
    return (
        pa.Table.from_pylist(nodes, schema=nodes_schema()),
        pa.Table.from_pylist(edges, schema=edges_schema()),
    )
