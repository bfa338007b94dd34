"""Queries over the code graph (gitmem.graph.query, rank, picture), issue 13.

Views are built in memory from hand-written facts (resolve) or hand-made
tables, independent of the build and the extractors.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_graph_resolve import d, ff

from gitmem.errors import NotFoundError
from gitmem.graph import picture, query, rank
from gitmem.graph.facts import Call, FileFacts, Import, Inherit
from gitmem.graph.query import AmbiguousSymbolError, is_test_path
from gitmem.graph.resolve import resolve
from gitmem.graph.schema import edges_schema, files_schema, node_id, nodes_schema
from gitmem.graph.view import GraphView


def view_of(files: dict[str, FileFacts]) -> GraphView:
    nodes, edges = resolve(files)
    table = pa.Table.from_pylist(
        [
            {
                "path": p,
                "blob": "",
                "language": f.language,
                "size": 0,
                "lines": f.lines,
                "source": "commit",
                "error": "",
            }
            for p, f in sorted(files.items())
        ],
        schema=files_schema(),
    )
    return GraphView.from_tables(table, nodes, edges)


def project() -> dict[str, FileFacts]:
    """a -> b -> c -> d and a -> c; main -> a; a test calls a; Shape and its
    subclasses; names for find."""
    return {
        "app/__init__.py": ff("python"),
        "app/chain.py": ff(
            "python",
            d("a", line=1),
            d("b", line=5),
            d("c", line=9),
            d("d", line=13),
            calls=[
                Call("b", line=2, scope="a"),
                Call("c", line=3, scope="a"),
                Call("c", line=6, scope="b"),
                Call("d", line=10, scope="c"),
            ],
        ),
        "app/main.py": ff(
            "python",
            d("main", line=3),
            imports=[Import("app.chain", names=("a",), line=1)],
            calls=[Call("a", line=4, scope="main"), Call("main", line=8)],
        ),
        "app/shapes.py": ff(
            "python",
            d("Shape", "class", 1, 10),
            d("Shape.area", "method", 2),
            d("Square", "class", 12, 20),
            d("parse", line=22),
            d("parse_all", line=25),
            d("Parser", "class", 28, 30),
            d("reparse", line=32),
            d("PARSE_LIMIT", "constant", 35),
            inherits=[Inherit("Square", "Shape", line=12)],
        ),
        "app/geometry.py": ff(
            "python",
            d("area", line=1),
            d("Circle", "class", 5),
            imports=[Import("app.shapes", names=("Shape",), line=1)],
            inherits=[Inherit("Circle", "Shape", line=5)],
        ),
        "tests/test_chain.py": ff(
            "python",
            d("test_a", line=3),
            imports=[Import("app.chain", names=("a", "d"), line=1)],
            calls=[Call("a", line=4, scope="test_a")],
        ),
        "lib/parse.py": ff("python", d("parse", line=1)),
    }


@pytest.fixture(scope="module")
def view() -> GraphView:
    return view_of(project())


def refs(results: Any) -> list[tuple[str, int]]:
    return [(r.symbol.ref, r.depth) for r in results]


# -- callers and callees --------------------------------------------------------------------
def test_callers_are_listed_once_at_their_minimum_depth_with_the_path(view: GraphView) -> None:
    found = query.callers(view, "app/chain.py:d", depth=3)
    # a reaches d through c at depth 2 (a -> c -> d), not at 3 through b
    assert refs(found.results) == [
        ("app/chain.py:c", 1),
        ("app/chain.py:a", 2),
        ("app/chain.py:b", 2),
        ("app/main.py:main", 3),
        ("tests/test_chain.py:test_a", 3),
    ]
    ids = {r.symbol.ref: r.symbol.id for r in found.results}
    start = found.start[0].id
    by_ref = {r.symbol.ref: r for r in found.results}
    assert by_ref["app/chain.py:a"].route == (start, ids["app/chain.py:c"], ids["app/chain.py:a"])
    assert by_ref["app/main.py:main"].route[-2:] == (ids["app/chain.py:a"], ids["app/main.py:main"])
    assert all(len(r.route) == r.depth + 1 for r in found.results)
    assert by_ref["app/chain.py:c"].via == "calls" and by_ref["app/chain.py:c"].confidence == 1.0


def test_depth_bounds_the_traversal_and_callees_go_the_other_way(view: GraphView) -> None:
    assert refs(query.callers(view, "app/chain.py:d", depth=1).results) == [("app/chain.py:c", 1)]
    assert refs(query.callees(view, "main", depth=2).results) == [
        ("app/chain.py:a", 1),
        ("app/chain.py:b", 2),
        ("app/chain.py:c", 2),
    ]
    # the file is the caller of top-level code; a file's callees are its definitions'
    assert refs(query.callees(view, "app/main.py", depth=1).results) == [("app/chain.py:a", 1)]
    with pytest.raises(Exception, match="depth"):
        query.callers(view, "app/chain.py:d", depth=0)


def test_impact_follows_imports_calls_and_inheritance_and_sets_tests_apart(view: GraphView) -> None:
    found = query.impact(view, "app/chain.py", depth=3)
    assert [r.symbol.ref for r in found.results] == [
        "app/main.py",  # imports it
        "app/main.py:main",  # calls a
    ]
    assert [r.symbol.ref for r in found.tests] == [
        "tests/test_chain.py",
        "tests/test_chain.py:test_a",
    ]
    assert found.files == ["app/main.py", "tests/test_chain.py"]
    shapes = query.impact(view, "app/shapes.py:Shape", depth=2)
    assert {r.symbol.ref for r in shapes.results} == {
        "app/shapes.py:Square",
        "app/geometry.py:Circle",
    }
    data = found.to_json()
    assert data["query"] == "impact" and data["tests"][0]["path"] == "tests/test_chain.py"


def test_neighbors_are_one_hop_in_both_directions(view: GraphView) -> None:
    around = query.neighbors(view, "app/chain.py:c")
    seen = [(n.direction, n.kind, n.symbol.ref) for n in around.neighbors]
    assert seen == [
        ("out", "calls", "app/chain.py:d"),
        ("in", "contains", "app/chain.py"),
        ("in", "calls", "app/chain.py:a"),
        ("in", "calls", "app/chain.py:b"),
    ]
    assert around.neighbors[0].reason == "same-file" and around.neighbors[0].line == 10


# -- naming a symbol ----------------------------------------------------------------------------------
def test_a_symbol_is_named_by_qualname_path_module_or_id(view: GraphView) -> None:
    assert query.symbol(view, "Shape.area").ref == "app/shapes.py:Shape.area"
    assert query.symbol(view, "app/shapes.py:Square").kind == "class"
    assert query.symbol(view, "app/shapes.py").kind == "file"
    assert query.symbol(view, "./app/shapes.py").kind == "file"
    assert query.symbol(view, "app.chain.d").ref == "app/chain.py:d"  # a Python module path
    assert query.symbol(view, "app.chain").ref == "app/chain.py"
    sid = node_id("app/chain.py", "b", "function")
    assert query.symbol(view, sid).ref == "app/chain.py:b"
    assert query.symbol(view, "SQUARE").ref == "app/shapes.py:Square"  # another case, one match


def test_an_ambiguous_name_lists_its_candidates_and_a_missing_one_says_so(view: GraphView) -> None:
    with pytest.raises(AmbiguousSymbolError) as raised:
        query.symbol(view, "parse")
    assert [c.ref for c in raised.value.candidates] == ["app/shapes.py:parse", "lib/parse.py:parse"]
    assert "app/shapes.py:parse (function)" in raised.value.message
    assert "PATH:QUALNAME" in (raised.value.hint or "")
    with pytest.raises(NotFoundError, match="nothing in the code graph is named 'nowhere'"):
        query.symbol(view, "nowhere")


# -- find -----------------------------------------------------------------------------------------------
def test_find_ranks_exact_then_prefix_then_substring_same_case_first(view: GraphView) -> None:
    found = [(m.symbol.ref, m.match) for m in query.find(view, "parse")]
    assert found == [
        ("app/shapes.py:parse", "exact"),
        ("lib/parse.py:parse", "exact"),
        ("app/shapes.py:parse_all", "prefix"),  # the same case first,
        ("lib/parse.py", "prefix"),  # then the kind: a file after definitions
        ("app/shapes.py:Parser", "prefix"),
        ("app/shapes.py:PARSE_LIMIT", "prefix"),
        ("app/shapes.py:reparse", "substring"),
    ]
    assert [m.symbol.ref for m in query.find(view, "Parse")][:3] == [
        "app/shapes.py:parse",
        "lib/parse.py:parse",
        "app/shapes.py:Parser",  # Parser matches "Parse" in the same case: first of the prefixes
    ]
    assert [m.symbol.ref for m in query.find(view, "parse", kinds=["class"])] == [
        "app/shapes.py:Parser"
    ]
    assert len(query.find(view, "parse", limit=2)) == 2
    assert [m.symbol.ref for m in query.find(view, "Shape.ar")] == ["app/shapes.py:Shape.area"]
    assert query.find(view, "zzz") == []
    first = query.find(view, "parse")[0]
    assert first.symbol.location == "app/shapes.py:22" and first.to_json()["kind"] == "function"


@pytest.mark.parametrize(
    ("path", "is_test"),
    [
        ("tests/test_x.py", True),
        ("pkg/test_x.py", True),
        ("pkg/x_test.go", True),
        ("web/a.test.ts", True),
        ("web/a.spec.jsx", True),
        ("src/test/java/AppTest.java", True),
        ("src/main/java/AppTest.java", True),
        ("spec/models/user_spec.rb", True),
        ("App.Tests/FooTests.cs", True),
        ("pkg/testing.py", False),
        ("src/contest.py", False),
        ("src/main/java/App.java", False),
    ],
)
def test_test_files_by_convention(path: str, is_test: bool) -> None:
    assert is_test_path(path) is is_test


# -- the repository map --------------------------------------------------------------------------------
def big_project() -> dict[str, FileFacts]:
    """Two clusters: core (called from everywhere) and a leaf package."""
    files = project()
    for i in range(8):
        files[f"svc/s{i}.py"] = ff(
            "python",
            d(f"handler{i}", line=1),
            d(f"Service{i}", "class", 5, 9),
            d(f"Service{i}.serve", "method", 6),
            imports=[Import("app.chain", names=("a",)), Import("leaf.tool", names=("tool",))],
            calls=[Call("a", line=2, scope=f"handler{i}")]
            + ([Call("tool", line=3, scope=f"handler{i}")] if i == 0 else []),
        )
    files["leaf/tool.py"] = ff(
        "python",
        d("tool", line=1),
        d("tool_helper", line=5),
        calls=[Call("tool_helper", line=2, scope="tool")],
    )
    return files


def test_the_map_fits_its_budget_and_shows_what_is_called_most() -> None:
    view = view_of(big_project())
    for budget in (50, 120, 400, 2000):
        made = rank.repo_map(view, budget_tokens=budget)
        assert made.tokens <= budget and rank.tokens(made.text) == made.tokens
    made = rank.repo_map(view, budget_tokens=2000)
    lines = made.text.splitlines()
    assert lines[0] == "app/chain.py"  # a is called by nine callers, then reaches b, c, d
    assert lines[1:5] == ["  function a …", "  function b …", "  function c …", "  function d …"]
    assert "    method area …" in lines  # a method under its class (no signature: kind and name)
    assert made.files[0][0] == "app/chain.py"
    small = rank.repo_map(view, budget_tokens=50)
    assert small.files and small.files[0][0] == "app/chain.py"
    assert set(small.text.splitlines()) <= set(made.text.splitlines()) | {"app/chain.py"}


def test_focus_files_change_the_ranking() -> None:
    view = view_of(big_project())
    plain = rank.pagerank(view)
    focused = rank.pagerank(view, ["leaf/tool.py"])
    ix = query.graph_index(view)
    tool = ix.pos[node_id("leaf/tool.py", "tool_helper", "function")]
    a = ix.pos[node_id("app/chain.py", "a", "function")]
    assert plain[a] > plain[tool]
    assert focused[tool] > focused[a]
    made = rank.repo_map(view, ["leaf/tool.py"], budget_tokens=60)
    assert made.files[0][0] == "leaf/tool.py" and made.focus == ("leaf/tool.py",)
    assert abs(float(plain.sum()) - 1.0) < 1e-6 and abs(float(focused.sum()) - 1.0) < 1e-6


def test_map_rejects_a_silly_budget() -> None:
    with pytest.raises(Exception, match="budget"):
        rank.repo_map(view_of(project()), budget_tokens=1)


# -- pictures -----------------------------------------------------------------------------------------
def test_pictures_show_the_reached_nodes_and_the_edges_that_reached_them(view: GraphView) -> None:
    found = query.callers(view, "app/chain.py:d", depth=2)
    chart = picture.mermaid(found)
    assert chart.startswith("flowchart LR\n")
    assert chart.count("-->|calls|") == 3  # c -> d, a -> c, b -> c
    assert 'd<br/>app/chain.py:13"]' in chart and "style n0 stroke-width:3px" in chart
    graph = picture.dot(found)
    assert graph.startswith("digraph code {") and graph.rstrip().endswith("}")
    c = node_id("app/chain.py", "c", "function")
    dd = node_id("app/chain.py", "d", "function")
    assert f'"{c}" -> "{dd}" [label="calls"];' in graph
    assert picture.mermaid(found) == chart  # deterministic
    around = picture.mermaid(query.neighbors(view, "app/chain.py:c"))
    assert "-->|contains|" in around and around.count("-->") == 4


# -- property: traversals on random graphs ---------------------------------------------------------
def _random_view(n: int, pairs: list[tuple[int, int]]) -> GraphView:
    ids = [node_id("m.py", f"f{i}", "function") for i in range(n)]
    nodes = [
        {
            "id": ids[i],
            "kind": "function",
            "name": f"f{i}",
            "qualname": f"f{i}",
            "path": "m.py",
            "language": "python",
            "start_line": i + 1,
            "end_line": i + 1,
            "signature": "",
            "doc": "",
        }
        for i in range(n)
    ]
    nodes.sort(key=lambda r: r["id"])
    edges = sorted(
        {(ids[s], "calls", ids[t], line) for line, (s, t) in enumerate(pairs)},
    )
    edge_rows = [
        {
            "src": s,
            "dst": t,
            "kind": k,
            "confidence": 1.0,
            "reason": "same-file",
            "line": line,
            "path": "m.py",
        }
        for s, k, t, line in edges
    ]
    return GraphView.from_tables(
        pa.Table.from_pylist([], schema=files_schema()),
        pa.Table.from_pylist(nodes, schema=nodes_schema()),
        pa.Table.from_pylist(edge_rows, schema=edges_schema()),
    )


@given(
    st.integers(2, 12).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=30),
            st.integers(0, n - 1),
        )
    )
)
def test_callers_grow_with_depth_and_each_node_appears_once_at_its_distance(case: Any) -> None:
    n, pairs, start = case
    view = _random_view(n, pairs)
    target = f"m.py:f{start}"
    callers_of: dict[int, set[int]] = {i: set() for i in range(n)}
    for s, t in pairs:
        callers_of[t].add(s)
    distance = {start: 0}
    todo = deque([start])
    while todo:  # an independent breadth-first search
        at = todo.popleft()
        for s in callers_of[at]:
            if s not in distance:
                distance[s] = distance[at] + 1
                todo.append(s)
    previous: set[str] = set()
    for depth in range(1, 6):
        found = query.callers(view, target, depth=depth)
        names = [r.symbol.name for r in found.results]
        assert len(names) == len(set(names)), "each node once"
        assert previous <= set(names), "depth d is within depth d + 1"
        previous = set(names)
        expected = {f"f{i}": dist for i, dist in distance.items() if 0 < dist <= depth}
        assert {r.symbol.name: r.depth for r in found.results} == expected
        for r in found.results:
            assert len(r.route) == r.depth + 1 and r.route[-1] == r.symbol.id


@given(
    st.lists(
        st.tuples(st.integers(0, 20), st.integers(0, 5), st.integers(-1, 10**6)),
        min_size=1,
        max_size=40,
    )
)
def test_traversal_order_packed_or_not_is_the_sort_order(rows: list[tuple[int, int, int]]) -> None:
    """Traversals order what they reach by (depth, path, line, id) with one
    sort of packed integers; it equals sorting the tuples, and so does the
    lexsort used when the packed key would not fit."""
    files = {
        f"pkg/m{p}.py": ff(
            "python", *(d(f"f{i}", line=max(ln, 1)) for i, (_, q, ln) in enumerate(rows) if q == p)
        )
        for p in range(6)
    }
    view = view_of(files)
    ix = query.graph_index(view)
    import numpy as np

    nodes = np.arange(len(ix.ids), dtype=np.int64)
    levels = np.array([rows[i % len(rows)][0] for i in range(len(ix.ids))], dtype=np.int64)
    expected = sorted(
        range(len(ix.ids)),
        key=lambda i: (levels[i], ix.path[i] or "", max(ix.start[i] or 0, 0), ix.ids[i]),
    )
    assert ix.order_by_level(nodes, levels).tolist() == expected
    ix.__dict__["_place"] = None  # as when (path, line, id) needs more than 58 bits
    assert ix.order_by_level(nodes, levels).tolist() == expected
