"""``git edda why``: the memory that touches a file, and stale decisions (by blob id)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.conftest import cli, git, init_repo


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


def ok(repo: Path, *args: str) -> str:
    code, out, err = cli(repo, *args)
    assert code == 0, err
    return out


def tick() -> None:
    # Commit times have one-second resolution: keep "before" and "after" apart.
    time.sleep(1.1)


def test_why_lists_what_touches_a_file_and_flags_stale_decisions(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.fsync", "false")
    commit(repo, {"src/cache.py": "def get(): pass\n", "src/db.py": "x = 1\n"}, "code")
    tick()
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
    tick()
    commit(repo, {"src/cache.py": "def get(): return 1\n"}, "change the cache")
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
    commit(repo, {"src/cache.py": "a = 1\n", "src/db.py": "b = 1\n"}, "code")
    tick()
    ok(repo, "decide", "cache.key", "includes the locale", "--path", "src/cache.py")
    ok(repo, "decide", "db.engine", "sqlite", "--path", "src/db.py")
    tick()
    commit(repo, {"src/cache.py": "a = 2\n"}, "change")
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
