"""The daemon's thin client: ``git edda search|context|ask`` and agent hooks.

Standard library only (no pyarrow, no pygit2, not even the command parser):
when the repository's daemon (:mod:`gitmem.daemon`) answers, this is all a
command or a hook call loads. When it does not, the caller does the work
in-process, and a daemon is started in the background for the next call
(unless ``$GITMEM_DAEMON`` is 0 or ``edda.daemon.autostart`` is false).
"""

from __future__ import annotations

import sys

from gitmem.ipc.client import FORWARDED, Absent, call, enabled
from gitmem.storage.locate import RepoLocation, locate

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

HOOK_START = 2.0  # a busy daemon: after this the hook does the work itself
HOOK_ANSWER = 10.0
COMMAND_START = 5.0
COMMAND_ANSWER = 600.0  # a query may first bring a large index up to date


def _spawn(location: RepoLocation) -> None:
    from gitmem.ipc.control import spawn

    spawn(location)


def command(argv: Sequence[str], repo: str | None) -> int | None:
    """Run ``argv`` (global options after the command) in the daemon and
    write its output; its exit code, or None when the caller must run it."""
    if not argv or argv[0] not in FORWARDED or not enabled():
        return None
    if "-h" in argv or "--help" in argv:
        return None
    try:
        location = locate(repo)
    except Exception:  # not a repository: the command says so itself
        return None
    try:
        tty = sys.stdout.isatty()
    except (AttributeError, ValueError):
        tty = False
    answer = call(
        location,
        "cli",
        {"argv": list(argv), "tty": tty},
        start_within=COMMAND_START,
        answer_within=COMMAND_ANSWER,
    )
    if isinstance(answer, Absent):
        if answer.reason == "absent":
            _spawn(location)
        return None
    code, out, err = answer.get("code"), answer.get("stdout"), answer.get("stderr")
    paged, pager = answer.get("paged"), answer.get("pager")
    if not (isinstance(code, int) and isinstance(out, str) and isinstance(err, str)):
        return None
    try:
        if out:
            sys.stdout.write(out)
        if isinstance(paged, str) and paged:
            from gitmem.cli.pager import run_pager

            if not (isinstance(pager, str) and run_pager(paged, pager)):
                sys.stdout.write(paged)
        sys.stdout.flush()
    except BrokenPipeError:
        return 1  # ExitCode.ERROR, as in-process (gitmem.errors is not loaded here)
    if err:
        sys.stderr.write(err)
    return code


def hook(agent: str, repo: str | None, rest: list[str]) -> int:
    """One hook call: answered by the daemon when it runs, else here; always 0."""
    from gitmem.agents.payload import read_input

    try:
        data = read_input(sys.stdin.buffer)
    except (OSError, ValueError):
        data = b""
    location = _hook_location(repo, data) if enabled() else None
    absent = False
    if location is not None:
        import base64

        answer = call(
            location,
            "hook",
            {"agent": agent, "repo": repo, "rest": rest, "stdin": base64.b64encode(data).decode()},
            start_within=HOOK_START,
            answer_within=HOOK_ANSWER,
        )
        out = answer.get("stdout") if isinstance(answer, dict) else None
        if isinstance(out, str):
            from gitmem.agents.payload import emit

            emit(out)
            return 0
        absent = isinstance(answer, Absent) and answer.reason == "absent"
    from gitmem.agents.hooks import run_hook

    code = run_hook(agent, repo, rest, data)
    if absent and location is not None:
        _spawn(location)
    return code


def _hook_location(repo: str | None, data: bytes) -> RepoLocation | None:
    """The repository a hook call is about (None: let the hook find out and log)."""
    from gitmem.agents.payload import parse_payload, where

    try:
        payload = parse_payload(data) if repo is None else {}
        return locate(where(repo, payload))
    except Exception:
        return None
