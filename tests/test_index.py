"""The sidecar indexes (gitmem.index): building, refreshing, recovering, redacting.

Every test uses a real git repository and the real refresh code; the
embeddings come from the default offline ("minilm") embedder unless a test
turns them off. Property tests run a few random operation sequences, each in
a fresh repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, fsck, git, make_repo, scratch_repo
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem import Memory
from gitmem.errors import NotFoundError
from gitmem.index import table as tables
from gitmem.index.fulltext import analyze
from gitmem.index.manifest import index_root, read_manifest
from gitmem.index.refresh import is_fresh, refresh
from gitmem.index.vectors import VECTORS_FILE, key64
from gitmem.index.view import IndexView
from gitmem.memory.describe import event_text
from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter
from gitmem.retrieval.search import MODES, search
from gitmem.storage.clock import wall_us

FOREGROUND = {"GITMEM_HOOKS_FOREGROUND": "1"}
PROPERTY = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


# helpers ----------------------------------------------------------------------------
def scratch() -> tempfile.TemporaryDirectory[str]:
    """A fresh directory per hypothesis example. Cleanup errors are ignored: the
    file watcher of a Tantivy reader still open may drop a lock file in while the
    directory is being removed."""
    return tempfile.TemporaryDirectory(ignore_cleanup_errors=True)


def common_dir(repo: Path) -> Path:
    out = git(repo, "rev-parse", "--git-common-dir").strip()
    return (repo / out).resolve()


def root_of(repo: Path) -> Path:
    with Memory.open(repo) as mem:
        return index_root(mem.location)


def generation(repo: Path) -> Path:
    root = root_of(repo)
    manifest = read_manifest(root)
    assert manifest is not None
    return root / manifest.generation


def rows(view: IndexView, drop: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The events table as plain Python rows (copied: the files may go away)."""
    out = view.table.to_pylist()
    for row in out:
        for name in drop:
            row.pop(name)
    return out


def member_pairs(view: IndexView) -> set[tuple[str, str]]:
    return {(r["ref"], r["commit"]) for r in view.members.to_pylist()}


def all_files(root: Path) -> Iterator[Path]:
    for directory, _dirs, names in os.walk(root):
        for name in names:
            yield Path(directory) / name


def files_containing(root: Path, needle: bytes) -> list[str]:
    return [str(p) for p in all_files(root) if needle in p.read_bytes()]


def search_ids(view: IndexView, query: str, **kw: Any) -> list[str]:
    return [h.event.id for h in search(view, query, all_branches=True, **kw).hits]


