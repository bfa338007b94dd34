"""Two Claude Code sessions in two worktrees of one repository, at the same
time: both capture everything, each into its own session's capsule and its
own branch's memory."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agents.claude_harness import Claude
from agents.helpers import edda, logged_events, needs_git_edda, run_command
from agents.scripted_model import call, say

pytestmark = pytest.mark.claude


@needs_git_edda
def test_two_sessions_in_two_worktrees_both_capture_without_loss(claude: Claude) -> None:
    repo = claude.project
    run_command(repo, "git", "init", "-q", "-b", "main")
    edda(repo, "install", "claude", "--no-mcp")
    run_command(repo, "git", "add", ".claude/settings.json")
    run_command(repo, "git", "commit", "-q", "-m", "hooks")
    other = repo.parent / "feature-worktree"
    run_command(repo, "git", "worktree", "add", "-q", "-b", "feature", str(other))
    claude.trust(other)

    def session(where: Path, name: str):
        script = [call("Bash", command=f"echo {name}-{i}") for i in range(3)] + [say("done")]
        return claude.run(f"work on {name}", script, cwd=where, timeout=120)

    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(session, [repo, other], ["alpha", "beta"]))
    events = logged_events(repo)
    for run, name, branch in zip(runs, ["alpha", "beta"], ["main", "feature"], strict=True):
        mine = [
            e for e in events if e["envelope"]["scope"].get("session") == run.result["session_id"]
        ]
        kinds = [e["envelope"]["type"] for e in mine]
        assert kinds.count("capsule_open") == 1 and kinds.count("capsule_close") == 1, kinds
        capsule = next(e for e in mine if e["envelope"]["type"] == "capsule_open")["envelope"]["id"]
        commands = [
            json.dumps(e["body"]) for e in mine if e["body"] and e["body"].get("kind") == "command"
        ]
        assert len(commands) == 3 and all(f"{name}-" in c for c in commands), commands
        assert {e["envelope"]["scope"]["branch"] for e in mine} == {branch}
        inside = [e for e in mine if e["envelope"]["type"] not in ("capsule_open",)]
        assert all(e["envelope"].get("capsule") == capsule for e in inside), kinds
    ids = [e["envelope"]["id"] for e in events]
    assert len(ids) == len(set(ids))  # nothing recorded twice
