"""Human output that reads well and one machine shape (issue 11, item 6).

Superseded decisions marked in search; ``show`` without Python reprs; one id
width; "1 event"; no ``--no-no-*``; help for every option; ``log`` newest
first like git; every ``--json`` an object; a pager and colour as git chooses them.
"""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import git, init_repo, make_repo, run_cli

from gitmem.memory.api import Memory

ANSI = "\x1b["


def ok(repo: Path, *args: str) -> str:
    code, out, err = run_cli(repo, *args)
    assert code == 0, (args, out, err)
    assert "Traceback" not in err
    return out


def ok_json(repo: Path, *args: str) -> Any:
    return json.loads(ok(repo, *args, "--json"))


@pytest.fixture
def one_of_each(tmp_path: Path) -> Path:
    """A repository with a superseded decision, a checkpoint, a capsule, a
    pin, a commit link and a redacted note."""
    repo = init_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        capsule = mem.open_capsule("session", "try the engines")
        mem.note("first note", tags=["a"], paths=["src/x.py"], capsule=capsule.id)
        old = mem.decide("db.engine", "sqlite", reason="simple")
        mem.decide("db.engine", "postgres", reason="scale")
        mem.checkpoint(
            next="benchmark",
            summary="line one\nline two",
            hypotheses=["the pool is too small"],
            rejected=[("mongo", "no schema"), ("redis", "volatile")],
            open_questions=["which driver, psycopg or asyncpg?"],
            paths=["src/db.py", "src/pool.py"],
        )
        mem.pin(old.id, reason="history")
        mem.link_commit("c0ffee" * 6 + "abcd", branch="main", message="a commit")
        secret = mem.note("a secret")
        mem.redact(secret.id, "leak")
    return repo


# 1. search marks superseded decisions ------------------------------------------------------
def test_search_marks_a_superseded_decision_as_ask_and_context_do(one_of_each: Path) -> None:
    with Memory.open(one_of_each) as mem:
        states = {s.event.field("value"): s.event for s in mem.decisions(include_superseded=True)}
    old, new = states["sqlite"], states["postgres"]
    for scope in ((), ("--all-branches",)):
        out = ok(one_of_each, "search", "db engine", *scope)
        rows = {line.split("]")[0].split("[")[1]: line for line in out.splitlines()}
        old_line, new_line = rows[old.id[:12]], rows[new.id[:12]]
        assert old_line.endswith(f"(superseded by [{new.id[:12]}])"), old_line
        assert "superseded" not in new_line
        hits = {h["id"]: h for h in ok_json(one_of_each, "search", "db engine", *scope)["hits"]}
        assert hits[old.id]["superseded_by"] == new.id and hits[new.id]["superseded_by"] is None
    # the same words as ask --all and the context pack
    assert f"superseded by [{new.id[:12]}]" in ok(one_of_each, "ask", "--all")
    assert f"(superseded by [{new.id[:12]}]" in ok(one_of_each, "context", "--budget", "4000")


# 2. show renders values, not Python reprs ---------------------------------------------------
def test_show_renders_lists_records_and_multiline_text(one_of_each: Path) -> None:
    with Memory.open(one_of_each) as mem:
        (checkpoint,) = _of(mem, "checkpoint")
    out = ok(one_of_each, "show", checkpoint.id[:8])
    assert "['" not in out and "{'" not in out and "': '" not in out, out
    lines = out.splitlines()
    assert lines[0] == f"event {checkpoint.id[:12]}"
    width = lines[1].index("checkpoint")  # the value column
    row = {line[:width].strip(" :"): line[width:] for line in lines[1:] if line[:width].strip()}
    assert row["paths"] == "src/db.py, src/pool.py"
    assert row["hypotheses"] == "the pool is too small"
    assert row["open questions"] == "which driver, psycopg or asyncpg?"
    rejected = lines.index(next(line for line in lines if line.startswith("rejected:")))
    assert lines[rejected][width:] == "mongo — no schema"
    assert lines[rejected + 1] == " " * width + "redis — volatile"
    summary = lines.index(next(line for line in lines if line.startswith("summary:")))
    assert lines[summary][width:] == "line one"
    assert lines[summary + 1] == " " * width + "line two"


