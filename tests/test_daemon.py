"""The warm daemon: real processes, a real unix socket, real clients.

Every test that starts a daemon stops it (the ``daemon`` fixture); the
suite's environment has ``GITMEM_DAEMON=0``, which these tests lift for the
processes they start.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gitmem.ipc.paths import daemon_dir, socket_path
from gitmem.ipc.wire import MAX_FRAME, WireError, receive, send
from gitmem.storage.locate import locate
from tests.conftest import cli, git, isolated_environment, make_repo

NOW = "2026-06-01T00:00:00Z"
PAYLOADS = Path(__file__).parent / "agents" / "payloads"


def edda(
    repo: Path, *args: str, daemon: bool = True, stdin: bytes | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``git edda ARGS -C repo`` as its own process (``main``: the path that
    forwards to a daemon), with the daemon allowed unless ``daemon`` is False."""
    environ = dict(os.environ, GITMEM_DAEMON="1" if daemon else "0", **env)
    proc = subprocess.run(
        [sys.executable, "-m", "gitmem.cli.main", *args, "-C", str(repo)],
        input=stdin,
        capture_output=True,
        env=environ,
    )
    return subprocess.CompletedProcess(
        proc.args,
        proc.returncode,
        proc.stdout.decode("utf-8", "replace"),
        proc.stderr.decode("utf-8", "replace"),
    )


