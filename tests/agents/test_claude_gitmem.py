"""gitmem wired into the real Claude Code CLI by ``git edda install claude``:
what one session records reaches the next session's model, and what the
agent does is captured in a capsule of its session."""

from __future__ import annotations

import json
import time

import pytest

from agents.claude_harness import Claude
from agents.helpers import GIT_EDDA, edda, logged_events, needs_git_edda, run_command
from agents.scripted_model import call, say
from agents.test_claude_e2e import SESSION_START_PREFIX, system_texts

pytestmark = pytest.mark.claude


@needs_git_edda
def test_a_decision_made_in_one_session_reaches_the_next_sessions_model(claude: Claude) -> None:
    repo = claude.project
    run_command(repo, "git", "init", "-q", "-b", "main")
    run_command(repo, "git", "commit", "-q", "--allow-empty", "-m", "init")
    edda(repo, "install", "claude", "--no-mcp")
    settings = json.loads((repo / ".claude" / "settings.json").read_text())
    assert {"SessionStart", "UserPromptSubmit", "PostToolUse", "SessionEnd"} <= set(
        settings["hooks"]
    )

    decide = f'"{GIT_EDDA}" decide db.engine postgres --reason "needs JSONB" -C "{repo}"'
    first = claude.run(
        "pick the database",
        [call("Bash", command=decide), say("decided: postgres")],
        timeout=90,
    )
    assert not first.unused
    # PostToolUse and Stop run asynchronously: give them a moment to land.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        kinds = {e["envelope"]["type"] for e in logged_events(repo)}
        if {"decision", "prompt", "capsule_close"} <= kinds and "observation" in kinds:
            break
        time.sleep(0.5)
    events = logged_events(repo, flush=False)
    session = first.result["session_id"]
    opened = [e for e in events if e["envelope"]["type"] == "capsule_open"]
    assert [e["envelope"]["scope"].get("session") for e in opened] == [session]
    capsule = opened[0]["envelope"]["id"]
    prompt = next(e for e in events if e["envelope"]["type"] == "prompt")
    assert prompt["body"]["text"] == "pick the database"
    assert prompt["envelope"].get("capsule") == capsule
    commands = [
        e
        for e in events
        if e["envelope"]["type"] == "observation" and e["body"].get("kind") == "command"
    ]
    assert commands and "decide db.engine postgres" in json.dumps(commands[0]["body"])
    assert any(e["envelope"]["type"] == "decision" for e in events)

    second = claude.run("what database do we use?", [say("postgres")], timeout=90)
    (request,) = second.turns
    injected = [t for t in system_texts(request) if t.startswith(SESSION_START_PREFIX)]
    assert len(injected) == 1, system_texts(request)
    assert "db.engine" in injected[0] and "postgres" in injected[0]