def hgit(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """git with gitmem's hooks doing their work before git returns."""
    env = {**os.environ, **FOREGROUND}
    proc = subprocess.run(["git", *args], cwd=repo, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc


def hooks_log(repo: Path) -> str:
    path = common_dir(repo) / "edda" / "log" / "hooks.log"
    return path.read_text() if path.exists() else ""


def ids(events: list[Any]) -> list[str]:
    return [e.id for e in events]


# full build, incremental refresh, nothing to do ---------------------------------------
def test_full_then_incremental_then_none(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        first = [mem.note(f"first batch {i}") for i in range(4)]
        report = refresh(mem)
        assert report.mode == "full"
        assert report.reason == "no usable index"
        assert report.added == report.events == 4
        assert report.vectors == 4  # the default embedder is on

        new = [mem.note(f"second batch {i}") for i in range(3)]
        new.append(mem.decide("db", "postgres", reason="second batch decision"))
        report = refresh(mem)
        assert report.mode == "incremental"
        assert report.added == len(new) == 4
        assert report.events == 8
        assert report.vectors == 4

        report = refresh(mem)
        assert report.mode == "none"
        assert report.added == 0 and report.events == 8

    with IndexView.open(repo) as view:
        assert view.report is None  # fresh: opening did not refresh
        assert ids(view.events(all_branches=True)) == ids(first + new)
        fsck(repo)

        root = common_dir(repo) / "edda" / "index"
        assert root_of(repo) == root
        manifest = read_manifest(root)
        assert manifest is not None and manifest.events == 8
        assert (root / "manifest.json").is_file()
        assert manifest.segments
        assert all((root / manifest.generation / n).is_file() for n in manifest.segments)
        assert (root / manifest.generation / manifest.fulltext).is_dir()
        assert (root / manifest.generation / VECTORS_FILE).is_file()
        # nothing of the index lives in the work tree or among the refs
        assert git(repo, "status", "--porcelain", "--ignored") == ""
        assert "index" not in git(repo, "for-each-ref", "--format=%(refname)")


def test_linked_worktree_shares_the_index(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        mem.note("shared between worktrees")
        refresh(mem)
    git(repo, "worktree", "add", "-q", str(tmp_path / "wt"), "-b", "wt")
    assert root_of(tmp_path / "wt") == common_dir(repo) / "edda" / "index"
    with IndexView.open(tmp_path / "wt") as view:
        assert view.report is None  # the main worktree's build is fresh here too
        assert search_ids(view, "shared worktrees")


# incremental == full: a property over random operation sequences ------------------------
IDX = st.integers(0, 20)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("note"), IDX, IDX),
        st.tuples(st.just("decide"), IDX, st.integers(0, 3)),
        st.tuples(st.just("fork"), IDX, st.just(0)),
        st.tuples(st.just("merge"), IDX, IDX),
        st.tuples(st.just("merge"), st.just(1), st.just(0)),  # b1 into main, once it exists
        st.tuples(st.just("redact"), st.integers(0, 100), st.just(0)),
        st.tuples(st.just("refresh"), st.just(0), st.just(0)),
    ),
    min_size=4,
    max_size=16,
)


def _run_ops(repo: Path, mem: Memory, ops: list[tuple[str, int, int]]) -> list[str]:
    """Apply ``ops`` (refreshing incrementally in between); returns the refresh modes.
    Branch operands index the branches that exist so far (main, then b1, b2)."""
    branches = ["main"]
    written: list[str] = []
    modes = [refresh(mem).mode]
    for op, a, b in ops:
        branch = branches[a % len(branches)]
        if op == "note":
            written.append(mem.note(f"note {b} about widget{b % 7}", branch=branch).id)
        elif op == "decide":
            written.append(mem.decide(f"key{b}", f"value on {branch}", branch=branch).id)
        elif op == "fork" and len(branches) < 3:
            new = f"b{len(branches)}"
            git(repo, "checkout", "-q", branch)
            git(repo, "checkout", "-q", "-b", new)  # as post-checkout does: fork memory now
            mem.fork(new)
            branches.append(new)
            written.append(mem.note(f"first on {new}", branch=new).id)
        elif op == "merge":
            into = branches[b % len(branches)]
            if into != branch:
                try:
                    mem.merge(branch, into=into)
                except NotFoundError:
                    pass  # the source has no memory yet
        elif op == "redact" and written:
            mem.redact(written[a % len(written)], "property test")
        elif op == "refresh":
            modes.append(refresh(mem).mode)
    modes.append(refresh(mem).mode)
    return modes


@PROPERTY
@given(ops=OPS)
def test_incremental_refreshes_equal_a_full_rebuild(ops: list[tuple[str, int, int]]) -> None:
    with scratch() as tmp:
        repo = scratch_repo(Path(tmp) / "repo")
        with Memory.open(repo) as mem:
            modes = _run_ops(repo, mem, ops)
            assert modes[0] == "full"
            assert set(modes[1:]) <= {"incremental", "none"}
            with IndexView.open(repo, refresh=False) as inc:
                # ``ref`` (the chain an event is listed under) is checked by its own test below
                inc_rows, inc_members = rows(inc, drop=("ref",)), member_pairs(inc)
                inc_count = inc.fulltext.count()
                inc_vectors = len(inc.vectors) if inc.vectors is not None else 0
                assert refresh(mem, rebuild=True).mode == "full"
        with IndexView.open(repo, refresh=False) as full:
            assert [r["id"] for r in inc_rows] == [r["id"] for r in rows(full)]
            assert inc_rows == rows(full, drop=("ref",))
            assert inc_members == member_pairs(full)
            assert inc_count == full.fulltext.count() == sum(1 for r in inc_rows if r["text"])
            assert inc_vectors == len(full.vectors)
            ids_ = [r["id"] for r in inc_rows]
            assert len(ids_) == len(set(ids_))


def test_incremental_and_full_agree_on_the_ref_column(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        before_fork = mem.note("written on main before the fork")
        refresh(mem)
        git(repo, "checkout", "-q", "-b", "feat")
        mem.note("written on feat", branch="feat")
        refresh(mem)  # incremental: before_fork stays listed under main
        with IndexView.open(repo, refresh=False) as view:
            inc = {r["id"]: r["ref"] for r in rows(view)}
        refresh(mem, rebuild=True)
    with IndexView.open(repo, refresh=False) as view:
        full = {r["id"]: r["ref"] for r in rows(view)}
    assert inc[before_fork.id] == "refs/edda/branches/main"
    assert inc == full


# round trip: the view answers what Memory answers -----------------------------------------
TEXT = st.one_of(
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=30),
    st.sampled_from(["数据库连接池配置", "🚀 deploy 🎉 done", "naïve café über", "RetryPolicy"]),
)
EVENT = st.tuples(
    st.sampled_from(["note", "decision", "learning", "observation"]),
    TEXT,
    st.sampled_from(["main", "feat"]),
    st.sampled_from(["", "t1", "t2"]),
)


def _body(kind: str, text: str, tag: str, n: int) -> dict[str, Any]:
    tags = [tag] if tag else []
    if kind == "note":
        return {"text": text, "tags": tags, "paths": [f"src/m{n % 3}.py"]}
    if kind == "decision":
        return {"key": f"k{n % 3}", "value": text, "tags": tags}
    if kind == "learning":
        return {"text": text, "topic": "t", "tags": tags}
    return {
        "kind": "tool_call",
        "tool": "bash",
        "input": text,
        "result": text,
        "files": ["a/b.txt"],
    }


def _envelope_etc(events: list[Any]) -> list[tuple[Any, ...]]:
    return [(e.envelope, e.body, e.redacted, e.commit) for e in events]


@PROPERTY
@given(
    before=st.lists(EVENT, max_size=6),
    after=st.lists(EVENT, min_size=1, max_size=10),
    redact=st.one_of(st.none(), st.integers(0, 100)),
    midway=st.booleans(),
)
def test_view_events_round_trip(
    before: list[tuple[str, str, str, str]],
    after: list[tuple[str, str, str, str]],
    redact: int | None,
    midway: bool,
) -> None:
    with scratch() as tmp:
        repo = scratch_repo(Path(tmp) / "repo")
        written = []
        with Memory.open(repo) as mem:
            mem.note("on main before anything")
            for n, (kind, text, _branch, tag) in enumerate(before):
                written.append(mem.append(kind, _body(kind, text, tag, n), branch="main"))
            git(repo, "branch", "feat")
            git(repo, "branch", "nomem")  # a git branch whose memory never starts
            mem.fork("feat")
            if midway:
                refresh(mem)
            for n, (kind, text, branch, tag) in enumerate(after):
                written.append(mem.append(kind, _body(kind, text, tag, n), branch=branch))
            if redact is not None:
                mem.redact(written[redact % len(written)].id, "round trip")
            with IndexView.open(repo) as view:
                assert _envelope_etc(view.events(all_branches=True)) == _envelope_etc(
                    mem.events(all_branches=True)
                )
                for branch in ("main", "feat", "nomem"):
                    for trunk in (None, "decisions", "all", "none"):
                        assert ids(view.events(branch=branch, trunk=trunk)) == ids(
                            mem.events(branch=branch, trunk=trunk)
                        ), (branch, trunk)
                filters = [
                    EventFilter(types=["decision", "note"]),
                    EventFilter(tags=["t1"]),
                    EventFilter(paths=["src/"]),
                    EventFilter(paths=["*.txt"], include_redacted=False),
                ]
                for where in filters:
                    for branch in ("main", "feat"):
                        assert ids(view.events(where, branch=branch)) == ids(
                            mem.events(where, branch=branch)
                        )
                    assert ids(view.events(where, all_branches=True, limit=3)) == ids(
                        mem.events(where, all_branches=True, limit=3)
                    )
                for event in written:
                    got = view.get(event.id[:10])
                    assert (got.envelope, got.body, got.redacted) == (
                        mem.get(event.id).envelope,
                        mem.get(event.id).body,
                        mem.get(event.id).redacted,
                    )


def test_feature_branch_follows_decisions_made_on_main_after_its_fork(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        early = mem.note("main before the fork")
        git(repo, "branch", "feat")
        mem.fork("feat")
        refresh(mem)
        decision = mem.decide("orm", "sqlalchemy", branch="main")
        later_note = mem.note("main after the fork, not a decision", branch="main")
        own = mem.note("feature work", branch="feat")
        with IndexView.open(repo) as view:
            feat = ids(view.events(branch="feat"))
            assert feat == ids(mem.events(branch="feat"))
            assert early.id in feat and decision.id in feat and own.id in feat
            assert later_note.id not in feat
            assert later_note.id in ids(view.events(branch="feat", trunk="all"))
            assert decision.id not in ids(view.events(branch="feat", trunk="none"))
            found = search(view, "sqlalchemy", branch="feat").hits
            assert [h.event.id for h in found] == [decision.id]


# a rewound or deleted memory ref: full rebuild ---------------------------------------------
def test_rewound_ref_rebuilds_in_full(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        kept = mem.note("kept pelican note")
        old_tip = git(repo, "rev-parse", "refs/edda/branches/main").strip()
        dropped = mem.note("dropped pelican note")
        assert refresh(mem).events == 2
    git(repo, "update-ref", "refs/edda/branches/main", old_tip)
    with IndexView.open(repo) as view:
        assert view.report is not None and view.report.mode == "full"
        assert "refs/edda/branches/main" in view.report.reason and "rewound" in view.report.reason
        assert ids(view.events(all_branches=True)) == [kept.id]
        assert search_ids(view, "pelican") == [kept.id]
        assert dropped.id not in search_ids(view, "dropped pelican", mode="vector")


def test_deleted_ref_rebuilds_in_full(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    git(repo, "branch", "gone")
    with Memory.open(repo) as mem:
        main_note = mem.note("heron on main")
        mem.note("heron on a branch that goes away", branch="gone")
        refresh(mem)
    git(repo, "update-ref", "-d", "refs/edda/branches/gone")
    with Memory.open(repo) as mem:
        report = refresh(mem)
    assert report.mode == "full"
    assert report.reason == "refs/edda/branches/gone was deleted"
    with IndexView.open(repo) as view:
        assert search_ids(view, "heron") == [main_note.id]
        assert ids(view.events(all_branches=True)) == [main_note.id]


# missing, corrupt or foreign sidecars are never trusted ------------------------------------
def _truncate_events(root: Path, gen: Path, manifest: Any) -> None:
    with open(gen / manifest.segments[0], "r+b") as handle:
        handle.truncate(100)


def _delete_events(root: Path, gen: Path, manifest: Any) -> None:
    (gen / manifest.segments[0]).unlink()


def _garbage_members(root: Path, gen: Path, manifest: Any) -> None:
    (gen / tables.MEMBERS_FILE).write_bytes(b"\x00garbage" * 10)


def _garbage_fulltext_meta(root: Path, gen: Path, manifest: Any) -> None:
    (gen / manifest.fulltext / "meta.json").write_bytes(b"\xff\xfe garbage \x00\x01" * 8)


def _missing_fulltext(root: Path, gen: Path, manifest: Any) -> None:
    shutil.rmtree(gen / manifest.fulltext)


def _garbage_vectors(root: Path, gen: Path, manifest: Any) -> None:
    (gen / VECTORS_FILE).write_bytes(b"not a usearch index" * 20)


def _foreign_manifest(root: Path, gen: Path, manifest: Any) -> None:
    data = json.loads((root / "manifest.json").read_text())
    data["version"] = data["version"] + 1
    (root / "manifest.json").write_text(json.dumps(data))


def _corrupt_manifest(root: Path, gen: Path, manifest: Any) -> None:
    (root / "manifest.json").write_bytes(b'{"version": 1, "generation": ')


def _missing_index(root: Path, gen: Path, manifest: Any) -> None:
    shutil.rmtree(root)


DAMAGE = {
    "truncated events segment": _truncate_events,
    "missing events segment": _delete_events,
    "garbage members.arrow": _garbage_members,
    "garbage fulltext meta.json": _garbage_fulltext_meta,
    "missing fulltext dir": _missing_fulltext,
    "garbage vectors.usearch": _garbage_vectors,
    "manifest of another version": _foreign_manifest,
    "truncated manifest": _corrupt_manifest,
    "missing index": _missing_index,
}


def _damaged_repo(path: Path, damage: str) -> tuple[Path, list[Any]]:
    repo = scratch_repo(path)
    with Memory.open(repo) as mem:
        notes = [
            mem.note("the flamingo stands on one leg"),
            mem.note("the walrus sleeps on the ice"),
            mem.note("the physician prescribed medicine"),
        ]
        refresh(mem)
    root = root_of(repo)
    manifest = read_manifest(root)
    assert manifest is not None
    DAMAGE[damage](root, root / manifest.generation, manifest)
    return repo, notes


def _answers_correctly(view: IndexView, notes: list[Any]) -> None:
    assert ids(view.events(all_branches=True)) == ids(notes)
    assert view.fulltext.count() == 3
    for mode in MODES:
        assert search_ids(view, "flamingo", mode=mode)[:1] == [notes[0].id], mode
    assert search_ids(view, "walrus", mode="lexical") == [notes[1].id]
    assert search_ids(view, "doctor gave drugs", mode="vector")[:1] == [notes[2].id]


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_sidecar_is_rebuilt_by_refresh(tmp_path: Path, damage: str) -> None:
    repo, notes = _damaged_repo(tmp_path / "repo", damage)
    with Memory.open(repo) as mem:
        report = refresh(mem)
    if damage == "garbage vectors.usearch":
        # the tables are fine: only the vector index is rebuilt
        assert report.mode == "none" and report.vectors == 3
    else:
        assert report.mode == "full", report
        assert report.reason
    with IndexView.open(repo) as view:
        _answers_correctly(view, notes)
    fsck(repo)


# Opening a view rebuilds a sidecar damaged while memory did not move.
@pytest.mark.parametrize("damage", DAMAGE)
def test_damaged_sidecar_is_rebuilt_when_a_query_opens_the_view(
    tmp_path: Path, damage: str
) -> None:
    repo, notes = _damaged_repo(tmp_path / "repo", damage)
    with IndexView.open(repo) as view:
        _answers_correctly(view, notes)


def test_cli_search_survives_a_damaged_fulltext_index_after_memory_moved(tmp_path: Path) -> None:
    repo, notes = _damaged_repo(tmp_path / "repo", "garbage fulltext meta.json")
    with Memory.open(repo) as mem:
        extra = mem.note("the flamingo eats shrimp")
    code, out, err = cli(repo, "search", "flamingo", "--json", "--all-branches")
    assert code == 0, err
    # Both flamingo notes first (MiniLM's cosine of unrelated short texts,
    # ~0.15, lets the others follow them in a hybrid search).
    assert {h["id"] for h in json.loads(out)["hits"][:2]} == {notes[0].id, extra.id}


# redaction removes the text from every index ---------------------------------------------
SECRET = "zorblaxian"


@pytest.mark.parametrize("kind", ["note", "decision"])
@pytest.mark.parametrize("indexed_before", [True, False])
def test_redaction_removes_the_text_everywhere(
    tmp_path: Path, indexed_before: bool, kind: str
) -> None:
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        other = mem.note("the deploy key rotation is monthly")
        text = f"the staging password is {SECRET} hunter"
        where: dict[str, Any] = {"tags": ["creds"], "paths": ["ops/secret.env"]}
        # a decision is also stored as its pack line (the ``line`` column)
        target = mem.note(text, **where) if kind == "note" else mem.decide("ops.pw", text, **where)
        old_text = event_text(kind, target.body)
        if indexed_before:
            refresh(mem)
            root = root_of(repo)
            # the secret is really in the index files before the redaction
            assert files_containing(root, SECRET.encode())
            with IndexView.open(repo) as view:
                assert search_ids(view, SECRET) == [target.id]
        mem.redact(target.id, "leaked a password")
        report = refresh(mem)
    assert report.redacted == (1 if indexed_before else 0)
    if indexed_before:
        assert report.mode == "incremental"
        assert "fulltext" in report.rebuilt

    with IndexView.open(repo) as view:
        assert view.report is None
        for mode in MODES:
            found = search(view, f"{SECRET} staging password hunter", mode=mode, all_branches=True)
            assert target.id not in [h.event.id for h in found.hits], mode
            assert search(view, SECRET, mode=mode, all_branches=True).hits == [], mode
        assert search_ids(view, "deploy key rotation")[:1] == [other.id]  # the rest still works
        row = next(r for r in rows(view) if r["id"] == target.id)
        assert row["redacted"] and row["text"] == "" and row["body"] is None and row["line"] is None
        assert row["tags"] == [] and row["paths"] == []
        assert view.get(target.id).redacted and view.get(target.id).body is None
        assert view.vectors is not None
        assert view.vectors.contains([key64(target.id), key64(other.id)]) == [False, True]
        assert len(view.vectors) == view.fulltext.count()

        from gitmem.embed.cache import digest

        root = root_of(repo)
        needles = {SECRET.encode(), SECRET.upper().encode(), b"hunter", digest(old_text)}
        needles |= {term.encode() for term in analyze(SECRET)}
        for needle in needles:
            assert files_containing(root, needle) == [], needle
        fsck(repo)


# events still in the capture spool -------------------------------------------------------
def test_spooled_events_are_visible_when_the_view_opens(tmp_path: Path) -> None:
    from gitmem.capture.main import capture
    from gitmem.storage import spool

    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        mem.note("already committed")
        refresh(mem)
        location = mem.location
    event = {"type": "note", "body": {"text": "captured by a hook: the ocelot test is flaky"}}
    (captured,) = capture(json.dumps(event), str(repo))
    assert spool.pending(location.state_dir)
    assert is_fresh(location, read_manifest(index_root(location)))  # the refs did not move

    with IndexView.open(repo) as view:
        assert view.report is not None and view.report.added == 1
        assert not spool.pending(location.state_dir)
        assert captured in ids(view.events())
        assert search_ids(view, "ocelot")[:1] == [captured]
        assert search_ids(view, "ocelot", mode="lexical") == [captured]


# one builder at a time ---------------------------------------------------------------------
HOLDER = """
import sys
from pathlib import Path
from gitmem.sidecar.lock import builder_lock
with builder_lock(Path(sys.argv[1]), 10, what="index builder lock"):
    print("locked", flush=True)
    sys.stdin.read()
"""


@contextmanager
def written_while_another_builds(tmp_path: Path) -> Iterator[tuple[Path, Event, Event]]:
    """(repo, old, new): ``old`` indexed, then ``new`` written while another
    process holds the index builder lock, which it keeps for the block."""
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        old = mem.note("before the lock")
        refresh(mem)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root_of(repo))],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        with Memory.open(repo) as mem:
            new = mem.note("while another process builds")
        yield repo, old, new
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=20)
    assert holder.returncode == 0


def test_a_reader_does_not_wait_for_another_builder(tmp_path: Path) -> None:
    with written_while_another_builds(tmp_path) as (repo, old, new):
        started = time.monotonic()
        with IndexView.open(repo, wait=0.5) as view:
            waited = time.monotonic() - started
            assert view.stale
            assert view.report is None
            assert 0.5 <= waited < 5
            assert ids(view.events()) == [old.id]  # the previous version
            # the CLI waits its default 5 s, then answers from the previous version and says so
            code, out, err = cli(repo, "search", "while another process builds", "--json")
            assert code == 0, err
            data = json.loads(out)
            assert new.id not in [h["id"] for h in data["hits"]]
            assert any("another process is updating the index" in w for w in data["warnings"])
    with IndexView.open(repo, wait=0.5) as view:
        assert not view.stale
        assert view.report is not None and view.report.mode == "incremental"
        assert ids(view.events()) == [old.id, new.id]


def test_log_and_show_read_memory_while_another_process_builds(tmp_path: Path) -> None:
    """log and show read the index, but never a stale one: while another
    process holds the builder lock they read memory itself, newest event included."""
    with written_while_another_builds(tmp_path) as (repo, old, new):
        code, out, err = cli(repo, "log", "--json")
        assert code == 0, err
        assert [e["id"] for e in json.loads(out)["events"]] == [new.id, old.id]  # newest first
        code, out, err = cli(repo, "show", new.id[:10], "--json")
        assert code == 0, err
        assert json.loads(out)["id"] == new.id
    assert read_manifest(root_of(repo)) is not None


def test_log_and_show_answer_through_the_index_as_memory_does(tmp_path: Path) -> None:
    """Across branches, forks, filters, a redaction and id prefixes, the
    CLI's log and show (through the index) print what Memory gives."""
    repo = make_repo(tmp_path / "repo", events=30, branches=3)
    git(repo, "checkout", "-q", "b1")
    with Memory.open(repo) as mem:
        decision = mem.decide("db.engine", "postgres", paths=["src/db/pool.py"], tags=["db"])
        secret = mem.note("token zorblaxian", paths=["ops/x.env"])
        mem.redact(secret.id, "leak")
    git(repo, "checkout", "-q", "-b", "feat")
    with Memory.open(repo) as mem:
        mem.note("on feat", tags=["db"])
    for args in (
        [],
        ["--all-branches"],
        ["--branch", "b2"],
        ["--type", "decision", "--all-branches"],
        ["--tag", "db"],
        ["--path", "src/db/"],
        ["--no-redacted", "--limit", "4"],
    ):
        code, out, err = cli(repo, "log", "--json", "--reverse", *args)
        assert code == 0, err
        with Memory.open(repo) as mem:
            kw: dict[str, Any] = {"all_branches": "--all-branches" in args}
            if "--branch" in args:
                kw["branch"] = "b2"
            where = EventFilter(
                types=["decision"] if "decision" in args else (),
                tags=["db"] if "--tag" in args else (),
                paths=["src/db/"] if "--path" in args else (),
                include_redacted="--no-redacted" not in args,
            )
            expected = mem.events(where, limit=4 if "--limit" in args else None, **kw)
        assert [e["id"] for e in json.loads(out)["events"]] == [e.id for e in expected], args
        assert expected, args
    for event in (decision, secret):
        code, out, err = cli(repo, "show", event.id[:8], "--json")
        assert code == 0, err
        with Memory.open(repo) as mem:
            want = mem.get(event.id)
        assert json.loads(out) == want.to_json() | {
            "id": want.id,
            "branch": want.branch,
            "commit": want.commit,
        }
    assert read_manifest(root_of(repo)) is not None  # they went through the index


def test_status_pins_decide_ratify_read_the_index_as_memory_would(tmp_path: Path) -> None:
    """status and branches (counts), pins (in force, expired, redacted target), decide
    (which decision it supersedes), ratify, pin and unpin (id prefixes),
    capsule list and capsule close answer through the index what Memory does."""
    repo = make_repo(tmp_path / "repo", events=20, branches=2)
    git(repo, "checkout", "-q", "b1")
    with Memory.open(repo) as mem:
        first = mem.decide("db.engine", "mysql")
        kept, gone = mem.note("pin me"), mem.note("redacted target")
        mem.pin(kept.id, reason="read first")
        mem.pin(gone.id)
        mem.pin(first.id, expires=1_000_000)  # long expired
        mem.redact(gone.id, "test")
        status = mem.status()
        now = wall_us() + 86_400 * 10**6
        pins = [(p.pin.id, p.target) for p in mem.pins(now=now)]
    assert status.redacted == 1 and status.events_on_branch < status.events_total
    assert [target for _pin, target in pins] == [kept.id]

    code, out, err = cli(repo, "status", "--json")
    assert code == 0, err
    assert json.loads(out) == status.to_json()
    code, out, err = cli(repo, "branches", "--json")
    assert code == 0, err
    with Memory.open(repo) as mem:
        assert json.loads(out) == {"branches": [b.to_json() for b in mem.branches()]}
        assert sorted(b.events for b in mem.branches()) == [10, 17]  # b1: seven more
    code, out, err = cli(repo, "pins", "--json", "--now", str(now))
    assert code == 0, err
    assert [(p["pin"], p["target"]) for p in json.loads(out)["pins"]] == pins
    assert read_manifest(root_of(repo)) is not None  # they went through the index

    code, out, err = cli(repo, "decide", "db.engine", "postgres", "--json")
    assert code == 0, err
    with Memory.open(repo) as mem:
        assert mem.get(json.loads(out)["id"]).field("supersedes") == first.id
        # the library's own lookup agrees, and a key never decided supersedes nothing
        assert mem.decide("db.pool", "20").field("supersedes") is None
        latest = mem.decide("db.engine", "sqlite")
        assert latest.field("supersedes") == json.loads(out)["id"]
        capsule = mem.open_capsule("workflow", "migrate")
        mem.note("inside the capsule", capsule=capsule.id)

    # ratify, pin and unpin resolve their id prefix through the index
    code, _out, err = cli(repo, "ratify", first.id[:8])
    assert code == 2 and "superseded" in err  # only the active decision can be ratified
    code, out, err = cli(repo, "ratify", latest.id[:8], "--json")
    assert code == 0, err
    code, _out, err = cli(repo, "ratify", kept.id[:8])
    assert code != 0 and "not a decision" in err
    assert cli(repo, "pin", "summary:" + capsule.id[:8])[0] == 0
    assert cli(repo, "unpin", kept.id[:10])[0] == 0
    with Memory.open(repo) as mem:
        assert mem.get(json.loads(out)["id"]).field("target") == latest.id
        in_force = [p.target for p in mem.pins(now=now)]
    assert in_force == ["summary:" + capsule.id]

    # capsule list counts and capsule close's check, through the index
    for scope in ([], ["--all-branches"]):
        code, out, err = cli(repo, "capsule", "list", "--json", *scope)
        assert code == 0, err
        with Memory.open(repo) as mem:
            listed = mem.capsules(all_branches=bool(scope))
        assert json.loads(out) == {"capsules": [c.__dict__ | {"open": c.is_open} for c in listed]}
        assert [c.events for c in listed] == [1]  # the note inside
    assert cli(repo, "capsule", "close", capsule.id[:8], "--summary", "done")[0] == 0
    code, _out, err = cli(repo, "capsule", "close", capsule.id[:8])
    assert code != 0 and "already closed" in err
    code, _out, err = cli(repo, "capsule", "close", kept.id[:8])
    assert code != 0 and "not a capsule" in err


# a crash before the manifest write is harmless --------------------------------------------
@pytest.mark.parametrize("then", ["notes", "notes and a fork"])
def test_refresh_redone_after_a_lost_manifest_write(tmp_path: Path, then: str) -> None:
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        for i in range(3):
            mem.note(f"ibis note {i}")
        refresh(mem)
        root = index_root(mem.location)
        saved = (root / "manifest.json").read_bytes()
        for i in range(3):
            mem.note(f"ibis later {i}", paths=[f"src/ibis{i}.py"])
        if then == "notes and a fork":
            git(repo, "branch", "side")
            mem.fork("side")
            mem.note("ibis on the side", branch="side")
        assert refresh(mem).mode == "incremental"
        (root / "manifest.json").write_bytes(saved)  # as if the process died before this write
        again = refresh(mem)
        assert again.mode == "incremental", again.reason
        with IndexView.open(repo, refresh=False) as view:
            table = rows(view)
            all_ids = [r["id"] for r in table]
            assert len(all_ids) == len(set(all_ids)) == len(mem.events(all_branches=True))
            assert view.fulltext.count() == sum(1 for r in table if r["text"])
            assert len(view.vectors) == view.fulltext.count()
            assert len(search_ids(view, "ibis", limit=20)) == len(all_ids)
            members = view.members.to_pylist()
            assert len(members) == len({(m["ref"], m["commit"]) for m in members})
        refresh(mem, rebuild=True)
    with IndexView.open(repo, refresh=False) as view:
        assert rows(view, drop=("ref",)) == [
            {k: v for k, v in r.items() if k != "ref"} for r in table
        ]


# git hooks keep the index fresh ---------------------------------------------------------
def test_hooks_refresh_the_index_on_checkout_and_merge(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    code, _out, err = cli(repo, "init")
    assert code == 0, err
    with Memory.open(repo) as mem:
        mem.note("main before the feature")
    hgit(repo, "checkout", "-q", "-b", "feat")
    (repo / "feat.txt").write_text("feat\n")
    hgit(repo, "add", "feat.txt")
    hgit(repo, "commit", "-q", "-m", "feat work")
    with Memory.open(repo) as mem:
        feat_note = mem.note("the capybara cache on feat", branch="feat")
    hgit(repo, "checkout", "-q", "main")
    with Memory.open(repo) as mem:
        location = mem.location
        root = index_root(location)
        assert is_fresh(location, read_manifest(root))  # post-checkout refreshed it
        assert "index" in hooks_log(repo)
        mem.note("main meanwhile", branch="main")
        assert not is_fresh(location, read_manifest(root))

    hgit(repo, "checkout", "-q", "feat")  # an existing branch with memory
    assert is_fresh(location, read_manifest(root))
    hgit(repo, "checkout", "-q", "main")

    log_before = hooks_log(repo)
    hgit(repo, "merge", "-q", "--no-ff", "feat", "-m", "merge feat")
    assert is_fresh(location, read_manifest(root))  # merged memory, refreshed index
    new_lines = hooks_log(repo)[len(log_before) :]
    assert "index" in new_lines and "merge" in new_lines, new_lines
    with IndexView.open(repo, refresh=False) as view:
        assert feat_note.id in ids(view.events(branch="main", trunk="none"))
        assert [h.event.id for h in search(view, "capybara", branch="main").hits][:1] == [
            feat_note.id
        ]
        fsck(repo)


def test_hooks_leave_the_index_alone_when_turned_off(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    assert cli(repo, "init")[0] == 0
    git(repo, "config", "edda.indexOnHooks", "false")
    git(repo, "branch", "other")
    with Memory.open(repo) as mem:
        mem.note("on main")
        mem.note("on other", branch="other")
    hgit(repo, "checkout", "-q", "other")
    assert read_manifest(root_of(repo)) is None
    assert "index refresh off" in hooks_log(repo)


# the CLI ---------------------------------------------------------------------------------
def test_cli_index_text_and_json(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        for i in range(3):
            mem.note(f"cli note {i}")
    code, out, err = cli(repo, "index")
    assert code == 0, err
    assert out.startswith("built the index: 3 events (no usable index)")
    assert "3 vectors (3 texts embedded)" in out

    code, out, err = cli(repo, "index")
    assert code == 0, err
    assert out.startswith("index up to date (3 events)")

    with Memory.open(repo) as mem:
        mem.note("cli note 3")
    code, out, err = cli(repo, "index", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "incremental" and data["added"] == 1 and data["events"] == 4
    assert data["vectors"] == 1 and data["warnings"] == []
    assert set(data) >= {"mode", "events", "added", "redacted", "reason", "seconds"}

    code, out, err = cli(repo, "index", "--rebuild", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "full" and data["reason"] == "requested" and data["events"] == 4
    assert data["embedded"] == 0  # the embedding cache outlives the generation
    code, out, err = cli(repo, "index", "--rebuild")
    assert code == 0 and "built the index: 4 events (requested)" in out


def test_cli_index_no_embed_then_search_warns(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        note = mem.note("the axolotl regrows limbs")
    code, out, err = cli(repo, "index", "--no-embed", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "full" and data["vectors"] == 0 and data["embedded"] == 0
    manifest = read_manifest(root_of(repo))
    assert manifest is not None and manifest.model is None and manifest.unembedded == 1
    assert not (generation(repo) / VECTORS_FILE).exists()
    assert not (root_of(repo) / "embeddings").exists()

    # with embeddings off, search works from the full text and says so
    git(repo, "config", "edda.embed.provider", "none")
    code, out, err = cli(repo, "search", "axolotl")
    assert code == 0, err
    assert note.id[:12] in out
    assert "warning: no vector index" in out
    code, out, err = cli(repo, "search", "axolotl", "--mode", "vector", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["hits"] == [] and any("no vector index" in w for w in data["warnings"])
    assert not (generation(repo) / VECTORS_FILE).exists()

    # back on, a refresh fills the vectors in without rebuilding anything else
    git(repo, "config", "--unset", "edda.embed.provider")
    code, out, err = cli(repo, "index", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["mode"] == "none" and data["vectors"] == 1
    assert (generation(repo) / VECTORS_FILE).exists()
    code, out, err = cli(repo, "search", "axolotl", "--mode", "vector", "--json")
    data = json.loads(out)
    assert data["warnings"] == [] and [h["id"] for h in data["hits"]] == [note.id]


def test_provider_none_disables_vectors(tmp_path: Path) -> None:
    repo = scratch_repo(tmp_path / "repo")
    git(repo, "config", "edda.embed.provider", "none")
    with Memory.open(repo) as mem:
        note = mem.note("the narwhal tusk")
        report = refresh(mem)
    assert report.mode == "full" and report.vectors == 0
    assert not (generation(repo) / VECTORS_FILE).exists()
    with IndexView.open(repo) as view:
        result = search(view, "narwhal")
        assert [h.event.id for h in result.hits] == [note.id]
        assert any("no vector index" in w for w in result.warnings)
        assert not (root_of(repo) / "embeddings").exists() or not any(
            p.stat().st_size for p in all_files(root_of(repo) / "embeddings")
        )


# small keys force collisions; shifted, they differ in their leading bits too,
# by which a scan passes over rows
_KEYS = st.integers(0, 45) | st.integers(0, 45).map(lambda k: (k << 58) | k)


@settings(max_examples=200, deadline=None)
@given(
    stored=st.lists(_KEYS, max_size=60),
    asks=st.lists(st.lists(_KEYS, max_size=8), min_size=5, max_size=8),
)
def test_key_lookups_scan_then_sort_with_the_same_answers(
    stored: list[int], asks: list[list[int]]
) -> None:
    """Row lookups by key64 scan for a process's first few calls and use a
    sorted copy after: both give the first row holding each key, None when
    absent, whatever the duplicates."""
    import pyarrow as pa

    from gitmem.index.keyrows import SCANS, KeyRows

    half = len(stored) // 2  # two chunks, as a table read in batches has
    lookup = KeyRows(pa.chunked_array([stored[:half], stored[half:]], pa.uint64()))
    for keys in asks * 2:  # more calls than the scanning limit
        expected = [stored.index(k) if k in stored else None for k in keys]
        assert lookup.rows(keys) == expected
    lookups = sum(1 for keys in asks * 2 if keys) if stored else 0
    assert lookup.is_sorted == (lookups > SCANS)  # both ways were taken


def test_a_build_reports_its_progress_per_stage(tmp_path: Path) -> None:
    """The callback behind 'git edda index''s bars: each stage counts up to
    its total (memory commits read, documents indexed, texts embedded)."""
    repo = make_repo(tmp_path / "repo", events=30, branches=3)
    with Memory.open(repo) as mem:
        for i in range(4):  # four more commits on main
            mem.note(f"progress note {i}")
        seen: dict[str, list[tuple[int, int]]] = {}
        report = refresh(
            mem, rebuild=True, progress=lambda s, d, t: seen.setdefault(s, []).append((d, t))
        )
    commits = seen["reading memory commits"]
    assert [d for d, _t in commits] == list(range(1, len(commits) + 1))
    assert {t for _d, t in commits} == {len(commits)} and len(commits) >= 5
    done, total = seen["full-text index"][-1]
    assert done == total == report.events == 34


@pytest.mark.parametrize("store", ["listed", "with an odd entry"])
def test_a_bulk_build_reads_bodies_by_their_blobs_as_lookups_would(
    tmp_path: Path, monkeypatch: Any, store: str
) -> None:
    """A build of many commits lists the payload store and reads each body
    by its blob, with libgit2's cache off; its rows are those a build by
    path lookups makes: plain texts, an attachment, a forged payload, a
    missing one, a redacted event. A store the listing cannot read (an
    entry that is no payload file) is read by path."""
    from test_verify import rewrite_payload_store

    from gitmem.index import builder
    from gitmem.records import canonical, layout

    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        [mem.note(f"note {i}") for i in range(5)]
        mem.note("large " + "x" * 9_000)  # its text is an attachment
        forged = mem.note("to be forged")
        lost = mem.note("to lose its payload")
        secret = mem.note("a secret")
        mem.redact(secret.id, "leak")
    changes: dict[str, bytes | None] = {
        layout.payload_path(forged.id): canonical.encode({"text": "forged"}),
        layout.payload_path(lost.id): None,
    }
    if store != "listed":
        changes[f"p/{forged.id[:2]}/not-a-payload"] = b"odd"
    rewrite_payload_store(repo, changes)
    listed: list[bool] = []
    listing = builder.listed

    def spied(*args: Any) -> Any:
        found = listing(*args)
        listed.append(found is not None)
        return found

    monkeypatch.setattr(builder, "listed", spied)
    columns = ["id", "type", "redacted", "missing", "text", "body", "envelope"]

    def rows(bulk: int) -> list[dict[str, Any]]:
        monkeypatch.setattr(builder, "BULK_COMMITS", bulk)
        shutil.rmtree(root_of(repo), ignore_errors=True)
        with Memory.open(repo) as mem:
            cached = []
            streaming = mem.backend.streaming

            def watched() -> Any:
                cached.append(True)
                return streaming()

            monkeypatch.setattr(mem.backend, "streaming", watched)
            refresh(mem, embed=False)
            assert bool(cached) == (bulk == 0)  # the listing at least
        with IndexView.open(repo, refresh=False) as view:
            found: list[dict[str, Any]] = view.table.select(columns).to_pylist()
        return sorted(found, key=lambda r: r["id"])

    by_blob, by_path = rows(0), rows(10**9)
    assert listed == [store == "listed"]  # only the bulk build lists
    assert by_blob == by_path
    texts = {r["id"]: r for r in by_blob}
    assert texts[forged.id]["text"] == "" and texts[lost.id]["missing"]
    assert texts[secret.id]["redacted"]
    assert any("x" * 9_000 in (r["body"] or "") for r in by_blob)  # the attachment, joined


def test_an_incremental_refresh_reads_new_bodies_by_the_blobs_the_store_gained(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The comparison of the indexed payload store with the current one (made
    anyway, to find altered payloads) names the new events' payloads: their
    bodies are read by blob, none looked up by path (~1 ms each at a million
    events), and the rows are those a full build makes."""
    from gitmem.storage.payloads import PayloadStore

    repo = scratch_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        for i in range(3):
            mem.note(f"first {i}")
        refresh(mem, embed=False)
        new = [mem.note(f"second {i}") for i in range(5)]
        mem.note("large " + "y" * 9_000)  # an attachment
        lookups: list[str] = []
        stored_body = PayloadStore.stored_body

        def spied(self: Any, tree: Any, event_id: str) -> Any:
            lookups.append(event_id)
            return stored_body(self, tree, event_id)

        monkeypatch.setattr(PayloadStore, "stored_body", spied)
        report = refresh(mem, embed=False)
        assert report.mode == "incremental" and report.added == 6
        assert lookups == []
        monkeypatch.undo()
    columns = ["id", "text", "body", "missing"]
    with IndexView.open(repo, refresh=False) as view:
        incremental = sorted(view.table.select(columns).to_pylist(), key=lambda r: r["id"])
    assert {e.id for e in new} <= {r["id"] for r in incremental}
    with Memory.open(repo) as mem:
        refresh(mem, rebuild=True, embed=False)
    with IndexView.open(repo, refresh=False) as view:
        full = sorted(view.table.select(columns).to_pylist(), key=lambda r: r["id"])
    assert incremental == full
