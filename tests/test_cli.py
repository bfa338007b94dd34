"""The git edda CLI: every command, --json everywhere, one-line errors, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, git, init_repo, run_cli

COMMANDS = [
    "init",
    "note",
    "decide",
    "ratify",
    "checkpoint",
    "log",
    "show",
    "capsule",
    "pin",
    "unpin",
    "pins",
    "learn",
    "redact",
    "gc",
    "verify",
    "export",
    "import",
    "status",
    "flush",
]


def ok(repo, *args) -> str:
    code, out, err = cli(repo, *args)
    assert code == 0, f"{args}: exit {code}: {err}"
    assert "Traceback" not in err
    return out


def ok_json(repo, *args):
    return json.loads(ok(repo, *args, "--json"))


def log_json(repo, *args):
    """``log --json`` oldest first (the default is newest first, as git log)."""
    return ok_json(repo, "log", "--reverse", *args)["events"]


def test_help_lists_every_command_with_a_description():
    proc = subprocess.run(
        [sys.executable, "-m", "gitmem.cli.main", "--help"], capture_output=True, text=True
    )
    assert proc.returncode == 0
    for name in COMMANDS:
        line = next(
            (ln for ln in proc.stdout.splitlines() if ln.strip(" │").startswith(name + " ")), None
        )
        assert line is not None, f"{name} missing from --help"
        assert len(line.strip(" │").split(None, 1)) == 2, f"{name} has no description"


def test_git_subcommand_dispatch(repo, tmp_path):
    """`git edda` works when git-edda is on PATH (as pip installs it)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "git-edda"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m gitmem.cli.main "$@"\n')
    script.chmod(0o755)
    import os

    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    proc = subprocess.run(
        ["git", "edda", "status", "--json"], cwd=repo, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["branch"] == "main"


def test_full_workflow_with_json(repo):
    info = ok_json(repo, "init")
    assert info["memory_ref"] == "refs/edda/branches/main"
    note = ok_json(repo, "note", "remember the milk", "--tag", "todo", "--path", "src/a.py")
    assert note["body"] == {"text": "remember the milk", "tags": ["todo"], "paths": ["src/a.py"]}
    d1 = ok_json(repo, "decide", "db", "postgres", "--reason", "jsonb")
    d2 = ok_json(repo, "decide", "db", "sqlite", "--agent", "claude-code")
    assert d2["body"]["supersedes"] == d1["id"]
    assert "proposed" in ok(repo, "decide", "cache", "redis", "--agent", "bot")
    ratified = ok_json(repo, "ratify", d2["id"][:8])
    assert ratified["body"]["target"] == d2["id"]
    cp = ok_json(
        repo,
        "checkpoint",
        "--next",
        "write tests",
        "--hypothesis",
        "tz bug",
        "--rejected",
        "retry loop: hides the bug",
        "--question",
        "which tz?",
    )
    assert cp["body"]["rejected"] == [{"idea": "retry loop", "reason": "hides the bug"}]
    learned = ok_json(repo, "learn", "never mock git", "--kind", "mistake", "--topic", "tests")
    assert learned["envelope"]["type"] == "mistake"
    cap = ok_json(
        repo, "capsule", "open", "session", "--intent", "fix flaky test", "--session", "s1"
    )
    in_cap = ok_json(repo, "note", "inside", "--capsule", cap["id"][:10], "--session", "s1")
    assert in_cap["envelope"]["capsule"] == cap["id"]
    capsules = ok_json(repo, "capsule", "list")["capsules"]
    assert capsules[0]["open"] is True and capsules[0]["events"] == 1
    ok(repo, "capsule", "close", cap["id"], "--summary", "fixed")
    assert ok_json(repo, "capsule", "list")["capsules"][0]["open"] is False
    code, _, err = cli(repo, "capsule", "close", cap["id"])
    assert code == 2 and "already closed" in err

    pin = ok_json(repo, "pin", note["id"], "--reason", "important", "--expires", "7d")
    assert pin["body"]["expires"] > pin["envelope"]["time"]
    assert [p["target"] for p in ok_json(repo, "pins")["pins"]] == [note["id"]]
    # --now after the expiry: the pin is gone, and the answer is reproducible
    later = str(pin["body"]["expires"] + 1)
    assert ok_json(repo, "pins", "--now", later) == {"pins": []}
    ok(repo, "unpin", note["id"])
    assert ok_json(repo, "pins") == {"pins": []}

    events = log_json(repo)
    assert [e["envelope"]["type"] for e in events][:3] == ["note", "decision", "decision"]
    assert all(e["branch"] == "main" for e in events)
    assert [e["id"] for e in log_json(repo, "--type", "decision")] == [
        d1["id"],
        d2["id"],
        events[3]["id"],
    ]
    assert [e["id"] for e in log_json(repo, "--path", "src/")] == [note["id"]]
    assert [e["id"] for e in log_json(repo, "--tag", "todo")] == [note["id"]]
    assert [e["id"] for e in log_json(repo, "--session", "s1")] == [cap["id"], in_cap["id"]]
    assert [e["id"] for e in log_json(repo, "--capsule", cap["id"])][:2] == [
        cap["id"],
        in_cap["id"],
    ]
    assert len(log_json(repo, "--actor", "claude-code")) >= 1
    assert len(log_json(repo, "--limit", "2")) == 2
    assert log_json(repo, "--until", "2000-01-01") == []
    assert len(log_json(repo, "--since", "1h")) == len(events)

    shown = ok(repo, "show", note["id"][:6])
    assert "remember the milk" in shown and note["id"][:12] in shown
    status = ok_json(repo, "status")
    assert status["events_on_branch"] == len(events) and status["spool_pending"] == 0
    assert ok_json(repo, "verify")["ok"] is True
    assert ok_json(repo, "flush")["events"] == 0


def test_log_text_output_is_one_line_per_event(repo):
    ok(repo, "note", "first\nwith a second line")
    ok(repo, "note", "second")
    lines = ok(repo, "log").splitlines()
    assert len(lines) == 2 and "first with a second line" in lines[1]  # newest first


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["show", "zz"], 2, "is not an event id"),
        (["show", "abcdef12"], 3, "no event with id"),
        (["nosuchcommand"], 2, "usage error"),
        (["note"], 2, "the note has no text"),
        (["log", "--type", "nope"], 2, "unknown event type"),
        (["log", "--since", "yesterday-ish"], 2, "cannot read the time"),
        (["ratify", "0000"], 3, "no event"),
        (["import", "/nonexistent/bundle.json"], 2, "cannot read"),
        (["redact", "0000", "--reason", ""], 2, "needs a reason"),
        (["export", "--format", "parquet"], 2, "--output"),
    ],
)
def test_errors_are_one_line_with_exit_code(repo, args, code, needle):
    got, _out, err = cli(repo, *args)
    assert got == code, (got, err)
    assert needle in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_json_errors_are_machine_readable(repo):
    code, out, _err = cli(repo, "show", "abcdef12", "--json")
    assert code == 3
    assert json.loads(out)["error"]["code"] == 3


