"""``git edda daemon start|stop|status``: the warm daemon (:mod:`gitmem.daemon`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from cyclopts import App

from gitmem.cli.root import DEFAULT_COMMON, Common, Output, app

if TYPE_CHECKING:
    from gitmem.ipc.control import DaemonStatus
    from gitmem.storage.locate import RepoLocation

daemon_app = App(
    name="daemon",
    help="Start, stop or ask after the warm daemon that answers hooks and queries fast.",
)
app.command(daemon_app)

_REASONS = {
    "absent": "not running",
    "mismatch": "a daemon of another gitmem installation or environment is running",
    "failed": "not answering",
}


def _location(common: Common) -> RepoLocation:
    from gitmem.storage.locate import locate

    return locate(common.repo)


def _describe(status: DaemonStatus) -> str:
    if not status.running:
        text = _REASONS.get(status.reason or "absent", "not running")
        return f"daemon: {text}" + (f" (pid {status.pid})" if status.pid else "")
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(status.started or 0))
    lines = [
        f"daemon: running, pid {status.pid}, since {started}",
        f"socket: {status.socket}",
        f"requests served: {status.requests}",
    ]
    if status.idle is not None and status.idle_timeout is not None:
        left = max(0.0, status.idle_timeout - status.idle)
        lines.append(
            f"idle: {status.idle:.0f} s (exits after {status.idle_timeout:g} s idle, in {left:.0f} s)"
        )
    return "\n".join(lines)


@daemon_app.command
def start(*, idle_timeout: float | None = None, common: Common = DEFAULT_COMMON) -> Output:
    """Start this repository's daemon (if it is not running) and wait until it answers.

    Hooks, the MCP server and 'git edda search|context|ask' start it on
    demand (unless git config edda.daemon.autostart is false), so this is
    for warming it ahead of time.

    Parameters
    ----------
    idle_timeout
        Seconds without a request before it exits (default: git config
        edda.daemon.idleTimeout, else 600).
    """
    from gitmem.errors import UsageError
    from gitmem.ipc.control import start as start_daemon

    if idle_timeout is not None and not 0 < idle_timeout < 7 * 24 * 3600:
        raise UsageError("--idle-timeout must be between 0 and a week, in seconds")
    status = start_daemon(_location(common), idle_timeout=idle_timeout)
    return Output(status.to_json(), _describe(status))


@daemon_app.command
def stop(*, common: Common = DEFAULT_COMMON) -> Output:
    """Stop this repository's daemon (nothing to do when it is not running)."""
    from gitmem.ipc.control import stop as stop_daemon

    before = stop_daemon(_location(common))
    text = f"daemon stopped (pid {before.pid})" if before.running else "daemon: not running"
    return Output({"stopped": before.running, "pid": before.pid}, text)


@daemon_app.command
def status(*, common: Common = DEFAULT_COMMON) -> Output:
    """Whether this repository's daemon runs, its pid, socket and idle time."""
    from gitmem.ipc.control import status as daemon_status

    result = daemon_status(_location(common))
    return Output(result.to_json(), _describe(result))
