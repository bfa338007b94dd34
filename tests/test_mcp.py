"""The MCP server (``git edda mcp``), driven over stdio by the SDK's own client.

One server process serves the whole module (starting one costs about a
second): the client runs in an event loop on a portal thread, and the tests
call it synchronously. Each test records what it reads, so their order does
not matter.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import isolated_environment, make_repo, run_cli

pytest.importorskip("mcp")

TOOLS = {
    "search",
    "context",
    "show",
    "log",
    "ask",
    "why",
    "capsule_status",
    "note",
    "decide",
    "ratify",
    "pin",
    "checkpoint",
    "learn",
    "code_find",
    "code_callers",
    "code_callees",
    "code_impact",
    "code_neighbors",
    "code_map",
}


class Server:
    """A client session with one ``git edda mcp -C repo`` process."""

    def __init__(self, portal: Any, session: Any, repo: Path) -> None:
        self.portal, self.session, self.repo = portal, session, repo

    def call(self, tool: str, **arguments: Any) -> Any:
        return self.portal.call(self.session.call_tool, tool, arguments)

    def ok(self, tool: str, **arguments: Any) -> Any:
        """A successful call's result (fails the test on a tool error)."""
        result = self.call(tool, **arguments)
        assert not result.is_error, (tool, result.content[0].text)
        return result

    def error(self, tool: str, **arguments: Any) -> str:
        """A failed call's message (fails the test when the call succeeded)."""
        result = self.call(tool, **arguments)
        assert result.is_error, (tool, arguments, result.content[0].text[:300])
        return str(result.content[0].text)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    from anyio.from_thread import start_blocking_portal
    from mcp import ClientSession, StdioServerParameters, stdio_client

    root = tmp_path_factory.mktemp("mcp")
    with isolated_environment(root / "home"):
        repo = make_repo(root / "repo", events=3)
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "gitmem.cli.main", "mcp", "-C", str(repo)],
            env=dict(os.environ),
            cwd=str(root),  # not the repository: -C names it
        )
        with (
            start_blocking_portal() as portal,
            portal.wrap_async_context_manager(stdio_client(params)) as (read, write),
            portal.wrap_async_context_manager(ClientSession(read, write)) as session,
        ):
            portal.call(session.initialize)
            yield Server(portal, session, repo)


def text(result: Any) -> str:
    return str(result.content[0].text)


# -- the tools on offer ---------------------------------------------------------------
def test_the_server_lists_every_tool_with_a_description_for_a_model(server: Server) -> None:
    tools = {t.name: t for t in server.portal.call(server.session.list_tools).tools}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert len(tool.description or "") > 80, tool.name  # when to use it, what it returns
        assert tool.input_schema["type"] == "object"
    assert tools["search"].input_schema["required"] == ["query"]
    limit = tools["search"].input_schema["properties"]["limit"]
    assert limit["minimum"] == 1 and limit["maximum"] == 50
    assert tools["search"].annotations.read_only_hint is True
    assert tools["note"].annotations.read_only_hint is False
    # the code graph's tools: read-only, inputs bounded
    assert all(tools[t].annotations.read_only_hint for t in TOOLS if t.startswith("code_"))
    assert tools["code_callers"].input_schema["required"] == ["symbol"]
    depth = tools["code_impact"].input_schema["properties"]["depth"]
    assert depth["minimum"] == 1 and depth["maximum"] == 10
    kinds = tools["code_find"].input_schema["properties"]["kinds"]
    assert "method" in str(kinds) and tools["code_map"].input_schema.get("required") is None


