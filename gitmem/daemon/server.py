"""The daemon's life: one per repository, warm, listening, until idle.

One process serves each repository (``<common dir>/edda/daemon/lock`` is
held for its lifetime; a second one exits at once). It loads everything a
request needs before it listens, so its first answer is as fast as the
rest. It serves one request at a time, in order: a hook call or a query
waits while another is answered (each is milliseconds), which keeps the
code it runs (the CLI's, the hooks') free of threads. A request whose
client has given up waiting (its deadline passed) is not started.

It exits after ``edda.daemon.idleTimeout`` seconds without a request
(default 600; ``30s``, ``10m``, ``1h`` are accepted), on ``git edda daemon
stop`` or SIGTERM, when its socket is removed or replaced, and when the
repository is deleted. Memory moving under it (a checkout, a commit, a
pull) needs nothing: every request reads through the index, which is
brought up to date first when memory has moved.
"""

from __future__ import annotations

import os
import signal
import socket
import time
from typing import Any

from gitmem.daemon import handlers
from gitmem.ipc.client import environment
from gitmem.ipc.control import LOG_NAME, PID_FILE, STARTING
from gitmem.ipc.paths import daemon_dir, private_dir, socket_path
from gitmem.ipc.wire import WireError, build_id, receive, send
from gitmem.storage.locate import RepoLocation, locate

DEFAULT_IDLE_TIMEOUT = 600.0
POLL = 0.5  # how often an idle daemon looks at its clock and its socket
CATCH_UP_AFTER = 0.25  # quiet seconds after requests before catching up (bursts go first)
# Quiet seconds after a request before embedding rounds start, when texts wait
# for vectors: a round holds the daemon for edda.embed.budget seconds, and an
# agent's requests come in bursts (a tool call's hooks, a prompt's).
EMBED_AFTER = 1.0
READ_TIMEOUT = 10.0  # a client that connects and sends nothing is dropped
BACKLOG = 64


def idle_timeout_of(location: RepoLocation) -> float:
    """``edda.daemon.idleTimeout`` in seconds (``600``, ``30s``, ``10m``, ``1h``)."""
    from gitmem.errors import UsageError
    from gitmem.storage.gitconfig import get_last, read_config

    raw = get_last(read_config(location), "edda.daemon.idletimeout")
    if raw is None or not raw.strip():
        return DEFAULT_IDLE_TIMEOUT
    text = raw.strip().lower()
    scale = {"s": 1, "m": 60, "h": 3600}.get(text[-1:], 0)
    try:
        seconds = float(text[:-1] if scale else text) * (scale or 1)
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < 7 * 24 * 3600:
        raise UsageError(
            f"edda.daemon.idleTimeout is {raw!r}, not a duration",
            "set seconds, or a number with s, m or h: git config edda.daemon.idleTimeout 10m",
        )
    return seconds


