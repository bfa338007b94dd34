"""The code tier of a pack built with a code index: the best code hits for
the query, each followed by its closest callers and callees in the code
graph (see :mod:`gitmem.retrieval.context`)."""

from __future__ import annotations

import re
import textwrap
from typing import TYPE_CHECKING

from gitmem.memory.describe import one_line
from gitmem.retrieval.codesearch import MAX_NEIGHBOURS, CodeSearchFn, Neighbour, code_neighbours
from gitmem.retrieval.context.pack import PackItem

if TYPE_CHECKING:
    from gitmem.graph.codeindex import CodeHit
    from gitmem.graph.view import GraphView

_COMMENT = re.compile(r"^\s*(?:$|#(?!\[)|//|/\*|\*|--)")

MAX_CODE_HITS = 5
SNIPPET_LINES = 6  # lines of a hit's code shown under it
CODE_WIDTH = 120  # characters of one line of code


def code_items(
    query: str, search: CodeSearchFn, graph: GraphView | None
) -> tuple[list[PackItem], list[int], list[int | None]]:
    """The tier's items in priority order (every hit, then each hit's
    neighbours), their display order (each hit followed by its neighbours)
    and, for a neighbour, the priority of the hit it needs."""
    hits = list(search(query, MAX_CODE_HITS))
    neighbours = code_neighbours(graph, hits) if graph is not None and hits else []
    stride = 1 + 2 * MAX_NEIGHBOURS
    items = [hit_item(hit) for hit in hits]
    order = [i * stride for i in range(len(hits))]
    requires: list[int | None] = [None] * len(hits)
    for i, found in enumerate(neighbours):
        for j, neighbour in enumerate(found[: 2 * MAX_NEIGHBOURS]):
            items.append(neighbour_item(neighbour))
            order.append(i * stride + 1 + j)
            requires.append(i)
    return items, order, requires


def hit_item(hit: CodeHit) -> PackItem:
    """``- path:12-40 function name`` and the first lines of its code, indented."""
    what = f"{hit.kind} {hit.symbol}" if hit.symbol else "top-level code"
    lines = hit.body.split("\n")
    # Comment banners above a definition say less than its first lines of code.
    code_at = next((i for i, line in enumerate(lines) if not _COMMENT.match(line)), 0)
    lines = lines[code_at:]
    shown = textwrap.dedent("\n".join(lines[:SNIPPET_LINES])).split("\n")
    code = [f"    {line[:CODE_WIDTH]}".rstrip() for line in shown]
    if len(lines) > SNIPPET_LINES:
        code.append("    …")
    return PackItem(None, "code", None, "\n".join([f"- {hit.location} {what}", *code]))


def neighbour_item(neighbour: Neighbour) -> PackItem:
    """``  - called by path:3-9 function main: def main(argv)`` (or ``calls``)."""
    how = "called by" if neighbour.direction == "caller" else "calls"
    text = f"  - {how} {neighbour.location} {neighbour.kind} {neighbour.qualname}"
    if neighbour.signature:
        text += f": {one_line(neighbour.signature, 100)}"
    return PackItem(None, "code", None, text)