# -- reading and recording ------------------------------------------------------------
def test_a_note_is_found_by_search_log_and_show(server: Server) -> None:
    noted = server.ok("note", text="The ledger lives in Postgres tables", tags=["db"])
    event_id = noted.structured_content["id"]
    assert text(noted) == f"noted [{event_id[:12]}] on main"

    found = server.ok("search", query="ledger Postgres", limit=5)
    assert f"[{event_id[:12]}]" in text(found).splitlines()[0]
    assert found.structured_content["hits"][0]["id"] == event_id

    listed = server.ok("log", limit=3, types=["note"])
    assert f"[{event_id[:12]}]" in text(listed).splitlines()[0]  # newest first
    assert len(listed.structured_content["events"]) == 3

    shown = server.ok("show", id=event_id[:12])  # the short id the results carry
    assert shown.structured_content["id"] == event_id
    assert shown.structured_content["body"]["text"] == "The ledger lives in Postgres tables"
    assert "agent: mcp" in text(shown)  # an MCP client is an agent
    assert "text: The ledger lives in Postgres tables" in text(shown)


def test_an_agents_decision_is_proposed_until_ratified(server: Server) -> None:
    decided = server.ok("decide", key="queue.backend", value="redis", reason="already deployed")
    decision = decided.structured_content["id"]
    assert decided.structured_content["binding"] is False
    assert "proposed (not binding until ratified)" in text(decided)
    assert "NOT BINDING" in text(server.ok("ask", query="queue.backend"))

    ratified = server.ok("ratify", id=decision[:12], note="agreed")
    assert text(ratified).startswith("ratified with [")
    again = server.ok("ratify", id=decision[:12])
    assert again.structured_content == {
        "id": decision,
        "unchanged": f"already ratified by {ratified.structured_content['id'][:12]}",
    }
    assert "NOT BINDING" not in text(server.ok("ask", query="queue.backend"))

    later = server.ok("decide", key="queue.backend", value="nats")
    assert later.structured_content["supersedes"] == decision
    assert f"superseding [{decision[:12]}]" in text(later)


def test_pin_checkpoint_and_learn_reach_the_context_pack(server: Server) -> None:
    note = server.ok("note", text="Never run migrations on Fridays").structured_content["id"]
    pinned = server.ok("pin", id=note[:12], reason="outage", expires_in_days=7)
    assert text(pinned).startswith("pinned with [")
    assert "already pinned" in text(server.ok("pin", id=note[:12]))

    server.ok(
        "checkpoint",
        next="wire the retry queue",
        hypotheses=["the timeout is too short"],
        rejected=[{"idea": "a bigger pool", "reason": "did not help"}],
        questions=["who owns the queue?"],
    )
    mistake = server.ok(
        "learn", text="fsync the ledger before acking", kind="mistake", paths=["ledger.py"]
    )
    assert text(mistake).startswith("mistake [")

    pack = server.ok("context", query="retry queue", budget=3000, paths=["ledger.py"])
    body = text(pack)
    assert body.startswith("# Memory context")
    assert f"[{note[:12]}]" in body and "Never run migrations on Fridays" in body
    assert "wire the retry queue" in body
    assert "fsync the ledger before acking" in body
    assert pack.structured_content["budget"] == 3000


def test_capsule_status_names_the_current_and_open_capsules(server: Server) -> None:
    code, out, err = run_cli(server.repo, "capsule", "open", "session", "--intent", "fix flake")
    assert code == 0, err
    status = server.ok("capsule_status")
    current = status.structured_content["current"]
    assert current and current[:12] in out
    assert f"current capsule: [{current[:12]}]" in text(status)
    assert any(
        c["id"] == current and c["intent"] == "fix flake" for c in status.structured_content["open"]
    )
    assert "<- current" in text(status)
    code, _, err = run_cli(server.repo, "capsule", "close", current, "--summary", "done")
    assert code == 0, err
    assert server.ok("capsule_status").structured_content["current"] is None


def test_the_context_resource_is_the_pack(server: Server) -> None:
    server.ok("note", text="resource check note")
    resources = server.portal.call(server.session.list_resources).resources
    assert [str(r.uri) for r in resources] == ["gitmem://context"]
    read = server.portal.call(server.session.read_resource, "gitmem://context")
    assert read.contents[0].text.startswith("# Memory context")
    assert "resource check note" in read.contents[0].text


