"""The end-to-end tier with the real Claude Code CLI (marker ``claude``).

The CLI is found or installed once per session (see ``claude_harness``);
when it cannot be, every test of the tier is skipped with the reason, so a run
without npm says so rather than passing."""

from __future__ import annotations

import fcntl
from pathlib import Path

import pytest

from agents.claude_harness import Claude, find_claude


@pytest.fixture(scope="session")
def claude_binary(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The ``claude`` binary and its version, installed into the cache if needed.

    xdist workers share the session's base temp parent: a lock there lets one
    of them install while the others wait, instead of racing npm."""
    lock = tmp_path_factory.getbasetemp().parent / "claude-install.lock"
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        binary, detail = find_claude()
    if binary is None:
        pytest.skip(f"the real Claude Code CLI is not available: {detail}")
    return binary, detail


@pytest.fixture
def claude(claude_binary: tuple[Path, str], tmp_path: Path) -> Claude:
    """A project (``claude.project``) and a fresh home for Claude Code; call
    ``claude.run(prompt, script)``."""
    binary, version = claude_binary
    return Claude(binary, version, tmp_path)
