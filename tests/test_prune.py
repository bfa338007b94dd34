"""``git edda branches --prune``: the memory of deleted branches goes only when
nothing is lost; remotes are left alone, and pulls do not bring it back.

Real repositories throughout: branches renamed, deleted, squash-merged, a
linked worktree removed, and a bare remote with clones for the sync cases.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import (
    cli,
    clone,
    git,
    init_repo,
    make_remote,
    payload_blob_id,
    payload_files,
    ref_tip,
)

from gitmem import Memory
from gitmem.branches.prune import _delete, read_pruned
from gitmem.storage.purgelist import read_purge_list

BRANCHES = "refs/edda/branches/"


# helpers -----------------------------------------------------------------------------
def setup_repo(path: Path) -> Path:
    init_repo(path)
    git(path, "config", "edda.fsync", "false")
    return path


def note(repo: Path, text: str, **kw: object) -> str:
    with Memory.open(repo) as mem:
        return mem.note(text, **kw).id  # type: ignore[arg-type]


def all_ids(repo: Path) -> set[str]:
    with Memory.open(repo) as mem:
        return {e.id for e in mem.events(all_branches=True)}


def chains(repo: Path) -> set[str]:
    out = git(repo, "for-each-ref", "--format=%(refname)", BRANCHES)
    return {line[len(BRANCHES) :] for line in out.split()}


def prune(repo: Path, *args: str) -> dict[str, dict]:
    code, out, err = cli(repo, "branches", "--prune", *args, "--json")
    assert code == 0, err
    return {entry["name"]: entry for entry in json.loads(out)["branches"]}


def verify_clean(repo: Path) -> dict:
    code, out, err = cli(repo, "verify", "--json")
    report = json.loads(out)
    assert code == 0 and report["ok"], (out, err)
    payload_warnings = [w for w in report["warnings"] if "payload" in json.dumps(w)]
    assert payload_warnings == [], payload_warnings
    return report


def payload_paths(repo: Path) -> str:
    return "\n".join(payload_files(repo))


def deleted_branches_repo(path: Path) -> tuple[Path, dict[str, str]]:
    """main plus four deleted branches: 'old' (renamed to 'new'), 'merged'
    (memory merged into main), 'squashed' (one event nowhere else) and
    'empty' (created, never written to)."""
    repo = setup_repo(path)
    made = {"main": note(repo, "on main")}
    git(repo, "checkout", "-q", "-b", "old")
    made["old"] = note(repo, "written on old")
    git(repo, "branch", "-m", "old", "new")
    made["new"] = note(repo, "written on new")
    git(repo, "checkout", "-q", "main")
    for name in ("merged", "squashed", "empty"):
        git(repo, "branch", name)
    made["merged"] = note(repo, "merged work", branch="merged")
    made["squashed"] = note(repo, "squashed work", branch="squashed")
    with Memory.open(repo) as mem:
        mem.fork("empty")
        mem.merge("merged", "main")
    for name in ("merged", "squashed", "empty"):
        git(repo, "branch", "-D", name)
    return repo, made


# what goes, what stays, and why --------------------------------------------------------
def test_dry_run_lists_what_would_go_and_why_the_rest_stays(tmp_path: Path) -> None:
    repo, _ = deleted_branches_repo(tmp_path / "repo")
    before = {ref: ref_tip(repo, BRANCHES + ref) for ref in chains(repo)}
    entries = prune(repo, "--dry-run")
    assert {n: e["action"] for n, e in entries.items()} == {
        "main": "kept",
        "new": "kept",
        "old": "would prune",
        "merged": "would prune",
        "empty": "would prune",
        "squashed": "kept",
    }
    assert entries["main"]["reason"] == "the trunk"
    assert entries["new"]["reason"] == "its git branch exists"
    assert entries["old"]["reason"] == "every event it holds is also in new"
    assert entries["merged"]["reason"] == "every event it holds is also in main"
    assert entries["squashed"]["lost"] == 1
    assert entries["squashed"]["reason"].startswith("not merged: 1 event only here")
    assert "--force" in entries["squashed"]["reason"]
    # nothing changed
    assert {ref: ref_tip(repo, BRANCHES + ref) for ref in chains(repo)} == before
    assert read_pruned(repo / ".git" / "edda") == {}
    code, out, _ = cli(repo, "branches", "--prune", "--dry-run")
    assert code == 0
    assert "would prune old" in out and "keeping squashed" in out
    assert "dry run: nothing was changed" in out


def test_prune_removes_contained_chains_and_keeps_every_event(tmp_path: Path) -> None:
    repo, made = deleted_branches_repo(tmp_path / "repo")
    ids_before = all_ids(repo)
    entries = prune(repo)
    assert sorted(n for n, e in entries.items() if e["action"] == "pruned") == [
        "empty",
        "merged",
        "old",
    ]
    assert chains(repo) == {"main", "new", "squashed"}
    assert all_ids(repo) == ids_before == set(made.values())
    verify_clean(repo)
    assert set(read_pruned(repo / ".git" / "edda")) == {
        BRANCHES + n for n in ("empty", "merged", "old")
    }
    # a second prune has nothing left to do
    code, out, _ = cli(repo, "branches", "--prune")
    assert code == 0 and out.startswith("nothing to prune")


def test_force_drops_unmerged_memory_and_its_payloads(tmp_path: Path) -> None:
    repo, made = deleted_branches_repo(tmp_path / "repo")
    assert made["squashed"] in payload_paths(repo)
    blob = payload_blob_id(repo, f"p/{made['squashed'][:2]}/{made['squashed']}")
    entries = prune(repo, "--force")
    assert entries["squashed"]["action"] == "pruned"
    assert entries["squashed"]["lost"] == 1
    assert "squashed" not in chains(repo)
    assert all_ids(repo) == set(made.values()) - {made["squashed"]}
    # its payload left the store like a redacted one: gc destroys the bytes
    assert made["squashed"] not in payload_paths(repo)
    assert blob.strip() in read_purge_list(repo / ".git" / "edda")
    verify_clean(repo)
    code, out, err = cli(repo, "gc", "--json")
    assert code == 0, err
    assert json.loads(out)["destroyed"] >= 1
    gone = subprocess.run(["git", "cat-file", "-e", blob.strip()], cwd=repo, check=False)
    assert gone.returncode != 0  # the bytes are gone from the object store


def test_live_remote_tracking_and_detached_chains_stay(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    note(repo, "main")
    git(repo, "branch", "live")
    note(repo, "live work", branch="live")
    git(repo, "checkout", "-q", "--detach")
    note(repo, "detached work")
    git(repo, "checkout", "-q", "main")
    # a teammate's branch: memory pulled, code only as a remote-tracking branch
    note(repo, "teammate work", branch="theirs")
    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "update-ref", "refs/remotes/origin/theirs", head)
    entries = prune(repo, "--force")
    assert {n: e["reason"] for n, e in entries.items()} == {
        "main": "the trunk",
        "live": "its git branch exists",
        None: "the detached HEAD chain",
        "theirs": "its code is still on origin/theirs",
    }
    assert all(e["action"] == "kept" for e in entries.values())


def test_current_branch_without_a_git_branch_stays(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    note(repo, "main")
    git(repo, "checkout", "-q", "--orphan", "unborn")  # HEAD names a branch with no ref yet
    note(repo, "on the unborn branch")
    entry = prune(repo, "--force")["unborn"]
    assert (entry["action"], entry["reason"]) == ("kept", "the current branch")


def test_a_redaction_found_nowhere_else_is_never_pruned(tmp_path: Path) -> None:
    """Dropping it would bring the payload back at the next pull from any clone
    that still has it, and verify would find an event without payload."""
    repo = setup_repo(tmp_path / "repo")
    leaked = note(repo, "token s3cr3t-value")
    git(repo, "checkout", "-q", "-b", "cleanup")
    with Memory.open(repo) as mem:
        mem.redact(leaked, "leaked token")  # recorded on 'cleanup'
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-D", "cleanup")
    entries = prune(repo, "--force")
    assert entries["cleanup"]["action"] == "kept"
    assert "redaction of an event other branches hold" in entries["cleanup"]["reason"]
    assert "git edda merge cleanup" in entries["cleanup"]["reason"]
    verify_clean(repo)
    # once merged, it goes
    with Memory.open(repo) as mem:
        mem.merge("cleanup", "main")
    assert prune(repo)["cleanup"]["action"] == "pruned"
    verify_clean(repo)


def test_force_drops_a_redaction_together_with_what_it_redacted(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    note(repo, "main")
    git(repo, "checkout", "-q", "-b", "agent-tmp")
    leaked = note(repo, "token s3cr3t-value")
    with Memory.open(repo) as mem:
        mem.redact(leaked, "leaked token")
    git(repo, "checkout", "-q", "main")
    git(repo, "branch", "-D", "agent-tmp")
    entry = prune(repo, "--force")["agent-tmp"]
    assert (entry["action"], entry["lost"]) == ("pruned", 2)
    assert leaked not in all_ids(repo)
    verify_clean(repo)


def test_identical_deleted_chains_keep_one_copy(tmp_path: Path) -> None:
    """Two deleted branches holding the same unmerged events: one stays."""
    repo = setup_repo(tmp_path / "repo")
    note(repo, "main")
    git(repo, "branch", "a")
    only = note(repo, "only on a", branch="a")
    tip = ref_tip(repo, BRANCHES + "a")
    git(repo, "update-ref", BRANCHES + "b", tip)
    git(repo, "branch", "-D", "a")
    entries = prune(repo)
    assert [entries["a"]["action"], entries["b"]["action"]].count("kept") == 1
    assert only in all_ids(repo)


def test_removed_worktree_branch(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    note(repo, "main")
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "agent-1", str(wt))
    with Memory.open(wt) as mem:
        assert mem.branch == "agent-1"
        mem.note("found in the worktree")
    assert prune(repo)["agent-1"]["reason"] == "its git branch exists"
    git(repo, "worktree", "remove", str(wt))
    git(repo, "branch", "-D", "agent-1")
    assert prune(repo)["agent-1"]["action"] == "kept"  # not merged
    with Memory.open(repo) as mem:
        mem.merge("agent-1", "main")
    assert prune(repo)["agent-1"]["action"] == "pruned"
    assert "agent-1" not in chains(repo)
    verify_clean(repo)


def test_a_ref_that_moved_is_not_deleted(tmp_path: Path) -> None:
    """The compare-and-swap under the decision: a ref deleted only at the tip judged."""
    repo = setup_repo(tmp_path / "repo")
    note(repo, "main")
    note(repo, "one", branch="x")
    judged = ref_tip(repo, BRANCHES + "x")
    note(repo, "two", branch="x")
    note(repo, "one", branch="y")
    y_tip = ref_tip(repo, BRANCHES + "y")
    with Memory.open(repo) as mem:
        gone = _delete(mem.backend, {BRANCHES + "x": judged, BRANCHES + "y": y_tip})
    assert gone == {BRANCHES + "y": y_tip}
    assert "x" in chains(repo) and "y" not in chains(repo)


def test_options_without_prune_are_usage_errors(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    for option in ("--dry-run", "--force"):
        code, _, err = cli(repo, "branches", option)
        assert code == 2 and "--prune" in err


def test_log_no_longer_shows_force_pruned_events(tmp_path: Path) -> None:
    repo, made = deleted_branches_repo(tmp_path / "repo")
    code, out, _ = cli(repo, "log", "--all-branches", "--json")  # builds the index
    assert code == 0 and made["squashed"] in out
    prune(repo, "--force")
    code, out, _ = cli(repo, "log", "--all-branches", "--json")
    assert code == 0 and made["squashed"] not in out and made["merged"] in out


# the remote ---------------------------------------------------------------------------


def sync(repo: Path) -> dict:
    code, out, err = cli(repo, "sync", "--json")
    assert code == 0, err
    return json.loads(out)


def test_pull_does_not_bring_back_a_pruned_branch_unless_it_has_news(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    a = clone(bare, tmp_path / "a")
    b = clone(bare, tmp_path / "b")
    note(a, "main")
    git(a, "checkout", "-q", "-b", "feat")
    note(a, "feature work")
    git(a, "push", "-q", "-u", "origin", "feat")  # its code is on the remote: memory goes too
    sync(a)
    sync(b)
    assert "feat" in chains(b)
    # feat is merged and deleted everywhere
    git(a, "checkout", "-q", "main")
    with Memory.open(a) as mem:
        mem.merge("feat", "main")
    git(a, "push", "-q", "origin", "--delete", "feat")
    git(a, "branch", "-q", "-D", "feat")
    git(a, "fetch", "-q", "--prune")
    assert prune(a)["feat"]["action"] == "pruned"
    report = sync(a)
    assert report["skipped_pruned"] == [BRANCHES + "feat"]
    assert report["pulled"] == []
    assert "feat" not in chains(a)
    assert git(bare, "for-each-ref", BRANCHES + "feat")  # the remote keeps its copy
    verify_clean(a)
    # a teammate adds to feat: the pull brings it back, with the news
    news = note(b, "late feat note", branch="feat")
    sync(b)
    report = sync(a)
    assert [m["ref"] for m in report["pulled"]] == [BRANCHES + "feat"]
    assert news in all_ids(a)
    assert read_pruned(a / ".git" / "edda") == {}
    verify_clean(a)


def test_force_pruned_branch_stays_whole_on_the_remote(tmp_path: Path) -> None:
    """The remote still holds the chain, so its payloads must stay there: a
    fresh clone gets the chain with every payload."""
    bare = make_remote(tmp_path)
    a = clone(bare, tmp_path / "a")
    note(a, "main")
    git(a, "config", "edda.push", "all")
    lone = note(a, "pushed, never merged", branch="gone")
    sync(a)
    assert prune(a, "--force")["gone"]["action"] == "pruned"
    assert lone not in payload_paths(a)
    note(a, "more on main")
    report = sync(a)
    assert report["skipped_pruned"] == [BRANCHES + "gone"]
    verify_clean(a)
    assert lone in "\n".join(payload_files(bare))
    fresh = clone(bare, tmp_path / "fresh")
    sync(fresh)
    assert lone in all_ids(fresh)
    verify_clean(fresh)