# -- bad input: tool errors, and the server carries on ---------------------------------
@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("note", {}, "text"),  # a required argument missing
        ("note", {"text": "   "}, "at least 1 character"),  # blank
        ("search", {"query": "x", "limit": -1}, "greater than or equal to 1"),
        ("search", {"query": "x", "limit": 10**9}, "less than or equal to 50"),
        ("search", {"query": "x", "limit": "many"}, "limit"),
        ("search", {"query": "x", "types": ["nonsense"]}, "unknown event type 'nonsense'"),
        ("context", {"budget": 0}, "greater than or equal to 100"),
        ("log", {"since": "not a time"}, "not a time"),
        ("show", {"id": "ffffffffffff"}, "no event with id ffffffffffff"),
        ("show", {"id": "ab"}, "at least 4 characters"),
        ("ratify", {"id": "0000000000000000"}, "no event"),
        ("pin", {"id": "ffffffffffff", "expires_in_days": 0}, "greater than or equal to 1"),
        ("checkpoint", {}, "an empty checkpoint says nothing"),
        ("learn", {"text": "x", "kind": "rumour"}, "kind"),
        ("decide", {"key": "k"}, "value"),
        ("nonesuch", {}, "Unknown tool"),
    ],
)
def test_bad_input_is_a_tool_error_not_a_crash(
    server: Server, tool: str, arguments: dict[str, Any], says: str
) -> None:
    assert says in server.error(tool, **arguments)
    assert server.ok("log", limit=1)  # still serving


def test_a_gitmem_error_carries_its_hint(server: Server) -> None:
    message = server.error("show", id="ffffffffffff")
    assert "\nhint: " in message


# -- the command ------------------------------------------------------------------------
def test_without_the_sdk_the_command_says_what_to_install(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "import mcp..." fails as when the package is not installed
    for name in [m for m in sys.modules if m == "mcp" or m.startswith("mcp.")] + ["mcp"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, "gitmem.mcp.server", raising=False)
    code, out, err = run_cli(repo, "mcp")
    assert code == 7  # ExitCode.DEPENDENCY
    assert err.strip().splitlines() == [
        "git edda: error: the MCP server needs the mcp package, which is not installed"
        " (hint: pip install 'git-edda[mcp]')"
    ]
    assert out == ""


def test_outside_a_repository_the_server_refuses_to_start(tmp_path: Path) -> None:
    code, _, err = run_cli(tmp_path, "mcp")
    assert code != 0 and "not a git repository" in err.lower()


def test_other_commands_never_import_the_sdk(tmp_path: Path) -> None:
    """The SDK costs about a second to import: only 'git edda mcp' may load it."""
    probe = (
        "import sys; import gitmem.cli.commands; from gitmem.cli.main import run; "
        f"run(['status', '-C', {str(make_repo(tmp_path / 'r'))!r}]); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')"
        " or m.startswith('gitmem.mcp')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_an_unexpected_failure_is_a_tool_error_logged_with_secrets_masked(repo: Path) -> None:
    from mcp.server.mcpserver.exceptions import ToolError

    from gitmem.mcp.server import Tools

    tools = Tools(repo)
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    with pytest.raises(ToolError) as raised, tools.call("search"):
        raise RuntimeError(f"broke near {token}")
    message = str(raised.value)
    assert message.startswith("internal error in search: RuntimeError (details in ")
    assert token not in message
    log = Path(message.rsplit("details in ", 1)[1].rstrip(")"))
    assert log.name == "mcp.log" and log.parent.name == "log"
    written = log.read_text()
    assert "RuntimeError: broke near" in written and token not in written
    with tools.call("log"):  # the next call runs: the lock was released
        pass


def test_why_lists_the_decisions_about_a_file(server: Server) -> None:
    server.ok("decide", key="cache.key", value="includes the locale", paths=["src/cache.py"])
    server.ok("learn", text="the cache is per process", paths=["src/"])
    answer = server.ok("why", target="src/cache.py")
    assert "cache.key" in text(answer) and "the cache is per process" in text(answer)
    data = answer.structured_content
    assert [d["event"]["body"]["key"] for d in data["decisions"]] == ["cache.key"]
    assert data["decisions"][0]["status"] == "proposed"  # an agent's, through MCP
