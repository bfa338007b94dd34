"""``git edda code find|callers|callees|impact|neighbors|map`` and the MCP
server's code tools, end to end: a real repository whose graph ``git edda
code index`` built (issue 13, item 4).

The queries' logic is tested on in-memory views (tests/test_graph_query.py);
these tests need the build and the tree-sitter extractor.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import git, init_repo, isolated_environment, run_cli

pytest.importorskip("gitmem.graph.build", reason="needs the code graph's build")
pytest.importorskip("gitmem.graph.extract", reason="needs the tree-sitter extractor")

FILES = {
    "app/__init__.py": "",
    "app/chain.py": (
        "def a():\n    b()\n    c()\n\n\ndef b():\n    c()\n\n\n"
        "def c():\n    d()\n\n\ndef d():\n    return 1\n\n\ndef parse(text):\n    return text\n"
    ),
    "app/main.py": "from app.chain import a\n\n\ndef main():\n    a()\n\n\nmain()\n",
    "app/shapes.py": (
        "class Shape:\n    def area(self):\n        return 0\n\n\n"
        "class Square(Shape):\n    def area(self):\n        return 1\n"
    ),
    "lib/text.py": "def parse(text):\n    return text.split()\n",
    "tests/test_chain.py": "from app.chain import a\n\n\ndef test_a():\n    a()\n",
}


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("code")
    with isolated_environment(root / "home"):
        path = init_repo(root / "repo")
        for rel, text in FILES.items():
            (path / rel).parent.mkdir(parents=True, exist_ok=True)
            (path / rel).write_text(text)
        git(path, "add", "-A")
        git(path, "commit", "-qm", "code")
        code, out, err = run_cli(path, "code", "index")
        assert code == 0, (out, err)
        yield path


def ok(repo: Path, *args: str) -> str:
    code, out, err = run_cli(repo, *args)
    assert code == 0, (args, out, err)
    return out


def ok_json(repo: Path, *args: str) -> Any:
    return json.loads(ok(repo, *args, "--json"))


def test_find_lists_exact_matches_first_with_kind_and_location(repo: Path) -> None:
    data = ok_json(repo, "code", "find", "parse")
    assert [(m["path"], m["qualname"], m["match"]) for m in data["matches"]][:2] == [
        ("app/chain.py", "parse", "exact"),
        ("lib/text.py", "parse", "exact"),
    ]
    text = ok(repo, "code", "find", "chain")
    assert "app/chain.py" in text.splitlines()[0] and "file" in text.splitlines()[0]
    assert ok_json(repo, "code", "find", "area", "--kind", "class")["matches"] == []
    code, _, err = run_cli(repo, "code", "find", "x", "--kind", "widget")
    assert code == 2 and "no such kind: widget" in err


def test_callers_once_at_their_nearest_with_the_route(repo: Path) -> None:
    data = ok_json(repo, "code", "callers", "app/chain.py:d", "--depth", "4")
    found = {r["qualname"] or r["path"]: r["depth"] for r in data["results"]}
    assert found == {"c": 1, "a": 2, "b": 2, "main": 3, "test_a": 3, "app/main.py": 4}
    by_name = {r["qualname"]: r for r in data["results"]}
    assert len(by_name["a"]["route"]) == 3  # d, c, a
    text = ok(repo, "code", "callers", "app/chain.py:d", "--depth", "2")
    assert (
        "callers of app/chain.py:d (function, app/chain.py:14), up to 2 calls away: 3 found" in text
    )
    assert "via c" in text
    callees = ok_json(repo, "code", "callees", "main", "--depth", "1")
    assert [r["qualname"] for r in callees["results"]] == ["a"]


def test_impact_lists_the_tests_apart(repo: Path) -> None:
    data = ok_json(repo, "code", "impact", "app/chain.py")
    assert "tests/test_chain.py" in {r["path"] for r in data["tests"]}
    assert all(not r["path"].startswith("tests/") for r in data["results"])
    assert "app/main.py" in data["files"] and "tests/test_chain.py" in data["files"]
    shapes = ok_json(repo, "code", "impact", "Shape")
    assert [r["qualname"] for r in shapes["results"]] == ["Square"]


def test_pictures_and_neighbors(repo: Path) -> None:
    chart = ok(repo, "code", "callers", "app/chain.py:c", "--format", "mermaid")
    assert chart.startswith("flowchart LR") and "-->|calls|" in chart
    data = ok_json(repo, "code", "neighbors", "app/chain.py:c", "--format", "dot")
    assert data["dot"].startswith("digraph code {")
    kinds = {(n["direction"], n["edge"]) for n in data["neighbors"]}
    assert {("in", "contains"), ("in", "calls"), ("out", "calls")} <= kinds


def test_the_map_keeps_to_its_budget_and_warns_about_unknown_focus(repo: Path) -> None:
    data = ok_json(repo, "code", "map", "--budget", "60")
    assert data["tokens"] <= 60 and data["files"]
    text = ok(
        repo, "code", "map", "--focus", "app/shapes.py", "--focus", "nope.py", "--budget", "200"
    )
    assert text.splitlines()[0] == "app/shapes.py"
    assert "warning: not in the code graph: nope.py" in text


def test_ambiguous_and_unknown_symbols_are_usage_and_not_found_errors(repo: Path) -> None:
    code, out, err = run_cli(repo, "code", "callers", "parse")
    assert code == 2 and "app/chain.py:parse (function)" in err and "lib/text.py:parse" in err
    code, out, _ = run_cli(repo, "code", "callers", "parse", "--json")
    assert code == 2 and "names 2 symbols" in json.loads(out)["error"]["message"]
    code, _, err = run_cli(repo, "code", "impact", "nowhere")
    assert code == 3 and "git edda code find nowhere" in err
    code, _, err = run_cli(repo, "code", "callers", "a", "--depth", "0")
    assert code == 2 and "--depth" in err


# -- the MCP server's code tools -------------------------------------------------------------
@pytest.fixture(scope="module")
def server(repo: Path) -> Iterator[Any]:
    pytest.importorskip("mcp")
    from anyio.from_thread import start_blocking_portal
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "gitmem.cli.main", "mcp", "-C", str(repo)],
        env=dict(os.environ),
        cwd=str(repo.parent),
    )
    with (
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(stdio_client(params)) as (read, write),
        portal.wrap_async_context_manager(ClientSession(read, write)) as session,
    ):
        portal.call(session.initialize)
        yield lambda tool, **arguments: portal.call(session.call_tool, tool, arguments)


def test_mcp_code_tools_answer_compactly(server: Any) -> None:
    found = server("code_find", name="parse", limit=5)
    assert not found.is_error
    assert found.structured_content["matches"][0]["ref"] == "app/chain.py:parse"
    callers = server("code_callers", symbol="app/chain.py:d", depth=3)
    assert not callers.is_error
    rows = callers.structured_content["results"]
    assert {r["ref"]: r["depth"] for r in rows}["app/chain.py:a"] == 2
    assert {r["ref"]: r["route"] for r in rows}["app/chain.py:a"] == ["app/chain.py:c"]
    impact = server("code_impact", target="app/chain.py")
    assert "tests/test_chain.py" in {
        r["ref"].split(":")[0] for r in impact.structured_content["tests"]
    }
    mapped = server("code_map", focus=["app/shapes.py"], budget=200)
    assert mapped.structured_content["files"][0]["path"] == "app/shapes.py"
    around = server("code_neighbors", symbol="app/chain.py:c")
    assert around.structured_content["neighbors"]
    ambiguous = server("code_callers", symbol="parse")
    assert ambiguous.is_error and "lib/text.py:parse" in ambiguous.content[0].text
    bounded = server("code_callers", symbol="a", depth=99)
    assert bounded.is_error