def test_show_prints_a_commit_links_branch_once(one_of_each: Path) -> None:
    with Memory.open(one_of_each) as mem:
        (link,) = _of(mem, "commit_link")
    out = ok(one_of_each, "show", link.id)
    assert [line for line in out.splitlines() if line.startswith("branch")] == [
        "branch:        main"
    ]
    assert re.search(r"^sha: +c0ffee", out, re.M) and "memory commit:" in out
    # a different branch in the body keeps its own, distinct label
    with Memory.open(one_of_each) as mem:
        other = mem.link_commit("ab" * 20, branch="elsewhere")
    out = ok(one_of_each, "show", other.id)
    assert re.search(r"^branch \(body\): +elsewhere$", out, re.M), out
    assert len(re.findall(r"^branch", out, re.M)) == 2


def _of(mem: Memory, event_type: str) -> list[Any]:
    from gitmem.memory.query import EventFilter

    return mem.events(EventFilter(types=[event_type]))


# 3. one id width -------------------------------------------------------------------------
def test_human_output_shows_every_event_id_at_twelve_digits(
    one_of_each: Path, tmp_path: Path
) -> None:
    events = ok_json(one_of_each, "log", "--all-branches")["events"]
    ids = {e["id"] for e in events}
    some = sorted(ids)
    with Memory.open(one_of_each) as mem:
        capsule = _of(mem, "capsule_open")[0]
        checkpoint = _of(mem, "checkpoint")[0]
    bundle = tmp_path / "bundle.json"
    ok(one_of_each, "export", "--output", str(bundle))
    other = init_repo(tmp_path / "other")
    outputs = [
        ok(one_of_each, "log"),
        ok(one_of_each, "log", "--all-branches"),
        *(ok(one_of_each, "show", i) for i in some),
        ok(one_of_each, "search", "db engine note", "--explain"),
        ok(one_of_each, "pins"),
        ok(one_of_each, "capsule", "list"),
        ok(one_of_each, "context", "--budget", "4000", "db"),
        ok(one_of_each, "ask", "--all"),
        ok(one_of_each, "ask", "db.engine"),
        ok(one_of_each, "note", "more", "--capsule", capsule.id[:8]),
        ok(one_of_each, "pin", checkpoint.id),
        ok(one_of_each, "pins"),
        ok(one_of_each, "import", str(bundle), "--dry-run"),
        ok(other, "import", str(bundle)),
    ]
    seen = 0
    for out in outputs:
        for run in re.findall(r"[0-9a-f]{12,}", out):
            assert not any(i.startswith(run) for i in ids) or len(run) == 12, (run, out)
            seen += any(i.startswith(run) for i in ids)
    assert seen > len(some)  # the check looked at ids, many of them


# 4. pluralisation --------------------------------------------------------------------------
def test_counts_read_1_event_2_events(tmp_path: Path) -> None:
    from gitmem.memory.describe import plural

    assert [plural(n, "event") for n in (0, 1, 2)] == ["0 events", "1 event", "2 events"]
    assert plural(2, "child", "children") == "2 children"
    repo = make_repo(tmp_path / "repo", events=1)
    with Memory.open(repo) as mem:
        mem.open_capsule("session", "one")
    outputs = [
        ok(repo, "verify"),
        ok(repo, "index", "--rebuild", "--no-embed"),
        ok(repo, "index"),
        ok(repo, "capsule", "list"),
        ok(repo, "status"),
        ok(repo, "flush"),
        ok(repo, "branches"),
        ok(repo, "gc"),
    ]
    text = "\n".join(outputs)
    assert "(s)" not in text, text
    assert "checked 1 ref, 2 commits, 2 events, 2 payloads" in text
    assert re.search(r"\b1 (events|refs|commits|payloads|objects|files|vectors)\b", text) is None
    assert re.search(r"\b0 (event|ref|spool file|redacted object)\b", text) is None, text


