"""Branch-aware memory: where a branch's memory starts, what it sees, how chains merge.

No git hooks here: a branch's chain is started by the first write on it (or by
``Memory.fork``), from what git recorded in its reflogs, so everything below is
the library and the CLI working from git's own records.
"""

from __future__ import annotations

import atexit
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import cli, fsck, git, init_repo, make_repo, raw_id_counts, ref_tip
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitmem import Memory
from gitmem.records import layout

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


# helpers ----------------------------------------------------------------------------
def setup_repo(path: Path) -> Path:
    init_repo(path)
    git(path, "config", "edda.fsync", "false")
    return path


def commit(repo: Path, name: str) -> str:
    (Path(repo) / name).write_text(f"{name}\n")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"add {name}")
    return git(repo, "rev-parse", "HEAD").strip()


def note(repo: Path, text: str, **kw: object):
    with Memory.open(repo) as mem:
        return mem.note(text, **kw)


def ids(repo: Path, **kw: object) -> list[str]:
    with Memory.open(repo) as mem:
        return [e.id for e in mem.events(**kw)]  # type: ignore[arg-type]


def trailers(repo: Path, rev: str) -> dict[str, str]:
    out = git(repo, "log", "-1", "--format=%(trailers:only,unfold)", rev)
    return dict(line.split(": ", 1) for line in out.splitlines() if ": " in line)


def fork_commit_of(repo: Path, branch: str) -> str:
    """The fork commit at the start of ``branch``'s own chain (first-parent walk)."""
    for sha in git(repo, "rev-list", "--first-parent", f"refs/edda/branches/{branch}").split():
        if trailers(repo, sha).get("Edda-Branch") == branch:
            return sha
    raise AssertionError(f"no fork commit on {branch}")


def ok_json(repo: Path, *args: str):
    code, out, err = cli(repo, *args, "--json")
    assert code == 0, err
    return json.loads(out)


# where a branch's memory starts ----------------------------------------------------
@pytest.mark.parametrize(
    "create",
    [["checkout", "-q", "-b", "feat"], ["switch", "-q", "-c", "feat"]],
    ids=["checkout-b", "switch-c"],
)
def test_new_branch_forks_from_the_branch_it_was_created_on(tmp_path: Path, create) -> None:
    repo = setup_repo(tmp_path / "repo")
    base = [note(repo, f"main {i}").id for i in range(3)]
    main_tip = ref_tip(repo, "refs/edda/branches/main")
    code = git(repo, "rev-parse", "HEAD").strip()

    git(repo, *create)
    with Memory.open(repo) as mem:
        assert mem.branch == "feat"
        # no memory of its own yet: reading shows what it will start from
        assert [e.id for e in mem.events()] == base
        own = mem.note("on feat")
    assert own.ref == "refs/edda/branches/feat"

    fork = git(repo, "rev-parse", "refs/edda/branches/feat~1").strip()
    assert git(repo, "rev-parse", f"{fork}^").strip() == main_tip
    assert git(repo, "log", "-1", "--format=%T %an <%ae>", fork).strip() == (
        f"{EMPTY_TREE} gitmem <gitmem@localhost>"
    )
    t = trailers(repo, fork)
    assert t["Edda-Branch"] == "feat"
    assert t["Edda-Fork"] == "main"
    assert t["Edda-Fork-Code"] == code
    assert git(repo, "log", "-1", "--format=%s", fork).startswith("fork feat from main")

    # inherited, not copied: each event is stored once
    assert ids(repo) == [*base, own.id]
    assert ids(repo, branch="main") == base
    assert sorted(ids(repo, all_branches=True)) == sorted([*base, own.id])
    assert max(raw_id_counts(repo).values()) == 1
    fsck(repo)


