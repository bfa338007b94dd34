"""Questions to the code graph: find a symbol, its callers and callees, the
blast radius of a change, its neighbours; and what the user's argument names.

Every function takes a :class:`~gitmem.graph.view.GraphView`. The first query
on a view builds its lookups once (:func:`graph_index`: integer adjacency in
both directions, name indexes), kept as long as the view lives; each query
after that walks arrays (a few milliseconds on the standard library's graph,
77,000 nodes and 270,000 edges).

Traversals (:func:`callers`, :func:`callees`, :func:`impact`) are breadth
first: each node reached is listed once, at its minimum depth, with its
route (the path of node ids from the start to it) and the lowest confidence
along that route.
"""

from __future__ import annotations

import bisect
import functools
import re
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from gitmem.errors import NotFoundError, UsageError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from gitmem.graph.view import GraphView

EDGE_KINDS = ("contains", "imports", "calls", "extends", "implements", "references", "documents")
IMPACT_KINDS = ("imports", "calls", "extends", "implements")
"""What a change travels back along: who imports, calls or derives from it."""
KIND_ORDER = {
    k: i
    for i, k in enumerate(
        (
            "class",
            "interface",
            "function",
            "method",
            "type",
            "constant",
            "file",
            "module",
            "section",
        )
    )
}
MAX_DEPTH = 20
MAX_CANDIDATES = 10  # listed in an "ambiguous" error

_TEST_FILE = re.compile(
    r"(^|/)(tests?|__tests__|spec|specs|testing)/"
    r"|(^|/)test_[^/]*\.py$|_test\.(py|go)$|(^|/)conftest\.py$"
    r"|\.(test|spec)\.[cm]?[jt]sx?$"
    r"|(Test|Tests|IT)\.(java|kt|cs|php|swift)$|_spec\.rb$|_test\.rb$|\.bats$|(^|/)test_[^/]*\.sh$"
)


def is_test_path(path: str) -> bool:
    """Whether a file is a test by the usual conventions: under ``test/``,
    ``tests/``, ``__tests__/``, ``spec/``; ``test_*.py``, ``*_test.go``,
    ``*.test.ts``, ``*.spec.js``, ``*Test.java``, ``*Tests.cs``, ``*_spec.rb``…"""
    return bool(_TEST_FILE.search(path))


# -- results -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Symbol:
    """A node of the graph, as queries return it."""

    id: str
    kind: str
    name: str
    qualname: str
    path: str
    start_line: int
    end_line: int
    signature: str = ""

    @property
    def label(self) -> str:
        """Its qualified name, a file's path, an external module's name."""
        return self.qualname or self.path or self.name

    @property
    def location(self) -> str:
        """``path:line`` (a file: its path; an external module: ``(external)``)."""
        if not self.path:
            return "(external)"
        return self.path if self.kind == "file" else f"{self.path}:{self.start_line}"

    @property
    def ref(self) -> str:
        """What names it exactly on the command line: ``path:qualname``."""
        if not self.path:
            return self.name
        return self.path if self.kind == "file" else f"{self.path}:{self.qualname}"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "name": self.name,
            "qualname": self.qualname,
            "path": self.path,
            "line": self.start_line,
            "end_line": self.end_line,
            "signature": self.signature,
        }


@dataclass(frozen=True)
class Match:
    """A :func:`find` result: how the name matched."""

    symbol: Symbol
    match: Literal["exact", "prefix", "substring"]

    def to_json(self) -> dict[str, Any]:
        return self.symbol.to_json() | {"match": self.match}

    def to_text(self) -> str:
        s = self.symbol
        return f"{self.match:<9} {s.kind:<9} {s.ref:<48} {s.location}".rstrip()


