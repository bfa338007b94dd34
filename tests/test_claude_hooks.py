"""``git edda hook claude|generic``: golden payloads of every Claude Code hook
event (the shapes of the hook reference and of the real CLI, BRIEF §4), the
events they record, the session capsule's life, the exact output JSON, and
hostile input (exit 0, nothing injected, nothing valid lost)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import cli, cli_process, git, scratch_repo

SESSION = "9b2f6a1e-5c1d-4c0e-9a57-2f1d3c4b5a69"


def payload(repo: Path, event: str, **fields: Any) -> dict[str, Any]:
    """A Claude Code hook payload: the common fields, then the event's own."""
    return {
        "session_id": SESSION,
        "transcript_path": f"/home/u/.claude/projects/x/{SESSION}.jsonl",
        "cwd": str(repo),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }


REAL = Path(__file__).resolve().parent / "agents" / "payloads"


def real(repo: Path, name: str, **fields: Any) -> dict[str, Any]:
    """A payload the real Claude Code CLI sent (``tests/agents/payloads/NAME.json``,
    written by the end-to-end tier), its placeholders filled in for ``repo``."""
    text = (REAL / f"{name}.json").read_text()
    for placeholder, value in (
        ("SESSION_ID", SESSION),
        ("/HOME", "/home/u"),
        ("-PROJECT", "-repo"),
        ("/PROJECT", str(repo)),
    ):
        text = text.replace(placeholder, json.dumps(value)[1:-1])
    return {**json.loads(text), **fields}


def hook(repo: Path, data: Any, agent: str = "claude") -> tuple[int, str, str]:
    raw = data if isinstance(data, bytes) else json.dumps(data).encode()
    return cli(repo, "hook", agent, stdin=raw)


def events(repo: Path, type: str | None = None) -> list[dict[str, Any]]:
    """Every event (oldest first) as {"type", "body", "scope", "capsule", "id"}."""
    code, out, err = cli(repo, "log", "--json", "--limit", "1000")
    assert code == 0, err
    found = [
        {
            "type": e["envelope"]["type"],
            "body": e["body"],
            "scope": e["envelope"]["scope"],
            "capsule": e["envelope"].get("capsule"),
            "id": e["id"],
        }
        for e in json.loads(out)["events"]
    ]
    found.reverse()  # log lists newest first
    return [e for e in found if type is None or e["type"] == type]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return scratch_repo(tmp_path / "repo")


def bash(repo: Path, command: str = "echo hi", stdout: str = "hi") -> dict[str, Any]:
    return payload(
        repo,
        "PostToolUse",
        tool_name="Bash",
        tool_input={"command": command, "description": "say hi"},
        tool_response={
            "stdout": stdout,
            "stderr": "",
            "interrupted": False,
            "isImage": False,
            "noOutputExpected": False,
        },
        tool_use_id="toolu_01",
        duration_ms=12,
    )


# capture ---------------------------------------------------------------------------
def test_bash_becomes_a_command_observation_in_the_session(repo):
    assert hook(repo, bash(repo)) == (0, "", "")
    [obs] = events(repo, "observation")
    assert obs["body"] == {"kind": "command", "tool": "Bash", "input": "echo hi", "result": "hi"}
    assert obs["scope"]["session"] == SESSION
    assert obs["scope"]["agent"] == "claude-code"


def test_long_command_output_keeps_head_and_tail_and_an_exit_status(repo):
    data = bash(repo, "make", "START" + "x" * 50_000 + "END")
    data["tool_response"]["exit_code"] = 2
    hook(repo, data)
    [obs] = events(repo, "observation")
    assert obs["body"]["exit_code"] == 2
    result = obs["body"]["result"]
    assert result.startswith("START") and result.endswith("END") and len(result) < 2_500
    assert "characters cut" in result


def test_edits_are_file_diffs_with_paths_relative_to_the_worktree(repo):
    hook(
        repo,
        payload(
            repo,
            "PostToolUse",
            tool_name="Edit",
            tool_input={
                "file_path": str(repo / "src/a.py"),
                "old_string": "x = 1",
                "new_string": "x = 2",
            },
            tool_response={"filePath": str(repo / "src/a.py")},
        ),
    )
    hook(
        repo,
        payload(
            repo,
            "PostToolUse",
            tool_name="Write",
            tool_input={"file_path": str(repo / "b.txt"), "content": "one\ntwo\n"},
            tool_response={},
        ),
    )
    hook(
        repo,
        payload(
            repo,
            "PostToolUse",
            tool_name="MultiEdit",
            tool_input={
                "file_path": str(repo / "c.py"),
                "edits": [
                    {"old_string": "a", "new_string": "b"},
                    {"old_string": "c", "new_string": "d"},
                ],
            },
            tool_response={},
        ),
    )
    edit, write, multi = (e["body"] for e in events(repo, "observation"))
    assert edit == {
        "kind": "file_diff",
        "tool": "Edit",
        "files": ["src/a.py"],
        "input": "-x = 1\n+x = 2",
    }
    assert write == {
        "kind": "file_diff",
        "tool": "Write",
        "files": ["b.txt"],
        "input": "wrote 2 lines",
    }
    assert multi["files"] == ["c.py"] and multi["input"] == "-a\n+b\n-c\n+d"


