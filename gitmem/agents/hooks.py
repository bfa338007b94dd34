"""``git edda hook claude|generic``: one hook call, from stdin to stdout, never failing.

Reached from :func:`gitmem.cli.main.run` before the command parser is
imported: Claude Code runs this on every tool call and waits for it. The
capture events (a tool call, a failure, a subagent, compaction) import only
the standard library and go through :func:`gitmem.capture.main.spool_drafts`,
the boundary of ``gitmem-capture`` (validation, scrubbing, truncation, a
durable spool). The injection events (SessionStart, UserPromptSubmit,
PreToolUse on an edit) and SessionEnd load the application layer.

Whatever happens, the exit code is 0 and stdout holds either nothing or one
JSON object of the documented shape; errors are one line in
``<common dir>/edda/log/hooks.log``.
"""

from __future__ import annotations

import json
import sys

from gitmem.agents import state
from gitmem.agents.payload import emit, parse_payload, read_input, where
from gitmem.agents.translate import DEFAULT_EXCLUDES, Excluder, Translator, session_of
from gitmem.capture.main import spool_drafts
from gitmem.githooks.run import log
from gitmem.storage import lock
from gitmem.storage.gitconfig import get_int, read_config
from gitmem.storage.locate import RepoLocation, locate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from gitmem.capture.sealer import Draft
    from gitmem.storage.gitconfig import Config

HOOK_LOCK_WAIT = 0.5  # the agent waits for us: after this, log and give up
DEFAULT_BUDGET = 1500  # edda.claude.budget: tokens of the SessionStart pack


class HookCall:
    """One hook invocation: the payload (Claude Code's shape) and the repository."""

    def __init__(self, agent: str, payload: dict[str, Any], location: RepoLocation) -> None:
        self.agent = agent
        self.payload = payload
        self.location = location
        self.event = (
            payload.get("hook_event_name")
            if isinstance(payload.get("hook_event_name"), str)
            else ""
        )
        self.session = session_of(payload)
        self.config: Config = read_config(location)
        excludes = [*DEFAULT_EXCLUDES, *self.config.get("edda.excludepath", [])]
        self.translator = Translator(location.work_path, Excluder(excludes), agent)

    @property
    def repo(self) -> str:
        """A path inside the repository, for the application layer."""
        return self.location.cwd

    @property
    def budget(self) -> int:
        return max(1, get_int(self.config, "edda.claude.budget", DEFAULT_BUDGET))

    def state(self) -> dict[str, Any]:
        return state.load(self.location, self.session) if self.session else {}

    def save_state(self, data: dict[str, Any]) -> None:
        if self.session:
            state.save(self.location, self.session, data)

    def capture(self, drafts: list[Draft], journal: Sequence[tuple[str, str]] = ()) -> None:
        """Spool ``drafts`` in the session's capsule, then note them in its journal."""
        if drafts:
            capsule = self.state().get("capsule")
            if isinstance(capsule, str):
                for draft in drafts:
                    draft.capsule = capsule
            spool_drafts(self.location, self.config, drafts)
        if journal and self.session:
            state.journal(self.location, self.session, list(journal))

    def log(self, message: str) -> None:
        log(self.location, f"hook {self.agent} {self.event or '?'}: {message}")


def run_hook(agent: str, repo: str | None, rest: list[str], data: bytes | None = None) -> int:
    """Handle one hook call of ``agent`` (claude or generic) with ``data`` (None:
    read standard input) and write its answer to standard output; always 0."""
    if data is None:
        try:
            data = read_input(sys.stdin.buffer)
        except (OSError, ValueError) as exc:
            log(_try_locate(repo), f"hook {agent}: could not read the input: {exc}")
            return 0
    emit(hook_output(agent, repo, rest, data))
    return 0


def hook_output(agent: str, repo: str | None, rest: list[str], data: bytes) -> str:
    """What the hook call answers for ``data``: one JSON line, or '' to inject
    nothing. Never raises: errors are logged."""
    # In-process callers (tests, the daemon) keep their own cap afterwards.
    previous = lock.wait_limit()
    lock.limit_waits(HOOK_LOCK_WAIT)
    try:
        return _run(agent, repo, rest, data)
    finally:
        lock.limit_waits(previous)


def _run(agent: str, repo: str | None, rest: list[str], data: bytes) -> str:
    location: RepoLocation | None = None
    try:
        try:
            payload = parse_payload(data)
        except ValueError as exc:
            location = _try_locate(repo)
            log(location, f"hook {agent}: ignored the input: {exc}")
            return ""
        if agent == "generic":
            from gitmem.agents.generic import to_claude

            payload = to_claude(payload)
        elif rest and not isinstance(payload.get("hook_event_name"), str):
            payload["hook_event_name"] = rest[0]  # `hook claude EVENT`, for old set-ups
        location = locate(where(repo, payload))
        call = HookCall(_agent_name(agent, payload), payload, location)
        from gitmem.agents.claude.hooks import handle

        text = handle(call)
        if not text:
            return ""
        out = (
            {"context": text}
            if agent == "generic"
            else {"hookSpecificOutput": {"hookEventName": call.event, "additionalContext": text}}
        )
        return json.dumps(out, ensure_ascii=False) + "\n"
    except BaseException as exc:  # whatever it was: never break the agent
        location = location or _try_locate(repo)
        log(location, f"hook {agent}: {type(exc).__name__}: {exc}")
        return ""


def _agent_name(agent: str, payload: dict[str, Any]) -> str:
    if agent == "claude":
        return "claude-code"
    name = payload.get("agent")
    return name if isinstance(name, str) and name.strip() and len(name) <= 64 else "generic"


def _try_locate(repo: str | None) -> RepoLocation | None:
    try:
        return locate(repo)
    except Exception:
        return None
