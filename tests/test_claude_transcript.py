"""Transcript ingest (Stop, PreCompact, SessionEnd): the assistant's own text
from Claude Code's JSONL transcript, read as a delta from a per-session byte
cursor, each message recorded once whatever happens to the file (written in
steps, cut mid-line, shrunk, rewritten, replaced, full of junk)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from gitmem.agents import transcript
from tests.conftest import scratch_repo
from tests.test_claude_hooks import SESSION, events, hook, payload


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return scratch_repo(tmp_path / "repo")


@pytest.fixture
def log(tmp_path: Path) -> Path:
    """Where the transcript lives (outside the repository, like ~/.claude/projects)."""
    return tmp_path / "home" / f"{SESSION}.jsonl"


def said(uuid: str, text: str, message_id: str | None = None, **extra: Any) -> bytes:
    """One assistant line of the transcript, with one text block."""
    content = [{"type": "text", "text": text}]
    return line(uuid, content, message_id or f"msg_{uuid}", **extra)


def line(uuid: str, content: Any, message_id: str = "msg_x", **extra: Any) -> bytes:
    item = {
        "type": "assistant",
        "uuid": uuid,
        "sessionId": SESSION,
        "isSidechain": False,
        "message": {"id": message_id, "role": "assistant", "content": content},
        **extra,
    }
    return (json.dumps(item) + "\n").encode()


def user(uuid: str, text: str) -> bytes:
    item = {"type": "user", "uuid": uuid, "message": {"role": "user", "content": text}}
    return (json.dumps(item) + "\n").encode()


def append(log: Path, *lines: bytes) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as handle:
        handle.write(b"".join(lines))


def stop(repo: Path, log: Path, final: str | None = None, event: str = "Stop") -> None:
    fields: dict[str, Any] = {"transcript_path": str(log)}
    if event == "Stop":
        fields.update(stop_hook_active=False)
        if final is not None:
            fields["last_assistant_message"] = final
    assert hook(repo, payload(repo, event, **fields)) == (0, "", "")


def messages(repo: Path) -> list[str]:
    """The recorded assistant messages, oldest first."""
    return [
        e["body"]["result"]
        for e in events(repo, "observation")
        if e["body"].get("kind") == "message" and e["body"].get("tool") == "assistant"
    ]


def test_two_stops_record_only_the_new_text(repo, log):
    append(
        log,
        user("u1", "fix the bug"),
        line("a1", [{"type": "thinking", "thinking": "hmm", "signature": "s"}], "m1"),
        line("a2", [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}], "m1"),
        user("u2", "tool result"),
        said("a3", "I fixed the bug in storage.py."),
    )
    stop(repo, log, "I fixed the bug in storage.py.")
    assert messages(repo) == ["I fixed the bug in storage.py."]

    append(log, user("u3", "now the tests"), said("a4", "Tests pass."))
    stop(repo, log, "Tests pass.")
    stop(repo, log, "Tests pass.")  # Stop again, nothing new
    assert messages(repo) == ["I fixed the bug in storage.py.", "Tests pass."]
    [first, _] = [e for e in events(repo, "observation")]
    assert first["scope"]["session"] == SESSION and first["scope"]["agent"] == "claude-code"


def test_stops_final_message_is_recorded_once_when_the_transcript_lags(repo, log):
    append(log, said("a1", "working on it"))
    stop(repo, log, "All done:\nthe   parser is fixed.")  # not in the transcript yet
    assert messages(repo) == ["working on it", "All done:\nthe   parser is fixed."]
    # The line arrives, in two blocks of one message, spaced differently.
    append(log, said("a2", "All done:", "m9"), said("a3", "the parser is fixed.", "m9"))
    stop(repo, log, event="SessionEnd")
    assert messages(repo) == ["working on it", "All done:\nthe   parser is fixed."]
    # The same words in a later turn are a new message.
    append(log, said("a4", "All done:\nthe   parser is fixed."))
    stop(repo, log, "All done:\nthe   parser is fixed.")
    assert len(messages(repo)) == 3


def test_a_partial_last_line_waits_for_the_next_call(repo, log):
    whole = said("a2", "second")
    append(log, said("a1", "first"), whole[:20])
    stop(repo, log)
    assert messages(repo) == ["first"]
    append(log, whole[20:])
    stop(repo, log)
    assert messages(repo) == ["first", "second"]


def test_a_file_that_shrank_is_read_again_without_duplicates(repo, log):
    append(log, said("a1", "one " * 50), said("a2", "two " * 50))
    stop(repo, log)
    log.write_bytes(said("a1", "one " * 50) + said("a3", "three"))  # same inode, shorter
    stop(repo, log)
    assert [m.split()[0] for m in messages(repo)] == ["one", "two", "three"]


def test_a_file_rewritten_in_place_and_longer_is_read_again(repo, log):
    append(log, said("a1", "one"), said("a2", "two"))
    stop(repo, log)
    ino = log.stat().st_ino
    with log.open("r+b") as handle:  # rewritten, not appended: the guard sees it
        # a longer first line: the old offset now falls inside the last one
        handle.write(said("a3", "three") + said("a1", "one") + said("a2", "two"))
    assert log.stat().st_ino == ino
    stop(repo, log)
    assert messages(repo) == ["one", "two", "three"]
    append(log, said("a4", "four"))
    stop(repo, log)
    assert messages(repo) == ["one", "two", "three", "four"]


def test_a_replaced_file_is_read_from_its_start_without_duplicates(repo, log):
    append(log, said("a1", "one"), said("a2", "two"))
    stop(repo, log)
    fresh = log.with_name("new.jsonl")
    fresh.write_bytes(said("a1", "one") + said("a2", "two") + said("a3", "three"))
    ino = log.stat().st_ino
    os.replace(fresh, log)
    assert log.stat().st_ino != ino
    stop(repo, log)
    assert messages(repo) == ["one", "two", "three"]


def test_hostile_lines_are_skipped_and_the_rest_recorded(repo, log):
    append(
        log,
        b"not json\n",
        b"\xff\xfe binary \x00\n",
        b"[1, 2, 3]\n",
        b'{"type": "assistant", "message": 5}\n',
        b'{"type": "assistant", "message": {"role": "assistant", "content": 7}}\n',
        line("h1", [{"type": "text", "text": 42}, "block", None, {"type": "text"}]),
        line("h2", [{"type": "tool_result", "content": "secret output"}]),
        said("h3", "a subagent's words", isSidechain=True),
        b'{"type": "user", "message": {"role": "assistant", "content": "not mine"}}\n',
        said("h4", "x" * (transcript.MAX_LINE_BYTES + 10)),
        b"[" * 100_000 + b"\n",
        b"\n\n",
        said("ok", "the real one"),
        b'{"type": "assistant", "uuid": 5, "message": {"role": "assistant", "content": "no uuid"}}\n',
    )
    stop(repo, log)
    assert messages(repo) == ["the real one", "no uuid"]
    stop(repo, log)
    assert messages(repo) == ["the real one", "no uuid"]


def test_a_line_longer_than_a_read_is_skipped_across_calls(repo, log, monkeypatch):
    monkeypatch.setattr(transcript, "MAX_READ_BYTES", 400)
    append(log, said("a1", "first"), said("big", "y" * 1000), said("a2", "after"))
    for _ in range(5):
        stop(repo, log)
    assert messages(repo) == ["first", "after"]


def test_long_messages_are_truncated_and_secrets_scrubbed(repo, log):
    secret = "ghp_" + "A1b2C3d4E5" * 4
    append(log, said("a1", f"the token is {secret} " + "z" * 20_000))
    stop(repo, log)
    [text] = messages(repo)
    assert secret not in text and "characters cut" in text and len(text) < 10_000


def test_messages_join_the_sessions_capsule_and_session_end_reads_the_rest(repo, log):
    hook(repo, payload(repo, "SessionStart", source="startup"))
    [opened] = events(repo, "capsule_open")
    append(log, said("a1", "started"))
    stop(repo, log, "started")
    append(log, said("a2", "the last words"))
    stop(repo, log, event="PreCompact")
    append(log, said("a3", "after compaction"))
    stop(repo, log, event="SessionEnd")
    found = [e for e in events(repo, "observation") if e["body"].get("tool") == "assistant"]
    assert [e["body"]["result"] for e in found] == ["started", "the last words", "after compaction"]
    assert {e["capsule"] for e in found} == {opened["id"]}
    [closed] = events(repo, "capsule_close")
    assert closed["body"]["capsule"] == opened["id"]


def test_no_transcript_or_an_unusable_path_records_only_the_final_message(repo, tmp_path):
    stop(repo, tmp_path / "missing.jsonl", "bye")
    stop(repo, tmp_path, "bye")  # a directory
    os.mkfifo(tmp_path / "fifo")
    stop(repo, tmp_path / "fifo", "bye")  # never opened for writing: must not hang
    hook(repo, payload(repo, "Stop", transcript_path=["x"], last_assistant_message="bye"))
    hook(repo, payload(repo, "Stop", transcript_path="relative.jsonl"))
    assert messages(repo) == ["bye"]