@dataclass(slots=True)
class Reached:
    """A node a traversal reached: at its minimum depth, by ``route`` (the
    path of node ids from the start to it), over edges whose lowest
    confidence is ``confidence``. Read-only by convention: not frozen, since
    a frozen dataclass costs four times as much to make, and an impact on a
    busy module makes thousands."""

    symbol: Symbol
    depth: int
    via: str  # the kind of the last edge
    confidence: float
    parent: Reached | str  # what it was reached from: another result, or the start's id

    @property
    def route(self) -> tuple[str, ...]:
        """The node ids from the start to this one (made when asked: most
        results are counted or listed, not routed)."""
        chain = [self.symbol.id]
        at = self.parent
        while isinstance(at, Reached):
            chain.append(at.symbol.id)
            at = at.parent
        chain.append(at)
        return tuple(reversed(chain))

    def to_json(self) -> dict[str, Any]:
        return self.symbol.to_json() | {
            "depth": self.depth,
            "via": self.via,
            "confidence": round(self.confidence, 3),
            "route": list(self.route),
        }


@dataclass(frozen=True)
class Traversal:
    """Callers, callees or an impact: what was asked, what was reached."""

    query: str  # "callers" | "callees" | "impact"
    start: tuple[Symbol, ...]
    depth: int
    results: tuple[Reached, ...]
    tests: tuple[Reached, ...] = ()  # impact: the tests among what is reached

    @property
    def edges(self) -> list[tuple[str, str, str]]:
        """``(src, dst, kind)`` of the last edge of every route, sorted: the
        tree the traversal walked, for pictures (derived when asked, since
        most callers never draw one)."""
        incoming = self.query != "callees"
        out = []
        for r in (*self.results, *self.tests):
            near, far = r.route[-2], r.route[-1]
            out.append((far, near, r.via) if incoming else (near, far, r.via))
        return sorted(out)

    @property
    def files(self) -> list[str]:
        """The files of what was reached (tests included), sorted."""
        return sorted({r.symbol.path for r in (*self.results, *self.tests) if r.symbol.path})

    def to_text(self) -> str:
        """For people: one reached node a line, nearest first, with the route
        that reaches it (``via``) and its confidence when below 1."""
        start = self.start[0]
        labels = {s.id: s.label for s in self.start}
        labels.update((r.symbol.id, r.symbol.label) for r in (*self.results, *self.tests))
        what = {"callers": "calls", "callees": "calls", "impact": "edges"}[self.query]
        head = f"{self.query} of {start.ref} ({start.kind}, {start.location}), up to {self.depth} {what} away"
        if self.query == "impact":
            files = {r.symbol.path for r in self.results}
            tests = {r.symbol.path for r in self.tests}
            head += (
                f": {len(self.results)} in {_count(len(files), 'file')},"
                f" {len(self.tests)} in {_count(len(tests), 'test file')}"
            )
        else:
            head += f": {len(self.results)} found"
        lines = [head]
        lines += [_reached_line(r, labels) for r in self.results]
        if self.tests:
            lines.append("tests:")
            lines += [_reached_line(r, labels) for r in self.tests]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "query": self.query,
            "start": [s.to_json() for s in self.start],
            "depth": self.depth,
            "results": [r.to_json() for r in self.results],
        }
        if self.query == "impact":
            out["tests"] = [r.to_json() for r in self.tests]
            out["files"] = self.files
        return out


@dataclass(frozen=True)
class Neighbor:
    """One edge at a symbol: ``direction`` "out" (it calls, imports… the
    other) or "in" (the other calls, imports… it)."""

    direction: Literal["out", "in"]
    kind: str
    symbol: Symbol
    confidence: float
    reason: str
    line: int

    def to_json(self) -> dict[str, Any]:
        return self.symbol.to_json() | {
            "direction": self.direction,
            "edge": self.kind,
            "confidence": round(self.confidence, 3),
            "reason": self.reason,
            "edge_line": self.line,
        }


