"""The real Claude Code CLI, offline, against a scripted model: the harness
works, project hooks run with their real payloads, and what a SessionStart
hook adds reaches the model.

The golden payloads under ``payloads/`` are written by the last test from a
real session (paths and ids replaced by placeholders). After the CLI's pinned
version changes (``install_claude.sh``), regenerate them with
``GITMEM_UPDATE_PAYLOADS=1 pytest tests/agents -k payloads`` and review the diff.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from agents.claude_harness import _ENV, Claude, recorder
from agents.scripted_model import Request, call, say

pytestmark = pytest.mark.claude

PAYLOADS = Path(__file__).resolve().parent / "payloads"
SESSION_START_PREFIX = "SessionStart hook additional context:"

# Every event the tier registers a hook for. A session in ``-p`` mode with
# tools fires the first group, a ``/compact`` also SessionStart (resume and
# compact), PreCompact, SubagentStop (compaction's own) and PostCompact; the
# others need what the scripted sessions do not do yet (subagents, permission
# prompts, notifications).
EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "PostToolBatch",
    "Stop",
    "SessionEnd",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "Notification",
)


def system_texts(request: Request) -> list[str]:
    """The texts of the system messages a request carries: the top-level
    ``system`` blocks and the ``system`` turns among its messages, where Claude
    Code puts the environment and what hooks add."""
    body = request.body
    texts: list[str] = []
    for item in [body.get("system", [])] + [
        m["content"] for m in body["messages"] if m["role"] == "system"
    ]:
        if isinstance(item, str):
            texts.append(item)
        else:
            texts += [block.get("text", "") for block in item]
    return texts


def tool_results(request: Request) -> dict[str, dict[str, Any]]:
    """The tool results in a request's user turns, by tool-use id."""
    return {
        block["tool_use_id"]: block
        for message in request.body["messages"]
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }


def test_the_cli_runs_a_scripted_tool_call_and_the_model_gets_its_result(claude: Claude) -> None:
    run = claude.run("say hi through the shell", [call("Bash", command="echo hi"), say("done: hi")])

    assert run.result["result"] == "done: hi" and run.result["num_turns"] == 2
    assert not run.unused
    first, second = run.turns
    assert first.body["messages"][0]["role"] == "user"
    assert "say hi through the shell" in json.dumps(first.body["messages"][0]["content"])
    assert "Bash" in {tool["name"] for tool in first.body["tools"]}
    assert tool_results(first) == {}
    (result,) = tool_results(second).values()
    assert result["tool_use_id"] == "toolu_scripted_01"
    assert result["content"] == "hi" and result["is_error"] is False
    # No hook is installed: nothing in the prompt claims to come from one,
    # which is what makes the next test's assertion mean something.
    assert not any(SESSION_START_PREFIX in t for t in system_texts(first))


def test_a_session_start_hooks_context_reaches_the_model(claude: Claude) -> None:
    output = {
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": "MEMORY-CANARY",
        }
    }
    hook = [sys.executable, "-I", "-S", "-c", f"print({json.dumps(json.dumps(output))})"]
    claude.hooks(["SessionStart"], hook)

    run = claude.run("hello", [say("noted")])

    (first,) = run.turns
    injected = [t for t in system_texts(first) if t.startswith(SESSION_START_PREFIX)]
    assert len(injected) == 1, system_texts(first)
    assert (
        injected[0].removeprefix(SESSION_START_PREFIX).split("\n\n")[0].strip() == "MEMORY-CANARY"
    )


TIMINGS = ("duration_ms", "seconds_since_last_response")


def scrub(value: Any, replacements: list[tuple[str, str]]) -> Any:
    """Paths and ids replaced by stable placeholders, timings by 0."""
    if isinstance(value, dict):
        return {k: 0 if k in TIMINGS else scrub(v, replacements) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, replacements) for v in value]
    if isinstance(value, str):
        for old, new in replacements:
            value = value.replace(old, new)
    return value


def payload_name(payload: dict[str, Any]) -> str:
    """``PostToolUse.Bash``: the event, and the tool for tool events;
    ``SessionStart.compact``: the source, for a SessionStart not at startup."""
    tool = payload.get("tool_name")
    source = payload.get("source") if payload["hook_event_name"] == "SessionStart" else None
    detail = tool or (source if source != "startup" else None)
    return payload["hook_event_name"] + (f".{detail}" if detail else "")


def first_seen(values: Any) -> list[str]:
    """Distinct values in the order they first appear."""
    return list(dict.fromkeys(values))