def test_fork_commit_is_the_tip_right_after_an_explicit_fork(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    note(repo, "main")
    git(repo, "checkout", "-q", "-b", "feat")
    code = git(repo, "rev-parse", "HEAD").strip()
    with Memory.open(repo) as mem:
        tip = mem.fork("feat")
        assert mem.fork("feat") == tip  # already started: left alone
    assert tip == ref_tip(repo, "refs/edda/branches/feat")
    body = git(repo, "log", "-1", "--format=%B", "refs/edda/branches/feat~0")
    assert "Edda-Branch: feat" in body
    assert "Edda-Fork: main" in body
    assert f"Edda-Fork-Code: {code}" in body
    assert git(repo, "rev-parse", "refs/edda/branches/feat^").strip() == ref_tip(
        repo, "refs/edda/branches/main"
    )


def test_branch_created_from_a_named_branch_forks_from_it(tmp_path: Path) -> None:
    """``git branch x main`` run on another branch: the reflog says "Created from
    main", which wins over the branch checked out before ``x``."""
    repo = setup_repo(tmp_path / "repo")
    on_main = note(repo, "on main")
    git(repo, "checkout", "-q", "-b", "other")
    commit(repo, "other.txt")
    on_other = note(repo, "on other")
    git(repo, "branch", "x", "main")
    git(repo, "checkout", "-q", "x")
    on_x = note(repo, "on x")
    assert ids(repo) == [on_main.id, on_x.id]
    assert on_other.id not in ids(repo)
    t = trailers(repo, fork_commit_of(repo, "x"))
    assert t["Edda-Fork"] == "main"
    assert t["Edda-Fork-Code"] == git(repo, "rev-parse", "main").strip()
    with Memory.open(repo) as mem:
        info = {b.name: b for b in mem.branches()}
    assert info["x"].fork_source == "main"
    assert info["other"].fork_source == "main"


def test_branch_from_a_remote_tracking_branch_forks_from_that_branch(tmp_path: Path) -> None:
    upstream = setup_repo(tmp_path / "upstream")
    git(upstream, "checkout", "-q", "-b", "topic")
    commit(upstream, "t.txt")
    git(upstream, "checkout", "-q", "main")
    repo = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream), str(repo))
    git(repo, "config", "edda.fsync", "false")
    on_main = note(repo, "main in the clone")
    git(repo, "checkout", "-q", "-b", "topic-work")  # from main
    on_work = note(repo, "topic-work")
    git(repo, "checkout", "-q", "-b", "mine", "origin/topic")
    git(repo, "checkout", "-q", "main")
    with Memory.open(repo) as mem:
        tip = mem.fork("mine")
    # "Created from origin/topic" names topic, which has no memory: no source chain
    t = trailers(repo, tip)
    assert t["Edda-Branch"] == "mine"
    assert "Edda-Fork" not in t
    assert on_work.id not in ids(repo, branch="mine")
    assert on_main.id not in ids(repo, branch="mine", trunk="none")


def test_worktree_branch_forks_from_the_nearest_branch_in_code_history(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    on_main = note(repo, "main")
    git(repo, "checkout", "-q", "-b", "b")
    commit(repo, "b.txt")
    on_b = note(repo, "b")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "wt", str(wt))  # from b's HEAD
    with Memory.open(wt) as mem:
        assert mem.branch == "wt"
        # the reflogs say only "Created from HEAD" and "reset: moving to HEAD"
        assert mem.plan("wt").why.startswith("nearest branch in code history")
        on_wt = mem.note("in the worktree")
    # main and b are both ancestors in code; b is nearer
    t = trailers(repo, fork_commit_of(repo, "wt"))
    assert t["Edda-Fork"] == "b"
    assert t["Edda-Fork-Code"] == git(repo, "rev-parse", "b").strip()
    assert ids(wt) == [on_main.id, on_b.id, on_wt.id]
    assert ids(repo) == [on_main.id, on_b.id]  # b (this worktree) did not change


