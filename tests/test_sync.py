"""Sync through real git remotes: ``git edda pull | push | sync`` and ``Memory.sync``.

Every test builds real repositories in temporary directories: a bare remote
(seeded with a code commit on ``main``) and clones of it made with the real
``git clone``. Memory travels over ``file://`` URLs and, in one test, over
``git://`` through a ``git daemon`` on 127.0.0.1. Convergence is checked with
the real git CLI (``git for-each-ref``, ``git fsck``, ``git log``), and
duplicates from the raw objects (:func:`conftest.raw_id_counts`).
"""

from __future__ import annotations

import json
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import (
    cli,
    clone,
    fsck,
    git,
    init_repo,
    make_remote,
    object_bytes,
    raw_id_counts,
    store_snapshots,
)
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import gitmem.sync.transport as transport
from gitmem import Memory
from gitmem.sync.protocol import SyncReport

SECRET = "s3cr3t-value-xyz"
MEMORY_REFS = ("refs/edda/branches", "refs/edda/detached", "refs/edda/payloads", "refs/edda/store")


# helpers -----------------------------------------------------------------------------
def note(repo: Path, text: str, **scope: str) -> str:
    """Append one note in ``repo``; return its event id."""
    with Memory.open(repo) as mem:
        return mem.note(text, **scope).id


def event_ids(repo: Path) -> set[str]:
    with Memory.open(repo) as mem:
        return {e.id for e in mem.events(all_branches=True)}


def memory_refs(repo: Path) -> str:
    """``git for-each-ref`` of the memory refs proper (not the mirrors)."""
    return git(repo, "for-each-ref", *MEMORY_REFS)


def sync(repo: Path, remote: str | None = None) -> SyncReport:
    """``Memory.sync`` (pull and push) in ``repo``."""
    with Memory.open(repo) as mem:
        return mem.sync(remote)


def edda_json(repo: Path, *args: str) -> dict:
    code, out, err = cli(repo, *args, "--json")
    assert code == 0, (args, code, out, err)
    return json.loads(out)


def partition_names(repo: Path) -> list[str]:
    """The payload store's partitions (one per ISO week of the events)."""
    return git(repo, "ls-tree", "--name-only", "refs/edda/payloads").split()


def payload_blobs(repo: Path, ref: str = "refs/edda/payloads") -> bytes:
    """The bytes of every blob in the payload store at ``ref`` (every partition)."""
    listing = "".join(git(repo, "ls-tree", "-r", s) for s in store_snapshots(repo, ref))
    out = b""
    for line in listing.splitlines():
        meta, _path = line.split("\t", 1)
        _mode, kind, oid = meta.split()
        if kind == "blob":
            out += subprocess.run(
                ["git", "cat-file", "blob", oid], cwd=repo, capture_output=True, check=True
            ).stdout
    return out


def shallow_list(repo: Path) -> list[str]:
    path = repo / ".git" / "shallow"
    return path.read_text().split() if path.exists() else []


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    return make_remote(tmp_path)


