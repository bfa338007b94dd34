"""Which memory branches a push sends (``edda.push``, ``edda.pushBranch``), shown
by what a fresh clone of a real bare remote receives.

One clone works on: the trunk, a branch whose code it pushed (``feat``, the
current branch at sync time), a second pushed branch (``shipped``), a local
branch (``scratch``), a linked worktree's branch (``agent-1``), a
``release/1`` branch and a detached HEAD. Then a fresh clone pulls.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import cli, clone, git, make_remote, payload_files

from gitmem import Memory

BRANCHES = "refs/edda/branches/"
SECRET = "s3cr3t-value-xyz"


def note(repo: Path, text: str, **kw: object) -> str:
    with Memory.open(repo) as mem:
        return mem.note(text, **kw).id  # type: ignore[arg-type]


def edda(repo: Path, *args: str) -> dict:
    code, out, err = cli(repo, *args, "--json")
    assert code == 0, (args, err)
    return json.loads(out)


def chains(repo: Path) -> set[str]:
    out = git(repo, "for-each-ref", "--format=%(refname)", "refs/edda/")
    names = set()
    for ref in out.split():
        if ref.startswith(BRANCHES):
            names.add(ref[len(BRANCHES) :].replace("%2F", "/"))
        elif ref == "refs/edda/detached":
            names.add("(detached)")
    return names


def remote_payload_ids(bare: Path) -> set[str]:
    return {path.rsplit("/", 1)[1] for path in payload_files(bare) if path.startswith("p/")}


def verify_clean(repo: Path) -> None:
    report = edda(repo, "verify")
    assert report["ok"], report
    assert not [w for w in report["warnings"] if "payload" in json.dumps(w)], report["warnings"]


def workday(root: Path) -> tuple[Path, Path, dict[str, str]]:
    """A remote and a clone that wrote memory on seven kinds of branches."""
    bare = make_remote(root)
    a = clone(bare, root / "a")
    made = {"main": note(a, "on the trunk")}
    for name in ("shipped", "feat"):
        git(a, "checkout", "-q", "-b", name, "main")
        made[name] = note(a, f"on {name}")
        git(a, "push", "-q", "-u", "origin", name)
    git(a, "checkout", "-q", "main")
    git(a, "checkout", "-q", "--detach")
    made["(detached)"] = note(a, "on a detached HEAD")
    git(a, "checkout", "-q", "main")
    for name in ("scratch", "release/1"):
        git(a, "branch", name)
        made[name] = note(a, f"local {name}", branch=name)
    wt = root / "wt"
    git(a, "worktree", "add", "-q", "-b", "agent-1", str(wt))
    made["agent-1"] = note(wt, "in the agent's worktree")
    git(a, "checkout", "-q", "feat")
    return bare, a, made


@pytest.mark.parametrize(
    ("settings", "pushed"),
    [
        ([], {"main", "feat", "shipped"}),
        ([("edda.push", "tracked")], {"main", "feat", "shipped"}),
        ([("edda.push", "current")], {"main", "feat"}),
        (
            [("edda.push", "all")],
            {"main", "feat", "shipped", "scratch", "release/1", "agent-1", "(detached)"},
        ),
        ([("edda.pushBranch", "release/*")], {"main", "feat", "shipped", "release/1"}),
        (
            [("edda.push", "current"), ("edda.pushBranch", "agent-*"), ("edda.pushBranch", "s*")],
            {"main", "feat", "agent-1", "scratch", "shipped"},
        ),
    ],
    ids=["default", "tracked", "current", "all", "tracked+glob", "current+globs"],
)
def test_what_reaches_a_fresh_clone(
    tmp_path: Path, settings: list[tuple[str, str]], pushed: set[str]
) -> None:
    bare, a, made = workday(tmp_path)
    for key, value in settings:
        git(a, "config", "--add", key, value)
    report = edda(a, "sync")
    everything = set(made)
    assert {m["ref"] for m in report["pushed"]} == {
        "refs/edda/detached" if n == "(detached)" else BRANCHES + n.replace("/", "%2F")
        for n in pushed
    }
    assert len(report["held_back"]) == len(everything - pushed)
    fresh = clone(bare, tmp_path / "fresh")
    edda(fresh, "pull")
    assert chains(fresh) == pushed
    assert chains(bare) == pushed
    # what stays local stays out of the payload store too
    assert remote_payload_ids(bare) == {made[n] for n in pushed}
    with Memory.open(fresh) as mem:
        assert {e.id for e in mem.events(all_branches=True)} == {made[n] for n in pushed}
    verify_clean(fresh)
    # and a second sync has nothing to do
    again = edda(a, "sync")
    assert again["pushed"] == [] and not again["payloads_pushed"]


def test_sync_text_names_what_stayed_local(tmp_path: Path) -> None:
    _, a, _ = workday(tmp_path)
    code, out, _ = cli(a, "sync")
    assert code == 0
    assert "not pushed (edda.push=tracked): agent-1, release/1, scratch, detached HEAD" in out


def test_a_chain_the_remote_has_keeps_travelling(tmp_path: Path) -> None:
    """A teammate's branch memory came with a pull; what this clone adds to it
    goes back, though its code was never fetched here."""
    bare, a, _ = workday(tmp_path)
    b = clone(bare, tmp_path / "b")
    edda(a, "sync")
    edda(b, "pull")
    assert "shipped" in chains(b)
    git(b, "branch", "-q", "-r", "-d", "origin/shipped")  # as if never fetched
    added = note(b, "reviewing shipped", branch="shipped")
    report = edda(b, "sync")
    assert [m["ref"] for m in report["pushed"]] == [BRANCHES + "shipped"]
    assert added in remote_payload_ids(bare)


def test_a_redaction_on_a_local_branch_still_travels(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    a = clone(bare, tmp_path / "a")
    b = clone(bare, tmp_path / "b")
    leaked = note(a, f"token {SECRET}")
    edda(a, "sync")
    edda(b, "pull")
    git(a, "checkout", "-q", "-b", "cleanup")  # a branch whose code goes nowhere
    git(a, "config", "edda.push", "current")
    with Memory.open(a) as mem:
        mem.redact(leaked, "leaked token")
    git(a, "checkout", "-q", "main")
    report = edda(a, "sync")
    assert BRANCHES + "cleanup" in [m["ref"] for m in report["pushed"]]
    assert report["held_back"] == []
    assert leaked not in remote_payload_ids(bare)
    edda(b, "sync")
    with Memory.open(b) as mem:
        assert mem.get(leaked).redacted
    verify_clean(b)


def test_a_redaction_of_local_memory_stays_local(tmp_path: Path) -> None:
    """Redacting an event that never left this clone sends nothing."""
    bare = make_remote(tmp_path)
    a = clone(bare, tmp_path / "a")
    kept = note(a, "on main")
    git(a, "checkout", "-q", "-b", "agent-tmp")
    leaked = note(a, f"token {SECRET}")
    with Memory.open(a) as mem:
        mem.redact(leaked, "leaked token")
    git(a, "checkout", "-q", "main")
    report = edda(a, "sync")
    assert [m["ref"] for m in report["pushed"]] == [BRANCHES + "main"]
    assert report["held_back"] == [BRANCHES + "agent-tmp"]
    assert remote_payload_ids(bare) == {kept}


def test_clones_with_different_local_branches_settle(tmp_path: Path) -> None:
    """Each clone keeps its own scratch memory; neither keeps re-pushing the
    payload store over the other's."""
    bare = make_remote(tmp_path)
    a = clone(bare, tmp_path / "a")
    b = clone(bare, tmp_path / "b")
    shared = {note(a, "a on main"), note(b, "b on main")}
    for repo, name in ((a, "scratch-a"), (b, "scratch-b")):
        git(repo, "branch", name)
        note(repo, f"local to {name}", branch=name)
    for repo in (a, b, a, b):
        edda(repo, "sync")
    for repo in (a, b):
        report = edda(repo, "sync")
        assert report["pushed"] == [] and not report["payloads_pushed"], report
        assert report["pulled"] == [] and report["payloads_added"] == 0, report
    assert remote_payload_ids(bare) == shared
    assert chains(bare) == {"main"}
    verify_clean(a)
    verify_clean(b)


def test_a_bad_push_setting_is_a_usage_error(tmp_path: Path) -> None:
    bare = make_remote(tmp_path)
    a = clone(bare, tmp_path / "a")
    note(a, "main")
    git(a, "config", "edda.push", "everything")
    code, _, err = cli(a, "push")
    assert code == 2
    assert "edda.push" in err and "tracked" in err
    assert not git(bare, "for-each-ref", "refs/edda/").strip()
