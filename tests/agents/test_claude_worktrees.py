"""Two Claude Code sessions in two worktrees of one repository, at the same
time: both capture everything, each into its own session's capsule and its
own branch's memory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agents.claude_harness import Claude
from agents.scripted_model import call, say

pytestmark = pytest.mark.claude

ROOT = Path(__file__).resolve().parents[2]
GIT_EDDA = Path(sys.executable).with_name("git-edda")


def _run(cwd: Path, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*args], cwd=cwd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def _edda(repo: Path, *args: str) -> str:
    return _run(repo, sys.executable, "-m", "gitmem.cli.main", *args, "-C", str(repo))


@pytest.mark.skipif(
    not GIT_EDDA.exists(), reason="needs the installed git-edda script beside python"
)
def test_two_sessions_in_two_worktrees_both_capture_without_loss(claude: Claude) -> None:
    repo = claude.project
    _run(repo, "git", "init", "-q", "-b", "main")
    _edda(repo, "install", "claude", "--no-mcp")
    _run(repo, "git", "add", ".claude/settings.json")
    _run(repo, "git", "commit", "-q", "-m", "hooks")
    other = repo.parent / "feature-worktree"
    _run(repo, "git", "worktree", "add", "-q", "-b", "feature", str(other))
    claude.trust(other)

    def session(where: Path, name: str):
        script = [call("Bash", command=f"echo {name}-{i}") for i in range(3)] + [say("done")]
        return claude.run(f"work on {name}", script, cwd=where, timeout=120)

    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(session, [repo, other], ["alpha", "beta"]))
    _edda(repo, "flush")
    events = json.loads(_edda(repo, "log", "--reverse", "--all-branches", "--json"))["events"]
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