@pytest.fixture
def git_daemon(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A ``git daemon`` serving ``tmp_path/served`` on 127.0.0.1 (push enabled).

    Yields (base URL, served directory); the daemon is terminated afterwards.
    """
    served = tmp_path / "served"
    served.mkdir()
    port = free_port()
    proc = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--enable=receive-pack",
            f"--base-path={served}",
            "--listen=127.0.0.1",
            f"--port={port}",
            str(served),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"git daemon exited: {proc.stderr.read().decode() if proc.stderr else ''}"
                )
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("git daemon did not start listening")
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}", served
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# 1. file:// ------------------------------------------------------------------------
def test_two_clones_converge_over_file_url(tmp_path: Path, remote: Path) -> None:
    """Two clones of a bare remote over file://: A's memory reaches B by sync/pull;
    after both diverge on main, sync A, B, A leaves A, B and the remote with the same
    memory refs and payload store, no duplicated events, and a repository that
    plain git (fsck, log) is happy with."""
    url = remote.as_uri()
    a = clone(url, tmp_path / "a")
    b = clone(url, tmp_path / "b")

    first = note(a, "from A, first")
    code, out, err = cli(a, "sync")
    assert code == 0, err
    code, out, err = cli(b, "pull")
    assert code == 0, err
    assert "pulled main" in out
    assert first in event_ids(b)

    # Diverge: both clones write on main before either syncs.
    a_ids = {note(a, f"A {i}") for i in range(2)}
    b_ids = {note(b, f"B {i}") for i in range(2)}
    for repo in (a, b, a):
        code, out, err = cli(repo, "sync")
        assert code == 0, (out, err)

    everything = {first} | a_ids | b_ids
    refs = memory_refs(remote)
    assert "refs/edda/branches/main" in refs and "refs/edda/payloads" in refs
    assert memory_refs(a) == refs
    assert memory_refs(b) == refs
    # The remote also holds the base of its partition's snapshot, a transfer
    # aid never read as memory (spec/sync.md, "Incremental transfer").
    on_remote = git(remote, "for-each-ref", "refs/edda").splitlines(keepends=True)
    assert any("\trefs/edda/store-base/" in line for line in on_remote)
    shared = "".join(line for line in on_remote if "store-base/" not in line)
    assert git(a, "for-each-ref", "refs/edda") == shared
    assert git(b, "for-each-ref", "refs/edda") == shared
    for repo in (a, b):
        assert event_ids(repo) == everything
        counts = raw_id_counts(repo)
        assert set(counts) == everything
        assert max(counts.values()) == 1, counts
        fsck(repo)
        log = git(repo, "log", "--format=%H %an", "refs/edda/branches/main")
        assert len(log.splitlines()) >= 4
    fsck(remote)
    assert raw_id_counts(remote) == raw_id_counts(a)
    # The merge made by B's sync is canonical: author gitmem, two sorted parents.
    tip = git(a, "rev-parse", "refs/edda/branches/main").strip()
    parents = git(a, "log", "-1", "--format=%P", tip).split()
    assert len(parents) == 2 and parents == sorted(parents)
    assert git(a, "log", "-1", "--format=%an", tip).strip() == "gitmem"


# 2. git:// -------------------------------------------------------------------------
def test_push_and_pull_through_git_daemon(tmp_path: Path, git_daemon: tuple[str, Path]) -> None:
    """Memory travels over git:// (a real ``git daemon`` on 127.0.0.1 with
    receive-pack enabled): A pushes, B pulls and sees A's events; the remote's
    memory refs equal A's."""
    base, served = git_daemon
    bare = make_remote(tmp_path / "src")
    git(tmp_path, "clone", "-q", "--bare", str(bare), str(served / "remote.git"))
    url = f"{base}/remote.git"
    a = clone(url, tmp_path / "a")
    b = clone(url, tmp_path / "b")

    ids = {note(a, f"over git:// {i}") for i in range(3)}
    report = edda_json(a, "push")
    assert [m["ref"] for m in report["pushed"]] == ["refs/edda/branches/main"]
    assert report["pushed"][0]["events"] == 3
    assert report["payloads_pushed"] is True
    assert memory_refs(served / "remote.git") == memory_refs(a)

    report = edda_json(b, "pull")
    assert report["remote"] == "origin"
    assert [m["outcome"] for m in report["pulled"]] == ["created"]
    assert event_ids(b) == ids
    assert memory_refs(b) == memory_refs(a)
    # The mirror of a configured remote lives under its name.
    assert git(b, "for-each-ref", "--format=%(refname)", "refs/edda-remotes/origin/").split() == [
        "refs/edda-remotes/origin/branches/main",
        "refs/edda-remotes/origin/payloads",
        *(f"refs/edda-remotes/origin/store/{name}" for name in partition_names(b)),
    ]


# 3. bootstrap ----------------------------------------------------------------------
def test_init_bootstraps_memory_in_a_fresh_clone(tmp_path: Path, remote: Path) -> None:
    """``git edda init`` in a fresh clone (no refs/edda) pulls the remote's memory."""
    url = remote.as_uri()
    a = clone(url, tmp_path / "a")
    ids = {note(a, f"bootstrap me {i}") for i in range(2)}
    assert cli(a, "push")[0] == 0

    c = clone(url, tmp_path / "c")
    assert git(c, "for-each-ref", "refs/edda") == ""
    info = edda_json(c, "init")
    boot = info["bootstrap"]
    assert boot["remote"] == "origin"
    assert boot["pulled"] is True
    assert boot["report"]["bootstrapped"] is True
    assert event_ids(c) == ids
    assert memory_refs(c) == memory_refs(a)

    # Idempotent: a second init has memory already and does not bootstrap again.
    assert edda_json(c, "init")["bootstrap"] is None


