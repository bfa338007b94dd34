"""Capture rules configured through git config reach both write paths."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import git, make_repo, payload_files

from gitmem.capture.main import capture
from gitmem.errors import UsageError
from gitmem.memory.api import Memory
from gitmem.storage import spool

FAKE_GH = "ghp_" + "A1b2C3d4E5" * 3 + "f6G7h8"


def spooled_bytes(repo) -> bytes:
    return b"".join(open(p, "rb").read() for p in spool.pending(repo / ".git" / "edda"))


@pytest.mark.parametrize("path", ["spool", "in-process"])
def test_builtin_and_configured_patterns_and_allowlist(tmp_path, path):
    repo = make_repo(tmp_path / "r")
    git(repo, "config", "--add", "edda.scrubPattern", r"ticket-(?P<secret>[0-9]{6})")
    git(repo, "config", "--add", "edda.scrubPattern", r"INTERNAL-[A-Z]{4}")
    git(repo, "config", "--add", "edda.scrubAllow", r"INTERNAL-TEST")
    text = f"token {FAKE_GH} ticket-123456 INTERNAL-ABCD INTERNAL-TEST"
    if path == "spool":
        [event_id] = capture(json.dumps({"type": "note", "body": {"text": text}}), str(repo))
        raw = spooled_bytes(repo)
        assert FAKE_GH.encode() not in raw and b"123456" not in raw and b"INTERNAL-ABCD" not in raw
    with Memory.open(repo) as mem:
        event = mem.get(event_id) if path == "spool" else mem.note(text)
    stored = event.body["text"]
    assert FAKE_GH not in stored and "[REDACTED:github-token]" in stored
    assert "ticket-[REDACTED:custom]" in stored  # only the `secret` group is masked
    assert "INTERNAL-ABCD" not in stored and "INTERNAL-TEST" in stored
    # the bytes never reached git either
    objects = subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"], cwd=repo, capture_output=True
    ).stdout
    assert FAKE_GH.encode() not in objects and b"123456" not in objects


def test_invalid_configured_pattern_is_a_clear_error_and_nothing_is_written(tmp_path):
    repo = make_repo(tmp_path / "r")
    git(repo, "config", "edda.scrubPattern", "(unclosed")
    proc = subprocess.run(
        [sys.executable, "-m", "gitmem.capture.main"],
        cwd=repo,
        input=b'{"type": "note", "body": {"text": "x"}}',
        capture_output=True,
    )
    assert proc.returncode != 0
    assert b"edda.scrubPattern" in proc.stderr and b"Traceback" not in proc.stderr
    assert spool.pending(repo / ".git" / "edda") == []


def test_oversized_fields_are_truncated_with_a_marker_and_large_blobs_stored_once(tmp_path):
    repo = make_repo(tmp_path / "r")
    git(repo, "config", "edda.maxFieldBytes", "16k")
    big = "line of tool output\n" * 5000  # 100 KB
    with Memory.open(repo) as mem:
        a = mem.append("observation", {"kind": "tool_call", "tool": "Read", "result": big})
        b = mem.append("observation", {"kind": "tool_call", "tool": "Grep", "result": big})
        result = mem.get(a.id).body["result"]
    assert len(result.encode()) < 16 * 1024 + 100
    assert result.startswith("line of tool output")
    assert result.endswith(f"[gitmem: truncated {len(big.encode()) - 16 * 1024} bytes]")
    assert mem.get(b.id).body["result"] == result
    # both events share one attachment blob in the payload store
    assert len([path for path in payload_files(repo) if path.startswith("b/")]) == 1


def test_bad_max_field_bytes_is_a_usage_error(tmp_path):
    repo = make_repo(tmp_path / "r")
    git(repo, "config", "edda.maxFieldBytes", "lots")
    with pytest.raises(UsageError, match=r"edda\.maxFieldBytes"), Memory.open(repo) as mem:
        mem.note("x")
