"""``git edda why``: the memory that touches a file, and stale decisions (by blob id)."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from tests.conftest import cli, git, init_repo


def commit(repo: Path, files: dict[str, str], message: str, *, seconds: int = 0) -> str:
    """Commit ``files``, dated ``seconds`` from now: commit times have
    one-second resolution, so code "before" and "after" the memory recorded
    now is dated a few seconds apart instead of slept for."""
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A")
    date = f"@{int(time.time()) + seconds} +0000"
    env = dict(os.environ, GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo, env=env, check=True)
    return git(repo, "rev-parse", "HEAD").strip()


def ok(repo: Path, *args: str) -> str:
    code, out, err = cli(repo, *args)
    assert code == 0, err
    return out


def test_why_lists_what_touches_a_file_and_flags_stale_decisions(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.fsync", "false")
    commit(repo, {"src/cache.py": "def get(): pass\n", "src/db.py": "x = 1\n"}, "code", seconds=-5)
    ok(repo, "decide", "cache.key", "includes the locale", "--path", "src/cache.py")
    ok(repo, "decide", "db.engine", "sqlite", "--path", "src/db.py")
    ok(repo, "learn", "the cache is per process", "--path", "src/")
    ok(repo, "note", "unrelated", "--path", "docs/x.md")
    data = json.loads(ok(repo, "why", "src/cache.py", "--json"))
    assert [d["event"]["body"]["key"] for d in data["decisions"]] == ["cache.key"]
    assert data["decisions"][0]["status"] == "binding"
    assert data["decisions"][0]["stale"] is False
    assert [item["event"]["body"]["text"] for item in data["learnings"]] == [
        "the cache is per process"
    ]
    commit(repo, {"src/cache.py": "def get(): return 1\n"}, "change the cache", seconds=5)
    data = json.loads(ok(repo, "why", "src", "--json"))
    by_key = {d["event"]["body"]["key"]: d for d in data["decisions"]}
    assert by_key["cache.key"]["stale"] is True
    assert by_key["cache.key"]["changed"] == ["src/cache.py"]
    assert by_key["db.engine"]["stale"] is False
    text = ok(repo, "why", "src/cache.py")
    assert "STALE: src/cache.py changed since it was made" in text
    # Touching the file's mtime, or checking it out again, changes nothing.
    os.utime(repo / "src/db.py")
    git(repo, "checkout", "-q", "HEAD~1", "--", "src/db.py")
    data = json.loads(ok(repo, "why", "src/db.py", "--json"))
    assert data["decisions"][0]["stale"] is False


def test_why_lists_sessions_and_commits_that_touched_the_file(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.fsync", "false")
    ok(repo, "init")  # git hooks: commits are linked to memory
    capsule = json.loads(
        ok(repo, "capsule", "open", "session", "--intent", "fix parsing", "--json")
    )
    from gitmem.capture.sealer import Draft
    from gitmem.memory.api import Memory

    with Memory.open(repo) as mem:
        mem.append_many(
            [
                Draft(
                    "observation",
                    {"kind": "file_diff", "files": ["src/parse.py"]},
                    capsule=capsule["id"],
                )
            ]
        )
    commit(repo, {"src/parse.py": "def parse(): pass\n"}, "parser")
    ok(repo, "flush")
    data = json.loads(ok(repo, "why", "src/parse.py", "--json"))
    assert [s["id"] for s in data["sessions"]] == [capsule["id"]]
    assert [c["event"]["body"]["message"] for c in data["commits"]] == ["parser"]
    assert json.loads(ok(repo, "why", "src/other.py", "--json"))["commits"] == []
    assert "no memory touches it" in ok(repo, "why", "nothing/here.py")


def test_ask_and_context_mark_stale_decisions(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.fsync", "false")
    commit(repo, {"src/cache.py": "a = 1\n", "src/db.py": "b = 1\n"}, "code", seconds=-5)
    ok(repo, "decide", "cache.key", "includes the locale", "--path", "src/cache.py")
    ok(repo, "decide", "db.engine", "sqlite", "--path", "src/db.py")
    commit(repo, {"src/cache.py": "a = 2\n"}, "change", seconds=5)
    data = json.loads(ok(repo, "ask", "--json"))
    stale = {d["key"]: (d["stale"], d["changed"]) for d in data["decisions"]}
    assert stale == {"cache.key": (True, ["src/cache.py"]), "db.engine": (False, [])}
    assert "STALE: its code changed since: src/cache.py" in ok(repo, "ask")
    pack = ok(repo, "context", "--path", "src/cache.py", "--path", "src/db.py")
    lines = [
        line
        for line in pack.splitlines()
        if line.startswith("- [") and ("cache.key" in line or "db.engine" in line)
    ]
    assert len(lines) == 2, pack
    assert ["STALE" in line for line in lines] == ["cache.key" in line for line in lines], pack