def test_init_without_remote_memory_does_not_pull(tmp_path: Path, remote: Path) -> None:
    """``git edda init`` where the remote has no memory: bootstrap reports pulled False."""
    c = clone(remote.as_uri(), tmp_path / "c")
    boot = edda_json(c, "init", "--no-hooks")["bootstrap"]
    assert boot == {"remote": "origin", "pulled": False}
    assert git(c, "for-each-ref", "refs/edda") == ""


# 4. shallow ------------------------------------------------------------------------
def test_pull_repairs_memory_truncated_by_a_shallow_fetch(tmp_path: Path) -> None:
    """A --depth 1 fetch of refs/edda/* cuts the memory chain short; ``git edda pull``
    fetches the memory history whole (shallow_repaired) while the code history of
    the --depth 1 clone stays shallow."""
    remote = make_remote(tmp_path, code_commits=3)
    url = remote.as_uri()
    a = clone(url, tmp_path / "a")
    ids = set()
    for i in range(4):  # four separate appends: a chain of several commits
        ids.add(note(a, f"deep {i}"))
    assert cli(a, "push")[0] == 0
    assert int(git(remote, "rev-list", "--count", "refs/edda/branches/main")) >= 4

    d = clone(url, tmp_path / "d", "--depth", "1")
    code_tip = git(d, "rev-parse", "HEAD").strip()
    assert shallow_list(d) == [code_tip]
    git(d, "fetch", "-q", "--depth", "1", "origin", "+refs/edda/*:refs/edda/*")
    memory_tip = git(d, "rev-parse", "refs/edda/branches/main").strip()
    assert memory_tip in shallow_list(d)
    assert len(event_ids(d)) < len(ids)  # truncated: older events invisible

    report = edda_json(d, "pull")
    assert report["shallow_repaired"] is True
    assert event_ids(d) == ids
    assert memory_tip not in shallow_list(d)
    for oid in shallow_list(d):  # only code commits remain at the boundary
        assert git(d, "cat-file", "-t", oid).strip() == "commit"
        assert "gitmem" not in git(d, "log", "-1", "--format=%an", oid)
    assert code_tip in shallow_list(d)
    assert git(d, "rev-list", "--count", "HEAD").strip() == "1"
    assert memory_refs(d) == memory_refs(remote)
    fsck(d)

    # Nothing left to repair the next time.
    assert edda_json(d, "pull")["shallow_repaired"] is False


# 5. redaction ----------------------------------------------------------------------
def test_redaction_travels_and_stale_clone_does_not_resurrect_payload(
    tmp_path: Path, remote: Path
) -> None:
    """A redaction made in A reaches B (payload gone, purge leaves no bytes); a stale
    clone C still holding the payload syncs afterwards without putting it back on
    the remote, and its own copy is redacted too."""
    url = remote.as_uri()
    a = clone(url, tmp_path / "a")
    b = clone(url, tmp_path / "b")
    c = clone(url, tmp_path / "c")
    secret_id = note(a, f"the token is {SECRET}")
    keep_id = note(a, "harmless")
    assert cli(a, "sync")[0] == 0
    for repo in (b, c):
        assert cli(repo, "pull")[0] == 0
        with Memory.open(repo) as mem:
            assert SECRET in json.dumps(mem.get(secret_id).body)

    with Memory.open(a) as mem:
        mem.redact(secret_id, "leaked token")
    assert cli(a, "sync")[0] == 0
    assert SECRET.encode() not in payload_blobs(remote)

    report = edda_json(b, "pull")
    assert report["payloads_removed"] >= 1
    with Memory.open(b) as mem:
        event = mem.get(secret_id)
        assert event.redacted and event.body is None
        assert mem.get(keep_id).body is not None
        mem.purge()
        assert mem.verify().ok
    assert SECRET.encode() not in object_bytes(b)

    # C is stale: it still holds the payload and has not seen the redaction.
    assert SECRET.encode() in payload_blobs(c)
    code, out, err = cli(c, "sync")
    assert code == 0, (out, err)
    with Memory.open(c) as mem:
        event = mem.get(secret_id)
        assert event.redacted and event.body is None
        assert mem.get(keep_id).body is not None
    assert SECRET.encode() not in payload_blobs(c)
    assert SECRET.encode() not in payload_blobs(remote)
    assert memory_refs(c) == memory_refs(remote)

    assert cli(b, "pull")[0] == 0
    with Memory.open(b) as mem:
        event = mem.get(secret_id)
        assert event.redacted and event.body is None
    assert SECRET.encode() not in payload_blobs(b)
    assert SECRET.encode() not in object_bytes(b)