class Daemon:
    """A listening daemon's state."""

    def __init__(self, location: RepoLocation, idle_timeout: float) -> None:
        self.location = location
        self.idle_timeout = idle_timeout
        self.started = time.time()
        self.last = time.monotonic()
        self.requests = 0
        self.build = build_id()
        self.env = environment()
        self.stopping = False

    def log(self, message: str) -> None:
        """One line in ``daemon.log``, secrets masked; never raises."""
        try:
            from gitmem.capture.scrub import default_scrubber

            text = default_scrubber().scrub(message).text
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime())
            path = os.path.join(daemon_dir(self.location), LOG_NAME)
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(f"{stamp} pid={os.getpid()} {' '.join(text.split())}\n")
        except Exception:
            pass

    def info(self) -> dict[str, Any]:
        return {
            "ok": True,
            "pid": os.getpid(),
            "started": self.started,
            "requests": self.requests,
            "idle_timeout": self.idle_timeout,
            "idle": round(time.monotonic() - self.last, 3),
            "build": self.build,
        }

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """The reply to one request (never raises)."""
        op = request.get("op")
        if op == "ping":
            return self.info()
        if op == "stop":
            self.stopping = True
            return {"ok": True}
        build = request.get("build")
        if build != self.build or request.get("env") != self.env:
            if isinstance(build, str) and _upgraded(self.build, build):
                # The same installation, another version: this daemon runs
                # old code. It leaves, so the next client starts a new one.
                self.log(f"exiting after this request: a client runs {build}")
                self.stopping = True
            return {"ok": False, "error": "mismatch"}
        deadline = request.get("deadline")
        if not isinstance(deadline, (int, float)) or time.time() > deadline:
            return {"ok": False, "error": "late"}  # the client has done it itself
        try:
            if op == "hook":
                return handlers.hook(request)
            if op == "cli":
                return handlers.cli(request)
        except handlers.BadRequest as exc:
            return {"ok": False, "error": f"bad request: {exc}"}
        except Exception as exc:  # the client falls back; the daemon goes on
            self.log(f"{op}: {type(exc).__name__}: {exc}")
            return {"ok": False, "error": "internal"}
        return {"ok": False, "error": f"unknown op {op!r}"}

    def catch_up(self) -> bool:
        """Bring memory and the index up to date with what the last requests
        captured, while nobody waits, so the next query finds them fresh
        instead of refreshing first (tens of milliseconds at every prompt).
        Returns True when texts wait for vectors (see :meth:`embed_round`)."""
        if self.location.work_path is None:
            return False
        try:
            from gitmem.app.session import open_view
            from gitmem.index.embedding import deferred

            with open_view(self.location.work_path) as view:
                return deferred(view.manifest)
        except Exception as exc:
            self.log(f"catching up failed: {type(exc).__name__}: {exc}")
            return False

    def embed_round(self) -> bool:
        """One refresh that embeds, for ``edda.embed.budget`` seconds, texts
        that earlier refreshes left without vectors when their budget ran out
        (queries do not wait for them). True when some still wait."""
        if self.location.work_path is None:
            return False
        try:
            from gitmem.index.embedding import deferred
            from gitmem.index.manifest import index_root, read_manifest
            from gitmem.index.refresh import try_refresh
            from gitmem.memory.api import Memory

            with Memory.open(self.location.work_path) as mem:
                if try_refresh(mem, wait=0.0) is None:
                    return True  # another process is building: the next lull
            manifest = read_manifest(index_root(self.location))
            return manifest is not None and deferred(manifest)
        except Exception as exc:
            self.log(f"embedding in a lull failed: {type(exc).__name__}: {exc}")
            return False

    def handle(self, conn: socket.socket) -> bool:
        """Read one request from ``conn``, answer it, close it; True when it
        was work for a client (a hook call, a command)."""
        with conn:
            if not _same_user(conn):
                self.log("refused a connection from another user")
                return False
            conn.settimeout(READ_TIMEOUT)
            try:
                request = receive(conn)
            except (OSError, WireError) as exc:
                self.log(f"dropped a request: {exc}")
                return False
            reply = self.answer(request)
            worked = reply.get("ok") is True and request.get("op") in ("hook", "cli")
            if worked:
                # Work done for a client (not pings, not refusals): what
                # keeps the daemon alive (a status loop does not).
                self.requests += 1
                self.last = time.monotonic()
            try:
                send(conn, reply)
            except OSError:
                pass  # the client left; a hook's client has done the work itself
            return worked


def _upgraded(mine: str, theirs: str) -> bool:
    """Whether build ``theirs`` is the same installation (package directory)
    as ``mine`` with another protocol or version: gitmem was upgraded in place."""
    my_protocol, _, rest = mine.partition(":")
    my_version, _, my_place = rest.partition(":")
    their_protocol, _, rest = theirs.partition(":")
    their_version, _, their_place = rest.partition(":")
    return my_place == their_place and (my_protocol, my_version) != (their_protocol, their_version)