@dataclass(frozen=True)
class Neighborhood:
    symbol: Symbol
    neighbors: tuple[Neighbor, ...]

    def to_text(self) -> str:
        """For people: the symbol, then one edge a line (out ``->``, in ``<-``)."""
        s = self.symbol
        lines = [f"{s.ref} ({s.kind}, {s.location}): {_count(len(self.neighbors), 'edge')}"]
        for n in self.neighbors:
            arrow = "->" if n.direction == "out" else "<-"
            where = f", line {n.line}" if n.line else ""
            conf = f" {n.confidence:.2f}" if n.confidence < 1 else ""
            lines.append(
                f"  {n.kind:<10} {arrow} {n.symbol.ref} ({n.symbol.kind})  {n.reason}{conf}{where}"
            )
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"symbol": self.symbol.to_json(), "neighbors": [n.to_json() for n in self.neighbors]}


class AmbiguousSymbolError(UsageError):
    """The argument names several symbols; ``candidates`` lists them."""

    def __init__(self, text: str, candidates: Sequence[Symbol]) -> None:
        listed = ", ".join(f"{c.ref} ({c.kind})" for c in candidates[:MAX_CANDIDATES])
        more = len(candidates) - MAX_CANDIDATES
        super().__init__(
            f"{text!r} names {len(candidates)} symbols: {listed}"
            + (f" and {more} more" if more > 0 else ""),
            "name one as PATH:QUALNAME (as listed), or by its file path",
        )
        self.candidates = tuple(candidates)


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _reached_line(r: Reached, labels: dict[str, str]) -> str:
    via = [labels.get(i, i) for i in r.route[1:-1]]
    text = f"  {r.depth:>2}  {r.symbol.kind:<9} {r.symbol.ref:<48} {r.via}"
    if via:
        text += f" via {' > '.join(via)}"
    if r.confidence < 1:
        text += f" (confidence {r.confidence:.2f})"
    return text.rstrip()


# -- the lookups, once per view ------------------------------------------------------------------------
class _Text:
    """Exact, prefix and substring lookups over one text column (case folded)."""

    def __init__(self, values: Sequence[str], rows: Sequence[int]) -> None:
        self.values = values
        lower = [values[i].lower() for i in rows]
        self.exact: dict[str, list[int]] = {}
        for row, text in zip(rows, lower, strict=True):
            self.exact.setdefault(text, []).append(row)
        order = sorted(range(len(lower)), key=lower.__getitem__)
        self.sorted = [lower[i] for i in order]
        self.sorted_rows = [rows[i] for i in order]
        self.blob = "\0".join(lower) + "\0"
        self.starts: list[int] = []
        at = 0
        for text in lower:
            self.starts.append(at)
            at += len(text) + 1
        self.rows = list(rows)

    def prefixed(self, q: str, cap: int) -> list[int]:
        lo = bisect.bisect_left(self.sorted, q)
        out: list[int] = []
        for i in range(lo, len(self.sorted)):
            if not self.sorted[i].startswith(q) or len(out) >= cap:
                break
            out.append(self.sorted_rows[i])
        return out

    def containing(self, q: str, cap: int) -> list[int]:
        out: list[int] = []
        at = self.blob.find(q)
        while at >= 0 and len(out) < cap:
            item = bisect.bisect_right(self.starts, at) - 1
            out.append(self.rows[item])
            at = self.blob.find(
                q, self.starts[item + 1] if item + 1 < len(self.starts) else len(self.blob)
            )
        return out