def test_reads_searches_and_mcp_tools_are_tool_calls(repo):
    hook(
        repo,
        payload(
            repo,
            "PostToolUse",
            tool_name="Read",
            tool_input={"file_path": str(repo / "README.md")},
            tool_response={"type": "text", "file": {"content": "secret plans"}},
        ),
    )
    hook(
        repo,
        payload(
            repo,
            "PostToolUse",
            tool_name="Grep",
            tool_input={"pattern": "TODO", "path": str(repo)},
            tool_response={"filenames": [str(repo / "x.py")], "numFiles": 1},
        ),
    )
    hook(
        repo,
        payload(
            repo,
            "PostToolUse",
            tool_name="mcp__gitmem__search",
            tool_input={"query": "storage"},
            tool_response=[{"type": "text", "text": "3 hits"}],
        ),
    )
    read, grep, mcp = (e["body"] for e in events(repo, "observation"))
    assert read == {"kind": "tool_call", "tool": "Read", "files": ["README.md"]}  # no content
    assert grep["kind"] == "tool_call" and grep["input"] == "TODO" and "x.py" in grep["files"]
    assert mcp["kind"] == "tool_call" and mcp["tool"] == "mcp__gitmem__search"
    assert json.loads(mcp["input"]) == {"query": "storage"} and "3 hits" in mcp["result"]


def test_failures_subagents_and_prompts(repo):
    hook(
        repo,
        payload(
            repo,
            "PostToolUseFailure",
            tool_name="Bash",
            tool_input={"command": "npm test"},
            tool_use_id="toolu_02",
            error="Command exited with non-zero status code 1",
            is_interrupt=False,
        ),
    )
    hook(repo, payload(repo, "SubagentStart", agent_id="a1", agent_type="Explore"))
    hook(
        repo,
        payload(
            repo,
            "SubagentStop",
            agent_id="a1",
            agent_type="Explore",
            stop_hook_active=False,
            last_assistant_message="found it in storage/",
            agent_transcript_path="/tmp/a1.jsonl",
        ),
    )
    code, out, _ = hook(repo, payload(repo, "UserPromptSubmit", prompt="make the tests pass"))
    assert (code, out) == (0, "")  # nothing in memory yet: nothing to inject
    error, start, stop = (e["body"] for e in events(repo, "observation"))
    assert error == {
        "kind": "error",
        "tool": "Bash",
        "input": "npm test",
        "result": "Command exited with non-zero status code 1",
    }
    assert start == {"kind": "message", "tool": "SubagentStart", "input": "Explore a1"}
    assert stop["tool"] == "SubagentStop" and stop["result"] == "found it in storage/"
    [prompt] = events(repo, "prompt")
    assert prompt["body"] == {"text": "make the tests pass"}
    assert prompt["scope"]["session"] == SESSION


def test_compactions_own_subagent_stop_is_not_recorded(repo):
    """Claude Code runs compaction's summary request as an agent of its own: a
    SubagentStop with ``agent_type`` ``""`` (and no SubagentStart) carrying the
    model's whole answer, the same text PostCompact hands over; the model's
    subagents (2.1.330's Agent tool, seen with ``general-purpose``) have a type."""
    compaction = real(repo, "SubagentStop")
    assert compaction["agent_type"] == "" and "<analysis>" in compaction["last_assistant_message"]
    assert hook(repo, compaction) == (0, "", "")
    assert events(repo, "observation") == []

    # The model's subagent, in the same payload shape: recorded with its answer.
    hook(repo, payload(repo, "SubagentStart", agent_id="a2", agent_type="general-purpose"))
    hook(repo, real(repo, "SubagentStop", agent_id="a2", agent_type="general-purpose"))
    start, stop = (e["body"] for e in events(repo, "observation"))
    assert start == {"kind": "message", "tool": "SubagentStart", "input": "general-purpose a2"}
    assert stop["input"] == "general-purpose a2"
    assert stop["result"] == compaction["last_assistant_message"]
    # Another agent Claude Code runs for itself: one line, without its text.
    hook(repo, real(repo, "SubagentStop", agent_id="a3", last_assistant_message="internal notes"))
    assert events(repo, "observation")[-1]["body"] == {
        "kind": "message",
        "tool": "SubagentStop",
        "input": "subagent a3",
    }


