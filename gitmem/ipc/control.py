"""Starting, stopping and asking after a repository's daemon.

:func:`spawn` is what hooks, the MCP server and the CLI call when they find
no daemon: it starts one in the background, at most once per
:data:`START_GRACE` seconds, and returns at once (the caller does its own
work this time). ``git edda daemon start|stop|status`` use the rest.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict, dataclass

from gitmem.ipc.client import Absent, call, enabled
from gitmem.ipc.paths import daemon_dir, private_dir, socket_path
from gitmem.storage.locate import RepoLocation

START_GRACE = 10.0  # a start in progress (imports, warming up) is left alone this long
STARTING = "starting"
PID_FILE = "pid"
LOG_NAME = "daemon.log"


@dataclass(frozen=True)
class DaemonStatus:
    """What ``git edda daemon status`` reports."""

    running: bool
    socket: str
    pid: int | None = None
    started: float | None = None  # seconds since the epoch
    requests: int = 0
    idle_timeout: float | None = None
    idle: float | None = None  # seconds since the last request
    build: str | None = None
    reason: str | None = None  # why it does not answer, when it does not

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def status(location: RepoLocation) -> DaemonStatus:
    """Whether the repository's daemon answers, and what it says of itself."""
    answer = call(location, "ping", start_within=2.0, answer_within=5.0)
    path = socket_path(location)
    if isinstance(answer, Absent):
        return DaemonStatus(False, path, pid=_pid(location), reason=answer.reason)

    def num(key: str) -> float | None:
        value = answer.get(key)
        return float(value) if isinstance(value, (int, float)) else None

    pid = answer.get("pid")
    requests = answer.get("requests")
    build = answer.get("build")
    return DaemonStatus(
        True,
        path,
        pid=pid if isinstance(pid, int) else None,
        started=num("started"),
        requests=requests if isinstance(requests, int) else 0,
        idle_timeout=num("idle_timeout"),
        idle=num("idle"),
        build=build if isinstance(build, str) else None,
    )


def _pid(location: RepoLocation) -> int | None:
    try:
        with open(os.path.join(daemon_dir(location), PID_FILE), encoding="ascii") as handle:
            return int(handle.read().strip())
    except (OSError, ValueError):
        return None


def spawn(
    location: RepoLocation, *, idle_timeout: float | None = None, asked: bool = False
) -> bool:
    """Start the daemon in the background unless a start is already under
    way, or (unless ``asked``: ``git edda daemon start``) the repository
    turned starting on demand off with ``edda.daemon.autostart false``; True
    when this call started one. Never raises (a hook calls it)."""
    if not enabled():
        return False
    try:
        if not asked:
            from gitmem.storage.gitconfig import get_bool, read_config

            if not get_bool(read_config(location), "edda.daemon.autostart", True):
                return False
        directory = private_dir(daemon_dir(location))
        marker = os.path.join(directory, STARTING)
        try:
            if time.time() - os.stat(marker).st_mtime < START_GRACE:
                return False
        except FileNotFoundError:
            pass
        with open(marker, "w", encoding="ascii") as handle:
            handle.write(str(os.getpid()))
        import subprocess

        command = [sys.executable, "-m", "gitmem.daemon", location.common_path]
        if idle_timeout is not None:
            command += ["--idle-timeout", str(idle_timeout)]
        log = open(os.path.join(directory, LOG_NAME), "ab")  # noqa: SIM115 (the child keeps it)
        try:
            subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                cwd=location.common_path,
                start_new_session=True,  # not in the caller's process group: it outlives it
                close_fds=True,
            )
        finally:
            log.close()
        return True
    except Exception:
        return False


def ensure_started(location: RepoLocation) -> bool:
    """Start the daemon in the background if none answers (:func:`spawn`'s
    rules apply); True when this call started one. Never raises."""
    try:
        answer = call(location, "ping", start_within=1.0, answer_within=2.0)
    except Exception:
        return False
    return isinstance(answer, Absent) and answer.reason == "absent" and spawn(location)


def start(
    location: RepoLocation, *, idle_timeout: float | None = None, wait: float = 30.0
) -> DaemonStatus:
    """Start the daemon unless it runs, and wait until it answers (at most
    ``wait`` seconds: it warms up before it listens)."""
    from gitmem.errors import ConflictError, GitmemError, UsageError

    if not enabled():
        raise UsageError(
            "the daemon is turned off in this environment ($GITMEM_DAEMON is 0)",
            "unset GITMEM_DAEMON (or set it to 1) to use the daemon",
        )
    current = status(location)
    if current.running:
        return current
    if current.reason == "mismatch":
        raise ConflictError(
            "a daemon of another gitmem installation or environment serves this repository",
            "stop it with 'git edda daemon stop', then start this one",
        )
    try:
        os.unlink(os.path.join(daemon_dir(location), STARTING))  # asked for: start now
    except OSError:
        pass
    spawn(location, idle_timeout=idle_timeout, asked=True)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        time.sleep(0.05)
        current = status(location)
        if current.running:
            return current
    raise GitmemError(
        f"the daemon did not answer within {wait:.0f} s",
        f"see {os.path.join(daemon_dir(location), LOG_NAME)}",
    )


def stop(location: RepoLocation, *, wait: float = 10.0) -> DaemonStatus:
    """Ask the daemon to exit and wait until it has (a daemon that does not
    answer but holds the repository's daemon lock is sent SIGTERM)."""
    before = status(location)
    pid = before.pid
    answer = call(location, "stop", start_within=2.0, answer_within=5.0)
    if isinstance(answer, Absent) and pid is not None and _holds_lock(location):
        import signal

        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and _holds_lock(location):
        time.sleep(0.05)
    return before


def _holds_lock(location: RepoLocation) -> bool:
    """Whether some process holds the daemon lock (a daemon is alive)."""
    import fcntl

    path = os.path.join(daemon_dir(location), "lock")
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing releases a lock we took
    return False
