"""Asking the repository's daemon to do a piece of work, or learning it cannot.

Every call answers either the daemon's reply or why there is none
(:class:`Absent`): no daemon (no socket, or a stale one nobody listens on),
a daemon of another build or environment, one that refused or died before
answering, or a timeout. Callers then do the work themselves: the daemon
is an accelerator, never a dependency.
"""

from __future__ import annotations

# The C module under :mod:`socket`: the Python wrapper and its imports
# (selectors, enum) cost a hook ~5 ms, and a unix stream needs none of it.
import _socket
import os
import time

from gitmem.ipc.paths import socket_path
from gitmem.ipc.wire import WireError, build_id, receive, send
from gitmem.storage.locate import GIT_LOCAL_ENV_VARS, RepoLocation

CONNECT_TIMEOUT = 0.5

# Commands the command line forwards: read-only retrieval, whose cost is
# loading what the daemon keeps warm.
FORWARDED = frozenset(("search", "context", "ask"))
OFF = ("0", "false", "no", "off")

# Variables that change what a command reads or writes: a daemon started with
# other values would answer for another configuration, so it is not asked.
_ENV_NAMES = frozenset(
    ("HOME", "XDG_CONFIG_HOME", "TZ", "OPENAI_API_KEY", "OLLAMA_HOST", *GIT_LOCAL_ENV_VARS)
)
_ENV_PREFIXES = ("GIT_CONFIG", "GIT_AUTHOR_", "GIT_COMMITTER_", "GITMEM_", "EDDA_")
# Variables that vary per call (a terminal's, an agent session's): sent with
# each request and set in the daemon while it serves that request.
REQUEST_ENV = (
    "NO_COLOR",
    "TERM",
    "COLUMNS",
    "GIT_PAGER",
    "GIT_PAGER_IN_USE",
    "PAGER",
    "LESS",
    "LV",
    "CLAUDECODE",
    "CLAUDE_ENV_FILE",
    "CLAUDE_PROJECT_DIR",
    "GITMEM_AGENT",
    "GITMEM_SESSION",
    "GITMEM_CAPSULE",
)
_ENV_IGNORED = frozenset(("GITMEM_DAEMON", *REQUEST_ENV))


class Absent:
    """Why the daemon did not answer: ``absent`` (nothing listens), ``mismatch``
    (another build or environment), ``failed`` (refused, died, timed out)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"Absent({self.reason!r})"


def enabled() -> bool:
    """False when ``$GITMEM_DAEMON`` is 0/false/no/off: never use a daemon."""
    return os.environ.get("GITMEM_DAEMON", "").strip().lower() not in OFF


def environment() -> str:
    """The environment that shapes results (:data:`_ENV_NAMES`,
    :data:`_ENV_PREFIXES`), as one string: a daemon serves only clients with
    the same one. (Not a digest: hashlib costs a hook 3 ms to import, and the
    string goes only to a daemon of the same user.)"""
    parts = sorted(
        f"{k}={v}"
        for k, v in os.environ.items()
        if (k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)) and k not in _ENV_IGNORED
    )
    return "\0".join(parts)


def call(
    location: RepoLocation,
    op: str,
    fields: dict[str, object] | None = None,
    *,
    start_within: float = 5.0,
    answer_within: float = 60.0,
) -> dict[str, object] | Absent:
    """Send request ``op`` with ``fields`` to the daemon of ``location``.

    The daemon starts the work only before ``start_within`` seconds have
    passed (it may be busy with another request), so a caller that gives up
    then and does the work itself does not see it done twice; it then waits
    up to ``answer_within`` more for the answer.
    """
    path = socket_path(location)
    try:
        if os.stat(path).st_uid != os.getuid():
            return Absent("failed")  # not ours: never send it anything
    except OSError:
        return Absent("absent")
    request: dict[str, object] = dict(fields or {})
    request.update(
        op=op,
        build=build_id(),
        env=environment(),
        environ={k: os.environ[k] for k in REQUEST_ENV if k in os.environ},
        cwd=os.getcwd(),
        deadline=time.time() + start_within,
    )
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        try:
            sock.connect(path)
        except (ConnectionRefusedError, FileNotFoundError):
            return Absent("absent")  # a stale socket: its daemon is gone
        sock.settimeout(start_within + answer_within)
        send(sock, request)  # type: ignore[arg-type]
        answer = receive(sock)  # type: ignore[arg-type]
    except (OSError, WireError):
        return Absent("failed")
    finally:
        sock.close()
    if answer.get("ok") is not True:
        return Absent("mismatch" if answer.get("error") == "mismatch" else "failed")
    return answer