@pytest.mark.parametrize(
    ("message", "recorded"),
    [
        ("<summary>the gist</summary>", False),
        ("<analysis>thinking</analysis> and no summary", False),
        ("<summary>unclosed", True),
        ("</summary> the wrong way round <summary>", True),
        ("", True),
    ],
)
def test_an_own_agents_stop_is_compactions_by_its_answers_shape(repo, message, recorded):
    hook(repo, real(repo, "SubagentStop", last_assistant_message=message))
    found = [e["body"] for e in events(repo, "observation")]
    assert found == (
        [{"kind": "message", "tool": "SubagentStop", "input": "subagent AGENT_ID_1"}]
        if recorded
        else []
    )


def test_excluded_paths_are_named_without_their_content(repo):
    git(repo, "config", "--add", "edda.excludePath", "private/**")
    hook(
        repo,
        payload(
            repo,
            "PostToolUse",
            tool_name="Edit",
            tool_input={"file_path": str(repo / ".env"), "old_string": "A=1", "new_string": "A=2"},
            tool_response={},
        ),
    )
    hook(
        repo,
        payload(
            repo,
            "PostToolUse",
            tool_name="Write",
            tool_input={"file_path": str(repo / "private/notes.md"), "content": "x"},
            tool_response={},
        ),
    )
    hook(repo, bash(repo, "cat deploy/server.pem", "-----BEGIN KEY-----"))
    hook(repo, bash(repo, "ls web/node_modules/left-pad", "index.js"))
    env, private, pem, modules = (e["body"] for e in events(repo, "observation"))
    assert env == {"kind": "file_diff", "tool": "Edit", "files": [".env"]}
    assert private == {"kind": "file_diff", "tool": "Write", "files": ["private/notes.md"]}
    assert pem == {"kind": "command", "tool": "Bash", "input": "cat deploy/server.pem"}
    assert "result" not in modules


def test_the_capture_path_imports_no_heavy_module(repo):
    """A real process, as Claude Code runs it: no cyclopts, pyarrow, pygit2,
    msgspec or numpy is imported to record a tool call."""
    script = (
        "import sys; from gitmem.cli.main import run; code = run(['hook', 'claude']);"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('cyclopts', 'pyarrow', 'pygit2', 'msgspec', 'numpy', 'tantivy'));"
        "print(code, heavy)"
    )
    for data in (
        bash(repo),
        payload(repo, "PostToolUseFailure", tool_name="Bash", tool_input={}, error="boom"),
        payload(repo, "SubagentStart", agent_id="a", agent_type="Plan"),
        real(repo, "PreCompact"),
        real(repo, "PostCompact"),
        payload(repo, "PreToolUse", tool_name="Bash", tool_input={"command": "ls"}),
        payload(repo, "Stop", stop_hook_active=False, last_assistant_message="done"),
    ):
        proc = subprocess.run(
            [sys.executable, "-c", script],
            input=json.dumps(data).encode(),
            cwd=repo,
            capture_output=True,
        )
        assert proc.stdout.decode().split("\n")[-2] == "0 []", (data, proc.stdout, proc.stderr)
    # the tool call, the failure, the subagent, Stop's last message (no transcript)
    assert len(events(repo, "observation")) == 4


def test_a_real_git_edda_process_exits_0_and_records(repo):
    code, out, err = cli_process(repo, "hook", "claude", stdin=json.dumps(bash(repo)).encode())
    assert (code, out, err) == (0, "", "")
    assert [e["body"]["input"] for e in events(repo, "observation")] == ["echo hi"]