def test_not_a_repository(tmp_path):
    code, _, err = cli(tmp_path, "status")
    assert code == 3 and "not a git repository" in err and "hint" in err


def test_ratify_refuses_non_decisions(repo):
    note = ok_json(repo, "note", "x")
    code, _, err = cli(repo, "ratify", note["id"])
    assert code == 2 and "not a decision" in err


def test_ambiguous_prefix(repo):
    from gitmem.capture.sealer import Draft
    from gitmem.memory.api import Memory

    with Memory.open(repo) as mem:  # 1,000 ids: a shared 4-hex prefix is near-certain
        ids = [
            e.id for e in mem.append_many([Draft("note", {"text": f"n{i}"}) for i in range(1000)])
        ]
    seen: dict[str, str] = {}
    prefix = next(i[:4] for i in ids if seen.setdefault(i[:4], i) != i)
    code, _, err = cli(repo, "show", prefix)
    assert code == 2 and "matches" in err


def test_export_import_via_cli(repo, tmp_path):
    ok(repo, "note", "portable")
    bundle = tmp_path / "b.json"
    ok(repo, "export", "--output", str(bundle))
    other = init_repo(tmp_path / "other")
    dry = ok_json(other, "import", str(bundle), "--dry-run")
    assert dry["imported"] == 1 and dry["dry_run"] is True
    assert ok_json(other, "log") == {"events": []}
    assert ok_json(other, "import", str(bundle))["imported"] == 1
    code, out, _ = cli(other, "export")
    assert code == 0 and out.encode() == bundle.read_bytes()
    # stdin import, everything conflicts and is skipped
    code, out, err = cli(other, "import", "-", "--json", stdin=bundle.read_bytes())
    assert code == 0, err
    assert json.loads(out)["skipped"] == 1
    code, _, err = cli(other, "import", str(bundle), "--on-conflict", "error")
    assert code == 5 and "already exists" in err


