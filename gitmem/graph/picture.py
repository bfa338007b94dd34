"""Pictures of a query's result: Mermaid (renders in GitHub and most
Markdown viewers) and Graphviz dot (``dot -Tsvg``), as text.

A picture shows the nodes a query reached and the edges that reached them
(a traversal's paths, a symbol's neighbours); the symbol asked about is drawn
bold. Labels are a node's qualified name (a file's path) and its location.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gitmem.graph.query import Neighborhood, Symbol, Traversal

Edge = tuple[str, str, str]  # (src id, dst id, kind)


def subgraph_of(result: Traversal | Neighborhood) -> tuple[list[Symbol], list[Edge], set[str]]:
    """The nodes, edges and highlighted ids of a query result."""
    from gitmem.graph.query import Neighborhood

    if isinstance(result, Neighborhood):
        center = result.symbol
        nodes = [center, *(n.symbol for n in result.neighbors)]
        edges = [
            (center.id, n.symbol.id, n.kind)
            if n.direction == "out"
            else (n.symbol.id, center.id, n.kind)
            for n in result.neighbors
        ]
        return _unique(nodes), sorted(set(edges)), {center.id}
    nodes = [*result.start, *(r.symbol for r in result.results), *(r.symbol for r in result.tests)]
    known = {s.id for s in nodes}
    edges = [e for e in result.edges if e[0] in known and e[1] in known]
    return _unique(nodes), sorted(set(edges)), {s.id for s in result.start}


def mermaid(result: Traversal | Neighborhood) -> str:
    """A Mermaid ``flowchart`` of the result."""
    nodes, edges, bold = subgraph_of(result)
    short = {s.id: f"n{i}" for i, s in enumerate(nodes)}
    lines = ["flowchart LR"]
    for s in nodes:
        lines.append(f'  {short[s.id]}["{_mermaid_text(_label(s))}"]')
    for src, dst, kind in edges:
        lines.append(f"  {short[src]} -->|{kind}| {short[dst]}")
    for node_id in sorted(bold):
        if node_id in short:
            lines.append(f"  style {short[node_id]} stroke-width:3px")
    return "\n".join(lines) + "\n"


def dot(result: Traversal | Neighborhood) -> str:
    """A Graphviz ``digraph`` of the result."""
    nodes, edges, bold = subgraph_of(result)
    lines = [
        "digraph code {",
        "  rankdir=LR;",
        '  node [shape=box, fontname="monospace", fontsize=10];',
        "  edge [fontsize=9];",
    ]
    for s in nodes:
        style = ", style=bold" if s.id in bold else ""
        lines.append(f'  "{s.id}" [label="{_dot_text(_label(s))}"{style}];')
    for src, dst, kind in edges:
        lines.append(f'  "{src}" -> "{dst}" [label="{kind}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _label(s: Symbol) -> str:
    if s.kind == "file":
        return s.path
    if not s.path:
        return f"{s.name} (external)"
    return f"{s.label}\n{s.location}"


def _mermaid_text(text: str) -> str:
    return (
        text.replace("&", "#amp;")
        .replace('"', "#quot;")
        .replace("<", "#lt;")
        .replace(">", "#gt;")
        .replace("\n", "<br/>")
    )


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _unique(nodes: Iterable[Symbol]) -> list[Symbol]:
    seen: dict[str, Symbol] = {}
    for s in nodes:
        seen.setdefault(s.id, s)
    return list(seen.values())


def render(result: Traversal | Neighborhood, fmt: str) -> str:
    """``fmt`` "mermaid" or "dot"."""
    return mermaid(result) if fmt == "mermaid" else dot(result)


__all__: Sequence[str] = ("dot", "mermaid", "render", "subgraph_of")
