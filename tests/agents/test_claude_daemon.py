"""The real Claude Code with gitmem's warm daemon on: its hook calls are
forwarded to the daemon (``git edda hook claude`` is then a thin client),
each is captured exactly once, and the SessionStart pack still reaches the
model.

The daemon is started ahead of the session with the environment Claude Code
gives its hooks (a daemon answers only clients whose configuration-shaping
variables it shares: HOME, GIT_CONFIG*, GITMEM_* …), and stopped at teardown.
"""

from __future__ import annotations

import json
import shlex
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agents.claude_harness import Claude
from agents.helpers import edda, logged_events, needs_git_edda, parser_project
from agents.scripted_model import call, say
from agents.test_claude_e2e import SESSION_START_PREFIX, system_texts

pytestmark = pytest.mark.claude

# A hook beside gitmem's (on PostToolBatch, which gitmem does not hook): it
# asks the daemon for a search the way gitmem's thin client does, in the
# environment Claude Code gives hooks, and writes down whether it was
# answered (the exit code) or why not ("mismatch": another environment).
PROBE = """\
import json, sys
from gitmem.ipc.client import call
from gitmem.storage.locate import locate
argv = {"argv": ["search", "parser"], "tty": False}
answer = call(locate(sys.argv[1]), "cli", argv, start_within=20.0, answer_within=30.0)
with open(sys.argv[2], "a") as out:
    out.write(json.dumps(getattr(answer, "reason", None) or answer.get("code")) + "\\n")
"""


@pytest.fixture
def daemon(claude: Claude) -> Iterator[dict[str, str]]:
    """The daemon on for ``claude``'s hooks; yields the environment to talk
    to it in (the hooks' own, minus what Claude Code adds per call)."""
    claude.environ["GITMEM_DAEMON"] = "1"
    env = claude.env("http://127.0.0.1:9")  # the model's address shapes nothing
    try:
        yield env
    finally:
        edda(claude.project, "daemon", "stop", env=env)


def _requests(repo: Path, env: dict[str, str]) -> int:
    status = json.loads(edda(repo, "daemon", "status", "--json", env=env))
    assert status["running"], status
    return int(status["requests"])


@needs_git_edda
def test_with_the_daemon_on_every_hook_is_forwarded_and_captured_once(
    claude: Claude, daemon: dict[str, str]
) -> None:
    repo = claude.project
    parser_project(repo)
    edda(repo, "decide", "parser.separator", "comma", "--reason", "CSV input")
    probed = repo.parent / "probe.jsonl"
    settings_path = repo / ".claude" / "settings.json"
    settings = json.loads(settings_path.read_text())
    probe = shlex.join([sys.executable, "-c", PROBE, str(repo), str(probed)])
    settings["hooks"]["PostToolBatch"] = [{"hooks": [{"type": "command", "command": probe}]}]
    settings_path.write_text(json.dumps(settings, indent=2))

    started = json.loads(edda(repo, "daemon", "start", "--json", env=daemon))
    assert started["running"], started
    before = _requests(repo, daemon)
    parser = str(repo / "parser.py")
    run = claude.run(
        "split on commas in parser.py",
        [
            call("Bash", command="grep -n split parser.py"),
            call("Edit", file_path=parser, old_string="text.split()", new_string="text.split(',')"),
            say("parse now splits on commas"),
        ],
        allowed_tools=("Bash", "Edit"),
        timeout=120,
    )

    assert not run.unused
    assert (repo / "parser.py").read_text() == "def parse(text):\n    return text.split(',')\n"
    # The SessionStart pack reached the model.
    first = run.turns[0]
    injected = [t for t in system_texts(first) if t.startswith(SESSION_START_PREFIX)]
    assert len(injected) == 1, system_texts(first)
    assert "parser.separator" in injected[0] and "comma" in injected[0]

    # Stop runs in the background: wait for what it and SessionEnd record.
    session = run.result["session_id"]
    deadline = time.monotonic() + 20
    while True:
        events = logged_events(repo)
        mine = [e for e in events if e["envelope"]["scope"].get("session") == session]
        types = [e["envelope"]["type"] for e in mine]
        if "capsule_close" in types or time.monotonic() > deadline:
            break
        time.sleep(0.5)

    # Every event once: a call the daemon took and the client then did
    # itself as well would show here twice.
    def key(event: dict[str, Any]) -> tuple[str, ...]:
        kind, body = event["envelope"]["type"], event["body"]
        if kind == "observation":
            return (kind, body["kind"], body.get("input") or body.get("result", ""))
        return (kind, body.get("text", ""))

    assert Counter(key(e) for e in mine) == Counter(
        {
            ("capsule_open", ""): 1,
            ("prompt", "split on commas in parser.py"): 1,
            ("observation", "command", "grep -n split parser.py"): 1,
            ("observation", "file_diff", "-text.split()\n+text.split(',')"): 1,
            ("observation", "message", "parse now splits on commas"): 1,
            ("capsule_close", ""): 1,
        }
    ), [key(e) for e in mine]
    capsule = mine[0]["envelope"]["id"]
    assert all(e["envelope"].get("capsule") == capsule for e in mine[1:])

    # The daemon served the hooks: the probe, in the hooks' environment, was
    # answered (no mismatch sends a hook back to work in-process), and the
    # requests it counted cover gitmem's hook calls: SessionStart,
    # UserPromptSubmit, PostToolUse twice, PreToolUse on the edit, SessionEnd,
    # and Stop when it got that far (background hooks can be cut off at exit).
    probes = [json.loads(line) for line in probed.read_text().splitlines()]
    assert probes == [0, 0]
    # (The daemon counts work done for clients: the probes' searches, not
    # the status calls that read the count.)
    hook_calls = _requests(repo, daemon) - before - len(probes)
    assert 6 <= hook_calls <= 7, hook_calls