class GraphIndex:
    """A view's nodes as lists and its edges as integer arrays, with
    compressed adjacency both ways (rows ``out_at[i]:out_at[i+1]`` of
    ``out_order`` are node ``i``'s outgoing edges)."""

    def __init__(self, view: GraphView) -> None:
        import numpy as np
        import pyarrow.compute as pc

        nodes, edges = view.nodes, view.edges
        self.ids: list[str] = nodes.column("id").to_pylist()
        self.pos = {node_id: i for i, node_id in enumerate(self.ids)}
        self.kind: list[str] = nodes.column("kind").to_pylist()
        self.name: list[str] = nodes.column("name").to_pylist()
        self.qualname: list[str] = nodes.column("qualname").to_pylist()
        self.path: list[str] = nodes.column("path").to_pylist()
        self.start: list[int] = nodes.column("start_line").to_pylist()
        self.end: list[int] = nodes.column("end_line").to_pylist()
        self._signature = nodes.column("signature")
        self._signatures: list[str | None] | None = None
        n = len(self.ids)
        id_column = nodes.column("id")
        src = pc.index_in(edges.column("src"), value_set=id_column).to_numpy(zero_copy_only=False)
        dst = pc.index_in(edges.column("dst"), value_set=id_column).to_numpy(zero_copy_only=False)
        keep = ~(np.isnan(src.astype("float64")) | np.isnan(dst.astype("float64")))
        # an edge to an id that is not a node (a damaged table) is left out
        self.src = np.asarray(src[keep], dtype=np.int64)
        self.dst = np.asarray(dst[keep], dtype=np.int64)
        kinds = edges.column("kind").to_pylist()
        self.edge_kinds = list(EDGE_KINDS)
        for k in sorted(set(kinds) - set(EDGE_KINDS)):
            self.edge_kinds.append(k)
        code = {k: i for i, k in enumerate(self.edge_kinds)}
        self.ekind = np.array([code[k] for k in kinds], dtype=np.int8)[keep]
        self.conf = (
            edges.column("confidence").to_numpy(zero_copy_only=False)[keep].astype("float32")
        )
        self.line = edges.column("line").to_numpy(zero_copy_only=False)[keep].astype("int32")
        self._reason = [
            r for r, k in zip(edges.column("reason").to_pylist(), keep, strict=True) if k
        ]
        self.out_order, self.out_at = _csr(self.src, n)
        self.in_order, self.in_at = _csr(self.dst, n)
        self.by_path: dict[str, int] = {
            p: i for i, (p, k) in enumerate(zip(self.path, self.kind, strict=True)) if k == "file"
        }
        self._names: _Text | None = None
        self._quals: _Text | None = None
        self._paths: _Text | None = None
        self._by_qual: dict[str, list[int]] | None = None
        self.cache: dict[str, Any] = {}  # for rank.py: weights, PageRank without focus
        self._symbols: dict[int, Symbol] = {}

    # -- symbols ---------------------------------------------------------------------------------
    def symbol(self, i: int) -> Symbol:
        """Node ``i`` as a :class:`Symbol` (made once per view: traversals of
        a busy module list thousands, and a warm process asks again)."""
        known = self._symbols.get(i)
        if known is not None:
            return known
        if self._signatures is None:  # one conversion, not one per symbol
            self._signatures = self._signature.to_pylist()
        signature = self._signatures[i] or ""
        made = self._symbols[i] = Symbol(
            self.ids[i],
            self.kind[i],
            self.name[i],
            self.qualname[i],
            self.path[i],
            self.start[i] or 0,
            self.end[i] or 0,
            signature,
        )
        return made

    # -- sort keys and flags per node, as arrays (traversals order thousands at once) --------------
    @functools.cached_property
    def id_rank(self) -> npt.NDArray[np.int64]:
        """Each node's place among the ids in string order."""
        return _ranks(self.ids)

    @functools.cached_property
    def path_rank(self) -> npt.NDArray[np.int64]:
        """Each node's path's place among the paths in string order."""
        return _ranks([p or "" for p in self.path])

    @functools.cached_property
    def start_array(self) -> npt.NDArray[np.int64]:
        import numpy as np

        return np.array([max(s or 0, 0) for s in self.start], dtype=np.int64)

    @functools.cached_property
    def _place(self) -> tuple[npt.NDArray[np.int64], int] | None:
        """Each node's (path, line, id) order packed in one integer, and its
        width in bits; None when it does not fit beside a level in 63 bits."""
        import numpy as np

        packed = np.zeros(len(self.ids), dtype=np.int64)
        width = 0
        for column in (self.path_rank, self.start_array, self.id_rank):
            bits = int(column.max(initial=0)).bit_length()
            packed = (packed << bits) | column
            width += bits
        return (packed, width) if width <= 63 - MAX_DEPTH.bit_length() else None

    def order_by_level(
        self, nodes: npt.NDArray[np.int64], levels: npt.NDArray[np.int64]
    ) -> npt.NDArray[np.int64]:
        """The order of ``nodes`` by (level, path, line, id): one sort of
        packed integers when they fit (a third of a lexsort's time)."""
        import numpy as np

        if self._place is None:
            return np.lexsort(
                (self.id_rank[nodes], self.start_array[nodes], self.path_rank[nodes], levels)
            )
        packed, width = self._place
        return np.argsort((levels << width) | packed[nodes], kind="stable")

    @functools.cached_property
    def test_nodes(self) -> npt.NDArray[np.bool_]:
        """Whether each node is in a test file (:func:`is_test_path`)."""
        import numpy as np

        testing = {p: is_test_path(p) for p in set(self.path) if p}
        return np.array([testing.get(p, False) for p in self.path], dtype=bool)

    def conf_list(self) -> list[float]:
        """Edge confidences as Python floats (traversals read them one by one)."""
        if "conf" not in self.cache:
            self.cache["conf"] = self.conf.tolist()
        return self.cache["conf"]  # type: ignore[no-any-return]

    def ekind_list(self) -> list[int]:
        if "ekind" not in self.cache:
            self.cache["ekind"] = self.ekind.tolist()
        return self.cache["ekind"]  # type: ignore[no-any-return]

    def names(self) -> _Text:
        if self._names is None:
            self._names = _Text(self.name, range(len(self.ids)))
        return self._names

    def quals(self) -> _Text:
        if self._quals is None:
            rows = [i for i, q in enumerate(self.qualname) if q and self.path[i]]
            self._quals = _Text(self.qualname, rows)
        return self._quals

    def paths(self) -> _Text:
        if self._paths is None:
            self._paths = _Text(self.path, sorted(self.by_path.values()))
        return self._paths

    def by_qualname(self, qualname: str) -> list[int]:
        if self._by_qual is None:
            self._by_qual = {}
            for i, q in enumerate(self.qualname):
                if q and self.path[i]:
                    self._by_qual.setdefault(q, []).append(i)
        return self._by_qual.get(qualname, [])

    def contained(self, i: int) -> list[int]:
        """Every definition inside node ``i`` (a file: all of its definitions)."""
        contains = self.edge_kinds.index("contains")
        out: list[int] = []
        todo = [i]
        while todo:
            at = todo.pop()
            for e in self.out_order[self.out_at[at] : self.out_at[at + 1]]:
                if self.ekind[e] == contains:
                    child = int(self.dst[e])
                    out.append(child)
                    todo.append(child)
        return sorted(set(out))