def _same_user(conn: socket.socket) -> bool:
    """Whether the peer runs as this user (SO_PEERCRED on Linux; elsewhere
    the socket's mode 0600 in a private directory already keeps others out)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    import struct

    try:
        raw = conn.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return False
    _pid, uid, _gid = struct.unpack("3i", raw)
    return bool(uid == os.getuid())


def warm(location: RepoLocation) -> None:
    """Load what requests use: the command line and hook code, the scrubber,
    the index (brought up to date) and the embedder."""
    import gitmem.agents.claude.hooks
    import gitmem.agents.inject
    import gitmem.cli.commands  # noqa: F401
    from gitmem.app.session import open_view
    from gitmem.capture.scrub import default_scrubber

    default_scrubber()
    if location.work_path is None:
        return
    with open_view(location.work_path) as view:
        _ = view.embedder


def serve(repo: str, *, idle_timeout: float | None = None) -> int:
    """Run the daemon of the repository at ``repo`` until it is idle or told
    to stop; 0 at once when another daemon serves it."""
    import fcntl

    location = locate(repo)
    directory = private_dir(daemon_dir(location))
    lock_fd = os.open(os.path.join(directory, "lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock_fd)
        return 0
    location = _worktree(location)
    daemon = Daemon(location, idle_timeout or idle_timeout_of(location))
    path = socket_path(location)
    listener: socket.socket | None = None
    inode = -1
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        try:
            warm(location)
        except Exception as exc:  # requests will load what they need themselves
            daemon.log(f"warming up failed: {type(exc).__name__}: {exc}")
        private_dir(os.path.dirname(path))
        try:
            os.unlink(path)  # a stale socket: its daemon died without removing it
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        mask = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(mask)
        os.chmod(path, 0o600)
        listener.listen(BACKLOG)
        inode = os.stat(path).st_ino
        _write(os.path.join(directory, PID_FILE), str(os.getpid()))
        try:
            os.unlink(os.path.join(directory, STARTING))
        except FileNotFoundError:
            pass
        daemon.log(f"listening on {path} (idle timeout {daemon.idle_timeout:g} s)")
        reason = _loop(daemon, listener, path, inode)
        daemon.log(f"exiting: {reason}")
    finally:
        signal.signal(signal.SIGTERM, previous)
        if listener is not None:
            listener.close()
            try:
                if os.stat(path).st_ino == inode:
                    os.unlink(path)
            except OSError:
                pass
        for name in (PID_FILE,):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass
        os.close(lock_fd)
    return 0


def _loop(daemon: Daemon, listener: socket.socket, path: str, inode: int) -> str:
    """Serve until a reason to stop; return it."""
    behind = True  # work was done since the last catch-up (a new daemon looks once)
    waiting = False  # texts wait for vectors: embed in rounds while nobody asks
    while True:
        if _terminated:
            return "terminated"
        quiet = time.monotonic() - daemon.last
        if quiet > daemon.idle_timeout:
            return f"idle for {daemon.idle_timeout:g} s"
        if behind:
            timeout = CATCH_UP_AFTER
        elif waiting:  # rounds back to back once requests have paused
            timeout = max(EMBED_AFTER - quiet, 0.001)
        else:
            timeout = POLL
        listener.settimeout(timeout)
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            if behind:  # a lull after work: the moment to catch up
                waiting = daemon.catch_up()
                behind = False
                continue
            if waiting:
                waiting = daemon.embed_round()
                continue
            try:
                if os.stat(path).st_ino != inode:
                    return "its socket was replaced"
            except OSError:
                return "its socket was removed"
            if not os.path.isdir(daemon.location.common_path):
                return "the repository is gone"
            continue
        conn.setblocking(True)
        behind = daemon.handle(conn) or behind
        if daemon.stopping:
            return "asked to stop"


def _worktree(location: RepoLocation) -> RepoLocation:
    """The main worktree of a repository located by its common dir."""
    if location.work_path is not None:
        return location
    parent = os.path.dirname(location.common_path.rstrip(os.sep))
    if os.path.basename(location.common_path.rstrip(os.sep)) == ".git":
        try:
            return locate(parent)
        except Exception:
            pass
    return location


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as handle:
        handle.write(text)


_terminated = False


def _terminate(signum: int, frame: object) -> None:
    # A flag, not an exception: an exception would land in whatever request
    # is being served (the hook handler swallows everything, by design).
    global _terminated
    _terminated = True