def test_internal_errors_are_logged_not_dumped(repo):
    """A corrupt ref (pointing at a blob) is an error line, not a traceback."""
    blob = git(repo, "hash-object", "-w", "--stdin", input="junk").strip()
    git(repo, "update-ref", "refs/edda/branches/main", blob)
    code, _, err = cli(repo, "log")
    assert code == 1
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("events", [3, 3000])
def test_output_arrives_whole_from_a_buffered_process(tmp_path, events):
    """The entry point leaves through os._exit after flushing. With stdout
    block-buffered (a pipe, PYTHONUNBUFFERED unset, as for real users), a
    small output and one far larger than any buffer both arrive whole, byte
    for byte what the command returns in-process."""
    import contextlib
    import io
    import os

    from conftest import make_repo

    from gitmem.cli.main import run

    repo = make_repo(tmp_path / "repo", events=events)
    args = ["log", "--limit", "5000", "--json", "-C", str(repo)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    proc = subprocess.run(
        [sys.executable, "-m", "gitmem.cli.main", *args], capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stderr
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert run(args) == 0
    assert proc.stdout == buffer.getvalue()
    assert len(json.loads(proc.stdout)["events"]) == events


def test_global_options_go_before_the_command_too(repo: Path) -> None:
    """As with git: `git edda -C PATH --json status`."""
    from gitmem.cli.main import run

    code, _, err = run_cli(repo, "note", "placed before")
    assert code == 0, err
    for argv in (
        ["-C", str(repo), "status", "--json"],
        ["--json", "-C", str(repo), "status"],
        [f"--repo={repo}", "--json", "log"],
    ):
        assert run(argv) == 0, argv


def test_note_text_sources_and_messages(repo: Path, tmp_path: Path) -> None:
    long_text = "x" * 200_000  # longer than one argument may be on Linux (128 KiB)
    (tmp_path / "note.txt").write_text(long_text)
    for args, stdin, text in (
        (("-m", "from -m"), None, "from -m"),
        (("-F", str(tmp_path / "note.txt")), None, long_text),
        (("-",), b"from stdin\n", "from stdin\n"),
        (("-F", "-"), b"from stdin too", "from stdin too"),
    ):
        code, out, err = run_cli(repo, "note", *args, "--json", stdin=stdin)
        assert code == 0, (args, err)
        assert json.loads(out)["body"]["text"] == text
    for args, message in (
        ((), "the note has no text"),
        (("",), "the note is empty"),
        (("   ",), "the note is empty"),
        (("a", "b"), "unexpected argument: b"),
        (("a", "-m", "b"), "give the note once"),
    ):
        code, out, err = run_cli(repo, "note", *args)
        assert code == 2, (args, out, err)
        assert message in err and len(err.strip().splitlines()) == 1, err


def test_state_changing_commands_refuse_what_would_change_nothing_or_mislead(repo: Path) -> None:
    """Issue 11, item 4: a past expiry, an empty checkpoint, ratifying or
    pinning a superseded decision give errors; ratifying twice, pinning twice
    and unpinning what is not pinned write nothing and say so."""

    def ok(*args: str) -> Any:
        code, out, err = run_cli(repo, *args, "--json")
        assert code == 0, (args, err)
        return json.loads(out)

    def refused(*args: str, needle: str) -> None:
        code, out, err = run_cli(repo, *args)
        assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, (args, out, err)

    old = ok("decide", "db.pool", "10", "--agent", "claude")["id"]
    new = ok("decide", "db.pool", "20", "--agent", "claude")["id"]
    events = len(ok("log", "--all-branches")["events"])
    refused("ratify", old, needle="superseded by " + new[:12])
    refused("pin", old, needle="superseded by " + new[:12])
    refused("pin", new, "--expires", "2020-01-01", needle="in the past")
    refused("checkpoint", needle="empty checkpoint")
    refused("checkpoint", "--next", "  ", needle="empty checkpoint")
    assert len(ok("log", "--all-branches")["events"]) == events  # nothing was written

    assert ok("ratify", new)["id"] != new
    assert ok("ratify", new)["unchanged"].startswith("already ratified")
    assert ok("unpin", new)["unchanged"] == "not pinned"
    ok("pin", new)
    assert ok("pin", new)["unchanged"] == "already pinned"
    ok("unpin", new)
    assert len(ok("log", "--all-branches")["events"]) == events + 3  # ratify, pin, unpin