def _ranks(values: Sequence[str]) -> npt.NDArray[np.int64]:
    """Each value's place in string order (equal values: equal places)."""
    import numpy as np

    distinct = sorted(set(values))
    place = {v: i for i, v in enumerate(distinct)}
    return np.array([place[v] for v in values], dtype=np.int64)


def _csr(
    keys: npt.NDArray[np.int64], n: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    import numpy as np

    order = np.argsort(keys, kind="stable")
    at = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=at[1:])
    return order, at


_INDEXES: weakref.WeakKeyDictionary[GraphView, GraphIndex] = weakref.WeakKeyDictionary()


def graph_index(view: GraphView) -> GraphIndex:
    """The view's lookups, built on first use and kept while the view lives."""
    found = _INDEXES.get(view)
    if found is None:
        found = _INDEXES[view] = GraphIndex(view)
    return found


# -- what the user names ---------------------------------------------------------------------------
_NODE_ID = re.compile(r"[0-9a-f]{16}")


def candidates(view: GraphView, text: str) -> list[Symbol]:
    """What ``text`` may name, most specific reading first: a node id; a file
    path; ``path:qualname``; a qualified name; a Python ``module.name``; a
    bare name. Empty when nothing matches."""
    ix = graph_index(view)
    rows = _candidate_rows(ix, text.strip())
    rows = sorted(
        set(rows), key=lambda i: (KIND_ORDER.get(ix.kind[i], 99), ix.path[i], ix.start[i])
    )
    return [ix.symbol(i) for i in rows]