# sessions --------------------------------------------------------------------------
def test_a_session_is_one_capsule_from_start_to_end(repo, tmp_path, monkeypatch):
    env_file = tmp_path / "claude.env"
    monkeypatch.setenv("CLAUDE_ENV_FILE", str(env_file))
    code, out, _ = hook(repo, payload(repo, "SessionStart", source="startup", model="claude-x"))
    assert code == 0
    context = json.loads(out)
    assert list(context) == ["hookSpecificOutput"]
    assert list(context["hookSpecificOutput"]) == ["hookEventName", "additionalContext"]
    assert context["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "Open capsule" in context["hookSpecificOutput"]["additionalContext"]
    [opened] = events(repo, "capsule_open")
    assert opened["body"]["kind"] == "session" and opened["scope"]["session"] == SESSION
    assert env_file.read_text() == f"export GITMEM_SESSION={SESSION}\n"
    active = json.loads((repo / ".git/edda/active/main.json").read_text())
    assert active == {"agent": "claude-code", "capsule": opened["id"], "session": SESSION}

    hook(repo, payload(repo, "UserPromptSubmit", prompt="switch storage to parquet"))
    hook(repo, bash(repo, "pytest -q", "3 passed"))
    hook(
        repo,
        payload(
            repo,
            "PostToolUse",
            tool_name="Write",
            tool_input={"file_path": str(repo / "store.py"), "content": "x\n"},
            tool_response={},
        ),
    )
    hook(repo, payload(repo, "PostToolUseFailure", tool_name="Bash", tool_input={}, error="boom"))
    # What the agent records itself, with the GITMEM_SESSION its Bash got:
    monkeypatch.setenv("GITMEM_SESSION", SESSION)
    assert cli(repo, "decide", "storage.format", "parquet")[0] == 0
    assert cli(repo, "learn", "parquet needs pyarrow", "--kind", "learning")[0] == 0
    monkeypatch.delenv("GITMEM_SESSION")
    # A resume while the capsule is open continues it.
    hook(repo, payload(repo, "SessionStart", source="resume"))
    assert len(events(repo, "capsule_open")) == 1

    assert hook(repo, payload(repo, "SessionEnd", reason="prompt_input_exit")) == (0, "", "")
    inside = [e for e in events(repo) if e["capsule"] == opened["id"]]
    assert {e["type"] for e in inside} >= {"prompt", "observation", "decision", "learning"}
    [closed] = events(repo, "capsule_close")
    summary = closed["body"]["summary"]
    assert closed["body"]["capsule"] == opened["id"]
    for part in (
        "Session ended (prompt_input_exit): 1 prompt, 3 tool calls.",
        "Files touched: store.py",
        "Commands run: pytest -q",
        "Decisions: storage.format = parquet",
        "Learnings: learning: parquet needs pyarrow",
        "Errors: 1 (last: Bash: boom)",
    ):
        assert part in summary
    assert not (repo / ".git/edda/active/main.json").exists()

    # Resumed after it ended: a new capsule continuing the closed one.
    hook(repo, payload(repo, "SessionStart", source="resume"))
    first, second = events(repo, "capsule_open")
    assert second["body"]["parent"] == first["id"]
    hook(repo, bash(repo, "git status"))
    assert events(repo, "observation")[-1]["capsule"] == second["id"]


def test_the_closing_summary_counts_only_tool_calls(repo):
    """The assistant's messages and subagents are observations, not tool calls."""
    for name in ("SessionStart", "UserPromptSubmit"):
        hook(repo, real(repo, name))
    hook(repo, payload(repo, "SubagentStart", agent_id="a2", agent_type="general-purpose"))
    hook(repo, real(repo, "SubagentStop", agent_id="a2", agent_type="general-purpose"))
    hook(repo, real(repo, "Stop"))
    hook(repo, real(repo, "SessionEnd"))
    assert [e["body"]["tool"] for e in events(repo, "observation")] == [
        "SubagentStart",
        "SubagentStop",
        "assistant",
    ]
    # Resumed: one command, no prompt.
    hook(repo, real(repo, "SessionStart.resume"))
    hook(repo, real(repo, "PostToolUse.Bash"))
    hook(repo, real(repo, "SessionEnd"))
    first, second = (e["body"]["summary"] for e in events(repo, "capsule_close"))
    assert first.splitlines() == [
        "Session ended (other): 1 prompt, 0 tool calls.",
        "First prompt: exercise the tools",
    ]
    assert second.splitlines() == [
        "Session ended (other): 0 prompts, 1 tool call.",
        "Commands run: echo hi",
    ]


def test_compaction_leaves_a_checkpoint_that_comes_back_first(repo):
    """With the payloads of a real ``/compact`` (PreCompact, SessionStart
    ``compact``, PostCompact: Claude Code 2.1.330 runs them in that order)."""
    hook(repo, real(repo, "SessionStart"))
    hook(repo, payload(repo, "UserPromptSubmit", prompt="port the parser to rust"))
    hook(
        repo,
        payload(
            repo,
            "PostToolUse",
            tool_name="Edit",
            tool_input={"file_path": str(repo / "parser.rs"), "old_string": "a", "new_string": "b"},
            tool_response={},
        ),
    )
    hook(repo, bash(repo, "cargo build", "ok"))
    assert real(repo, "PreCompact")["custom_instructions"] is None  # the real shape
    assert hook(repo, real(repo, "PreCompact")) == (0, "", "")
    [checkpoint] = events(repo, "checkpoint")
    assert checkpoint["body"] == {
        "next": "Continue: port the parser to rust",
        "paths": ["parser.rs"],
        "summary": "Before compaction (manual).\nWorking on: port the parser to rust\n"
        "Files edited: parser.rs\nRecent commands: cargo build",
    }
    [opened] = events(repo, "capsule_open")
    assert checkpoint["capsule"] == opened["id"]
    _, out, _ = hook(repo, real(repo, "SessionStart.compact"))
    text = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert "Continue: port the parser to rust" in text
    assert text.index("Open capsule") < text.index("Continue: port the parser")
    assert text.index("Continue: port the parser") < text.index("Recent activity")
    assert len(events(repo, "capsule_open")) == 1  # compaction continues the capsule

    # PostCompact: Claude Code's summary, without the model's <analysis>.
    assert "<analysis>" in real(repo, "PostCompact")["compact_summary"]
    assert hook(repo, real(repo, "PostCompact")) == (0, "", "")
    _, summary = events(repo, "checkpoint")
    assert summary["body"] == {
        "summary": "1. Primary Request and Intent: SCRIPTED-COMPACT-SUMMARY of the work so far."
    }
    assert summary["capsule"] == opened["id"]


def test_a_session_resumed_after_it_ended_compacts_with_a_checkpoint_from_memory(repo):
    """``claude -p --resume ID /compact``: SessionEnd removed the journal, so
    PreCompact's checkpoint comes from what memory recorded in the session."""
    for name in (
        "SessionStart",
        "UserPromptSubmit",
        "PostToolUse.Bash",
        "PostToolUseFailure.Bash",
        "PostToolUse.Edit",
        "Stop",
        "SessionEnd",
    ):
        assert hook(repo, real(repo, name))[0] == 0
    assert not list((repo / ".git/edda/agents/sessions").glob("*.jsonl"))  # no journal
    assert hook(repo, real(repo, "SessionStart.resume"))[0] == 0
    ended, resumed = events(repo, "capsule_open")
    assert resumed["body"]["parent"] == ended["id"]

    assert hook(repo, real(repo, "PreCompact")) == (0, "", "")
    [checkpoint] = events(repo, "checkpoint")
    assert checkpoint["body"] == {
        "summary": "Before compaction (manual).\nWorking on: exercise the tools\n"
        "Files edited: notes.txt\nRecent commands: echo hi; exit 3\n"
        "Recent errors: Bash: Exit code 3",
        "next": "Continue: exercise the tools",
        "paths": ["notes.txt"],
    }
    assert checkpoint["capsule"] == resumed["id"]
    _, out, _ = hook(repo, real(repo, "SessionStart.compact"))
    pack = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    work = pack.index("## Current work")
    assert pack.index("Before compaction (manual).", work) < pack.index(
        "next: Continue: exercise the tools", work
    )


def test_a_resumed_session_that_recorded_no_work_checkpoints_how_it_ended(repo, monkeypatch):
    hook(repo, real(repo, "SessionStart"))
    monkeypatch.setenv("GITMEM_SESSION", SESSION)  # what the agent's Bash gets
    assert cli(repo, "decide", "storage.format", "parquet")[0] == 0
    monkeypatch.delenv("GITMEM_SESSION")
    hook(repo, real(repo, "SessionEnd"))
    hook(repo, real(repo, "SessionStart.resume"))

    hook(repo, real(repo, "PreCompact"))
    [checkpoint] = events(repo, "checkpoint")
    [closed] = events(repo, "capsule_close")
    assert "Decisions: storage.format = parquet" in closed["body"]["summary"]
    assert checkpoint["body"] == {
        "summary": "Before compaction (manual).\nBefore the resume: " + closed["body"]["summary"]
    }


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("<analysis>\nthinking\n</analysis>\n\n<summary>\nthe gist\n</summary>", "the gist"),
        ("<analysis>thinking</analysis>\nthe gist, untagged", "the gist, untagged"),
        ("a plain summary", "a plain summary"),
        ("<summary>unclosed", "<summary>unclosed"),
        ("<analysis>only thinking</analysis>", None),
    ],
)
def test_post_compact_keeps_the_summary_without_the_analysis(repo, given, kept):
    hook(repo, real(repo, "PostCompact", compact_summary=given))
    found = [e["body"]["summary"] for e in events(repo, "checkpoint")]
    assert found == ([kept] if kept else [])