def test_hooks_receive_the_real_payloads_which_match_the_golden_files(claude: Claude) -> None:
    log = claude.project.parent / "payloads.jsonl"
    claude.hooks(EVENTS, recorder(log))
    target = claude.project / "notes.txt"
    script = [
        call("Bash", command="echo hi"),
        call("Bash", command="exit 3"),
        call("Write", file_path=str(target), content="one\n"),
        call("Edit", file_path=str(target), old_string="one", new_string="two"),
        call("Read", file_path=str(target)),
        say("all done"),
    ]

    run = claude.run("exercise the tools", script, allowed_tools=("Bash", "Write", "Edit", "Read"))

    assert not run.unused and target.read_text() == "two\n"
    payloads = [json.loads(line) for line in log.read_text().splitlines()]
    events = [p["hook_event_name"] for p in payloads]
    assert events[:2] == ["SessionStart", "UserPromptSubmit"] and events[-2:] == [
        "Stop",
        "SessionEnd",
    ]
    assert [payload_name(p) for p in payloads if p["hook_event_name"] == "PostToolUse"] == [
        "PostToolUse.Bash",
        "PostToolUse.Write",
        "PostToolUse.Edit",
        "PostToolUse.Read",
    ]
    session = payloads[0]["session_id"]
    assert {p["session_id"] for p in payloads} == {session} == {run.result["session_id"]}
    transcript = Path(payloads[0]["transcript_path"])
    assert transcript.is_file() and transcript.name == f"{session}.jsonl"
    by_name: dict[str, dict[str, Any]] = {}
    for payload in payloads:
        by_name.setdefault(payload_name(payload), payload)
    post_bash = by_name["PostToolUse.Bash"]
    assert post_bash["tool_response"]["stdout"] == "hi"
    assert post_bash["tool_use_id"] == "toolu_scripted_01"
    assert by_name["PostToolUseFailure.Bash"]["tool_input"] == {"command": "exit 3"}
    assert by_name["Stop"]["last_assistant_message"] == "all done"

    # The session resumed for a /compact: compaction's events, in their order.
    compact = claude.run("/compact", [], args=["--resume", session])
    assert compact.compactions and not compact.turns  # only the summary was asked for
    assert compact.result["session_id"] == session
    later = [json.loads(line) for line in log.read_text().splitlines()][len(payloads) :]
    assert [payload_name(p) for p in later if p["hook_event_name"] != "SubagentStop"] == [
        "SessionStart.resume",
        "PreCompact",
        "SessionStart.compact",
        "PostCompact",
        "SessionEnd",
    ]
    payloads += later
    for payload in later:
        by_name.setdefault(payload_name(payload), payload)
    assert by_name["PreCompact"]["trigger"] == by_name["PostCompact"]["trigger"] == "manual"
    assert "SCRIPTED-COMPACT-SUMMARY" in by_name["PostCompact"]["compact_summary"]
    assert {p["session_id"] for p in payloads} == {session}

    # Ids and the temporary paths become placeholders (numbered in the order
    # they first appear); the escaped project directory (transcripts live
    # under ~/.claude/projects/<escaped cwd>/).
    project = str(claude.project.resolve())
    prompt_ids = first_seen(p["prompt_id"] for p in payloads if "prompt_id" in p)
    agent_ids = first_seen(p["agent_id"] for p in payloads if "agent_id" in p)
    replacements = [
        (str(claude.home.resolve()), "/HOME"),
        (project, "/PROJECT"),
        (re.sub(r"[^A-Za-z0-9]", "-", project), "-PROJECT"),
        (session, "SESSION_ID"),
        *((pid, f"PROMPT_ID_{n}") for n, pid in enumerate(prompt_ids, 1)),
        *((aid, f"AGENT_ID_{n}") for n, aid in enumerate(agent_ids, 1)),
    ]
    observed = {name: scrub(p, replacements) for name, p in by_name.items()}
    assert "-PROJECT/SESSION_ID.jsonl" in observed["SessionStart"]["transcript_path"]
    if _ENV.get("GITMEM_UPDATE_PAYLOADS"):
        PAYLOADS.mkdir(exist_ok=True)
        for old in PAYLOADS.glob("*.json"):
            old.unlink()
        for name, payload in observed.items():
            (PAYLOADS / f"{name}.json").write_text(json.dumps(payload, indent=2) + "\n")
    golden = {p.stem: json.loads(p.read_text()) for p in sorted(PAYLOADS.glob("*.json"))}
    assert golden, f"no golden payloads in {PAYLOADS}: run with GITMEM_UPDATE_PAYLOADS=1"
    assert observed == golden
