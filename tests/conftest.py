"""Shared fixtures: real git repositories in temp dirs, git identity and config isolated.

One-line helpers:

* ``make_repo(path, events=N, branches=M)``: a repository with N notes spread over M branches;
* ``scratch_repo(path)``: an empty repository with fsync off, for tests where durability
  is not under test; the ``store`` fixture is one in the test's temp dir;
* ``pack_objects(repo)``: a prepared repository made cheap to copy (``shutil.copytree``),
  for module fixtures that build once and hand each test a copy;
* ``make_remote(root)`` / ``clone(remote, dest)``: a bare remote with a code commit on
  main, and a real ``git clone`` of it (fsync off);
* ``cli(repo, *args)`` / ``run_cli``: run ``git edda`` in this process, returns (exit code, stdout, stderr);
* ``cli_process(repo, *args)``: the same in a real subprocess (for tests about the process);
* ``git(repo, *args)``: run the real git CLI, returns stdout;
* ``fsck(repo)``: strict ``git fsck`` passes; ``raw_id_counts(repo)``: event ids counted from raw objects;
* ``capture_process(cwd, data)``: the real ``gitmem-capture`` process, data on stdin;
* ``object_bytes(repo)``: every object git can find in ``repo``, reachable or not (for leaks).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))


def _memory_backed_tmp() -> None:
    """Put the suite's temporary files (about 700 MB of small files and git
    objects a run) in RAM when the machine offers a tmpfs: on a journaling
    disk their creation and removal cost more system time than the tests'
    own work (a full run measured 200 s on ext4, 140 s on /dev/shm). Set
    before pytest picks its base directory and before xdist starts workers,
    which inherit it; a TMPDIR the user set wins."""
    shm = "/dev/shm"
    if os.environ.get("TMPDIR") or not os.path.isdir(shm) or not os.access(shm, os.W_OK):
        return
    stats = os.statvfs(shm)
    if stats.f_bavail * stats.f_frsize >= 4 << 30:  # room for a run, failures kept
        os.environ["TMPDIR"] = shm
        tempfile.tempdir = None  # forget a directory chosen before this ran


_memory_backed_tmp()

# As ``git edda`` does in its process (gitmem.cli.main.main): numpy's OpenBLAS
# would otherwise keep a spinning thread per core after each call, taking CPU
# from the other pytest worker on a 2-core machine. Set before numpy loads; it
# is inherited by every subprocess a test starts.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


# Property tests check properties, not speed: no per-example deadline and no
# health check that times data generation, both of which a loaded machine
# fails. (A test's own @settings still overrides what it names.)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int | None:
    """``-n auto`` (the README's command): one worker more than the CPUs this
    process may use. The suite's tests spend about a sixth of their time
    waiting on subprocesses, locks, sleeps and the real Claude Code CLI; a
    spare worker fills those gaps (two cores: 3 min 27 s with two workers,
    3 min 5 s with three). ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides
    when set."""
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own implementation reads it
    from gitmem.sidecar.cpus import usable_cpus

    return usable_cpus() + 1


settings.register_profile("gitmem", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("gitmem")


@contextmanager
def isolated_environment(home: Path) -> Iterator[None]:
    """No user or system git config, a fixed identity, no GIT_*/GITMEM_* leaking in
    (also for module-scoped fixtures, which run outside ``isolated_git``)."""
    config = home / ".gitconfig"
    # git's default template puts 13 sample hooks, a description and
    # info/exclude in every repository it creates: half the files of a new
    # repository, on a suite that creates thousands. An empty hooks directory
    # keeps the layout gitmem installs its hooks into.
    template = home / "git-template"
    (template / "hooks").mkdir(parents=True)
    # Refreshes embed for edda.embed.budget seconds and leave the rest for
    # later: under a time limit, what a test finds would depend on the
    # machine's load. Here every text is embedded; the tests of the budget
    # set it in their repository.
    config.write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n"
        f'[init]\n\tdefaultBranch = main\n\ttemplateDir = "{template}"\n'
        '[protocol "file"]\n\tallow = always\n'
        '[edda "embed"]\n\tbudget = 3600\n'
    )
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name in list(os.environ):
            if name.startswith(("GIT_", "GITMEM_")) or name in ("CLAUDECODE",):
                monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("HOME", str(home))
        monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
        monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
        monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
        monkeypatch.setenv("PYTHONPATH", str(ROOT))
        # No test starts a warm daemon unless it asks for one (tests/test_daemon.py):
        # one would outlive the test, and answer for code the test did not expect.
        monkeypatch.setenv("GITMEM_DAEMON", "0")
        yield


@pytest.fixture(autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every test runs with git's identity and config isolated."""
    with isolated_environment(tmp_path_factory.mktemp("home")):
        yield


def git(repo: Path | str, *args: str, input: str | None = None, check: bool = True) -> str:
    """Run the real git CLI in ``repo`` and return its stdout."""
    proc = subprocess.run(["git", *args], cwd=repo, input=input, capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def init_repo(path: Path, *, bare: bool = False, commit: bool = True) -> Path:
    """``git init`` (optionally bare) with one empty commit on main."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", *(["--bare"] if bare else []))
    if commit and not bare:
        git(path, "commit", "-q", "--allow-empty", "-m", "initial")
    return path


def make_repo(path: Path, events: int = 0, branches: int = 1, *, bare: bool = False) -> Path:
    """A repository with ``events`` notes spread round-robin over ``branches`` branches
    (``main``, ``b1``, ``b2`` …), committed in one batch per branch."""
    from gitmem.capture.sealer import Draft
    from gitmem.memory.api import Memory

    init_repo(path, bare=bare)
    names = ["main"] + [f"b{i}" for i in range(1, branches)]
    for name in names[1:]:
        git(path, "branch", name)
    if events:
        with Memory.open(path) as mem:
            drafts = [
                Draft(
                    "note", {"text": f"note {i}", "tags": [f"t{i % 3}"]}, branch=names[i % branches]
                )
                for i in range(events)
            ]
            mem.append_many(drafts)
    return path


def scratch_repo(path: Path) -> Path:
    """An empty repository (one empty commit on main) with fsync off: for tests
    where durability is not under test (the writes behave the same without it)."""
    init_repo(path)
    git(path, "config", "edda.fsync", "false")
    return path


def pack_objects(repo: Path) -> Path:
    """Pack the loose objects of ``repo``: a copy of it is then a few dozen
    files, not hundreds (a copy takes a quarter of the time). Object ids, refs
    and gitmem's state are unchanged."""
    git(repo, "repack", "-a", "-d", "-q")
    git(repo, "prune-packed")
    return repo


def make_remote(root: Path, *, code_commits: int = 1) -> Path:
    """A bare remote ``root/remote.git`` whose ``main`` holds ``code_commits`` commits."""
    seed = init_repo(root / "seed")
    for i in range(1, code_commits):
        git(seed, "commit", "-q", "--allow-empty", "-m", f"code {i}")
    bare = init_repo(root / "remote.git", bare=True)
    git(seed, "push", "-q", str(bare), "main")
    return bare


def clone(remote: Path | str, dest: Path, *options: str) -> Path:
    """``git clone [options] remote dest`` (a path or a URL), with fsync off for gitmem writes."""
    url = remote.as_uri() if isinstance(remote, Path) else remote
    git(dest.parent, "clone", "-q", *options, url, str(dest))
    git(dest, "config", "edda.fsync", "false")
    return dest


def cli_process(repo: Path | str, *args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    """Run ``git edda ARGS -C repo`` in a subprocess: a real process, a real exit
    code, ``os._exit`` and all. For tests about the process itself."""
    proc = subprocess.run(
        [sys.executable, "-m", "gitmem.cli.main", *args, "-C", str(repo)],
        input=stdin,
        capture_output=True,
    )
    return proc.returncode, proc.stdout.decode(), proc.stderr.decode()


def cli(repo: Path | str, *args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    """Run ``git edda ARGS -C repo`` (in this process: see :func:`run_cli`)."""
    return run_cli(repo, *args, stdin=stdin)


def run_cli(repo: Path | str, *args: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    """Run ``git edda ARGS -C repo`` in this process: (exit code, stdout, stderr).

    About 50x faster than :func:`cli`; use it unless the test is about the
    process itself (exit through ``os._exit``, signals, imports)."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from gitmem.cli.main import run

    # Byte-backed streams, as a process has: commands write bundles to .buffer.
    out_bytes, err_bytes = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_bytes, encoding="utf-8", write_through=True)
    err = io.TextIOWrapper(err_bytes, encoding="utf-8", write_through=True)
    saved = sys.stdin
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin or b""), encoding="utf-8")
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = run([*args, "-C", str(repo)])
    finally:
        sys.stdin = saved
    return code, out_bytes.getvalue().decode(), err_bytes.getvalue().decode()


def capture_process(
    cwd: Path | str,
    data: bytes | str,
    *args: str,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run the real ``gitmem-capture`` in ``cwd`` with ``data`` on stdin (bytes out)."""
    return subprocess.run(
        [sys.executable, "-m", "gitmem.capture.main", *args],
        input=data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data,
        cwd=cwd,
        env=env,
        capture_output=True,
        timeout=60,
    )


def object_bytes(repo: Path) -> bytes:
    """The contents of every object git can find in ``repo`` (reachable or not)."""
    return subprocess.run(
        ["git", "cat-file", "--batch-all-objects", "--batch"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout


def ref_tip(repo: Path, ref: str) -> str | None:
    """The commit ``ref`` points at, or None when it does not exist."""
    proc = subprocess.run(
        ["git", "rev-parse", "-q", "--verify", ref + "^{commit}"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    return proc.stdout.strip() or None


def store_snapshots(repo: Path, ref: str = "refs/edda/payloads") -> list[str]:
    """The snapshot commits of the payload store at ``ref``, with git alone:
    each partition a format-2 store names (gitlinks), or the store itself
    when format 1 wrote it. Empty when there is no store."""
    tip = ref_tip(repo, ref)
    if tip is None:
        return []
    entries = git(repo, "ls-tree", tip).splitlines()
    if entries and all(line.startswith("160000 commit ") for line in entries):
        return [line.split()[2] for line in entries]
    return [tip]


def payload_files(repo: Path, ref: str = "refs/edda/payloads") -> list[str]:
    """Every file path (``p/..``, ``b/..``) in the payload store's partitions."""
    paths: list[str] = []
    for snapshot in store_snapshots(repo, ref):
        paths += git(repo, "ls-tree", "-r", "--name-only", snapshot).split()
    return sorted(paths)


def payload_blob_id(repo: Path, path: str, ref: str = "refs/edda/payloads") -> str | None:
    """The blob at ``path`` (``layout.payload_path(id)``) in the store's partitions."""
    for snapshot in store_snapshots(repo, ref):
        oid = ref_tip_of(repo, f"{snapshot}:{path}")
        if oid:
            return oid
    return None


def ref_tip_of(repo: Path, spec: str) -> str | None:
    proc = subprocess.run(
        ["git", "rev-parse", "-q", "--verify", spec], cwd=repo, capture_output=True, text=True
    )
    return proc.stdout.strip() or None


def fsck(repo: Path) -> None:
    """``git fsck --full --strict`` passes with nothing suspicious in its output."""
    proc = subprocess.run(
        ["git", "fsck", "--full", "--strict"], cwd=repo, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for word in ("error", "missing", "broken", "corrupt", "bad "):
        assert word not in (proc.stdout + proc.stderr).lower(), proc.stdout + proc.stderr


def raw_id_counts(repo: Path) -> Counter[str]:
    """How often each event id occurs in the event chains, counted from the raw git
    objects with pygit2 (gitmem's own readers deduplicate, so they cannot show a duplicate)."""
    import pygit2

    r = pygit2.Repository(str(repo))
    counts: Counter[str] = Counter()
    seen: set[str] = set()
    for name in r.references:
        if not (name.startswith("refs/edda/branches/") or name == "refs/edda/detached"):
            continue
        stack = [r.references[name].resolve().target]
        while stack:
            oid = stack.pop()
            if str(oid) in seen:
                continue
            seen.add(str(oid))
            commit = r[oid]
            stack.extend(commit.parent_ids)
            try:
                events = commit.tree["events"]
            except KeyError:
                continue
            for entry in r[events.id]:
                counts[json.loads(r[entry.id].data)["id"]] += 1
    return counts


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with one empty commit on main and no memory."""
    return make_repo(tmp_path / "repo")


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """An empty repository with fsync off (:func:`scratch_repo`), for a test to fill."""
    return scratch_repo(tmp_path / "repo")