DAY = 24 * 3600


def state_digest(session: str) -> str:
    """The name under which gitmem keeps a session's state files (spec: a
    digest of the session id, which the agent chooses)."""
    return hashlib.sha256(session.encode()).hexdigest()[:32]


def session_files(repo: Path) -> dict[str, list[str]]:
    """The per-session state files, by digest (the stamp and strays left out)."""
    found: dict[str, list[str]] = {}
    for path in sorted((repo / ".git/edda/agents/sessions").iterdir()):
        digest = path.name.lstrip(".").split(".")[0]
        if len(digest) == 32:
            found.setdefault(digest, []).append(path.name)
    return found


def age(paths: list[Path], days: float) -> None:
    when = time.time() - days * DAY
    for path in paths:
        os.utime(path, (when, when))


def test_session_start_sweeps_the_state_of_sessions_idle_past_the_ttl(repo):
    sessions = repo / ".git/edda/agents/sessions"
    # Two sessions that did everything a session leaves files for: state,
    # journal, the transcript cursor and its lock.
    transcript = repo.parent / "t.jsonl"
    said = {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "hello"}]}
    transcript.write_text(json.dumps({"type": "assistant", "uuid": "u1", "message": said}) + "\n")
    for sid in ("old-session", "recent-session"):
        hook(repo, payload(repo, "SessionStart", session_id=sid, source="startup"))
        hook(repo, {**bash(repo), "session_id": sid})
        hook(repo, payload(repo, "Stop", session_id=sid, transcript_path=str(transcript)))
    by_digest = session_files(repo)
    old, recent = state_digest("old-session"), state_digest("recent-session")
    assert set(by_digest) == {old, recent}
    for names in by_digest.values():
        assert {n.split(".", 1)[1] for n in names} == {"json", "jsonl", "cursor.json", "lock"}
    stray = sessions / f".{old}.json.123_abcd.tmp"  # a killed writer's leftover
    stray.write_text("{}")
    unrelated = sessions / "README"
    unrelated.write_text("not a session")
    age([sessions / n for n in by_digest[old]] + [stray], 31)
    # The lock is only locked, never written: an old lock beside a recent
    # cursor does not make a session idle.
    age([sessions / f"{recent}.lock"], 400)
    age([sessions / f"{recent}.json"], 29)
    stamp = sessions / ".swept"  # the first SessionStart swept (nothing), a day ago
    age([stamp], 1.01)

    hook(repo, payload(repo, "SessionStart", session_id="third-session", source="startup"))
    left = session_files(repo)
    assert old not in left and not stray.exists()
    assert set(left[recent]) == set(by_digest[recent]) and unrelated.exists()
    assert state_digest("third-session") in left
    assert time.time() - stamp.stat().st_mtime < 60

    # At most once a day: an idle session waits for the next day's sweep.
    age([sessions / n for n in left[recent]], 31)
    hook(repo, payload(repo, "SessionStart", session_id="fourth-session", source="startup"))
    assert recent in session_files(repo)
    age([stamp], 1.01)
    hook(repo, payload(repo, "SessionStart", session_id="fourth-session", source="resume"))
    assert recent not in session_files(repo)