# 5. negative flags ---------------------------------------------------------------------------
def _commands() -> Iterator[tuple[tuple[str, ...], Any]]:
    """Every command of the app as (words, its App)."""
    from gitmem.cli.commands import app

    def walk(parent: Any, words: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
        for name in parent:
            if name.startswith("-"):
                continue
            sub = parent[name]
            if sub.default_command is not None:
                yield (*words, name), sub
            yield from walk(sub, (*words, name))

    return walk(app, ())


def _help(words: tuple[str, ...]) -> str:
    from rich.console import Console

    from gitmem.cli.commands import app

    buffer = io.StringIO()
    app.help_print(list(words), console=Console(file=buffer, width=300))
    return buffer.getvalue()


def test_no_command_offers_double_negatives_or_empty_flags() -> None:
    seen = set()
    for words, _ in _commands():
        text = _help(words)
        assert "--no-no-" not in text and "--empty-" not in text, (words, text)
        seen.update(re.findall(r"--no-[a-z-]+", text))
    assert {"--no-redacted", "--no-embed", "--no-hooks", "--no-fetch", "--no-pager"} <= seen


def test_the_negative_flags_keep_their_spelling(tmp_path: Path, one_of_each: Path) -> None:
    everything = ok_json(one_of_each, "log")["events"]
    kept = ok_json(one_of_each, "log", "--no-redacted")["events"]
    assert len(kept) == len(everything) - 1 and all(not e["redacted"] for e in kept)
    code, _, err = run_cli(one_of_each, "log", "--no-no-redacted")
    assert code == 2 and "--no-no-redacted" in err
    assert ok_json(one_of_each, "index", "--rebuild", "--no-embed")["vectors"] == 0
    fresh = init_repo(tmp_path / "fresh")
    report = ok_json(fresh, "init", "--no-hooks", "--no-fetch")
    assert report["hooks"] is None and report["bootstrap"] is None
    assert not (fresh / ".git" / "hooks" / "post-commit").exists()


# 6. help text for every option -----------------------------------------------------------------
def test_every_option_of_every_command_has_help() -> None:
    from gitmem.cli.commands import app

    missing = []
    commands = list(_commands())
    assert len(commands) > 25
    for words, sub in commands:
        collection = sub.assemble_argument_collection(
            default_parameter=app.default_parameter, parse_docstring=True
        )
        for argument in collection:
            if argument.show and not (argument.parameter.help or "").strip():
                missing.append(f"{' '.join(words)} {argument.name}")
    assert missing == []


# 7. log order --------------------------------------------------------------------------------
def test_log_lists_newest_first_like_git_log(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", events=5)
    oldest_first = [e["id"] for e in ok_json(repo, "log", "--reverse")["events"]]
    with Memory.open(repo) as mem:
        assert oldest_first == [e.id for e in mem.events()]
    newest_first = oldest_first[::-1]
    assert [e["id"] for e in ok_json(repo, "log")["events"]] == newest_first
    text = [line[:12] for line in ok(repo, "log").splitlines()]
    assert text == [i[:12] for i in newest_first]
    # -n/--limit keeps the newest N; with --reverse, the newest N oldest first
    assert [e["id"] for e in ok_json(repo, "log", "-n", "2")["events"]] == newest_first[:2]
    assert [e["id"] for e in ok_json(repo, "log", "--limit", "2")["events"]] == newest_first[:2]
    assert [e["id"] for e in ok_json(repo, "log", "-n", "2", "--reverse")["events"]] == (
        newest_first[:2][::-1]
    )
    assert [line[:12] for line in ok(repo, "log", "-n", "2", "--reverse").splitlines()] == [
        i[:12] for i in newest_first[:2][::-1]
    ]


# 8. one JSON shape -----------------------------------------------------------------------------
def test_every_commands_json_is_an_object(one_of_each: Path, tmp_path: Path) -> None:
    remote = init_repo(tmp_path / "remote.git", bare=True)
    git(one_of_each, "remote", "add", "origin", str(remote))
    git(one_of_each, "branch", "feat")
    with Memory.open(one_of_each) as mem:
        mem.note("on feat", branch="feat")
        decision = mem.decisions()[0].event
        note = _of(mem, "note")[0]
    bundle = tmp_path / "bundle.json"
    capsule = ok_json(one_of_each, "capsule", "open", "workflow", "--intent", "x")["id"]
    (one_of_each / "tool.py").write_text("def helper():\n    return 1\n")  # for the code graph
    git(one_of_each, "add", "tool.py")
    git(one_of_each, "commit", "-qm", "code")
    runs: dict[tuple[str, ...], tuple[str, ...]] = {
        ("init",): ("init", "--no-hooks"),
        ("note",): ("note", "json"),
        ("decide",): ("decide", "k", "v"),
        ("ratify",): ("ratify", decision.id),
        ("checkpoint",): ("checkpoint", "--next", "n"),
        ("learn",): ("learn", "l"),
        ("pin",): ("pin", note.id),
        ("unpin",): ("unpin", note.id),
        ("pins",): ("pins",),
        ("capsule", "open"): ("capsule", "open", "session"),
        ("capsule", "close"): ("capsule", "close", capsule),
        ("capsule", "list"): ("capsule", "list"),
        ("redact",): ("redact", note.id, "--reason", "r"),
        ("gc",): ("gc",),
        ("verify",): ("verify",),
        ("export",): ("export",),
        ("import",): ("import", str(bundle)),
        ("flush",): ("flush",),
        ("log",): ("log",),
        ("show",): ("show", decision.id),
        ("status",): ("status",),
        ("index",): ("index", "--no-embed"),
        ("search",): ("search", "engine"),
        ("context",): ("context",),
        ("ask",): ("ask",),
        ("why",): ("why", "src"),
        ("push",): ("push",),
        ("pull",): ("pull",),
        ("sync",): ("sync",),
        ("merge",): ("merge", "feat"),
        ("branches",): ("branches",),
        ("help",): ("help", "search"),
        ("mcp",): ("mcp",),  # standard input is empty: the server stops at once
        ("install", "claude"): ("install", "claude"),
        ("uninstall", "claude"): ("uninstall", "claude"),
        ("doctor",): ("doctor",),  # exits 1 here (no git hooks): checked below
        ("hook",): ("hook", "claude"),  # speaks the agent's protocol: checked below
        ("daemon", "status"): ("daemon", "status"),
        ("daemon", "stop"): ("daemon", "stop"),
        ("daemon", "start"): ("daemon", "start"),  # starts a process: tests/test_daemon.py
        ("code", "index"): ("code", "index"),
        ("code", "find"): ("code", "find", "helper"),
        ("code", "callers"): ("code", "callers", "tool.py"),
        ("code", "callees"): ("code", "callees", "tool.py"),
        ("code", "impact"): ("code", "impact", "tool.py"),
        ("code", "neighbors"): ("code", "neighbors", "tool.py"),
        ("code", "map"): ("code", "map"),
    }
    ok(one_of_each, "export", "--output", str(bundle))
    with_json = {
        words
        for words, sub in _commands()
        if any(a.name == "--json" for a in sub.assemble_argument_collection())
    }
    assert with_json <= set(runs), with_json - set(runs)  # a new command: add it above
    for words in sorted(with_json - {("doctor",), ("hook",), ("daemon", "start")}):
        out = ok(one_of_each, *runs[words], "--json")
        assert isinstance(json.loads(out), dict), (words, out[:200])
    code, out, _ = run_cli(one_of_each, "show", "abcdef12", "--json")
    assert code == 3 and isinstance(json.loads(out), dict)
    code, out, _ = run_cli(one_of_each, *runs[("doctor",)], "--json")
    assert code == 1 and isinstance(json.loads(out), dict)
    # A hook with nothing on standard input injects nothing: the agent reads no output.
    assert run_cli(one_of_each, *runs[("hook",)], "--json") == (0, "", "")


# 9. pager and colour ---------------------------------------------------------------------------
def in_terminal(repo: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run ``git edda ARGS`` with stdout and stderr on a pseudo-terminal: (exit code, output)."""
    primary, secondary = pty.openpty()
    environ = {**os.environ, "TERM": "xterm", **(env or {})}
    proc = subprocess.Popen(
        [sys.executable, "-m", "gitmem.cli.main", *args, "-C", str(repo)],
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=secondary,
        env=environ,
    )
    os.close(secondary)
    chunks = []
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(primary)
    return proc.wait(timeout=60), b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture
def pager(tmp_path: Path) -> tuple[str, Path]:
    """A pager command that keeps what it is given, and the file it keeps it in."""
    kept = tmp_path / "paged.txt"
    return f"cat > '{kept}'", kept


def test_long_output_goes_through_the_pager_on_a_terminal(
    one_of_each: Path, pager: tuple[str, Path]
) -> None:
    command, kept = pager
    lines = ok(one_of_each, "log").splitlines()
    code, shown = in_terminal(one_of_each, "log", env={"GIT_PAGER": command, "NO_COLOR": "1"})
    assert code == 0 and lines[0] not in shown
    assert kept.read_text().splitlines() == lines
    kept.unlink()
    # core.pager when GIT_PAGER is not set; PAGER after it
    git(one_of_each, "config", "core.pager", command)
    code, shown = in_terminal(
        one_of_each, "show", lines[0][:12], env={"PAGER": "false", "NO_COLOR": "1"}
    )
    assert code == 0 and kept.read_text().startswith(f"event {lines[0][:12]}")
    kept.unlink()
    # --no-pager (-P), before or after the command, and --json: straight to the terminal
    for args in (("--no-pager", "log"), ("log", "-P"), ("log", "--json")):
        code, shown = in_terminal(one_of_each, *args, env={"GIT_PAGER": command})
        assert code == 0 and not kept.exists(), args
        assert lines[0][:12] in shown
    # an empty or cat pager is none; short reports are not paged
    for value in ("", "cat"):
        code, shown = in_terminal(one_of_each, "log", env={"GIT_PAGER": value, "NO_COLOR": "1"})
        assert code == 0 and lines[0] in shown
    code, shown = in_terminal(one_of_each, "status", env={"GIT_PAGER": command})
    assert code == 0 and "repository:" in shown and not kept.exists()


def test_no_pager_when_stdout_is_not_a_terminal(one_of_each: Path, pager: tuple[str, Path]) -> None:
    command, kept = pager
    env = dict(os.environ, GIT_PAGER=command)
    proc = subprocess.run(
        [sys.executable, "-m", "gitmem.cli.main", "log", "-C", str(one_of_each)],
        capture_output=True,
        env=env,
    )
    assert proc.returncode == 0 and proc.stdout and not kept.exists()


def test_the_pager_sees_less_defaults_as_git_sets_them(one_of_each: Path, tmp_path: Path) -> None:
    kept = tmp_path / "env.txt"
    command = f"cat > /dev/null; echo \"$LESS|$LV\" > '{kept}'"
    code, _ = in_terminal(one_of_each, "log", env={"GIT_PAGER": command})
    assert code == 0 and kept.read_text().strip() == "FRX|-c"
    env = {"GIT_PAGER": command, "LESS": "-S"}
    code, _ = in_terminal(one_of_each, "log", env=env)
    assert code == 0 and kept.read_text().strip() == "-S|-c"


def test_colour_follows_color_ui_and_no_color(one_of_each: Path) -> None:
    # piped (not a terminal): auto gives none, always gives colour
    assert ANSI not in ok(one_of_each, "log")
    git(one_of_each, "config", "color.ui", "always")
    coloured = ok(one_of_each, "log")
    assert f"{ANSI}33m" in coloured  # ids in yellow, as git colours commit ids
    assert f"{ANSI}1m# Memory context" in ok(one_of_each, "context")  # headings bold
    assert ANSI not in ok(one_of_each, "log", "--json")
    # color.edda wins over color.ui
    git(one_of_each, "config", "color.edda", "never")
    assert ANSI not in ok(one_of_each, "log")
    git(one_of_each, "config", "--unset", "color.edda")
    git(one_of_each, "config", "color.ui", "never")
    code, shown = in_terminal(one_of_each, "log", "-P")
    assert code == 0 and ANSI not in shown
    # auto on a terminal: colour, unless NO_COLOR or TERM=dumb
    git(one_of_each, "config", "--unset", "color.ui")
    code, shown = in_terminal(one_of_each, "log", "-P")
    assert code == 0 and f"{ANSI}33m" in shown
    for env in ({"NO_COLOR": "1"}, {"TERM": "dumb"}):
        code, shown = in_terminal(one_of_each, "log", "-P", env=env)
        assert code == 0 and ANSI not in shown, env
    # an explicit always still colours with NO_COLOR (https://no-color.org)
    git(one_of_each, "config", "color.edda", "always")
    code, shown = in_terminal(one_of_each, "log", "-P", env={"NO_COLOR": "1"})
    assert code == 0 and f"{ANSI}33m" in shown


def test_colour_does_not_change_the_text(one_of_each: Path) -> None:
    plain = ok(one_of_each, "show", ok(one_of_each, "log").split()[0])
    git(one_of_each, "config", "color.ui", "always")
    coloured = ok(one_of_each, "show", plain.split()[1])
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain
