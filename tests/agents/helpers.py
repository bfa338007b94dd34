"""What the tier's tests do around a Claude Code session: run commands and
gitmem's CLI in the project (as real processes, with this checkout's gitmem),
read back what was recorded, and set up the usual project.

Commands run with ``PYTHONPATH`` set to this checkout, in the test's own
environment (read at each call: the suite's autouse fixture changes it per
test), unless a caller passes ``env``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from agents.claude_harness import ROOT

GIT_EDDA = Path(sys.executable).with_name("git-edda")

# For tests whose sessions call ``git edda`` (gitmem's installed hooks do).
needs_git_edda = pytest.mark.skipif(
    not GIT_EDDA.exists(), reason="needs the installed git-edda script beside python"
)

PARSER = "def parse(text):\n    return text.split()\n"


def run_command(cwd: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """Run ``args`` in ``cwd``, assert it exits 0 (its stderr as the message),
    and return its stdout."""
    env = env or {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([*args], cwd=cwd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def edda(repo: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    """``git edda ARGS -C repo`` (this checkout's), asserted to exit 0; its stdout."""
    return run_command(
        repo, sys.executable, "-m", "gitmem.cli.main", *args, "-C", str(repo), env=env
    )


def logged_events(repo: Path, *, flush: bool = True) -> list[dict[str, Any]]:
    """Every event of every branch, oldest first, as ``log --json`` gives them;
    the spool (what asynchronous hooks left) flushed first unless ``flush`` is
    false."""
    if flush:
        edda(repo, "flush")
    return json.loads(edda(repo, "log", "--reverse", "--all-branches", "--json"))["events"]


def parser_project(repo: Path) -> None:
    """Make ``repo`` a git repository on ``main`` with one commit (``parser.py``,
    :data:`PARSER`) and gitmem's Claude Code hooks installed (no MCP server)."""
    run_command(repo, "git", "init", "-q", "-b", "main")
    (repo / "parser.py").write_text(PARSER)
    run_command(repo, "git", "add", "parser.py")
    run_command(repo, "git", "commit", "-q", "-m", "parser")
    edda(repo, "install", "claude", "--no-mcp")
