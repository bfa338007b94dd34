"""gitmem's MCP server through the real Claude Code client: the scripted model
calls ``mcp__gitmem__search`` and ``mcp__gitmem__note`` and gets their results."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from agents.claude_harness import ROOT, Claude
from agents.helpers import edda, run_command
from agents.scripted_model import call, say
from agents.test_claude_e2e import tool_results

pytestmark = pytest.mark.claude


@pytest.fixture
def project_with_memory(claude: Claude) -> Path:
    repo = claude.project
    run_command(repo, "git", "init", "-q", "-b", "main")
    run_command(repo, "git", "commit", "-q", "--allow-empty", "-m", "init")
    edda(repo, "note", "the flaky login test is a timezone bug in conftest")
    # The server, as 'git edda install claude' registers it (with this checkout's code).
    server = {
        "command": sys.executable,
        "args": ["-m", "gitmem.cli.main", "mcp", "-C", str(repo)],
        "env": {"PYTHONPATH": str(ROOT)},
    }
    (repo / ".mcp.json").write_text(json.dumps({"mcpServers": {"gitmem": server}}))
    # A project's .mcp.json servers run once approved: what a user's first
    # interactive session asks; here the project entry of ~/.claude.json.
    config_path = claude.home / ".claude.json"
    config = json.loads(config_path.read_text())
    entry = config["projects"][str(repo.resolve())]
    entry.update(enabledMcpjsonServers=["gitmem"], hasTrustDialogAccepted=True)
    config_path.write_text(json.dumps(config, indent=2))
    claude.settings({"enableAllProjectMcpServers": True})
    return repo


def test_the_model_searches_and_records_memory_through_mcp(
    claude: Claude, project_with_memory: Path
) -> None:
    run = claude.run(
        "why is the login test flaky?",
        [
            call("mcp__gitmem__search", query="flaky login test"),
            call("mcp__gitmem__note", text="fixed by pinning TZ=UTC in conftest"),
            say("it was the timezone"),
        ],
        allowed_tools=["mcp__gitmem__search", "mcp__gitmem__note"],
        timeout=90,
    )
    assert not run.unused
    # Claude Code defers MCP tools (ToolSearch finds them); a call by name works.
    _, second, third = run.turns
    (found,) = tool_results(second).values()
    assert not found.get("is_error")
    assert "timezone bug in conftest" in json.dumps(found["content"])
    noted = tool_results(third)["toolu_scripted_02"]
    assert not noted.get("is_error")
    log = json.loads(edda(project_with_memory, "log", "--json"))["events"]
    assert log[0]["body"]["text"] == "fixed by pinning TZ=UTC in conftest"
    assert log[0]["envelope"]["scope"].get("agent")  # recorded as the agent, not the user
