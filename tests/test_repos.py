"""Repository shapes: bare, linked worktrees, detached HEAD, odd branch names, both
backends, a newer storage format, readable history and separation from code history."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fsck, git, init_repo, make_repo, raw_id_counts, store_snapshots
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem.errors import FormatTooNewError
from gitmem.memory.api import Memory
from gitmem.records import layout
from gitmem.records.layout import branch_of_ref, branch_ref, escape_branch, unescape_branch

MAIN_REF = "refs/edda/branches/main"


def memory_refs(repo: Path) -> dict[str, str]:
    """Memory's refs but the payload store's partitions (one per week of events)."""
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/edda/")
    refs = dict(line.split() for line in out.splitlines())
    return {r: t for r, t in refs.items() if not r.startswith("refs/edda/store/")}


# bare -------------------------------------------------------------------------------
def test_bare_repository(tmp_path: Path) -> None:
    bare = init_repo(tmp_path / "bare.git", bare=True)
    with Memory.open(bare) as mem:
        assert mem.location.is_bare
        assert mem.location.state_dir.resolve() == (bare / "edda").resolve()
        first = mem.append("note", {"text": "in a bare repo"}, branch="main")
        second = mem.note("second", branch="main")
        assert first.ref == second.ref == MAIN_REF
        assert [e.id for e in mem.events(branch="main")] == [first.id, second.id]
        assert mem.get(first.id).body == {"text": "in a bare repo"}
        assert mem.verify().ok
    assert set(memory_refs(bare)) == {MAIN_REF, "refs/edda/payloads"}
    assert not (bare / ".git").exists()
    # nothing leaked into code history of the bare repository
    assert git(bare, "for-each-ref", "refs/heads/") == ""
    fsck(bare)


def test_bare_repository_capture_and_cli_backend(tmp_path: Path) -> None:
    bare = init_repo(tmp_path / "bare.git", bare=True)
    git(bare, "config", "edda.bareOk", "true")  # capture writes in a bare repository only then
    proc = subprocess.run(
        [sys.executable, "-m", "gitmem.capture.main"],
        input=json.dumps({"type": "note", "body": {"text": "hooked"}, "branch": "main"}),
        cwd=bare,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    (captured,) = proc.stdout.split()
    assert list((bare / "edda" / "spool").glob("*.json"))
    with Memory.open(bare, backend="git-cli") as mem:
        assert [e.id for e in mem.events(branch="main")] == [captured]
        mem.append("note", {"text": "via git"}, branch="main")
        assert mem.verify().ok
    with Memory.open(bare) as mem:
        assert [e.field("text") for e in mem.events(branch="main")] == ["hooked", "via git"]
    fsck(bare)


# linked worktree ----------------------------------------------------------------------
def test_linked_worktree_shares_memory_and_state(tmp_path: Path) -> None:
    main = init_repo(tmp_path / "main")
    wt = tmp_path / "wt"
    git(main, "worktree", "add", "-q", "-b", "feature", str(wt))
    private = Path(git(wt, "rev-parse", "--git-dir").strip())
    private = private if private.is_absolute() else (wt / private)
    common = (main / ".git").resolve()
    assert private.resolve() != common

    with Memory.open(wt) as mem:
        assert mem.branch == "feature"
        assert mem.location.common_dir.resolve() == common
        assert mem.location.state_dir.resolve() == common / "edda"
        from_wt = mem.note("written in the worktree")
        assert from_wt.ref == "refs/edda/branches/feature"

    # a hook running in the worktree spools into the common dir too
    proc = subprocess.run(
        [sys.executable, "-m", "gitmem.capture.main"],
        input=json.dumps({"type": "note", "body": {"text": "hook in worktree"}}),
        cwd=wt,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    (hooked,) = proc.stdout.split()
    assert len(list((common / "edda" / "spool").glob("*.json"))) == 1
    assert not (private.resolve() / "edda").exists()

    with Memory.open(main) as mem:
        assert mem.branch == "main"
        # the main checkout flushes the worktree's spool and sees its memory
        assert {e.id for e in mem.events(branch="feature")} == {from_wt.id, hooked}
        assert mem.get(from_wt.id).field("text") == "written in the worktree"
        from_main = mem.note("written in the main checkout")
        assert from_main.ref == MAIN_REF

    with Memory.open(wt) as mem:
        assert [e.id for e in mem.events(branch="main")] == [from_main.id]
        assert [e.id for e in mem.events()] == [from_wt.id, hooked]
        assert {e.id for e in mem.events(all_branches=True)} == {
            from_wt.id,
            hooked,
            from_main.id,
        }
        assert mem.verify().ok

    # one state dir, one set of refs: nothing private to the worktree
    assert not (private.resolve() / "edda").exists()
    assert not (private.resolve() / "refs" / "edda").exists()
    assert set(memory_refs(main)) == set(memory_refs(wt))
    fsck(main)


# detached HEAD ------------------------------------------------------------------------
def test_detached_head_writes_to_detached_ref(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    git(repo, "commit", "-q", "--allow-empty", "-m", "second")
    git(repo, "checkout", "-q", "--detach", "HEAD~1")
    with Memory.open(repo) as mem:
        assert mem.branch is None
        event = mem.note("while detached")
        assert event.ref == "refs/edda/detached"
        assert event.branch is None
    proc = subprocess.run(
        [sys.executable, "-m", "gitmem.capture.main"],
        input=json.dumps({"type": "note", "body": {"text": "hook while detached"}}),
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    (hooked,) = proc.stdout.split()
    with Memory.open(repo) as mem:
        assert [e.id for e in mem.events()] == [event.id, hooked]
        assert mem.events(branch="main") == []
        assert mem.get(hooked).ref == "refs/edda/detached"
    assert set(memory_refs(repo)) == {"refs/edda/detached", "refs/edda/payloads"}
    # back on a branch, new memory goes to that branch's ref
    git(repo, "checkout", "-q", "main")
    with Memory.open(repo) as mem:
        assert mem.note("on main again").ref == MAIN_REF
        assert len(mem.events()) == 1
        assert len(mem.events(branch=None)) == 2
    fsck(repo)


# branch names -------------------------------------------------------------------------
def test_branch_names_with_slashes_and_percent_map_to_distinct_refs(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    names = ["feature/x", "a%2Fb", "a/b", "100%", "deep/er/name"]
    written = {}
    for name in names:
        git(repo, "checkout", "-q", "-b", name, "main")
        with Memory.open(repo) as mem:
            assert mem.branch == name
            written[name] = mem.note(f"on {name}").id
    git(repo, "checkout", "-q", "main")

    refs = memory_refs(repo)
    expected = {
        "feature/x": "refs/edda/branches/feature%2Fx",
        "a%2Fb": "refs/edda/branches/a%252Fb",
        "a/b": "refs/edda/branches/a%2Fb",
        "100%": "refs/edda/branches/100%25",
        "deep/er/name": "refs/edda/branches/deep%2Fer%2Fname",
    }
    assert set(refs) == {*expected.values(), "refs/edda/payloads"}
    with Memory.open(repo) as mem:
        for name, ref in expected.items():
            assert branch_ref(name) == ref
            events = mem.events(branch=name)
            assert [e.id for e in events] == [written[name]], name
            assert events[0].branch == name
            assert events[0].ref == ref
        assert len(mem.events(all_branches=True)) == len(names)
        assert mem.verify().ok
    # the commit subject names the real branch
    assert git(repo, "log", "-1", "--format=%s", expected["a%2Fb"]).strip().endswith("on a%2Fb")
    fsck(repo)


def _valid_branch(name: str) -> bool:
    proc = subprocess.run(
        ["git", "check-ref-format", f"refs/heads/{name}"], capture_output=True, check=False
    )
    return proc.returncode == 0


def _valid_ref(ref: str) -> bool:
    proc = subprocess.run(["git", "check-ref-format", ref], capture_output=True, check=False)
    return proc.returncode == 0


# pieces chosen to build tricky names: escapes that already look escaped, slashes, dots
_PIECES = [*"ab/%2Ff5.-_é", "%2F", "%25", "%2f", "%252F", "/x", "é/ü"]
branch_names = (
    st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8).map("".join).filter(_valid_branch)
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(a=branch_names, b=branch_names)
def test_escape_round_trips_and_is_injective(a: str, b: str) -> None:
    ea = escape_branch(a)
    assert "/" not in ea
    assert unescape_branch(ea) == a
    assert branch_of_ref(branch_ref(a)) == a
    assert _valid_ref(branch_ref(a)), branch_ref(a)
    if a != b:
        assert escape_branch(a) != escape_branch(b)
        assert branch_ref(a) != branch_ref(b)


# git-cli backend ----------------------------------------------------------------------
def test_git_cli_backend_reads_libgit2_and_vice_versa(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", events=9, branches=3)
    with Memory.open(repo, backend="libgit2") as mem:
        lib_view = {e.id: (e.ref, e.body) for e in mem.events(all_branches=True)}
    with Memory.open(repo, backend="git-cli") as mem:
        assert mem.backend.name == "git-cli"
        cli_view = {e.id: (e.ref, e.body) for e in mem.events(all_branches=True)}
        assert cli_view == lib_view
        assert len(cli_view) == 9
        by_cli = mem.note("written by the git CLI", tags=["cli"])
        by_cli_b1 = mem.append("decision", {"key": "k", "value": "v"}, branch="b1")
        assert mem.verify().ok
    with Memory.open(repo, backend="libgit2") as mem:
        assert mem.get(by_cli.id).body == {"text": "written by the git CLI", "tags": ["cli"]}
        assert mem.get(by_cli_b1.id).ref == "refs/edda/branches/b1"
        assert len(mem.events(all_branches=True)) == 11
        by_lib = mem.note("written by libgit2")
        assert mem.verify().ok
    with Memory.open(repo, backend="git-cli") as mem:
        assert mem.get(by_lib.id).field("text") == "written by libgit2"
        assert len(mem.events(branch="main")) == 3 + 2
    assert max(raw_id_counts(repo).values()) == 1
    fsck(repo)


def test_git_cli_backend_append_redact_verify(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    secret = "the launch code is 0000 and nobody must know it"
    with Memory.open(repo, backend="git-cli") as mem:
        keep = mem.note("harmless")
        leak = mem.note(secret)
        redaction = mem.redact(leak.id, "pasted by mistake")
        assert redaction.type == "redaction"
        assert mem.get(leak.id).redacted
        assert mem.get(leak.id).body is None
        assert mem.get(keep.id).field("text") == "harmless"
        # redacting twice returns the first redaction
        assert mem.redact(leak.id, "again").id == redaction.id
        report = mem.verify()
        assert report.ok, [str(p) for p in report.problems]
        assert report.redacted == 1
    with Memory.open(repo, backend="libgit2") as mem:
        assert mem.get(leak.id).redacted
        assert mem.verify().ok
    # the payload store no longer holds the text
    tree = "".join(git(repo, "ls-tree", "-r", s) for s in store_snapshots(repo))
    blobs = [line.split()[2] for line in tree.splitlines()]
    for blob in blobs:
        assert secret not in git(repo, "cat-file", "-p", blob)
    fsck(repo)


def test_backends_agree_under_alternating_writes(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    ids = []
    for i in range(6):
        backend = "git-cli" if i % 2 else "libgit2"
        with Memory.open(repo, backend=backend) as mem:
            ids.append(mem.note(f"alt {i}").id)
    for backend in ("git-cli", "libgit2"):
        with Memory.open(repo, backend=backend) as mem:
            assert [e.id for e in mem.events()] == ids
            assert mem.verify().ok
    assert git(repo, "rev-list", "--count", MAIN_REF).strip() == "6"


# a newer storage format ------------------------------------------------------------------
def _plant_format(repo: Path, version: str, ref: str = MAIN_REF) -> str:
    tip = git(repo, "rev-parse", ref).strip()
    tree = git(repo, "rev-parse", f"{tip}^{{tree}}").strip()
    message = f"note 000000000000 on main\n\nEdda-Format: {version}\nEdda-Events: 1\n"
    new = git(repo, "commit-tree", tree, "-p", tip, input=message).strip()
    git(repo, "update-ref", ref, new, tip)
    return new


@pytest.mark.parametrize("backend", ["libgit2", "git-cli"])
def test_newer_format_refuses_reads_and_writes(tmp_path: Path, backend: str) -> None:
    repo = make_repo(tmp_path / "repo", events=3)
    new_tip = _plant_format(repo, "3")
    payloads = git(repo, "rev-parse", "refs/edda/payloads").strip()

    with Memory.open(repo, backend=backend) as mem:
        with pytest.raises(FormatTooNewError) as info:
            mem.events()
        assert "upgrade" in (info.value.hint or "").lower()
        assert "3" in info.value.message
        with pytest.raises(FormatTooNewError):
            mem.events(all_branches=True)
        with pytest.raises(FormatTooNewError) as info:
            mem.note("must not land on a newer-format chain")
        assert "upgrade" in (info.value.hint or "").lower()
        with pytest.raises(FormatTooNewError):
            mem.append("note", {"text": "explicit"}, branch="main")
        report = mem.verify()
        assert not report.ok
        assert any("newer format" in str(p) for p in report.problems)

    assert git(repo, "rev-parse", MAIN_REF).strip() == new_tip
    assert git(repo, "rev-parse", "refs/edda/payloads").strip() == payloads
    assert int(info.value.exit_code) == 6


def test_newer_format_on_one_branch_leaves_others_writable(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", events=4, branches=2)
    _plant_format(repo, "7", "refs/edda/branches/b1")
    with Memory.open(repo) as mem:
        event = mem.append("note", {"text": "main is still v1"}, branch="main")
        assert event.ref == MAIN_REF
        with pytest.raises(FormatTooNewError):
            mem.append("note", {"text": "b1 is newer"}, branch="b1")


def test_unreadable_format_trailer_is_treated_as_newer(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", events=1)
    _plant_format(repo, "two")
    with Memory.open(repo) as mem, pytest.raises(FormatTooNewError):
        mem.note("refused")


# readable history, separate from code history ---------------------------------------------
def test_git_log_oneline_is_readable_and_payload_free(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    secretish = "PAYLOADTEXT-should-never-appear-in-a-commit-message"
    with Memory.open(repo) as mem:
        note = mem.note(f"{secretish} note")
        decision = mem.decide("db", f"{secretish} decision", reason=secretish)
        checkpoint = mem.checkpoint(next=secretish, summary=secretish)
        from gitmem.capture.sealer import Draft

        batch = mem.append_many(
            [Draft("note", {"text": secretish}), Draft("learning", {"text": secretish})]
        )
    lines = git(repo, "log", "--oneline", MAIN_REF).splitlines()
    assert len(lines) == 4 == int(git(repo, "rev-list", "--count", MAIN_REF))
    full = git(repo, "log", "--format=%B", MAIN_REF)
    assert secretish not in full
    assert all(secretish not in line for line in lines)
    newest_first = [batch[0], checkpoint, decision, note]
    for line, item in zip(lines[1:], newest_first[1:], strict=True):
        assert item.type in line
        assert item.id[:12] in line
        assert line.endswith("on main")
    assert "2 events" in lines[0] and "note" in lines[0] and "learning" in lines[0]
    # trailers are there, machine-readable
    assert "Edda-Format: 1" in full
    assert "Edda-Events: 2" in full


def _rev_list(repo: Path, *args: str) -> set[str]:
    return set(git(repo, "rev-list", *args).split())


def test_memory_commits_and_code_commits_never_mix(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    (repo / "code.py").write_text("print(1)\n")
    git(repo, "add", "code.py")
    git(repo, "commit", "-q", "-m", "code")
    git(repo, "checkout", "-q", "-b", "topic")
    (repo / "code.py").write_text("print(2)\n")
    git(repo, "commit", "-q", "-am", "topic code")
    head = git(repo, "rev-parse", "HEAD").strip()
    with Memory.open(repo) as mem:
        for i in range(5):
            mem.note(f"topic note {i}")
        mem.link_commit(head, message="topic code")
        mem.append("note", {"text": "on main"}, branch="main")
        mem.redact(mem.note("oops").id, "mistake")
    git(repo, "checkout", "-q", "main")
    (repo / "code.py").write_text("print(3)\n")
    git(repo, "commit", "-q", "-am", "more code")

    memory = _rev_list(repo, "--glob=refs/edda/*")
    code = _rev_list(repo, "--branches")
    assert memory and code
    assert memory.isdisjoint(code)
    # no memory commit has a code commit as parent, nor any code commit a memory parent
    for oid in memory:
        parents = git(repo, "rev-list", "--parents", "-n", "1", oid).split()[1:]
        assert set(parents) <= memory
    for oid in code:
        parents = git(repo, "rev-list", "--parents", "-n", "1", oid).split()[1:]
        assert set(parents) <= code
    # memory trees never contain code files
    for oid in memory:
        names = git(repo, "ls-tree", "--name-only", oid).split()
        if names and all(layout.is_partition(n) for n in names):
            continue  # the payload store: it names its partitions, snapshots of p/ and b/
        assert names in (["events"], ["p"], ["b", "p"], []), names
    # the code branch tips did not move
    assert git(repo, "rev-parse", "topic").strip() == head
    assert git(repo, "log", "--format=%s", "main").splitlines() == ["more code", "code", "initial"]


def test_fsck_full_on_300_events_over_3_branches(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", events=300, branches=3)
    with Memory.open(repo) as mem:
        # single appends on top of the batch commits, so chains have several commits
        for branch in ("main", "b1", "b2"):
            for i in range(3):
                mem.append("note", {"text": f"extra {branch} {i}"}, branch=branch)
        events = mem.events(all_branches=True)
        assert len(events) == 309
        assert {len(mem.events(branch=b)) for b in ("main", "b1", "b2")} == {103}
        report = mem.verify()
        assert report.ok, [str(p) for p in report.problems]
        assert report.events == 309
    assert max(raw_id_counts(repo).values()) == 1
    assert sum(raw_id_counts(repo).values()) == 309
    fsck(repo)