def test_rename_continues_the_old_chain(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    on_main = note(repo, "main")
    git(repo, "checkout", "-q", "-b", "feat")
    on_feat = note(repo, "feat")
    feat_tip = ref_tip(repo, "refs/edda/branches/feat")
    git(repo, "branch", "-m", "feat", "feat2")
    with Memory.open(repo) as mem:
        assert mem.branch == "feat2"
        assert [e.id for e in mem.events()] == [on_main.id, on_feat.id]
        renamed = mem.note("after the rename")
    # a rename fork commit sits right on feat's tip, carrying feat's fork record
    assert git(repo, "rev-parse", "refs/edda/branches/feat2^^").strip() == feat_tip
    rename = trailers(repo, "refs/edda/branches/feat2^")
    assert rename["Edda-Renamed-From"] == "feat" and rename["Edda-Branch"] == "feat2"
    assert rename["Edda-Fork"] == "main"
    assert ids(repo) == [on_main.id, on_feat.id, renamed.id]
    with Memory.open(repo) as mem:
        info = {b.name: b for b in mem.branches()}
    assert info["feat"].git_branch is False
    assert info["feat"].fork_source == "main"


def test_rename_keeps_the_fork_record_for_merge_detection(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    note(repo, "main base")
    git(repo, "checkout", "-q", "-b", "feat")
    note(repo, "feat note")
    git(repo, "branch", "-m", "feat", "feat2")
    after = note(repo, "after the rename")
    git(repo, "checkout", "-q", "main")
    main_note = note(repo, "main note after the fork")
    git(repo, "checkout", "-q", "feat2")
    with Memory.open(repo) as mem:
        # what 'git edda pull' does after fetching: no code was merged anywhere
        merges = [(r.source, r.into, r.outcome) for r in mem.merge_code_merges()]
        on_feat2 = {e.id for e in mem.events(trunk="none")}
        on_main = {e.id for e in mem.events(branch="main", trunk="none")}
        fork = {b.name: b.fork_source for b in mem.branches()}["feat2"]
    assert merges == []
    assert main_note.id not in on_feat2
    assert after.id not in on_main
    assert fork == "main"


def test_recreated_branch_continues_the_deleted_branchs_memory(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    on_main = note(repo, "main")
    git(repo, "checkout", "-q", "-b", "feat")
    on_feat = note(repo, "first life of feat")
    tip = ref_tip(repo, "refs/edda/branches/feat")
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-D", "feat")
    assert ref_tip(repo, "refs/edda/branches/feat") == tip  # memory outlives the branch
    git(repo, "checkout", "-q", "-b", "feat")
    again = note(repo, "second life")
    assert git(repo, "rev-parse", "refs/edda/branches/feat^").strip() == tip  # no new fork
    assert ids(repo) == [on_main.id, on_feat.id, again.id]


def test_orphan_branch_starts_empty(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    note(repo, "main")
    with Memory.open(repo) as mem:
        decision = mem.decide("db", "postgres")
    git(repo, "checkout", "-q", "--orphan", "o")
    with Memory.open(repo) as mem:
        assert mem.branch == "o"
        assert [e.type for e in mem.events(trunk="none")] == []
        # nothing inherited; only the trunk's decisions are followed, as on any branch
        assert [e.id for e in mem.events()] == [decision.id]
        first = mem.note("first on the orphan")
        assert [e.id for e in mem.events(trunk="none")] == [first.id]
    tip = ref_tip(repo, "refs/edda/branches/o")
    # a root chain: nothing from main underneath
    assert git(repo, "rev-list", "--count", tip).strip() == "1"
    assert git(repo, "merge-base", tip, "refs/edda/branches/main", check=False) == ""


def test_unborn_trunk_and_first_chain_are_plain_roots(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", commit=False)
    git(repo, "config", "edda.fsync", "false")
    first = note(repo, "before any commit")
    assert first.ref == "refs/edda/branches/main"
    assert git(repo, "rev-list", "--count", "refs/edda/branches/main").strip() == "1"
    assert "Edda-Branch" not in trailers(repo, "refs/edda/branches/main")


def test_detached_head_writes_to_the_detached_chain(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    on_main = note(repo, "main")
    main_tip = ref_tip(repo, "refs/edda/branches/main")
    git(repo, "checkout", "-q", "--detach")
    with Memory.open(repo) as mem:
        assert mem.branch is None
        detached = mem.note("while detached")
    assert detached.ref == "refs/edda/detached"
    assert detached.branch is None
    assert ref_tip(repo, "refs/edda/detached") is not None
    assert ref_tip(repo, "refs/edda/branches/main") == main_tip
    assert ids(repo) == [detached.id]
    assert ids(repo, branch="main") == [on_main.id]
    with Memory.open(repo) as mem:
        names = [b.name for b in mem.branches()]
    assert None in names and "main" in names


def test_write_during_a_stopped_rebase_goes_to_the_rebased_branch(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    (repo / "f.txt").write_text("base\n")
    git(repo, "add", "f.txt")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "feat")
    (repo / "f.txt").write_text("feat\n")
    git(repo, "commit", "-q", "-am", "feat change")
    on_feat = note(repo, "feat before the rebase")
    git(repo, "checkout", "-q", "main")
    (repo / "f.txt").write_text("main\n")
    git(repo, "commit", "-q", "-am", "main change")
    git(repo, "checkout", "-q", "feat")
    proc = subprocess.run(["git", "rebase", "main"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode != 0  # stopped on the conflict
    assert git(repo, "symbolic-ref", "-q", "HEAD", check=False) == ""  # detached
    try:
        with Memory.open(repo) as mem:
            assert mem.branch == "feat"
            during = mem.note("resolving the conflict")
        assert during.ref == "refs/edda/branches/feat"
        assert ref_tip(repo, "refs/edda/detached") is None
    finally:
        git(repo, "rebase", "--abort")
    assert ids(repo, trunk="none") == [on_feat.id, during.id]


def test_bisect_writes_go_to_the_bisected_branch(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    for name in ("a", "b", "c"):
        commit(repo, name)
    git(repo, "bisect", "start", "HEAD", "HEAD~3")
    try:
        assert git(repo, "symbolic-ref", "-q", "HEAD", check=False) == ""
        written = note(repo, "bisecting")
    finally:
        git(repo, "bisect", "reset")
    assert written.ref == "refs/edda/branches/main"


# what a branch sees ----------------------------------------------------------------
def trunk_repo(tmp_path: Path):
    repo = setup_repo(tmp_path / "repo")
    before = note(repo, "main before the fork")
    git(repo, "checkout", "-q", "-b", "feat")
    on_feat = note(repo, "feat")
    git(repo, "checkout", "-q", "main")
    with Memory.open(repo) as mem:
        decision = mem.decide("db.engine", "postgres", reason="JSONB")
        after = mem.note("main after the fork")
        pinned = mem.pin(before.id)
    git(repo, "checkout", "-q", "feat")
    return repo, before, on_feat, decision, after, pinned


def test_branch_follows_trunk_decisions_by_default(tmp_path: Path) -> None:
    repo, before, on_feat, decision, after, pinned = trunk_repo(tmp_path)
    with Memory.open(repo) as mem:
        assert mem.trunk == "main"
        default = [e.id for e in mem.events()]
        assert default == [before.id, on_feat.id, decision.id, pinned.id]
        assert [d.event.id for d in mem.decisions()] == [decision.id]
        assert [e.id for e in mem.events(trunk="decisions")] == default
        assert [e.id for e in mem.events(trunk="all")] == [
            before.id,
            on_feat.id,
            decision.id,
            after.id,
            pinned.id,
        ]
        assert [e.id for e in mem.events(trunk="none")] == [before.id, on_feat.id]
        # the trunk itself is unaffected
        assert [e.id for e in mem.events(branch="main", trunk="none")] == [
            before.id,
            decision.id,
            after.id,
            pinned.id,
        ]
    git(repo, "config", "edda.followTrunk", "none")
    assert ids(repo) == [before.id, on_feat.id]
    git(repo, "config", "edda.followTrunk", "all")
    assert after.id in ids(repo)
    assert ids(repo, trunk="none") == [before.id, on_feat.id]  # the parameter wins
    git(repo, "config", "edda.followTrunk", "sideways")
    with Memory.open(repo) as mem, pytest.raises(Exception, match="follow-trunk"):
        mem.events()
    # the CLI honours the same setting
    git(repo, "config", "edda.followTrunk", "none")
    listed = [e["envelope"]["id"] for e in ok_json(repo, "log", "--reverse")["events"]]
    assert listed == [before.id, on_feat.id]
    git(repo, "config", "--unset", "edda.followTrunk")
    listed = [e["envelope"]["id"] for e in ok_json(repo, "log", "--reverse")["events"]]
    assert listed == [before.id, on_feat.id, decision.id, pinned.id]


def test_configured_trunk_wins(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    git(repo, "branch", "develop")
    on_main = note(repo, "main's own chain, before develop has memory")
    git(repo, "config", "edda.trunk", "develop")
    git(repo, "checkout", "-q", "develop")
    with Memory.open(repo) as mem:
        assert mem.trunk == "develop"
        d = mem.decide("k", "v")
        n = mem.note("develop note")
    git(repo, "checkout", "-q", "main")
    with Memory.open(repo) as mem:
        assert [e.id for e in mem.events()] == [on_main.id, d.id]
        assert [e.id for e in mem.events(trunk="all")] == [on_main.id, d.id, n.id]
        assert [e.id for e in mem.events(trunk="none")] == [on_main.id]
        assert [b.name for b in mem.branches() if b.trunk] == ["develop"]
    git(repo, "config", "--unset", "edda.trunk")
    with Memory.open(repo) as mem:
        assert mem.trunk == "main"
        assert [e.id for e in mem.events()] == [on_main.id]


# listing -----------------------------------------------------------------------------
def test_branches_json(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    note(repo, "main 1")
    note(repo, "main 2")
    git(repo, "checkout", "-q", "-b", "feat")
    commit(repo, "feat.txt")
    code = git(repo, "rev-parse", "HEAD~1").strip()
    note(repo, "feat 1")
    git(repo, "checkout", "-q", "-b", "gone")
    note(repo, "gone 1")
    git(repo, "checkout", "-q", "feat")
    git(repo, "branch", "-D", "gone")
    git(repo, "checkout", "-q", "--detach")
    note(repo, "detached 1")
    git(repo, "checkout", "-q", "feat")

    rows = {row["name"]: row for row in ok_json(repo, "branches")["branches"]}
    assert set(rows) == {"main", "feat", "gone", None}
    assert rows["main"] | {"tip": None} == {
        "name": "main",
        "ref": "refs/edda/branches/main",
        "tip": None,
        "events": 2,
        "git_branch": True,
        "current": False,
        "trunk": True,
        "fork_source": None,
        "fork_code": None,
    }
    assert rows["main"]["tip"] == ref_tip(repo, "refs/edda/branches/main")
    feat = rows["feat"]
    assert (feat["events"], feat["current"], feat["trunk"], feat["git_branch"]) == (
        3,
        True,
        False,
        True,
    )
    assert (feat["fork_source"], feat["fork_code"]) == ("main", code)
    assert rows["gone"]["git_branch"] is False
    assert rows["gone"]["fork_source"] == "feat"
    assert rows["gone"]["events"] == 4
    assert rows[None]["ref"] == "refs/edda/detached"
    assert rows[None]["events"] == 1
    code_, text, _ = cli(repo, "branches")
    assert code_ == 0 and "forked from main" in text and "(no git branch)" in text


# merging memory ----------------------------------------------------------------------
def test_squash_merge_needs_git_edda_merge(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    base = note(repo, "base")
    git(repo, "checkout", "-q", "-b", "feat")
    commit(repo, "feat.txt")
    on_feat = note(repo, "feat work")
    git(repo, "checkout", "-q", "main")
    on_main = note(repo, "main meanwhile")
    git(repo, "merge", "-q", "--squash", "feat")
    git(repo, "commit", "-q", "-m", "squashed feat")
    assert on_feat.id not in ids(repo, trunk="none")
    main_before = ref_tip(repo, "refs/edda/branches/main")
    feat_tip = ref_tip(repo, "refs/edda/branches/feat")

    result = ok_json(repo, "merge", "feat")
    assert result["source"] == "feat" and result["into"] == "main"
    assert result["outcome"] == "merged"
    assert result["before"] == main_before
    assert result["events"] == 1
    tip = result["after"]
    assert tip == ref_tip(repo, "refs/edda/branches/main")
    assert ids(repo, trunk="none") == [base.id, on_feat.id, on_main.id]
    assert git(repo, "log", "-1", "--format=%P", tip).split() == sorted([main_before, feat_tip])
    assert git(repo, "log", "-1", "--format=%T|%an <%ae>|%cn <%ce>|%s", tip).strip() == (
        f"{EMPTY_TREE}|gitmem <gitmem@localhost>|gitmem <gitmem@localhost>|merge 2 memory heads"
    )
    times = [git(repo, "log", "-1", "--format=%ct", c).strip() for c in (main_before, feat_tip)]
    assert git(repo, "log", "-1", "--format=%ct", tip).strip() == max(times, key=int)

    again = ok_json(repo, "merge", "feat")
    assert again["outcome"] == "up-to-date" and again["events"] == 0
    assert again["after"] == tip
    # merging back the other way fast-forwards feat onto the same commit
    with Memory.open(repo) as mem:
        back = mem.merge("main", "feat")
    assert back.outcome == "fast-forward" and back.after == tip
    assert max(raw_id_counts(repo).values()) == 1
    with Memory.open(repo) as mem:
        assert mem.verify().ok
    fsck(repo)


def test_merge_fast_forwards_and_rejects_bad_input(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    note(repo, "base")
    git(repo, "checkout", "-q", "-b", "feat")
    note(repo, "feat")
    feat_tip = ref_tip(repo, "refs/edda/branches/feat")
    git(repo, "checkout", "-q", "main")
    with Memory.open(repo) as mem:
        result = mem.merge("feat")
        assert (result.outcome, result.after, result.events) == ("fast-forward", feat_tip, 1)
        created = mem.merge("feat", "newbranch")
        assert created.outcome == "created" and created.after == feat_tip
    code, _, err = cli(repo, "merge", "main")
    assert code == 2 and "itself" in err
    code, _, err = cli(repo, "merge", "nosuch")
    assert code == 3 and "no memory" in err
    git(repo, "checkout", "-q", "--detach")
    code, _, err = cli(repo, "merge", "feat")
    assert code == 2 and "detached" in err
    assert ok_json(repo, "merge", "feat", "--into", "main")["outcome"] == "up-to-date"


def divergent_repo(path: Path, branches: int = 3) -> Path:
    """main with a base note; ``b1..bN`` each forked from main with notes of their
    own; main with a note after the forks."""
    repo = setup_repo(path)
    note(repo, "base")
    for i in range(1, branches + 1):
        git(repo, "checkout", "-q", "-b", f"b{i}", "main")
        for j in range(2):
            note(repo, f"b{i} note {j}")
    git(repo, "checkout", "-q", "main")
    note(repo, "main after the forks")
    return repo


def test_same_merge_in_two_clones_gives_the_same_commit(tmp_path: Path) -> None:
    one = divergent_repo(tmp_path / "one", branches=2)
    two = tmp_path / "two"
    three = tmp_path / "three"
    shutil.copytree(one, two, symlinks=True)
    shutil.copytree(one, three, symlinks=True)
    tips = {b: ref_tip(one, f"refs/edda/branches/{b}") for b in ("main", "b1", "b2")}
    with Memory.open(one) as mem:
        first = mem.merge("b1")
        second = mem.merge("b2")
    assert first.outcome == second.outcome == "merged"
    # the other clone makes the same merges, through the CLI: the same commits
    assert ok_json(two, "merge", "b1")["after"] == first.after
    assert ok_json(two, "merge", "b2")["after"] == second.after
    assert ref_tip(one, "refs/edda/branches/main") == ref_tip(two, "refs/edda/branches/main")
    # a merge commit keeps its inputs as parents: the earlier merge, then b2
    assert git(one, "log", "-1", "--format=%P", second.after).split() == sorted(
        [first.after, tips["b2"]]
    )
    assert git(one, "log", "-1", "--format=%s", second.after).strip() == "merge 2 memory heads"
    # merging the other way round (into b1, b2 first) gives the same memory,
    # descending from every chain
    with Memory.open(three) as mem:
        mem.merge("b2", "b1")
        last = mem.merge("main", "b1").after
        assert last is not None
        for tip in tips.values():
            assert mem.backend.is_ancestor(tip, last)
    assert sorted(ids(one, trunk="none")) == sorted(ids(three, branch="b1", trunk="none"))


_TEMPLATES: dict[int, tuple[Path, dict[str, set[str]]]] = {}
atexit.register(lambda: [shutil.rmtree(r.parent, True) for r, _ in _TEMPLATES.values()])


def _template(chains: int) -> tuple[Path, dict[str, set[str]]]:
    """A divergent repository with ``chains`` chains (main + b1..), built once."""
    if chains not in _TEMPLATES:
        root = Path(tempfile.mkdtemp(prefix="gitmem-merge-template-"))
        repo = divergent_repo(root / "repo", branches=chains - 1)
        with Memory.open(repo) as mem:
            own = {
                name: {e.id for e in mem.events(branch=name, trunk="none")}
                for name in ["main"] + [f"b{i}" for i in range(1, chains)]
            }
        _TEMPLATES[chains] = (repo, own)
    return _TEMPLATES[chains]


@st.composite
def merge_plans(draw):
    """3 or 4 chains and a random order of pairwise merges that joins them all:
    repeatedly pick two groups and merge the chain holding one group's memory
    into the chain holding the other's."""
    chains = draw(st.integers(3, 4))
    names = ["main"] + [f"b{i}" for i in range(1, chains)]
    holders = list(draw(st.permutations(names)))
    steps = []
    while len(holders) > 1:
        i = draw(st.integers(0, len(holders) - 1))
        j = draw(st.integers(0, len(holders) - 2))
        j = j if j < i else j + 1
        steps.append((holders[i], holders[j]))
        holders.pop(i)
    return chains, steps


@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=merge_plans())
def test_merge_order_does_not_matter(plan) -> None:
    chains, steps = plan
    template, own = _template(chains)
    every = set().union(*own.values())
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(template, repo, symlinks=True)
        with Memory.open(repo) as mem:
            for source, target in steps:
                result = mem.merge(source, target)
                assert result.outcome in ("merged", "fast-forward"), (steps, result)
            final = steps[-1][1]
            # the same memory whatever the order, and the result descends from every chain
            assert {e.id for e in mem.events(branch=final, trunk="none")} == every
            assert result.after is not None
            for name in own:
                assert mem.backend.is_ancestor(
                    ref_tip(template, layout.branch_ref(name)), result.after
                )
        assert max(raw_id_counts(repo).values()) == 1


# linked worktrees --------------------------------------------------------------------
WRITER = r"""
import os, sys, time
go, repo, tag, count, branch = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
from gitmem import Memory
with Memory.open(repo) as mem:
    while not os.path.exists(go):
        time.sleep(0.005)
    for i in range(count):
        text = f"{tag} {i}"
        event = mem.note(text) if branch == "-" else mem.note(text, branch=branch)
        print(event.id, flush=True)
"""


def test_concurrent_writers_in_two_worktrees_lose_nothing(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    seed = note(repo, "before the worktree")
    w2 = tmp_path / "w2"
    git(repo, "worktree", "add", "-q", "-b", "other", str(w2))
    go = tmp_path / "go"
    # two writers per worktree on its checked-out branch, plus one writer in each
    # worktree that writes to the same branch, "shared", explicitly
    writers = [
        (repo, "main-a", "-"),
        (repo, "main-b", "-"),
        (w2, "other-a", "-"),
        (w2, "other-b", "-"),
        (repo, "shared-a", "shared"),
        (w2, "shared-b", "shared"),
    ]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(go), str(where), tag, "50", branch],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for where, tag, branch in writers
    ]
    go.touch()
    printed: dict[str, list[str]] = {}
    try:
        for (_, tag, _), proc in zip(writers, procs, strict=True):
            out, err = proc.communicate(timeout=100)
            assert proc.returncode == 0, err
            printed[tag] = out.split()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert all(len(v) == 50 for v in printed.values())
    main_ids = set(printed["main-a"] + printed["main-b"])
    other_ids = set(printed["other-a"] + printed["other-b"])
    shared_ids = set(printed["shared-a"] + printed["shared-b"])
    written = main_ids | other_ids | shared_ids | {seed.id}
    assert len(written) == 301

    with Memory.open(repo) as mem:
        on_main = [e.id for e in mem.events(branch="main", trunk="none")]
        on_other = [e.id for e in mem.events(branch="other", trunk="none")]
        on_shared = [e.id for e in mem.events(branch="shared", trunk="none")]
        everything = [e.id for e in mem.events(all_branches=True)]
        texts = {e.id: e.field("text") for e in mem.events(all_branches=True)}
        assert mem.verify().ok
    assert set(on_main) == main_ids | {seed.id}
    assert other_ids <= set(on_other)
    # other forked from main at some point during the run: what it inherited is main's
    assert set(on_other) - other_ids <= main_ids | {seed.id}
    assert shared_ids <= set(on_shared)
    assert set(on_shared) - shared_ids <= main_ids | {seed.id}  # forked from the trunk
    assert sorted(everything) == sorted(written)
    for listed in (on_main, on_other, on_shared):
        assert len(listed) == len(set(listed))
    for tag, got in printed.items():
        assert [texts[i] for i in got] == [f"{tag} {i}" for i in range(50)]
    counts = raw_id_counts(repo)
    assert set(counts) == written
    assert max(counts.values()) == 1
    assert not list((repo / ".git" / "refs").rglob("*.lock"))
    fsck(repo)


def test_merge_intent_for_a_deleted_branch_uses_its_commit_links(tmp_path: Path) -> None:
    """A branch deleted right after its merge (the pull-request flow) has no code
    ref left: its newest commit_link stands in. Applying the intent reads memory,
    which must not re-enter intent processing."""
    from gitmem.branches.intents import write_intent

    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.fsync", "false")
    with Memory.open(repo) as mem:
        mem.note("on main")
    git(repo, "checkout", "-q", "-b", "feat")
    git(repo, "commit", "-q", "--allow-empty", "-m", "feature work")
    work = git(repo, "rev-parse", "HEAD").strip()
    with Memory.open(repo) as mem:
        mem.link_commit(work, message="feature work")
        feat_note = mem.note("on feat")
    git(repo, "checkout", "-q", "main")
    orig = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "merge", "-q", "--no-ff", "-m", "merge feat", "feat")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "branch", "-D", "feat")
    with Memory.open(repo) as mem:
        write_intent(
            mem.location.state_path,
            {"kind": "merge", "branch": "main", "head": head, "orig": orig},
            fsync=False,
        )
        results = mem.apply_intents()
        assert [(r.source, r.into) for r in results] == [("feat", "main")]
        assert feat_note.id in {e.id for e in mem.events(branch="main")}
        assert mem.apply_intents() == []  # consumed


def test_each_chain_is_read_once_for_all_its_branches(tmp_path: Path) -> None:
    """Memory's reader gets every chain's events as walking that chain alone
    gives them, but reads a commit shared by several chains once: one object
    per event, however many branches reach it (one decoded copy of the trunk
    per branch took tens of gigabytes at a million events)."""
    from gitmem.capture.sealer import Draft

    repo = make_repo(tmp_path / "repo", events=6, branches=2)
    git(repo, "switch", "-q", "-c", "feature", "main")
    with Memory.open(repo) as mem:
        mem.append_many([Draft("note", {"text": f"feature {i}"}) for i in range(3)])
    git(repo, "switch", "-q", "main")
    with Memory.open(repo) as mem:
        mem.note("main after the fork")
        ledger = mem.ledger
        tips = ledger.memory_refs()
        chains = ledger.chains(tips)
        assert list(chains) == list(tips)
        for ref in tips:
            alone = [(loc.envelope["id"], loc.commit) for loc in ledger.envelopes([ref])]
            assert [(loc.envelope["id"], loc.commit) for loc in chains[ref]] == alone
        main, feature = chains[layout.branch_ref("main")], chains[layout.branch_ref("feature")]
        shared = {loc.envelope["id"] for loc in main} & {loc.envelope["id"] for loc in feature}
        assert len(shared) >= 3
        by_id = {loc.envelope["id"]: loc for loc in main}
        assert all(
            by_id[loc.envelope["id"]] is loc for loc in feature if loc.envelope["id"] in shared
        )
