"""No lock makes git or capture hang (issue 10, item 10).

Each of gitmem's locks (the clock, the writer lock, the index builder lock) is
held by another real process, and the commands that run inside someone else's
work (``git commit`` and ``git checkout -b`` through gitmem's hooks,
``gitmem-capture`` on an agent's tool call) must still finish: the hooks give
up on a lock after 0.5 s and capture after 1 s, where a command would wait 10 s
for the clock and 120 s for the writer lock. git's commands succeed, capture
either records the event or says it did not.
Once the lock is released, everything acknowledged and everything the hooks
left for later is in memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import git, init_repo, run_cli

# Holds an exclusive flock on argv[1] until killed, as a stuck gitmem process would.
HOLDER = """
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(600)
"""

LOCKS = {"clock": "clock", "writer": "lock", "index builder": "index/lock"}
# Seconds each command may take while the lock is held. Waiting as a command
# would (10 s for the clock, 120 s for another writer) is what must not
# happen; starting Python and git on a loaded machine may take a few seconds.
LIMIT = 8.0


@contextmanager
def held(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
        yield
    finally:
        proc.kill()
        proc.wait()


def timed(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``args``; fail the test if it takes LIMIT seconds (or hangs: 30 s)."""
    start = time.monotonic()
    proc = subprocess.run(args, cwd=cwd, input=stdin, capture_output=True, text=True, timeout=30)
    took = time.monotonic() - start
    assert took < LIMIT, f"{' '.join(args[:3])} took {took:.2f} s: {proc.stderr}"
    return proc


def capture(repo: Path, text: str) -> subprocess.CompletedProcess[str]:
    event = json.dumps({"type": "note", "body": {"text": text}})
    return timed([sys.executable, "-m", "gitmem.capture.main"], repo, event)


def all_events(repo: Path) -> list[dict[str, Any]]:
    code, out, err = run_cli(repo, "log", "--all-branches", "--json")
    assert code == 0, err
    events: list[dict[str, Any]] = json.loads(out)["events"]
    return events


@pytest.mark.parametrize("lock", sorted(LOCKS))
def test_git_and_capture_finish_while_a_lock_is_held(tmp_path: Path, lock: str) -> None:
    repo = init_repo(tmp_path / "repo")
    code, _out, err = run_cli(repo, "init")
    assert code == 0, err
    assert run_cli(repo, "note", "before the lock")[0] == 0
    state = repo / ".git" / "edda"

    with held(state / LOCKS[lock]):
        commit = timed(["git", "commit", "-q", "--allow-empty", "-m", "while locked"], repo)
        assert commit.returncode == 0, commit.stderr
        sha = git(repo, "rev-parse", "HEAD").strip()
        checkout = timed(["git", "checkout", "-q", "-b", "x"], repo)
        assert checkout.returncode == 0, checkout.stderr
        captured = capture(repo, f"captured while the {lock} lock is held")
        if lock == "clock":
            # No time can be issued: nothing is acknowledged, and capture says so.
            assert captured.returncode == 5
            assert captured.stdout == ""
            assert len(captured.stderr.splitlines()) == 1
            assert "clock lock" in captured.stderr and "nothing was written" in captured.stderr
            acknowledged: list[str] = []
        else:
            assert captured.returncode == 0, captured.stderr
            acknowledged = captured.stdout.split()
            assert len(acknowledged) == 1

    code, _out, err = run_cli(repo, "flush")
    assert code == 0, err
    events = all_events(repo)
    ids = {e["id"] for e in events}
    assert set(acknowledged) <= ids
    # the post-commit hook's commit_link, spooled or deferred as an intent, landed
    links = [e["body"] for e in events if e["envelope"]["type"] == "commit_link"]
    assert [link["sha"] for link in links] == [sha]
    # and so did the fork the post-checkout hook recorded for x
    code, out, err = run_cli(repo, "branches", "--json")
    assert code == 0, err
    assert {b["name"]: b["fork_source"] for b in json.loads(out)["branches"]}.get("x") == "main"


def test_capture_gives_up_on_the_clock_within_a_second(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    assert run_cli(repo, "init", "--no-hooks")[0] == 0
    with held(repo / ".git" / "edda" / "clock"):
        start = time.monotonic()
        captured = capture(repo, "too late")
        took = time.monotonic() - start
    assert captured.returncode == 5
    # it waited its second (the message names the wait), and no longer than that
    # plus a loaded machine's start-up: the clock's own wait is 10 s
    assert "held the clock lock for 1 s" in captured.stderr, captured.stderr
    assert 0.9 < took < LIMIT
    assert not list((repo / ".git" / "edda" / "spool").glob("*.json"))


def test_a_command_waits_for_the_clock_then_says_which_lock(tmp_path: Path) -> None:
    """The library's own wait is bounded too (here capped at 0.3 s): a
    ConflictError naming the lock, never a hang."""
    from gitmem.errors import ConflictError
    from gitmem.memory.api import Memory
    from gitmem.storage import lock

    repo = init_repo(tmp_path / "repo")
    with held(repo / ".git" / "edda" / "clock"), Memory.open(repo) as mem:
        lock.limit_waits(0.3)
        try:
            with pytest.raises(ConflictError, match="clock lock"):
                mem.note("never written")
        finally:
            lock.limit_waits(None)
    with Memory.open(repo) as mem:
        assert [e.field("text") for e in mem.events()] == []