def status(repo: Path) -> dict[str, object]:
    proc = edda(repo, "daemon", "status", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert isinstance(data, dict)
    return data


def wait_for(predicate, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie (the test's own child) is gone for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def stop_all(repo: Path) -> None:
    """Stop the repository's daemon, whatever state it is in."""
    pid = status(repo).get("pid")
    edda(repo, "daemon", "stop")
    if isinstance(pid, int) and alive(pid):
        os.kill(pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def store_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository with notes, decisions and a built index, made once a module."""
    base = tmp_path_factory.mktemp("daemon-store")
    with isolated_environment(base):
        repo = make_repo(base / "repo", events=30)
        git(repo, "config", "edda.fsync", "false")
        cli(repo, "decide", "cache.key", "includes the locale", "--reason", "two locales collided")
        cli(repo, "note", "the retry loop backs off exponentially")
        cli(repo, "index")
    return repo


@pytest.fixture
def store(store_template: Path, tmp_path: Path) -> Iterator[Path]:
    """A copy of the template repository, the test's own (building it took
    ~0.5 s a test); its daemon (if any test starts one) is stopped afterwards."""
    repo = tmp_path / "repo"
    shutil.copytree(store_template, repo, symlinks=True)
    try:
        yield repo
    finally:
        stop_all(repo)


@pytest.fixture
def daemon(store: Path) -> Path:
    """``store`` with its daemon running."""
    proc = edda(store, "daemon", "start", "--idle-timeout", "120", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["running"] is True and isinstance(data["pid"], int)
    return store


def served(repo: Path) -> int:
    requests = status(repo)["requests"]
    assert isinstance(requests, int)
    return requests


# -- answers -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ("search", "cache locale", "--now", NOW),
        ("search", "retry", "--json", "--now", NOW),
        ("search", "retry", "--limit", "3", "--mode", "lexical", "--now", NOW),
        ("context", "cache", "--now", NOW, "--budget", "400"),
        ("context", "--json", "--now", NOW),
        ("ask", "cache", "--now", NOW),
        ("search", "x", "--limit", "0"),  # a usage error: same message, same exit code
        ("search", "x", "--branch", "nope"),
    ],
)
def test_the_daemon_answers_exactly_as_the_command_would(daemon: Path, args) -> None:  # type: ignore[no-untyped-def]
    before = served(daemon)
    remote = edda(daemon, *args)
    local = edda(daemon, *args, daemon=False)
    assert (remote.returncode, remote.stdout, remote.stderr) == (
        local.returncode,
        local.stdout,
        local.stderr,
    )
    assert served(daemon) == before + 1  # the daemon answered it


def test_the_thin_client_loads_nothing_heavy(daemon: Path) -> None:
    code = (
        "import sys\n"
        "from gitmem.cli.main import _forwarded\n"
        f"code = _forwarded(['search', 'cache', '-C', {str(daemon)!r}])\n"
        "heavy = [m for m in ('pyarrow', 'pygit2', 'cyclopts', 'numpy', 'tantivy', 'usearch',\n"
        "         'msgspec') if m in sys.modules]\n"
        "print('RESULT', code, heavy)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=dict(os.environ, GITMEM_DAEMON="1"),
    )
    assert proc.returncode == 0, proc.stderr
    assert "cache.key" in proc.stdout
    assert proc.stdout.splitlines()[-1] == "RESULT 0 []"


def test_hooks_are_answered_by_the_daemon(daemon: Path) -> None:
    def payload(name: str, session: str) -> bytes:
        text = (PAYLOADS / f"{name}.json").read_text()
        return text.replace("/PROJECT", str(daemon)).replace("SESSION_ID", session).encode()

    before = served(daemon)
    start = edda(daemon, "hook", "claude", stdin=payload("SessionStart", "s1"))
    assert start.returncode == 0 and start.stderr == ""
    shape = json.loads(start.stdout)["hookSpecificOutput"]
    assert shape["hookEventName"] == "SessionStart"
    assert "cache.key" in shape["additionalContext"]
    bash = edda(daemon, "hook", "claude", stdin=payload("PostToolUse.Bash", "s1"))
    assert (bash.returncode, bash.stdout) == (0, "")
    prompt = json.loads(payload("UserPromptSubmit", "s1"))
    prompt["prompt"] = "why does the cache key include the locale?"
    said = edda(daemon, "hook", "claude", stdin=json.dumps(prompt).encode())
    assert "cache.key" in json.loads(said.stdout)["hookSpecificOutput"]["additionalContext"]
    for hostile in (b"", b"\xff\xfe not json", b"[1, 2]", b'{"hook_event_name": 7}'):
        proc = edda(daemon, "hook", "claude", stdin=hostile)
        assert (proc.returncode, proc.stdout) == (0, "")
    assert served(daemon) == before + 7
    # Each captured once: the daemon did it, and the client did not do it again.
    events = json.loads(edda(daemon, "log", "--json", daemon=False).stdout)["events"]
    kinds = [(e["envelope"]["type"], e["body"].get("kind")) for e in events]
    commands = [k for k in kinds if k == ("observation", "command")]
    prompts = [k for k in kinds if k[0] == "prompt"]
    assert len(prompts) == 1
    assert len(commands) == 1


# -- life cycle ----------------------------------------------------------------------------
def test_started_on_demand_then_exits_when_idle(store: Path) -> None:
    # 5 s, not less: on a loaded machine the status calls below take seconds, and
    # the daemon must still be there when the socket is checked.
    git(store, "config", "edda.daemon.idleTimeout", "5s")
    assert status(store)["running"] is False
    first = edda(store, "search", "cache locale", "--now", NOW)
    assert first.returncode == 0 and "cache.key" in first.stdout  # answered in-process
    assert wait_for(lambda: status(store)["running"] is True)
    location = locate(store)
    sock = socket_path(location)
    assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode) == 0o700
    again = edda(store, "search", "cache locale", "--now", NOW)
    assert again.stdout == first.stdout
    assert wait_for(lambda: status(store)["running"] is False)
    assert not os.path.exists(sock)
    log = Path(daemon_dir(location), "daemon.log").read_text()
    assert "exiting: idle for 5 s" in log


def test_autostart_can_be_turned_off(store: Path) -> None:
    git(store, "config", "edda.daemon.autostart", "false")
    assert edda(store, "search", "cache").returncode == 0
    time.sleep(1.0)
    assert status(store)["running"] is False
    # Asked for explicitly, it starts.
    assert edda(store, "daemon", "start").returncode == 0
    assert status(store)["running"] is True


def test_a_stale_socket_is_recovered(daemon: Path) -> None:
    old = status(daemon)["pid"]
    assert isinstance(old, int)
    os.kill(old, signal.SIGKILL)
    assert wait_for(lambda: not alive(old))
    sock = socket_path(locate(daemon))
    assert os.path.exists(sock)  # left behind: nobody listens on it
    proc = edda(daemon, "search", "cache locale", "--now", NOW)
    assert proc.returncode == 0 and "cache.key" in proc.stdout
    assert wait_for(lambda: status(daemon)["running"] is True)
    assert status(daemon)["pid"] != old


def test_stop_and_sigterm_leave_nothing_behind(daemon: Path) -> None:
    location = locate(daemon)
    sock = socket_path(location)
    stopped = edda(daemon, "daemon", "stop", "--json")
    assert json.loads(stopped.stdout)["stopped"] is True
    assert not os.path.exists(sock)
    assert not os.path.exists(os.path.join(daemon_dir(location), "pid"))
    assert json.loads(edda(daemon, "daemon", "stop", "--json").stdout)["stopped"] is False
    assert edda(daemon, "daemon", "start").returncode == 0
    pid = status(daemon)["pid"]
    assert isinstance(pid, int)
    os.kill(pid, signal.SIGTERM)
    assert wait_for(lambda: not alive(pid), 10)
    assert not os.path.exists(sock)


def test_start_is_refused_where_the_daemon_is_turned_off(store: Path) -> None:
    proc = edda(store, "daemon", "start", daemon=False)
    assert proc.returncode == 2
    assert "GITMEM_DAEMON" in proc.stderr


def test_memory_moving_under_the_daemon_is_seen(daemon: Path) -> None:
    pid = status(daemon)["pid"]
    assert "zephyr" not in edda(daemon, "search", "zephyr").stdout
    cli(daemon, "note", "the zephyr flag gates the new parser")
    assert "zephyr flag" in edda(daemon, "search", "zephyr").stdout
    git(daemon, "checkout", "-q", "-b", "feat")
    cli(daemon, "note", "the quasar cache lives on feat")
    assert "quasar" in edda(daemon, "search", "quasar").stdout
    git(daemon, "checkout", "-q", "main")
    assert "quasar" not in edda(daemon, "search", "quasar").stdout  # branch-aware
    assert "zephyr flag" in edda(daemon, "search", "zephyr").stdout
    assert status(daemon)["pid"] == pid


def test_worktrees_share_one_daemon_each_with_its_branch(daemon: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    git(daemon, "worktree", "add", "-q", "-b", "side", str(other))
    cli(other, "note", "the nebula setting only exists on side")
    assert "nebula" in edda(other, "search", "nebula").stdout
    assert "nebula" not in edda(daemon, "search", "nebula").stdout
    assert status(other)["pid"] == status(daemon)["pid"]


def test_a_daemon_of_another_environment_is_not_asked(daemon: Path) -> None:
    before = served(daemon)
    proc = edda(daemon, "search", "cache locale", GIT_AUTHOR_NAME="Someone Else")
    assert proc.returncode == 0 and "cache.key" in proc.stdout  # answered in-process
    assert served(daemon) == before
    assert status(daemon)["running"] is True  # and left running


# -- failures ------------------------------------------------------------------------------
class DyingDaemon:
    """A server on the repository's daemon socket that reads each request and
    closes without answering: a daemon that dies mid-request."""

    def __init__(self, path: str) -> None:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        if os.path.exists(path):  # a stale one (a killed daemon's), as the daemon does
            os.unlink(path)
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        os.chmod(path, 0o600)
        self.listener.listen(8)
        self.requests: list[dict[str, object]] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            with conn:
                try:
                    self.requests.append(receive(conn))
                except (OSError, WireError):
                    pass

    def close(self) -> None:
        self.listener.close()


def test_the_cli_and_hooks_fall_back_when_the_daemon_dies_mid_request(store: Path) -> None:
    git(store, "config", "edda.daemon.autostart", "false")  # the fake keeps the socket
    location = locate(store)
    expected = edda(store, "search", "cache locale", "--now", NOW, daemon=False)
    fake = DyingDaemon(socket_path(location))
    try:
        proc = edda(store, "search", "cache locale", "--now", NOW)
        assert (proc.returncode, proc.stdout, proc.stderr) == (
            expected.returncode,
            expected.stdout,
            expected.stderr,
        )
        text = (PAYLOADS / "PostToolUse.Bash.json").read_text()
        data = text.replace("/PROJECT", str(store)).replace("SESSION_ID", "s9").encode()
        hook = edda(store, "hook", "claude", stdin=data)
        assert (hook.returncode, hook.stdout) == (0, "")
    finally:
        fake.close()
    assert [r["op"] for r in fake.requests] == ["cli", "hook"]  # both were tried first
    events = json.loads(edda(store, "log", "--json", daemon=False).stdout)["events"]
    assert sum(1 for e in events if e["envelope"]["type"] == "observation") == 1  # once


def _nobody_python() -> str | None:
    """An interpreter another user can run (the suite's may live under /root)."""
    for candidate in ("/usr/bin/python3", "/usr/local/bin/python3"):
        if os.path.exists(candidate):
            proc = subprocess.run([candidate, "-c", "pass"], user=65534, capture_output=True)
            if proc.returncode == 0:
                return candidate
    return None


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to act as another user")
def test_another_user_is_refused(daemon: Path) -> None:
    python = _nobody_python()
    if python is None:
        pytest.skip("no Python interpreter that user nobody can run")
    sock = socket_path(locate(daemon))
    directory = os.path.dirname(sock)
    # The child reaches the socket through a directory descriptor, past the
    # test's private temporary directories, as if it had a way there.
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    probe = (
        "import json, socket, sys\n"
        f"path = '/proc/self/fd/{fd}/{os.path.basename(sock)}'\n"
        "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
        "try:\n"
        "    s.connect(path)\n"
        "except PermissionError:\n"
        "    print('EACCES'); sys.exit()\n"
        "data = json.dumps({'op': 'ping'}).encode()\n"
        "try:\n"
        "    s.sendall(len(data).to_bytes(4, 'big') + data)\n"
        "    print('ANSWER' if s.recv(4) else 'CLOSED')\n"
        "except (BrokenPipeError, ConnectionResetError):\n"
        "    print('CLOSED')\n"
    )

    def probe_as_nobody() -> str:
        proc = subprocess.run(
            [python, "-c", probe], user=65534, pass_fds=(fd,), capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    try:
        assert probe_as_nobody() == "EACCES"  # mode 0600 in a 0700 directory
        os.chmod(directory, 0o711)
        os.chmod(sock, 0o777)
        assert probe_as_nobody() == "CLOSED"  # through the modes, the daemon still refuses
    finally:
        os.close(fd)
        os.chmod(directory, 0o700)
        os.chmod(sock, 0o600)
    log = Path(daemon_dir(locate(daemon)), "daemon.log").read_text()
    assert "refused a connection from another user" in log
    assert status(daemon)["running"] is True


def test_a_deep_repository_keeps_its_socket_in_a_private_runtime_dir(tmp_path: Path) -> None:
    deep = tmp_path.joinpath(*(["a-rather-long-directory-name"] * 4), "repo")
    repo = make_repo(deep, events=3)
    # A short runtime dir: the fallback must itself fit a socket address.
    runtime = Path(
        tempfile.mkdtemp(prefix="rt", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    )
    runtime.chmod(0o755)
    env = {"XDG_RUNTIME_DIR": str(runtime)}
    try:
        assert edda(repo, "daemon", "start", **env).returncode == 0
        sockets = list(runtime.glob(f"gitmem-{os.getuid()}/*.sock"))
        assert len(sockets) == 1
        assert stat.S_IMODE(sockets[0].parent.stat().st_mode) == 0o700
        proc = edda(repo, "search", "note", **env)
        assert proc.returncode == 0 and "note" in proc.stdout
        assert json.loads(edda(repo, "daemon", "status", "--json", **env).stdout)["requests"] == 1
    finally:
        edda(repo, "daemon", "stop", **env)
        shutil.rmtree(runtime, ignore_errors=True)


# -- pieces --------------------------------------------------------------------------------
def test_the_idle_timeout_setting(tmp_path: Path) -> None:
    from gitmem.daemon.server import DEFAULT_IDLE_TIMEOUT, idle_timeout_of
    from gitmem.errors import UsageError

    repo = make_repo(tmp_path / "repo")
    location = locate(repo)
    assert idle_timeout_of(location) == DEFAULT_IDLE_TIMEOUT == 600
    for value, seconds in (("90", 90), ("30s", 30), ("10m", 600), ("1h", 3600), ("1.5m", 90)):
        git(repo, "config", "edda.daemon.idleTimeout", value)
        assert idle_timeout_of(location) == seconds
    for bad in ("soon", "0", "-5m", "8d", "m"):
        git(repo, "config", "edda.daemon.idleTimeout", bad)
        with pytest.raises(UsageError, match="idleTimeout"):
            idle_timeout_of(location)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(), json_values, max_size=6))
def test_frames_round_trip(message: dict[str, object]) -> None:
    a, b = socket.socketpair()
    with a, b:
        sender = threading.Thread(target=send, args=(a, message))
        sender.start()
        assert receive(b) == message
        sender.join()


@pytest.mark.parametrize(
    "raw",
    [
        b"",  # closed before a frame
        b"\x00\x00",  # half a length
        b"\x00\x00\x00\x09{}",  # shorter than it says
        b"\x00\x00\x00\x02[]",  # not an object
        b"\x00\x00\x00\x02\xff\xfe",  # not UTF-8
        b"\x00\x00\x00\x05{bad}",  # not JSON
        (MAX_FRAME + 1).to_bytes(4, "big"),  # too large
    ],
)
def test_bad_frames_are_refused(raw: bytes) -> None:
    a, b = socket.socketpair()
    with a, b:
        a.sendall(raw)
        a.shutdown(socket.SHUT_WR)
        with pytest.raises(WireError):
            receive(b)


def test_a_daemon_left_over_from_an_upgrade_leaves(daemon: Path) -> None:
    from gitmem.ipc.client import environment
    from gitmem.ipc.wire import build_id

    protocol, version, place = build_id().split(":", 2)
    pid = status(daemon)["pid"]
    assert isinstance(pid, int)
    sock = socket_path(locate(daemon))

    def ask(build: str) -> dict[str, object]:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(sock)
            send(conn, {"op": "cli", "build": build, "env": environment(), "deadline": 2e9})
            return receive(conn)

    # Another installation's client: refused, and the daemon stays.
    assert ask(f"{protocol}:{version}:/elsewhere") == {"ok": False, "error": "mismatch"}
    assert status(daemon)["pid"] == pid
    # This installation upgraded: refused, and the daemon exits for a new one.
    assert ask(f"{protocol}:{version}.post1:{place}") == {"ok": False, "error": "mismatch"}
    assert wait_for(lambda: not alive(pid), 10)