# 6. plain git unaffected -----------------------------------------------------------
def _plain_git_state(repo: Path) -> dict[str, str]:
    fetch_head = repo / ".git" / "FETCH_HEAD"
    return {
        "refs": git(repo, "for-each-ref", "refs/remotes", "refs/heads"),
        "fetch_head": fetch_head.read_text() if fetch_head.exists() else "<absent>",
        "remote_config": git(repo, "config", "--get-regexp", r"^remote\.", check=False),
        "branch_r": git(repo, "branch", "-r"),
    }


def test_plain_git_is_unaffected(tmp_path: Path, remote: Path) -> None:
    """Sync never touches refs/remotes, FETCH_HEAD or remote.* config; a plain
    ``git fetch --prune`` leaves memory and its mirror alone; a plain
    ``git push origin main`` (no pre-push hook) pushes code only."""
    url = remote.as_uri()
    a = clone(url, tmp_path / "a")
    note(a, "existing memory")
    assert cli(a, "push")[0] == 0

    e = clone(url, tmp_path / "e")
    info = edda_json(e, "init")  # hooks + bootstrap
    assert info["bootstrap"]["pulled"] is True
    assert "pre-push" not in (info["hooks"]["installed"] + info["hooks"]["updated"])
    note(e, "new in E")
    git(e, "fetch", "-q", "origin")  # so that FETCH_HEAD exists and has content
    before = _plain_git_state(e)
    assert before["fetch_head"] != "<absent>"

    code, out, err = cli(e, "sync")
    assert code == 0, (out, err)
    assert "pushed main" in out
    assert _plain_git_state(e) == before
    allowed = ("refs/heads/", "refs/remotes/", "refs/edda/", "refs/edda-remotes/origin/")
    for ref in git(e, "for-each-ref", "--format=%(refname)").split():
        assert ref.startswith(allowed), ref

    memory_before = git(e, "for-each-ref", "refs/edda", "refs/edda-remotes")
    assert "refs/edda-remotes/origin/branches/main" in memory_before
    git(e, "fetch", "-q", "--prune")
    assert git(e, "for-each-ref", "refs/edda", "refs/edda-remotes") == memory_before

    remote_memory = git(remote, "for-each-ref", "refs/edda")
    (e / "file.txt").write_text("code\n")
    git(e, "add", "file.txt")
    git(e, "commit", "-q", "-m", "code change")
    git(e, "push", "-q", "origin", "main")
    assert git(remote, "rev-parse", "main") == git(e, "rev-parse", "HEAD")
    assert git(remote, "for-each-ref", "refs/edda") == remote_memory