def _candidate_rows(ix: GraphIndex, text: str) -> list[int]:
    if not text:
        return []
    if _NODE_ID.fullmatch(text) and text in ix.pos:
        return [ix.pos[text]]
    path = text.removeprefix("./")
    if path in ix.by_path:
        return [ix.by_path[path]]
    if ":" in text:
        head, _, qual = text.rpartition(":")
        head = head.removeprefix("./")
        found = [i for i in ix.by_qualname(qual) if ix.path[i] == head]
        if found or head in ix.by_path:
            return found
    qual = text.replace("::", ".")
    found = ix.by_qualname(qual)
    if found:
        return found
    if "." in qual:  # a Python module path: gitmem.graph.query.find
        parts = qual.split(".")
        for cut in range(len(parts), 0, -1):
            base = "/".join(parts[:cut])
            rest = ".".join(parts[cut:])
            for suffix in (".py", "/__init__.py"):
                for file_path, i in ix.by_path.items():
                    if file_path == base + suffix or file_path.endswith("/" + base + suffix):
                        if not rest:
                            return [i]
                        return [j for j in ix.by_qualname(rest) if ix.path[j] == file_path]
    exact = ix.names().exact.get(text.lower(), [])
    same_case = [i for i in exact if ix.name[i] == text and ix.path[i]]
    return same_case or [i for i in exact if ix.path[i]]


def symbol(view: GraphView, text: str) -> Symbol:
    """The one symbol ``text`` names, else :class:`NotFoundError` or
    :class:`AmbiguousSymbolError` (listing the candidates)."""
    found = candidates(view, text)
    if not found:
        raise NotFoundError(
            f"nothing in the code graph is named {text!r}",
            f"look it up with: git edda code find {text.split(':')[-1].split('.')[-1] or text}",
        )
    if len(found) > 1:
        raise AmbiguousSymbolError(text, found)
    return found[0]


# -- find -------------------------------------------------------------------------------------------
def find(
    view: GraphView, name: str, *, kinds: Iterable[str] | None = None, limit: int = 20
) -> list[Match]:
    """Symbols whose name matches ``name``: exact matches first, then those
    starting with it, then those containing it; within each, a match of the
    same case before one of another case, then classes and functions before
    other kinds, code before tests, shorter names, path and line. A query with a ``.`` also
    matches qualified names (``Parser.parse``), one with a ``/`` file paths."""
    ix = graph_index(view)
    q = name.strip()
    if not q or limit <= 0:
        return []
    wanted = frozenset(kinds) if kinds else None
    low = q.lower()
    cap = max(limit * 20, 500)
    texts = [(ix.names(), ix.name)]
    if "." in q:
        texts.append((ix.quals(), ix.qualname))
    if "/" in q:
        texts.append((ix.paths(), ix.path))
    best: dict[int, tuple[int, int, int, bool, int]] = {}
    for tier, finder in enumerate(("exact", "prefix", "substring")):
        for text, values in texts:
            if finder == "exact":
                rows = text.exact.get(low, [])
            elif finder == "prefix":
                rows = text.prefixed(low, cap)
            else:
                rows = text.containing(low, cap)
            for i in rows:
                if wanted is not None and ix.kind[i] not in wanted:
                    continue
                same_case = 0 if _matches(values[i], q, finder) else 1
                key = (
                    tier,
                    same_case,
                    KIND_ORDER.get(ix.kind[i], 99),
                    is_test_path(ix.path[i]),
                    len(values[i]),
                )
                if i not in best or key < best[i]:
                    best[i] = key
        if len(best) >= limit:
            break
    ranked = sorted(best, key=lambda i: (best[i], ix.path[i], ix.start[i] or 0, ix.ids[i]))
    labels = ("exact", "prefix", "substring")
    return [Match(ix.symbol(i), labels[best[i][0]]) for i in ranked[:limit]]  # type: ignore[arg-type]


