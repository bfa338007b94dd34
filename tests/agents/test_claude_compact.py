"""A real Claude Code session compacts and gets its checkpoint back.

One ``claude -p`` session (stream-json input, one prompt after the other)
does some work, then the user types ``/compact``, then asks it to carry on.
Claude Code asks the model for a summary (the scripted model answers it),
runs PreCompact, SessionStart with source ``compact`` and PostCompact, in that
order (version 2.1.330), and the next request of the agent's loop carries the
compacted conversation plus what the SessionStart hook injected: gitmem's
pack, its open capsule and the PreCompact checkpoint first."""

from __future__ import annotations

import json

import pytest

from agents.claude_harness import Claude
from agents.helpers import logged_events, needs_git_edda, parser_project
from agents.scripted_model import call, say
from agents.test_claude_e2e import SESSION_START_PREFIX, system_texts

pytestmark = pytest.mark.claude


@needs_git_edda
def test_a_compacted_session_gets_its_checkpoint_and_capsule_back_first(claude: Claude) -> None:
    repo = claude.project
    parser_project(repo)
    parser = str(repo / "parser.py")
    script = [
        call("Bash", command="grep -n split parser.py"),
        call("Read", file_path=parser),
        call("Edit", file_path=parser, old_string="text.split()", new_string="text.split(',')"),
        say("parse now splits on commas"),
        # /compact: Claude Code's summary requests are answered by the model itself
        say("carrying on from the checkpoint"),
    ]

    run = claude.run(
        ["split on commas in parser.py", "/compact", "carry on with the parser"],
        script,
        allowed_tools=("Bash", "Read", "Edit"),
        timeout=180,
    )

    assert not run.unused
    assert (repo / "parser.py").read_text() == "def parse(text):\n    return text.split(',')\n"
    assert run.result["result"] == "carrying on from the checkpoint"
    # Claude Code compacted: it asked for a summary, and the turn after it
    # starts from that summary instead of the conversation.
    assert run.compactions, "Claude Code never asked the model for a summary"
    after = run.turns[-1]
    first = json.dumps(after.body["messages"][0]["content"])
    assert "SCRIPTED-COMPACT-SUMMARY" in first and "split on commas in parser.py" not in first

    # What the SessionStart(compact) hook injected reached that turn: the
    # startup pack went with the compacted conversation, this one is new.
    injected = [
        t[t.index(SESSION_START_PREFIX) :] for t in system_texts(after) if SESSION_START_PREFIX in t
    ]
    assert len(injected) == 1, system_texts(after)
    pack = injected[0]
    checkpoint = pack.index("Before compaction (manual).")
    for part in (
        "Working on: split on commas in parser.py",
        "Files edited: parser.py",
        "Recent commands: grep -n split parser.py",
        "next: Continue: split on commas in parser.py",
    ):
        assert pack.index(part) > checkpoint, part
    assert pack.index("## Open capsule") < checkpoint < pack.index("## Recent activity")
    assert "## Current work" in pack[:checkpoint]

    # The store: one capsule for the whole session, across compaction, with
    # PreCompact's checkpoint and PostCompact's (Claude Code's summary) in it.
    session = run.result["session_id"]
    mine = [e for e in logged_events(repo) if e["envelope"]["scope"].get("session") == session]
    kinds = [e["envelope"]["type"] for e in mine]
    assert kinds.count("capsule_open") == 1 and kinds[-1] == "capsule_close", kinds
    capsule = mine[0]["envelope"]["id"]
    assert all(e["envelope"].get("capsule") == capsule for e in mine[1:]), kinds
    before, summary = (e for e in mine if e["envelope"]["type"] == "checkpoint")
    assert before["body"] == {
        "summary": "Before compaction (manual).\nWorking on: split on commas in parser.py\n"
        "Files edited: parser.py\nRecent commands: grep -n split parser.py",
        "next": "Continue: split on commas in parser.py",
        "paths": ["parser.py"],
    }
    # Only the <summary> of the model's answer: its <analysis> is a scratchpad.
    assert summary["body"] == {
        "summary": "1. Primary Request and Intent: SCRIPTED-COMPACT-SUMMARY of the work so far."
    }
    # Compaction's own SubagentStop carried the same answer: not recorded again.
    texts = [json.dumps(e["body"]) for e in mine if e["envelope"]["type"] == "observation"]
    assert not [t for t in texts if "SCRIPTED-COMPACT-SUMMARY" in t], texts
    prompts = [e["body"]["text"] for e in mine if e["envelope"]["type"] == "prompt"]
    assert prompts == ["split on commas in parser.py", "carry on with the parser"]
    assert kinds.index("checkpoint") > kinds.index("prompt")
    last_prompt = len(kinds) - 1 - kinds[::-1].index("prompt")
    assert last_prompt > len(kinds) - 1 - kinds[::-1].index("checkpoint")