# 7. retry ----------------------------------------------------------------------------
def test_sync_retries_when_the_remote_moves_between_fetch_and_push(
    tmp_path: Path, remote: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B pushes new memory right after A's first fetch: A's push is refused as
    non-fast-forward, A fetches and merges again and succeeds (attempts >= 2)."""
    url = remote.as_uri()
    a = clone(url, tmp_path / "a")
    b = clone(url, tmp_path / "b")
    note(a, "base")
    assert cli(a, "sync")[0] == 0
    assert cli(b, "pull")[0] == 0
    a_id = note(a, "A while B pushes")
    b_id = note(b, "B sneaks in")

    real_fetch = transport.fetch
    calls: list[str] = []

    def racing_fetch(location, target, **kw):  # type: ignore[no-untyped-def]
        real_fetch(location, target, **kw)
        calls.append(str(location.cwd))
        if len(calls) == 1:
            report = sync(b)
            assert report.pushed

    monkeypatch.setattr(transport, "fetch", racing_fetch)
    report = sync(a)
    assert report.attempts >= 2
    assert report.pushed
    monkeypatch.setattr(transport, "fetch", real_fetch)

    assert memory_refs(a) == memory_refs(remote)
    with Memory.open(a) as mem:
        assert {a_id, b_id} <= {e.id for e in mem.events(all_branches=True)}
    assert cli(b, "pull")[0] == 0
    assert memory_refs(b) == memory_refs(remote)
    assert max(raw_id_counts(remote).values()) == 1
    assert {a_id, b_id} <= set(raw_id_counts(remote))


def test_sync_json_report_fields(tmp_path: Path, remote: Path) -> None:
    """``git edda sync --json`` gives the whole SyncReport; one attempt when nothing raced."""
    a = clone(remote.as_uri(), tmp_path / "a")
    note(a, "x")
    report = edda_json(a, "sync")
    assert report["attempts"] == 1
    assert set(report) >= {
        "remote",
        "pulled",
        "pushed",
        "payloads_added",
        "payloads_removed",
        "payloads_pushed",
        "code_merges",
        "bootstrapped",
        "shallow_repaired",
        "remote_has_memory",
        "attempts",
    }


# 8. property -----------------------------------------------------------------------
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("note"), st.integers(0, 2), st.sampled_from(["main", "f1"])),
        st.tuples(st.just("branch"), st.integers(0, 2)),
        st.tuples(st.just("merge"), st.integers(0, 2)),
        st.tuples(st.just("sync"), st.integers(0, 2)),
    ),
    max_size=12,
)

# Once failing sequences (merges of merge commits moved refs backwards): run first, every time.
THREE_WAY_DIVERGENCE = [("note", 0, "main"), ("note", 1, "main"), ("note", 2, "main")]


def run_ops(root: Path, ops: list[tuple], *, serialized: bool) -> tuple[list[Path], Path, set[str]]:
    """Play ``ops`` on three clones of a fresh bare remote under ``root``.

    With ``serialized``, every operation on a clone is wrapped in a sync of that
    clone before and after (pull-modify-push), so no two clones ever diverge.
    Returns (clones, remote, ids of every appended event)."""
    bare = make_remote(root)
    clones = [clone(bare.as_uri(), root / f"c{i}") for i in range(3)]
    for repo in clones:
        # Convergence is a property of every chain a clone pushes: push them all
        # (by default f1, a branch whose code is on no remote, stays local).
        git(repo, "config", "edda.push", "all")
    appended: set[str] = set()
    for n, op in enumerate(ops):
        kind, i = op[0], op[1]
        repo = clones[i]
        if serialized:
            sync(repo)
        if kind == "note":
            appended.add(note(repo, f"op {n} in c{i}", branch=op[2]))
        elif kind == "branch":
            if not git(repo, "branch", "--list", "f1").strip():
                git(repo, "branch", "f1")
        elif kind == "merge":
            with Memory.open(repo) as mem:
                if "refs/edda/branches/f1" in mem.ledger.memory_refs():
                    mem.merge("f1", "main")
        else:
            sync(repo)
        if serialized:
            sync(repo)
    return clones, bare, appended


def assert_converged(clones: list[Path], bare: Path, appended: set[str], ops: list[tuple]) -> None:
    tips = [memory_refs(repo) for repo in clones]
    assert tips[0] == tips[1] == tips[2], ops
    assert tips[0] == memory_refs(bare), ops
    for repo in clones:
        assert event_ids(repo) == appended, ops
        counts = raw_id_counts(repo)
        assert not counts or max(counts.values()) == 1, ops


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@example(ops=THREE_WAY_DIVERGENCE)
@given(ops=OPS)
def test_random_operations_converge(ops: list[tuple]) -> None:
    """Any interleaving of notes (main/f1), git branch creation, memory merges of f1
    into main and syncs over three clones converges after two sync rounds
    (0, 1, 2, then 0, 1, 2): same memory tips and payload store everywhere and on
    the remote, every appended event present exactly once."""
    with tempfile.TemporaryDirectory() as tmp:
        clones, bare, appended = run_ops(Path(tmp), ops, serialized=False)
        for _round in range(2):
            for repo in clones:
                sync(repo)
        assert_converged(clones, bare, appended, ops)


SERIAL_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("note"), st.integers(0, 2), st.sampled_from(["main", "f1"])),
        st.tuples(st.just("sync"), st.integers(0, 2)),
    ),
    max_size=12,
)


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=SERIAL_OPS)
def test_random_serialized_notes_converge(ops: list[tuple]) -> None:
    """Notes on main/f1 in
    any of three clones, each done pull-modify-push (a sync of that clone before
    and after), so no memory merge is ever needed. After two final sync rounds every
    clone and the remote hold the same memory tips and payload store, and every
    appended event exactly once."""
    with tempfile.TemporaryDirectory() as tmp:
        clones, bare, appended = run_ops(Path(tmp), ops, serialized=True)
        for _round in range(2):
            for repo in clones:
                sync(repo)
        assert_converged(clones, bare, appended, ops)


def test_memory_merge_keeps_the_previous_tip(tmp_path: Path) -> None:
    """Root cause, in one repository and without any remote: merging f1 into main
    twice (f1 gained a note in between) must move main forward, i.e. the previous
    main tip (a merge commit) stays an ancestor of the new one. Today the second
    merge flattens the first merge into its parents and main's ref moves
    non-fast-forward, which no later push without force can publish."""
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.fsync", "false")
    with Memory.open(repo) as mem:
        mem.note("a", branch="main")
        mem.note("b", branch="f1")
        assert mem.merge("f1", "main").outcome == "merged"
        first = git(repo, "rev-parse", "refs/edda/branches/main").strip()
        mem.note("c", branch="f1")
        assert mem.merge("f1", "main").outcome == "merged"
    second = git(repo, "rev-parse", "refs/edda/branches/main").strip()
    proc = subprocess.run(["git", "merge-base", "--is-ancestor", first, second], cwd=repo)
    assert proc.returncode == 0, "main's memory ref moved non-fast-forward"


def test_second_divergence_after_a_merge_converges(tmp_path: Path, remote: Path) -> None:
    """Minimal reproduction with two clones: A and B diverge, sync A, sync B (B
    pushes a merge commit M), then A writes again on its old tip and syncs. A's
    merge of its new note with M must contain M so that its push fast-forwards."""
    url = remote.as_uri()
    a = clone(url, tmp_path / "a")
    b = clone(url, tmp_path / "b")
    ids = {note(a, "A 1"), note(b, "B 1")}
    sync(a)
    sync(b)  # B pushes merge(A 1, B 1)
    remote_tip = git(remote, "rev-parse", "refs/edda/branches/main").strip()
    ids.add(note(a, "A 2"))  # on A 1: A has not pulled the merge yet
    sync(a)  # raises ConflictError today
    local_tip = git(a, "rev-parse", "refs/edda/branches/main").strip()
    assert git(a, "merge-base", "--is-ancestor", remote_tip, local_tip, check=False) == ""
    sync(b)
    assert memory_refs(a) == memory_refs(b) == memory_refs(remote)
    assert event_ids(a) == event_ids(b) == ids


def test_sync_pushes_memory_merges_of_merged_code(tmp_path: Path, remote: Path) -> None:
    """A feature branch with its own commits and memory is merged into main with
    plain git (no hooks installed); ``git edda sync`` detects the code merge and
    merges f1's memory into main's. Afterwards the remote must hold that merge:
    ``sync`` promises this clone and the remote hold the same memory."""
    a = clone(remote.as_uri(), tmp_path / "a")
    note(a, "on main")
    git(a, "checkout", "-q", "-b", "f1")
    git(a, "commit", "-q", "--allow-empty", "-m", "feature work")
    feature_id = note(a, "on f1")  # the checked-out branch: f1
    assert cli(a, "sync")[0] == 0  # remote has main and f1 memory
    git(a, "checkout", "-q", "main")
    git(a, "merge", "-q", "--no-ff", "-m", "merge f1", "f1")

    report = edda_json(a, "sync")
    assert [(m["source"], m["into"]) for m in report["code_merges"]] == [("f1", "main")]
    with Memory.open(a) as mem:
        assert feature_id in {e.id for e in mem.events(branch="main", trunk="none")}
    assert memory_refs(a) == memory_refs(remote)  # fails: main's merge was not pushed


# 9. CLI output and errors -----------------------------------------------------------
def test_push_output_then_up_to_date(tmp_path: Path, remote: Path) -> None:
    """``git edda push`` says what moved; pushing again says "up to date"."""
    a = clone(remote.as_uri(), tmp_path / "a")
    note(a, "one")
    note(a, "two")
    code, out, err = cli(a, "push")
    assert code == 0, err
    assert out.startswith("push to origin")
    assert "pushed main" in out and "+2 events" in out
    assert "pushed the payload store" in out
    code, out, err = cli(a, "push")
    assert code == 0, err
    assert "up to date" in out
    assert "pushed" not in out
    code, out, err = cli(a, "sync")
    assert code == 0 and "up to date" in out


def test_pull_from_remote_without_memory(tmp_path: Path, remote: Path) -> None:
    """Pulling from a remote with no memory says so and changes nothing."""
    a = clone(remote.as_uri(), tmp_path / "a")
    code, out, err = cli(a, "pull")
    assert code == 0, err
    assert "the remote has no memory yet" in out
    assert git(a, "for-each-ref", "refs/edda") == ""


def test_pull_without_remote_is_a_usage_error(tmp_path: Path) -> None:
    """No remote configured: exit 2 and a hint naming ``git remote add``."""
    repo = init_repo(tmp_path / "lonely")
    code, out, err = cli(repo, "pull")
    assert code == 2
    assert "git remote add" in err
    code, out, _ = cli(repo, "pull", "--json")
    assert code == 2
    assert "git remote add" in json.loads(out)["error"]["hint"]


def test_pull_from_unreachable_url_exits_8(tmp_path: Path) -> None:
    """An unreachable URL: exit 8 (remote error) with a one-line message."""
    repo = init_repo(tmp_path / "repo")
    code, out, err = cli(repo, "pull", "file:///nonexistent/remote.git")
    assert code == 8, (out, err)
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("git edda: error: could not fetch memory")


def test_url_remote_uses_hashed_mirror_namespace(tmp_path: Path, remote: Path) -> None:
    """Syncing with a URL (not a configured remote) mirrors under url-<sha1[:16]>
    and leaves remote configuration alone."""
    import hashlib

    a = clone(remote.as_uri(), tmp_path / "a")
    note(a, "to a url")
    other = init_repo(tmp_path / "other.git", bare=True)
    url = other.as_uri()
    config_before = git(a, "config", "--get-regexp", r"^remote\.")
    report = edda_json(a, "push", url)
    assert report["remote"] == url
    key = "url-" + hashlib.sha1(url.encode()).hexdigest()[:16]
    assert git(a, "for-each-ref", "--format=%(refname)", f"refs/edda-remotes/{key}/").split()
    assert git(a, "config", "--get-regexp", r"^remote\.") == config_before
    assert memory_refs(other) == memory_refs(a)


def test_pull_refuses_a_tampered_incoming_event_and_changes_nothing(tmp_path: Path) -> None:
    """An envelope whose content no longer matches its id (edited on the remote)
    stops the pull before anything merges, with an error naming the commit."""
    bare = make_remote(tmp_path)
    a = clone(bare.as_uri(), tmp_path / "a")
    b = clone(bare.as_uri(), tmp_path / "b")
    note(a, "honest")
    sync(a)
    mine = note(b, "local work")
    before = memory_refs(b)
    # forge a commit on the remote's main chain whose envelope was edited
    tip = git(bare, "rev-parse", "refs/edda/branches/main").strip()
    blob = git(bare, "rev-parse", f"{tip}:events/000000").strip()
    envelope = json.loads(git(bare, "cat-file", "blob", blob))
    envelope["type"] = "decision"  # the id no longer re-derives
    forged_blob = git(
        bare,
        "hash-object",
        "-w",
        "--stdin",
        input=json.dumps(envelope, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
    ).strip()
    events = git(bare, "mktree", input=f"100644 blob {forged_blob}\t000000\n").strip()
    root = git(bare, "mktree", input=f"040000 tree {events}\tevents\n").strip()
    forged = git(
        bare, "commit-tree", root, "-p", tip, "-m", "note x\n\nEdda-Format: 1\nEdda-Events: 1"
    ).strip()
    git(bare, "update-ref", "refs/edda/branches/main", forged)
    code, out, err = cli(b, "pull")
    assert code == 4, (out, err)  # RejectedError: the documented exit code of a refused pull
    assert forged in err and "nothing was merged" in err
    assert memory_refs(b) == before
    assert mine in event_ids(b)