def _matches(value: str, q: str, how: str) -> bool:
    if how == "exact":
        return value == q
    if how == "prefix":
        return value.startswith(q)
    return q in value


# -- traversals ---------------------------------------------------------------------------------------
def callers(view: GraphView, target: str | Symbol, depth: int = 3) -> Traversal:
    """Who calls ``target``, and who calls them, up to ``depth`` calls away."""
    return _traverse(view, "callers", target, depth, ("calls",), incoming=True)


def callees(view: GraphView, target: str | Symbol, depth: int = 3) -> Traversal:
    """What ``target`` calls, and what they call, up to ``depth`` calls away."""
    return _traverse(view, "callees", target, depth, ("calls",), incoming=False)


def impact(view: GraphView, target: str | Symbol, depth: int = 3) -> Traversal:
    """The blast radius of changing ``target`` (a file: any of its
    definitions): everything that imports, calls, extends or implements it,
    transitively up to ``depth`` edges; the tests among them apart."""
    return _traverse(view, "impact", target, depth, IMPACT_KINDS, incoming=True)


def _traverse(
    view: GraphView,
    query: str,
    target: str | Symbol,
    depth: int,
    kinds: Sequence[str],
    *,
    incoming: bool,
) -> Traversal:

    if not 1 <= depth <= MAX_DEPTH:
        raise UsageError(f"depth must be between 1 and {MAX_DEPTH}, not {depth}")
    ix = graph_index(view)
    start_symbol = target if isinstance(target, Symbol) else symbol(view, target)
    first = ix.pos[start_symbol.id]
    starts = [first]
    if ix.kind[first] == "file" or query == "impact":
        starts += ix.contained(first)  # a file: any of its definitions; impact: members too
    wanted = {ix.edge_kinds.index(k) for k in kinds if k in ix.edge_kinds}
    walk = _breadth_first(ix, starts, depth, wanted, incoming=incoming)
    ids = ix.ids
    # Nearest first, then by path, line and id: one lexsort over ranks. The
    # levels ascend, so a node's parent comes before it and has its route.
    order = ix.order_by_level(walk.nodes, walk.levels)
    testing = ix.test_nodes[walk.nodes[order]].tolist() if query == "impact" else None
    names = ix.edge_kinds
    made: dict[int, Reached | str] = {s: ids[s] for s in starts}
    known = ix._symbols
    every: list[Reached] = []
    for node, parent, level, low, kind in zip(
        walk.nodes[order].tolist(),
        walk.parents[order].tolist(),
        walk.levels[order].tolist(),
        walk.lowest[order].tolist(),
        ix.ekind[walk.edges[order]].tolist(),
        strict=True,
    ):
        reached = Reached(known.get(node) or ix.symbol(node), level, names[kind], low, made[parent])
        made[node] = reached
        every.append(reached)
    if testing is None:
        found, tests = every, []
    else:
        found = [r for r, t in zip(every, testing, strict=True) if not t]
        tests = [r for r, t in zip(every, testing, strict=True) if t]
    return Traversal(query, (start_symbol,), depth, tuple(found), tuple(tests))