def test_a_session_resumed_after_the_ttl_keeps_its_state(repo):
    hook(repo, payload(repo, "SessionStart", source="startup"))
    hook(repo, payload(repo, "UserPromptSubmit", prompt="port the parser"))
    mine = state_digest(SESSION)
    sessions = repo / ".git/edda/agents/sessions"
    age(list(sessions.iterdir()), 40)
    hook(repo, payload(repo, "SessionStart", source="resume"))
    assert {n.split(".", 1)[1] for n in session_files(repo)[mine]} == {"json", "jsonl"}
    [opened] = events(repo, "capsule_open")
    saved = json.loads((sessions / f"{mine}.json").read_text())
    assert saved["capsule"] == opened["id"]  # the open capsule goes on


@pytest.mark.parametrize("setting", ["0", "never", "off"])
def test_a_session_ttl_of_0_keeps_session_state_forever(repo, setting):
    git(repo, "config", "edda.claude.sessionTTL", setting)
    hook(repo, payload(repo, "SessionStart", session_id="old-session", source="startup"))
    age(list((repo / ".git/edda/agents/sessions").iterdir()), 3650)
    hook(repo, payload(repo, "SessionStart", session_id="new-session", source="startup"))
    assert state_digest("old-session") in session_files(repo)


def test_the_session_ttl_is_read_as_an_age_and_a_bad_one_is_logged(repo):
    git(repo, "config", "edda.claude.sessionTTL", "2d")
    hook(repo, payload(repo, "SessionStart", session_id="a", source="startup"))
    hook(repo, payload(repo, "SessionStart", session_id="b", source="startup"))
    sessions = repo / ".git/edda/agents/sessions"
    age([sessions / n for n in session_files(repo)[state_digest("a")]], 3)
    age([sessions / n for n in session_files(repo)[state_digest("b")]], 1)
    age([sessions / ".swept"], 2)
    hook(repo, payload(repo, "SessionStart", session_id="c", source="startup"))
    assert set(session_files(repo)) == {state_digest("b"), state_digest("c")}

    git(repo, "config", "edda.claude.sessionTTL", "soon")
    age([sessions / ".swept"], 2)
    code, out, _ = hook(repo, payload(repo, "SessionStart", session_id="d", source="startup"))
    assert (
        code == 0 and "Open capsule" in json.loads(out)["hookSpecificOutput"]["additionalContext"]
    )
    log = (repo / ".git/edda/log/hooks.log").read_text()
    assert "session state sweep failed" in log and "edda.claude.sessionTTL" in log


