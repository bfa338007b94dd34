"""Code search as the search front and context packs use it.

* :func:`code_index_dir`: where a repository's code index is (the code
  graph's current generation holds it in ``<generation>/code/``);
* :func:`merge`: memory hits and code hits in one ranking (``search --all``);
* :func:`code_neighbours`: a code hit's closest callers and callees in the
  code graph, for the context pack's code tier.

**One ranking for memory and code.** Both lists are ranked by the same
normalised reciprocal rank fusion (:mod:`gitmem.index.fusion`): a hit's
relevance is 1.0 when every engine ranked it first in its own corpus. The
merge keeps each list's own order (memory's includes its recency term) and
interleaves them by the relevance of the next hit of each, memory first on
a tie: decisions and learnings are what a person chose to keep.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gitmem.graph.codeindex import CODE_DIR, META_FILE, CodeHit, CodeSearchResult
from gitmem.retrieval.search import Hit, SearchResult

if TYPE_CHECKING:
    from gitmem.graph.view import GraphView
    from gitmem.storage.locate import RepoLocation

GRAPH_DIR = "graph"
"""The code graph's sidecar directory under ``<git common dir>/edda/``."""
MAX_NEIGHBOURS = 3  # callers, and as many callees, per code hit in a context pack

CodeSearchFn = Callable[[str, int], Sequence[CodeHit]]
"""``(query, limit) -> code hits, best first``, as context packs call it."""


def code_index_dir(location: RepoLocation) -> Path | None:
    """The code index of the worktree at ``location``, or None when none was built.

    Layout: the worktree's code graph sidecar (:func:`gitmem.graph.build.graph_root`)
    names its current generation in its manifest; the code index is that
    generation's ``code/`` directory, once its ``code.json`` is written.
    """
    from gitmem.graph.build import graph_root
    from gitmem.graph.manifest import read_manifest

    root = graph_root(location)
    manifest = read_manifest(root)
    if manifest is None:
        return None
    directory = root / manifest.generation / CODE_DIR
    return directory if (directory / META_FILE).is_file() else None


# -- memory and code in one ranking -----------------------------------------------------


@dataclass
class MixedHit:
    """A hit of ``search --all``: a memory event or a code chunk."""

    source: Literal["memory", "code"]
    memory: Hit | None = None
    code: CodeHit | None = None

    @property
    def relevance(self) -> float:
        if self.memory is not None:
            return self.memory.relevance
        assert self.code is not None
        return self.code.score

    def to_json(self) -> dict[str, Any]:
        """The hit's own JSON (as ``search`` or ``search --code`` gives it),
        with ``"source": "memory"`` or ``"code"`` first."""
        inner = self.memory.to_json() if self.memory is not None else self.code.to_json()  # type: ignore[union-attr]
        return {"source": self.source, **inner}


@dataclass
class MixedSearchResult:
    """``search --all``: memory and code hits in one ranking."""

    query: str
    mode: str
    now: int
    hits: list[MixedHit]
    memory: SearchResult
    code: CodeSearchResult
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "now": self.now,
            "candidates": {
                "lexical": self.memory.lexical_candidates,
                "vector": self.memory.vector_candidates,
                "code_lexical": self.code.lexical_candidates,
                "code_vector": self.code.vector_candidates,
            },
            "hits": [h.to_json() for h in self.hits],
            "warnings": self.warnings,
        }


def merge(memory: SearchResult, code: CodeSearchResult, limit: int) -> MixedSearchResult:
    """Memory and code hits in one ranking of at most ``limit`` (see the module docstring)."""
    hits: list[MixedHit] = []
    m, c = 0, 0
    while len(hits) < limit and (m < len(memory.hits) or c < len(code.hits)):
        take_memory = c >= len(code.hits) or (
            m < len(memory.hits)
            and round(memory.hits[m].relevance, 9) >= round(code.hits[c].score, 9)
        )
        if take_memory:
            hits.append(MixedHit("memory", memory=memory.hits[m]))
            m += 1
        else:
            hits.append(MixedHit("code", code=code.hits[c]))
            c += 1
    return MixedSearchResult(
        memory.query,
        memory.mode,
        memory.now,
        hits,
        memory,
        code,
        [*memory.warnings, *code.warnings],
    )


# -- graph expansion --------------------------------------------------------------------


@dataclass(frozen=True)
class Neighbour:
    """A definition that calls a code hit, or that it calls."""

    direction: Literal["caller", "callee"]
    path: str
    qualname: str
    kind: str
    start_line: int
    end_line: int
    signature: str
    confidence: float

    @property
    def location(self) -> str:
        if self.start_line == self.end_line:
            return f"{self.path}:{self.start_line}"
        return f"{self.path}:{self.start_line}-{self.end_line}"


def hit_node(hit: CodeHit) -> str:
    """The graph node a code hit belongs to: its definition, or its file's
    node for lines outside definitions."""
    from gitmem.graph.chunks import FILE_KIND
    from gitmem.graph.schema import node_id

    if not hit.symbol or hit.kind == FILE_KIND:
        return node_id(hit.path, "", "file")
    return node_id(hit.path, hit.symbol, hit.kind)


def code_neighbours(
    graph: GraphView, hits: Sequence[CodeHit], limit: int = MAX_NEIGHBOURS
) -> list[list[Neighbour]]:
    """For each hit, its closest callers then callees (one hop over ``calls``
    edges, at most ``limit`` each): the most confident first, then by
    location. A neighbour that is itself one of the hits is left out."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ids = [hit_node(h) for h in hits]
    if not ids or graph.edges.num_rows == 0:
        return [[] for _ in hits]
    wanted = pa.array(sorted(set(ids)), pa.string())
    edges = graph.edges
    calls = edges.filter(pc.equal(edges["kind"], "calls"))
    outgoing = calls.filter(pc.is_in(calls["src"], value_set=wanted)).to_pylist()
    incoming = calls.filter(pc.is_in(calls["dst"], value_set=wanted)).to_pylist()
    others = sorted({e["dst"] for e in outgoing} | {e["src"] for e in incoming})
    nodes = graph.nodes.filter(
        pc.is_in(graph.nodes["id"], value_set=pa.array(others, pa.string()))
    ).to_pylist()
    by_id = {n["id"]: n for n in nodes}
    shown = set(ids)
    result = []
    for node in ids:
        found: list[Neighbour] = []
        sides: tuple[tuple[Literal["caller", "callee"], list[dict[str, Any]], str, str], ...] = (
            ("caller", incoming, "dst", "src"),
            ("callee", outgoing, "src", "dst"),
        )
        for direction, rows, key, other in sides:
            best: dict[str, float] = {}
            for e in rows:
                if e[key] == node and e[other] not in shown and e[other] in by_id:
                    best[e[other]] = max(best.get(e[other], 0.0), float(e["confidence"] or 0.0))
            ranked = sorted(
                best.items(),
                key=lambda item: (
                    -round(item[1], 6),
                    by_id[item[0]]["path"],
                    by_id[item[0]]["start_line"],
                    item[0],
                ),
            )
            for other_id, confidence in ranked[:limit]:
                n = by_id[other_id]
                found.append(
                    Neighbour(
                        direction,
                        n["path"],
                        n["qualname"],
                        n["kind"],
                        n["start_line"],
                        n["end_line"],
                        n["signature"] or "",
                        confidence,
                    )
                )
        result.append(found)
    return result