@dataclass
class _Walk:
    """What a breadth-first walk reached, level by level: each node once,
    with its depth, the node and edge that first reached it, and the lowest
    edge confidence along that route."""

    nodes: npt.NDArray[np.int64]
    levels: npt.NDArray[np.int64]
    parents: npt.NDArray[np.int64]
    edges: npt.NDArray[np.int64]
    lowest: npt.NDArray[np.float32]


def _breadth_first(
    ix: GraphIndex, starts: list[int], depth: int, wanted: set[int], *, incoming: bool
) -> _Walk:
    """Every node within ``depth`` edges of a kind in ``wanted`` of
    ``starts`` (which are not listed). A level at a time, in numpy: a node
    reached several ways keeps its first parent in (parent order, edge
    order), which is deterministic."""
    import numpy as np

    order, at = (ix.in_order, ix.in_at) if incoming else (ix.out_order, ix.out_at)
    other = ix.src if incoming else ix.dst
    kinds = np.zeros(len(ix.edge_kinds), dtype=bool)
    kinds[sorted(wanted)] = True
    reached = np.zeros(len(ix.ids), dtype=bool)
    lowest = np.ones(len(ix.ids), dtype=np.float32)
    frontier = np.array(list(dict.fromkeys(starts)), dtype=np.int64)
    reached[frontier] = True
    found: list[tuple[Any, Any, Any, int]] = []  # per level: nodes, parents, edges, level
    for level in range(1, depth + 1):
        begin, end = at[frontier], at[frontier + 1]
        counts = end - begin
        total = int(counts.sum())
        if total == 0:
            break
        # positions begin[i] .. end[i]-1 of every frontier node, in frontier order
        offsets = np.repeat(begin - np.cumsum(counts) + counts, counts) + np.arange(total)
        edges = order[offsets]
        parents = np.repeat(frontier, counts)
        keep = kinds[ix.ekind[edges]]
        edges, parents = edges[keep], parents[keep]
        targets = other[edges]
        fresh = ~reached[targets]
        edges, parents, targets = edges[fresh], parents[fresh], targets[fresh]
        if len(targets) == 0:
            break
        targets, first = np.unique(targets, return_index=True)
        parents, edges = parents[first], edges[first]
        lowest[targets] = np.minimum(lowest[parents], ix.conf[edges])
        reached[targets] = True
        found.append((targets, parents, edges, level))
        frontier = targets
    if not found:
        empty = np.zeros(0, dtype=np.int64)
        return _Walk(empty, empty, empty, empty, np.zeros(0, dtype=np.float32))
    nodes = np.concatenate([f[0] for f in found])
    return _Walk(
        nodes,
        np.concatenate([np.full(len(f[0]), f[3], dtype=np.int64) for f in found]),
        np.concatenate([f[1] for f in found]),
        np.concatenate([f[2] for f in found]),
        lowest[nodes],
    )


def neighbors(view: GraphView, target: str | Symbol) -> Neighborhood:
    """Every edge at ``target``, both directions, all kinds, one hop."""
    ix = graph_index(view)
    start = target if isinstance(target, Symbol) else symbol(view, target)
    i = ix.pos[start.id]
    out: list[Neighbor] = []
    for direction, order, at, other in (
        ("out", ix.out_order, ix.out_at, ix.dst),
        ("in", ix.in_order, ix.in_at, ix.src),
    ):
        for e in order[at[i] : at[i + 1]]:
            out.append(
                Neighbor(
                    direction,  # type: ignore[arg-type]
                    ix.edge_kinds[ix.ekind[e]],
                    ix.symbol(int(other[e])),
                    float(ix.conf[e]),
                    ix._reason[int(e)],
                    int(ix.line[e]),
                )
            )
    out.sort(
        key=lambda n: (
            n.direction != "out",
            EDGE_KINDS.index(n.kind) if n.kind in EDGE_KINDS else 99,
            n.symbol.path,
            n.symbol.start_line,
            n.line,
            n.symbol.id,
        )
    )
    return Neighborhood(start, tuple(out))