def test_the_session_start_pack_keeps_to_the_configured_budget(repo):
    for i in range(40):
        cli(repo, "note", f"note number {i} about the storage layer and its many files " * 3)
    git(repo, "config", "edda.claude.budget", "120")
    _, out, _ = hook(repo, payload(repo, "SessionStart", source="startup"))
    text = json.loads(out)["hookSpecificOutput"]["additionalContext"]
    assert len(text) <= 120 * 4 + 200 and "dropped to fit the budget" in text.lower()
    git(repo, "config", "edda.claude.budget", "4000")
    _, out, _ = hook(repo, payload(repo, "SessionStart", source="startup"))
    assert len(json.loads(out)["hookSpecificOutput"]["additionalContext"]) > len(text)


# injection -------------------------------------------------------------------------
def test_a_prompt_gets_relevant_memory_once(repo):
    cli(repo, "note", "the parquet writer must flush every 10000 rows")
    cli(repo, "note", "unrelated: the logo is blue")
    note = next(e for e in events(repo, "note") if "parquet" in e["body"]["text"])
    prompt = payload(repo, "UserPromptSubmit", prompt="why does the parquet writer flush?")
    _, out, _ = hook(repo, prompt)
    block = json.loads(out)
    assert list(block["hookSpecificOutput"]) == ["hookEventName", "additionalContext"]
    assert block["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    text = block["hookSpecificOutput"]["additionalContext"]
    assert text.startswith("Memory related to this prompt")
    assert f"note {note['id'][:12]}: the parquet writer must flush" in text
    assert "prompt " not in text.split("\n", 1)[1]  # not the prompt just recorded
    assert hook(repo, prompt) == (0, "", "")  # the same block: not repeated
    assert len(events(repo, "prompt")) == 2  # but both prompts recorded
    cli(repo, "note", "the parquet writer was rewritten in 2024")
    assert "rewritten" in hook(repo, prompt)[1]  # a different block: injected


def test_an_edit_under_a_decision_or_a_mistake_gets_one_warning(repo):
    cli(repo, "decide", "storage.layout", "one file per day", "--path", "src/store/")
    cli(
        repo,
        "learn",
        "closing the writer twice corrupts the footer",
        "--kind",
        "mistake",
        "--path",
        "src/store/writer.py",
    )
    edit = payload(
        repo,
        "PreToolUse",
        tool_name="Edit",
        tool_input={
            "file_path": str(repo / "src/store/writer.py"),
            "old_string": "a",
            "new_string": "b",
        },
        tool_use_id="toolu_03",
    )
    _, out, _ = hook(repo, edit)
    warning = json.loads(out)
    assert list(warning) == ["hookSpecificOutput"]
    specific = warning["hookSpecificOutput"]
    assert list(specific) == ["hookEventName", "additionalContext"]  # never a permissionDecision
    assert specific["hookEventName"] == "PreToolUse"
    text = specific["additionalContext"]
    assert text.startswith("gitmem: before you edit src/store/writer.py, memory says:")
    assert "decision in force" in text and "storage.layout" in text
    assert "recorded mistake" in text and "footer" in text
    assert hook(repo, edit) == (0, "", "")  # said once per session
    other = dict(edit, tool_input={"file_path": str(repo / "docs/x.md")})
    assert hook(repo, other) == (0, "", "")
    assert hook(repo, dict(edit, tool_name="Bash", tool_input={"command": "ls"})) == (0, "", "")
    assert events(repo, "observation") == []  # PreToolUse records nothing


# never block -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"   \n",
        b"{not json",
        b"\xff\xfe\x00binary",
        b"[1, 2, 3]",
        b'"a string"',
        b"null",
        b"[" * 100_000,
        b'{"hook_event_name": 5, "session_id": [], "tool_name": {}}',
        b'{"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_input": "rm -rf /",'
        b' "tool_response": 7, "session_id": 12, "cwd": 3}',
        b'{"hook_event_name": "SessionStart", "session_id": "x\\ny", "source": []}',
        b'{"hook_event_name": "UserPromptSubmit", "prompt": {"text": "no"}}',
        b'{"hook_event_name": "NoSuchEvent"}',
        b'{"hook_event_name": "SessionEnd", "session_id": "never-started"}',
    ],
)
def test_hostile_input_exits_0_and_injects_nothing(repo, raw):
    hook(repo, bash(repo, "before"))
    code, out, err = hook(repo, raw)
    assert code == 0 and err == ""
    if b"SessionStart" not in raw:
        assert out == ""
    assert events(repo, "observation")[0]["body"]["input"] == "before"  # nothing lost


def test_a_wrong_typed_field_costs_only_that_field(repo):
    data = bash(repo)
    data["tool_response"] = 7
    data["session_id"] = 12
    assert hook(repo, data) == (0, "", "")
    [obs] = events(repo, "observation")
    assert obs["body"] == {"kind": "command", "tool": "Bash", "input": "echo hi"}
    assert "session" not in obs["scope"]


def test_a_huge_payload_is_refused_and_logged(repo):
    data = bash(repo, "x", "y" * (9 * 1024 * 1024))
    assert hook(repo, data) == (0, "", "")
    assert events(repo, "observation") == []
    log = (repo / ".git/edda/log/hooks.log").read_text()
    assert "larger than" in log


def test_an_internal_error_is_one_scrubbed_log_line(repo):
    git(repo, "config", "edda.scrubPattern", "([unclosed")
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    assert hook(repo, bash(repo, f"echo {token}")) == (0, "", "")
    lines = (repo / ".git/edda/log/hooks.log").read_text().splitlines()
    assert len(lines) == 1 and "hook claude" in lines[0] and "scrubPattern" in lines[0]
    assert token not in lines[0]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(raw=st.binary(max_size=300))
def test_random_bytes_never_break_the_hook(repo, raw):
    code, out, err = hook(repo, raw)
    assert (code, out, err) == (0, "", "")


def test_the_command_line_routes_hooks_before_the_parser():
    from gitmem.cli.main import hook_route

    assert hook_route(["hook", "claude"]) == ("claude", None, [])
    assert hook_route(["-C", "/r", "hook", "generic"]) == ("generic", "/r", [])
    assert hook_route(["hook", "claude", "PostToolUse", "-C", "/r"]) == (
        "claude",
        "/r",
        ["PostToolUse"],
    )
    assert hook_route(["hook", "cursor"]) is None
    assert hook_route(["log", "hook", "claude"]) is None


# the generic protocol --------------------------------------------------------------
def test_the_generic_protocol_records_and_injects(repo):
    start = {"event": "session_start", "session": "g-1", "agent": "gemini-cli", "cwd": str(repo)}
    code, out, _ = hook(repo, start, "generic")
    assert code == 0 and list(json.loads(out)) == ["context"]
    assert "Open capsule" in json.loads(out)["context"]
    hook(
        repo,
        {"event": "prompt", "session": "g-1", "agent": "gemini-cli", "prompt": "fix the build"},
        "generic",
    )
    hook(
        repo,
        {
            "event": "tool",
            "session": "g-1",
            "agent": "gemini-cli",
            "kind": "command",
            "input": "make",
            "output": "ok",
            "exit_code": 0,
        },
        "generic",
    )
    hook(
        repo,
        {
            "event": "tool",
            "session": "g-1",
            "agent": "gemini-cli",
            "kind": "edit",
            "files": ["a.c", "b.c"],
        },
        "generic",
    )
    hook(
        repo,
        {
            "event": "tool_error",
            "session": "g-1",
            "agent": "gemini-cli",
            "tool": "shell",
            "error": "timeout",
        },
        "generic",
    )
    assert hook(repo, {"event": "nope"}, "generic") == (0, "", "")
    hook(
        repo,
        {"event": "session_end", "session": "g-1", "agent": "gemini-cli", "reason": "exit"},
        "generic",
    )
    command, edit, error = (e["body"] for e in events(repo, "observation"))
    assert command == {
        "kind": "command",
        "tool": "Bash",
        "input": "make",
        "result": "ok",
        "exit_code": 0,
    }
    assert edit["kind"] == "file_diff" and edit["files"] == ["a.c", "b.c"]
    assert error == {"kind": "error", "tool": "shell", "result": "timeout"}
    assert {e["scope"]["agent"] for e in events(repo)} == {"gemini-cli"}
    [closed] = events(repo, "capsule_close")
    assert "Files touched: a.c; b.c" in closed["body"]["summary"]
    assert (
        os.path.exists(repo / ".git/edda/log") is False
        or "nope" in (repo / ".git/edda/log/hooks.log").read_text()
    )
