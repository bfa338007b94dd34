"""Git hooks: installing, chaining, uninstalling, and what each hook records.

Every test runs real git commands against real repositories with gitmem's
hooks installed by ``git edda init``. Git commands run with
``GITMEM_HOOKS_FOREGROUND=1`` so the hook's work is done before git returns and
no background worker races the test; spooled events (commit links, rewrites)
are committed by the next gitmem call (``settle``), as by any later ``git edda``
command. Two tests use the real background worker and poll for its result.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cli, fsck, git, init_repo, raw_id_counts, ref_tip

from gitmem import Memory
from gitmem.githooks.script import MARKER
from gitmem.memory.event import Event

HOOKS = ["post-checkout", "post-merge", "post-commit", "post-rewrite"]
FOREGROUND = {"GITMEM_HOOKS_FOREGROUND": "1"}


# helpers ----------------------------------------------------------------------------
def hgit(
    repo: Path | str,
    *args: str,
    env: dict[str, str] | None = None,
    input: str | None = None,
    check: bool = True,
    foreground: bool = True,
) -> subprocess.CompletedProcess[str]:
    """Run git with hooks active (foreground unless told otherwise)."""
    full = dict(os.environ)
    if foreground:
        full.update(FOREGROUND)
    full.update(env or {})
    proc = subprocess.run(
        ["git", *args], cwd=repo, env=full, input=input, capture_output=True, text=True
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


def ok_json(repo: Path, *args: str) -> dict:
    code, out, err = cli(repo, *args, "--json")
    assert code == 0, err
    return json.loads(out)


def setup_repo(path: Path, *, pre_push: bool = False) -> Path:
    """A repository with one commit on main, edda.fsync off, gitmem initialised."""
    init_repo(path)
    git(path, "config", "edda.fsync", "false")
    ok_json(path, "init", *(["--pre-push"] if pre_push else []))
    return path


def commit(repo: Path, name: str, message: str | None = None, **kw: object) -> str:
    """Write file ``name`` and commit it (hooks active); returns the new sha."""
    (Path(repo) / name).write_text(f"{name}\n")
    hgit(repo, "add", name, **kw)  # type: ignore[arg-type]
    hgit(repo, "commit", "-q", "-m", message or f"add {name}", **kw)  # type: ignore[arg-type]
    return git(repo, "rev-parse", "HEAD").strip()


def settle(repo: Path) -> None:
    """Apply pending hook intents and commit the capture spool."""
    with Memory.open(repo) as mem:
        mem.flush()


def events(repo: Path, **kw: object) -> list:
    with Memory.open(repo) as mem:
        return mem.events(**kw)  # type: ignore[arg-type]


def of_type(evs: list, kind: str) -> list:
    return [e for e in evs if e.type == kind]


def hooks_log(repo: Path) -> str:
    path = Path(repo) / ".git" / "edda" / "log" / "hooks.log"
    return path.read_text() if path.exists() else ""


def wait_for(predicate, timeout: float = 20.0, step: float = 0.1) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return bool(predicate())


def write_hook(path: Path, text: str | bytes, mode: int = 0o755) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, str):
        path.write_text(text)
    else:
        path.write_bytes(text)
    path.chmod(mode)


RECORDING_HOOK = """#!/bin/sh
# hand-written hook: records how it was called
{{
  printf 'args=[%s]\\n' "$*"
  printf 'stdin=['
  cat
  printf ']\\n'
}} >> '{log}'
exit {status}
"""


def recording_hook(log: Path, status: int = 0) -> str:
    return RECORDING_HOOK.format(log=log, status=status)


# installing -----------------------------------------------------------------------
def test_install_is_idempotent(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    first = ok_json(repo, "init")["hooks"]
    hooks_dir = repo / ".git" / "hooks"
    assert Path(first["hooks_dir"]) == hooks_dir
    assert sorted(first["installed"]) == sorted(HOOKS)
    assert first["updated"] == first["unchanged"] == first["chained"] == []
    assert first["skipped"] == {}
    contents = {}
    for hook in HOOKS:
        path = hooks_dir / hook
        text = path.read_text()
        assert text.startswith("#!/bin/sh\n")
        assert MARKER in text.splitlines()
        assert path.stat().st_mode & stat.S_IXUSR
        contents[hook] = path.read_bytes()
    assert not (hooks_dir / "pre-push").exists()  # only with --pre-push
    assert (repo / ".git" / "edda").is_dir()

    second = ok_json(repo, "init")["hooks"]
    assert sorted(second["unchanged"]) == sorted(HOOKS)
    for key in ("installed", "updated", "chained", "removed", "restored"):
        assert second[key] == [], key
    assert second["skipped"] == {}
    for hook in HOOKS:
        assert (hooks_dir / hook).read_bytes() == contents[hook]
    assert not list(hooks_dir.glob("*.pre-gitmem"))

    # pre-push, once installed, stays installed on a plain re-init
    third = ok_json(repo, "init", "--pre-push")["hooks"]
    assert third["installed"] == ["pre-push"]
    fourth = ok_json(repo, "init")["hooks"]
    assert sorted(fourth["unchanged"]) == sorted([*HOOKS, "pre-push"])

    # a gitmem hook from another interpreter is rewritten ("updated"), not chained
    stale = (hooks_dir / "post-commit").read_text().replace("python=", "python=/old/venv", 1)
    (hooks_dir / "post-commit").write_text(stale)
    fifth = ok_json(repo, "init")["hooks"]
    assert fifth["updated"] == ["post-commit"]
    assert fifth["chained"] == []
    assert (hooks_dir / "post-commit").read_bytes() == contents["post-commit"]


def test_core_hooks_path_is_honoured(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.fsync", "false")
    git(repo, "config", "core.hooksPath", "githooks")
    # inside the work tree: refused without the flag (tests/boundary/test_repo_kinds.py)
    report = ok_json(repo, "init", "--hooks-path-ok")["hooks"]
    assert Path(report["hooks_dir"]) == repo / "githooks"
    assert sorted(report["installed"]) == sorted(HOOKS)
    for hook in HOOKS:
        assert MARKER in (repo / "githooks" / hook).read_text()
        assert not (repo / ".git" / "hooks" / hook).exists()
    sha = commit(repo, "a.txt", "through core.hooksPath")
    settle(repo)
    links = of_type(events(repo), "commit_link")
    assert [e.field("sha") for e in links] == [sha]
    removed = ok_json(repo, "init", "--uninstall")
    assert sorted(removed["removed"]) == sorted(HOOKS)
    assert not any((repo / "githooks" / hook).exists() for hook in HOOKS)


# chaining -------------------------------------------------------------------------
def test_chained_post_commit_hook_sees_the_same_args_and_stdin(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.fsync", "false")
    log = tmp_path / "hook.log"
    original = recording_hook(log)
    write_hook(repo / ".git" / "hooks" / "post-commit", original)

    # how git calls it without gitmem in between
    commit(repo, "before.txt")
    unwrapped = log.read_text()
    log.unlink()

    report = ok_json(repo, "init")["hooks"]
    assert report["chained"] == ["post-commit"]
    chained = repo / ".git" / "hooks" / "post-commit.pre-gitmem"
    assert chained.read_text() == original
    assert MARKER in (repo / ".git" / "hooks" / "post-commit").read_text()

    sha = commit(repo, "after.txt", input="this is not for the hook")
    assert log.read_text() == unwrapped  # same args, same (empty) stdin
    settle(repo)
    assert [e.field("sha") for e in of_type(events(repo), "commit_link")] == [sha]

    # re-running init does not chain the chain
    again = ok_json(repo, "init")["hooks"]
    assert again["chained"] == [] and "post-commit" in again["unchanged"]
    assert chained.read_text() == original


def test_chained_post_rewrite_hook_gets_the_same_stdin(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.fsync", "false")
    log = tmp_path / "hook.log"
    write_hook(repo / ".git" / "hooks" / "post-rewrite", recording_hook(log))

    old = commit(repo, "a.txt")
    hgit(repo, "commit", "-q", "--amend", "-m", "amended without gitmem")
    new = git(repo, "rev-parse", "HEAD").strip()
    assert log.read_text() == f"args=[amend]\nstdin=[{old} {new}\n]\n"
    log.unlink()

    assert ok_json(repo, "init")["hooks"]["chained"] == ["post-rewrite"]
    hgit(repo, "commit", "-q", "--amend", "-m", "amended with gitmem")
    newer = git(repo, "rev-parse", "HEAD").strip()
    assert log.read_text() == f"args=[amend]\nstdin=[{new} {newer}\n]\n"
    log.unlink()

    # a rebase feeds several lines; the chained hook gets all of them, in order
    git(repo, "checkout", "-q", "-b", "feat")
    f1 = commit(repo, "f1.txt")
    f2 = commit(repo, "f2.txt")
    git(repo, "checkout", "-q", "main")
    commit(repo, "m.txt")
    git(repo, "checkout", "-q", "feat")
    hgit(repo, "rebase", "-q", "main")
    n1, n2 = git(repo, "rev-list", "--reverse", "main..feat").split()
    assert log.read_text() == f"args=[rebase]\nstdin=[{f1} {n1}\n{f2} {n2}\n]\n"

    settle(repo)
    with Memory.open(repo) as mem:
        rewrites = of_type(mem.events(all_branches=True), "commit_rewrite")
        assert [(e.field("kind"), e.field("map")) for e in rewrites] == [
            ("amend", [[new, newer]]),
            ("rebase", [[f1, n1], [f2, n2]]),
        ]


def refusing_pre_push_repo(tmp_path: Path, log: Path) -> tuple[Path, Path]:
    remote = init_repo(tmp_path / "remote.git", bare=True)
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "edda.fsync", "false")
    git(repo, "remote", "add", "origin", str(remote))
    write_hook(repo / ".git" / "hooks" / "pre-push", recording_hook(log, status=1))
    report = ok_json(repo, "init", "--pre-push")["hooks"]
    assert report["chained"] == ["pre-push"]
    with Memory.open(repo) as mem:
        mem.note("not to be pushed while the hook refuses")
    return repo, remote


def test_failing_chained_pre_push_still_refuses_the_push(tmp_path: Path) -> None:
    log = tmp_path / "hook.log"
    repo, remote = refusing_pre_push_repo(tmp_path, log)
    head = git(repo, "rev-parse", "HEAD").strip()

    proc = hgit(repo, "push", "origin", "main", check=False)
    assert proc.returncode != 0, proc.stderr
    assert "failed to push some refs" in proc.stderr
    assert ref_tip(remote, "refs/heads/main") is None
    # the chained hook ran with git's arguments and stdin
    assert log.read_text() == (
        f"args=[origin {remote}]\nstdin=[refs/heads/main {head} refs/heads/main {'0' * 40}\n]\n"
    )
    # and once it agrees, the push goes through
    write_hook(repo / ".git" / "hooks" / "pre-push.pre-gitmem", "#!/bin/sh\nexit 0\n")
    hgit(repo, "push", "-q", "origin", "main")
    assert ref_tip(remote, "refs/heads/main") == head


def test_refused_push_does_not_push_memory(tmp_path: Path) -> None:
    repo, remote = refusing_pre_push_repo(tmp_path, tmp_path / "hook.log")
    proc = hgit(repo, "push", "origin", "main", check=False)  # foreground: job done on return
    assert proc.returncode != 0
    assert ref_tip(remote, "refs/heads/main") is None
    assert git(remote, "for-each-ref", "refs/edda/") == ""


def test_uninstall_restores_original_hooks_byte_for_byte(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    hooks_dir = repo / ".git" / "hooks"
    executable = b"#!/bin/sh\n# h\xc3\xa9llo \xff odd bytes\r\n\texit 0 \n\n"
    disabled = b"#!/bin/sh\necho never run, not executable"  # no final newline
    write_hook(hooks_dir / "post-commit", executable, mode=0o750)
    write_hook(hooks_dir / "pre-push", disabled, mode=0o644)
    samples = sorted(p.name for p in hooks_dir.iterdir())

    report = ok_json(repo, "init", "--pre-push")["hooks"]
    assert sorted(report["chained"]) == ["post-commit", "pre-push"]
    assert sorted(report["installed"]) == ["post-checkout", "post-merge", "post-rewrite"]
    assert (hooks_dir / "post-commit.pre-gitmem").read_bytes() == executable
    assert stat.S_IMODE((hooks_dir / "pre-push.pre-gitmem").stat().st_mode) == 0o644

    removed = ok_json(repo, "init", "--uninstall")
    assert sorted(removed["removed"]) == sorted([*HOOKS, "pre-push"])
    assert sorted(removed["restored"]) == ["post-commit", "pre-push"]
    assert (hooks_dir / "post-commit").read_bytes() == executable
    assert (hooks_dir / "pre-push").read_bytes() == disabled
    assert stat.S_IMODE((hooks_dir / "post-commit").stat().st_mode) == 0o750
    assert stat.S_IMODE((hooks_dir / "pre-push").stat().st_mode) == 0o644
    assert sorted(p.name for p in hooks_dir.iterdir()) == samples

    # uninstalling twice is harmless; memory is left alone
    again = ok_json(repo, "init", "--uninstall")
    assert again["removed"] == again["restored"] == []
    assert (repo / ".git" / "edda").is_dir()


def test_hook_chained_by_another_manager_is_refreshed_in_place(tmp_path: Path) -> None:
    """pre-commit (the framework) moves an existing hook to ``<hook>.legacy`` and
    runs it from its own script: gitmem's script then lives in the .legacy file."""
    repo = setup_repo(tmp_path / "repo")
    hooks_dir = repo / ".git" / "hooks"
    ours = (hooks_dir / "post-commit").read_text()
    manager = (
        "#!/bin/sh\n# File generated by pre-commit: https://pre-commit.com\n"
        'here="$(cd "$(dirname "$0")" && pwd)"\n'
        'if [ -x "$here/post-commit.legacy" ]; then "$here/post-commit.legacy" "$@" || exit $?; fi\n'
        f"echo manager-ran >> '{tmp_path / 'manager.log'}'\n"
    )
    os.replace(hooks_dir / "post-commit", hooks_dir / "post-commit.legacy")
    # an older gitmem script (another interpreter) to show it gets refreshed
    (hooks_dir / "post-commit.legacy").write_text(ours.replace("python=", "python=/old", 1))
    write_hook(hooks_dir / "post-commit", manager)

    report = ok_json(repo, "init")["hooks"]
    assert "post-commit" in report["unchanged"]
    assert report["chained"] == [] and report["skipped"] == {}
    assert (hooks_dir / "post-commit").read_text() == manager  # the manager's, untouched
    assert (hooks_dir / "post-commit.legacy").read_text() == ours  # refreshed
    assert not (hooks_dir / "post-commit.pre-gitmem").exists()

    sha = commit(repo, "a.txt")
    assert (tmp_path / "manager.log").read_text() == "manager-ran\n"
    settle(repo)
    assert [e.field("sha") for e in of_type(events(repo), "commit_link")] == [sha]

    removed = ok_json(repo, "init", "--uninstall")
    assert "post-commit (post-commit.legacy)" in removed["removed"]
    assert not (hooks_dir / "post-commit.legacy").exists()
    assert (hooks_dir / "post-commit").read_text() == manager


def test_two_foreign_hooks_are_not_clobbered(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    hooks_dir = repo / ".git" / "hooks"
    write_hook(hooks_dir / "post-merge", "#!/bin/sh\nexit 0\n")
    write_hook(hooks_dir / "post-merge.pre-gitmem", "#!/bin/sh\necho older\n")
    report = ok_json(repo, "init")["hooks"]
    assert "post-merge" in report["skipped"]
    assert (hooks_dir / "post-merge").read_text() == "#!/bin/sh\nexit 0\n"
    assert (hooks_dir / "post-merge.pre-gitmem").read_text() == "#!/bin/sh\necho older\n"


# never breaking git -----------------------------------------------------------------
def test_broken_gitmem_part_never_fails_git_and_is_logged(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    state = repo / ".git" / "edda"
    with Memory.open(repo) as mem:
        mem.note("memory exists")

    # writing the fork intent fails: intents/ is a regular file
    (state / "intents").write_text("not a directory")
    proc = hgit(repo, "checkout", "-b", "feat")
    assert proc.returncode == 0
    assert git(repo, "branch", "--show-current").strip() == "feat"
    log = hooks_log(repo)
    assert "['post-checkout'] failed" in log, log
    (state / "intents").unlink()

    # spooling the commit link fails: spool/ is a regular file
    spool = state / "spool"
    if spool.exists():
        import shutil

        shutil.rmtree(spool)
    spool.write_text("not a directory")
    proc = hgit(repo, "commit", "-q", "--allow-empty", "-m", "still commits")
    assert proc.returncode == 0 and proc.stderr == ""
    assert git(repo, "log", "-1", "--format=%s").strip() == "still commits"
    assert "['post-commit'] failed" in hooks_log(repo)
    spool.unlink()

    # the interpreter is broken (or gone): git still succeeds, quietly
    failing = tmp_path / "bad-python"
    write_hook(failing, "#!/bin/sh\necho boom >&2\nexit 42\n")
    hook = repo / ".git" / "hooks" / "post-commit"
    script = hook.read_text()
    python_line = next(line for line in script.splitlines() if line.startswith("python="))
    for python in (str(failing), str(tmp_path / "deleted-venv" / "python")):
        hook.write_text(script.replace(python_line, f"python='{python}'"))
        proc = hgit(repo, "commit", "-q", "--allow-empty", "-m", f"with {python}")
        assert proc.returncode == 0
        assert "boom" not in proc.stderr + proc.stdout
    fsck(repo)


def test_no_hooks_env_and_missing_state_dir_skip_gitmem(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        mem.note("memory exists")
    state = repo / ".git" / "edda"

    hgit(repo, "checkout", "-q", "-b", "quiet", env={"GITMEM_NO_HOOKS": "1"})
    hgit(repo, "commit", "-q", "--allow-empty", "-m", "quiet", env={"GITMEM_NO_HOOKS": "1"})
    assert ref_tip(repo, "refs/edda/branches/quiet") is None  # no fork from the hook
    assert list(state.glob("intents/*.json")) == []
    assert [p for p in state.glob("spool/*") if p.is_file()] == []
    settle(repo)
    assert of_type(events(repo, all_branches=True), "commit_link") == []

    # hooks installed but no state dir (e.g. copied hooks): nothing is created
    git(repo, "checkout", "-q", "main")
    import shutil

    shutil.move(str(state), str(tmp_path / "saved-state"))
    hgit(repo, "checkout", "-q", "-b", "stateless")
    hgit(repo, "commit", "-q", "--allow-empty", "-m", "stateless")
    assert not state.exists()


# what the hooks record --------------------------------------------------------------
def test_post_checkout_forks_memory_in_the_foreground(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        base = mem.note("on main before the branch")
    main_tip = ref_tip(repo, "refs/edda/branches/main")
    code = git(repo, "rev-parse", "HEAD").strip()

    hgit(repo, "checkout", "-q", "-b", "feat")
    # no gitmem call in between: the hook itself created the fork
    assert ref_tip(repo, "refs/edda/branches/feat") is not None, hooks_log(repo)
    assert not list((repo / ".git" / "edda" / "intents").glob("*.json"))
    assert "failed" not in hooks_log(repo)
    assert git(repo, "rev-parse", "refs/edda/branches/feat^").strip() == main_tip
    message = git(repo, "log", "-1", "--format=%B", "refs/edda/branches/feat")
    assert "Edda-Branch: feat" in message
    assert "Edda-Fork: main" in message
    assert f"Edda-Fork-Code: {code}" in message
    assert [e.id for e in events(repo)] == [base.id]

    # checking out a branch that already has memory records nothing new
    hgit(repo, "checkout", "-q", "main")
    hgit(repo, "checkout", "-q", "feat")
    assert git(repo, "rev-parse", "refs/edda/branches/feat^").strip() == main_tip
    # nor does a detached HEAD or a file checkout (flag 0)
    hgit(repo, "checkout", "-q", "--detach")
    (repo / "f.txt").write_text("x\n")
    hgit(repo, "add", "f.txt")
    hgit(repo, "checkout", "-q", "--", "f.txt")
    assert sorted(
        r.split()[-1] for r in git(repo, "for-each-ref", "refs/edda/branches").splitlines()
    ) == ["refs/edda/branches/feat", "refs/edda/branches/main"]
    assert not list((repo / ".git" / "edda" / "intents").glob("*.json"))


def test_post_checkout_forks_memory_in_the_background(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        mem.note("on main before the branch")
    main_tip = ref_tip(repo, "refs/edda/branches/main")
    started = time.monotonic()
    proc = hgit(repo, "checkout", "-q", "-b", "feat", foreground=False)
    assert proc.returncode == 0
    # poll with git only: opening Memory here would apply the intent itself
    assert wait_for(lambda: ref_tip(repo, "refs/edda/branches/feat") is not None, 20), hooks_log(
        repo
    )
    assert wait_for(lambda: "worker apply" in hooks_log(repo), 20), hooks_log(repo)
    assert time.monotonic() - started < 20
    assert git(repo, "rev-parse", "refs/edda/branches/feat^").strip() == main_tip
    assert "Edda-Fork: main" in git(repo, "log", "-1", "--format=%B", "refs/edda/branches/feat")
    assert not list((repo / ".git" / "edda" / "intents").glob("*.json"))
    assert "failed" not in hooks_log(repo)


def feat_with_a_note(tmp_path: Path) -> tuple[Path, Event]:
    """A hooked repo whose main has a note, checked out on ``feat`` (one code
    commit ahead) with a note of its own; returns the repo and feat's note."""
    repo = setup_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        mem.note("main before")
    hgit(repo, "checkout", "-q", "-b", "feat")
    commit(repo, "feat.txt")
    with Memory.open(repo) as mem:
        return repo, mem.note("learned on feat")


def test_post_merge_merges_memory_of_the_merged_branch(tmp_path: Path) -> None:
    repo, feat_note = feat_with_a_note(tmp_path)
    hgit(repo, "checkout", "-q", "main")
    with Memory.open(repo) as mem:
        main_note = mem.note("main meanwhile")
        assert feat_note.id not in {e.id for e in mem.events(trunk="none")}
    main_before = ref_tip(repo, "refs/edda/branches/main")
    feat_tip = ref_tip(repo, "refs/edda/branches/feat")

    hgit(repo, "merge", "-q", "--no-ff", "feat", "-m", "merge feat")
    settle(repo)
    with Memory.open(repo) as mem:
        ids = [e.id for e in mem.events(trunk="none")]
        assert feat_note.id in ids and main_note.id in ids
        assert len(ids) == len(set(ids))
    tip = ref_tip(repo, "refs/edda/branches/main")
    parents = git(repo, "log", "-1", "--format=%P", tip).split()
    assert len(parents) >= 2
    assert parents == sorted(parents)
    assert git(repo, "merge-base", "--is-ancestor", main_before, tip) == ""
    assert git(repo, "merge-base", "--is-ancestor", feat_tip, tip) == ""
    assert git(repo, "log", "-1", "--format=%an <%ae> %T", tip).strip() == (
        "gitmem <gitmem@localhost> 4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    )
    assert max(raw_id_counts(repo).values()) == 1


def test_fast_forward_code_merge_fast_forwards_memory(tmp_path: Path) -> None:
    repo, feat_note = feat_with_a_note(tmp_path)
    settle(repo)
    feat_tip = ref_tip(repo, "refs/edda/branches/feat")
    hgit(repo, "checkout", "-q", "main")
    hgit(repo, "merge", "-q", "--ff-only", "feat")
    # main's memory had nothing new: it fast-forwards to feat's, no merge commit
    assert ref_tip(repo, "refs/edda/branches/main") == feat_tip
    assert feat_note.id in {e.id for e in events(repo, trunk="none")}


def test_conflicted_merge_completed_by_commit_merges_memory(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    (repo / "f.txt").write_text("base\n")
    hgit(repo, "add", "f.txt")
    hgit(repo, "commit", "-q", "-m", "base")
    hgit(repo, "checkout", "-q", "-b", "feat")
    (repo / "f.txt").write_text("feat\n")
    hgit(repo, "commit", "-q", "-am", "feat")
    with Memory.open(repo) as mem:
        feat_note = mem.note("learned on feat")
    hgit(repo, "checkout", "-q", "main")
    (repo / "f.txt").write_text("main\n")
    hgit(repo, "commit", "-q", "-am", "main")
    proc = hgit(repo, "merge", "feat", "-m", "merge feat", check=False)
    assert proc.returncode != 0  # conflict
    (repo / "f.txt").write_text("both\n")
    hgit(repo, "add", "f.txt")
    hgit(repo, "commit", "-q", "--no-edit")
    assert len(git(repo, "log", "-1", "--format=%P").split()) == 2
    settle(repo)
    assert feat_note.id in {e.id for e in events(repo, trunk="none")}


def test_post_merge_skips_a_branch_without_commits_of_its_own(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    git(repo, "branch", "release")  # an older line of code
    with Memory.open(repo) as mem:
        mem.note("main at the start")
    commit(repo, "main.txt")  # main moves on
    hgit(repo, "checkout", "-q", "-b", "feat")  # feat: memory, but no commits
    with Memory.open(repo) as mem:
        feat_note = mem.note("feat idea, no code yet")
    hgit(repo, "checkout", "-q", "release")
    settle(repo)
    release_before = ref_tip(repo, "refs/edda/branches/release")

    hgit(repo, "merge", "-q", "--no-ff", "feat", "-m", "merge feat into release")
    settle(repo)
    with Memory.open(repo) as mem:
        ids = {e.id for e in mem.events(branch="release", trunk="none")}
    assert feat_note.id not in ids
    feat_tip = ref_tip(repo, "refs/edda/branches/feat")
    release_tip = ref_tip(repo, "refs/edda/branches/release")
    assert (
        subprocess.run(
            ["git", "merge-base", "--is-ancestor", feat_tip, release_tip], cwd=repo
        ).returncode
        != 0
    )
    assert (
        release_before is None
        or git(repo, "merge-base", "--is-ancestor", release_before, release_tip) == ""
    )


def test_post_commit_links_commits_with_the_active_capsule(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    opened = ok_json(repo, "capsule", "open", "session", "--intent", "x", "--session", "S1")
    capsule = opened["id"]
    active = json.loads((repo / ".git" / "edda" / "active" / "main.json").read_text())
    assert active["session"] == "S1" and active["capsule"] == capsule

    sha = commit(repo, "a.txt", "first linked commit")
    settle(repo)
    (link,) = of_type(events(repo), "commit_link")
    assert link.body == {
        "sha": sha,
        "message": "first linked commit",
        "branch": "main",
        "session": "S1",
    }
    assert link.capsule == capsule
    assert link.scope["session"] == "S1"
    assert link.branch == "main"

    code, _, err = cli(repo, "capsule", "close", capsule, "--summary", "done")
    assert code == 0, err
    assert not (repo / ".git" / "edda" / "active" / "main.json").exists()
    sha2 = commit(repo, "b.txt", "after the session")
    settle(repo)
    links = of_type(events(repo), "commit_link")
    assert [e.field("sha") for e in links] == [sha, sha2]
    assert links[1].capsule is None and "session" not in links[1].body
    assert links[1].scope.get("session") is None


def test_alternate_index_in_linked_worktree_links_the_right_commit(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    with Memory.open(repo) as mem:
        mem.note("main memory")
    wt = tmp_path / "wt"
    hgit(repo, "worktree", "add", "-q", "-b", "wt", str(wt))
    alt = tmp_path / "alt-index"
    env = {"GIT_INDEX_FILE": str(alt)}
    hgit(wt, "read-tree", "HEAD", env=env)
    (wt / "alt.txt").write_text("only in the alternate index\n")
    hgit(wt, "add", "alt.txt", env=env)
    hgit(wt, "commit", "-q", "-m", "commit from alt index", env=env)
    sha = git(wt, "rev-parse", "HEAD").strip()
    assert "alt.txt" in git(wt, "show", "--name-only", "--format=", sha)
    assert "alt.txt" not in git(wt, "ls-files")  # the worktree's own index is untouched

    # and with GIT_DIR/GIT_WORK_TREE pointing at the worktree from elsewhere
    wt_git_dir = git(wt, "rev-parse", "--absolute-git-dir").strip()
    env2 = {"GIT_DIR": wt_git_dir, "GIT_WORK_TREE": str(wt), "GIT_INDEX_FILE": str(alt)}
    (wt / "alt2.txt").write_text("second\n")
    hgit(tmp_path, "add", "alt2.txt", env={**env2})
    hgit(tmp_path, "commit", "-q", "-m", "commit via GIT_DIR", env={**env2})
    sha2 = git(wt, "rev-parse", "HEAD").strip()
    assert git(wt, "show", "--name-only", "--format=", sha2).split() == ["alt2.txt"]

    settle(repo)
    with Memory.open(wt) as mem:
        links = of_type(mem.events(), "commit_link")
        assert [
            (e.field("sha"), e.field("message"), e.field("branch"), e.branch) for e in links
        ] == [
            (sha, "commit from alt index", "wt", "wt"),
            (sha2, "commit via GIT_DIR", "wt", "wt"),
        ]
        # nothing leaked into main's memory
        assert of_type(mem.events(branch="main", trunk="none"), "commit_link") == []
    assert git(repo, "status", "--porcelain") == ""
    assert "failed" not in hooks_log(repo)


def test_link_commits_off_records_nothing(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    git(repo, "config", "edda.linkCommits", "false")
    commit(repo, "a.txt")
    hgit(repo, "commit", "-q", "--amend", "-m", "amended")
    settle(repo)
    assert events(repo, all_branches=True) == []


def test_amend_records_a_rewrite(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    old = commit(repo, "a.txt", "original")
    hgit(repo, "commit", "-q", "--amend", "-m", "amended")
    new = git(repo, "rev-parse", "HEAD").strip()
    hgit(repo, "commit", "-q", "--amend", "-m", "amended twice")
    newer = git(repo, "rev-parse", "HEAD").strip()
    settle(repo)
    with Memory.open(repo) as mem:
        rewrites = of_type(mem.events(), "commit_rewrite")
        assert [(e.field("kind"), e.field("map")) for e in rewrites] == [
            ("amend", [[old, new]]),
            ("amend", [[new, newer]]),
        ]
        assert mem.resolve_commit(old) == newer
        assert mem.resolve_commit(new) == newer
        assert mem.resolve_commit(newer) == newer
        assert mem.commit_rewrites() == {old: new, new: newer}
        # the amended commits are linked too (post-commit runs for an amend)
        assert [e.field("sha") for e in of_type(mem.events(), "commit_link")] == [old, new, newer]


def test_rebase_records_one_rewrite_and_no_links_for_replayed_commits(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / "repo")
    hgit(repo, "checkout", "-q", "-b", "feat")
    f1 = commit(repo, "f1.txt")
    f2 = commit(repo, "f2.txt")
    hgit(repo, "checkout", "-q", "main")
    m1 = commit(repo, "m1.txt")
    hgit(repo, "checkout", "-q", "feat")
    hgit(repo, "rebase", "-q", "main")
    n1, n2 = git(repo, "rev-list", "--reverse", "main..feat").split()
    assert {n1, n2}.isdisjoint({f1, f2})
    settle(repo)
    with Memory.open(repo) as mem:
        every = mem.events(all_branches=True)
        (rewrite,) = of_type(every, "commit_rewrite")
        assert rewrite.field("kind") == "rebase"
        assert rewrite.field("map") == [[f1, n1], [f2, n2]]
        assert rewrite.branch == "feat"
        assert mem.resolve_commit(f1) == n1 and mem.resolve_commit(f2) == n2
        linked = [e.field("sha") for e in of_type(every, "commit_link")]
        assert sorted(linked) == sorted([f1, f2, m1])  # nothing for the replayed n1, n2
    assert max(raw_id_counts(repo).values()) == 1


def test_pre_push_pushes_memory_in_the_background(tmp_path: Path) -> None:
    remote = init_repo(tmp_path / "remote.git", bare=True)
    repo = setup_repo(tmp_path / "repo", pre_push=True)
    assert MARKER in (repo / ".git" / "hooks" / "pre-push").read_text()
    git(repo, "remote", "add", "origin", str(remote))
    with Memory.open(repo) as mem:
        note = mem.note("travels with the code")
    local_tip = ref_tip(repo, "refs/edda/branches/main")

    proc = hgit(repo, "push", "-q", "origin", "main", foreground=False)
    assert proc.returncode == 0, proc.stderr
    assert ref_tip(remote, "refs/heads/main") == git(repo, "rev-parse", "HEAD").strip()
    assert wait_for(lambda: ref_tip(remote, "refs/edda/branches/main") is not None, 20), hooks_log(
        repo
    )
    assert wait_for(lambda: "worker push" in hooks_log(repo), 20), hooks_log(repo)
    assert ref_tip(remote, "refs/edda/branches/main") == local_tip
    assert "failed" not in hooks_log(repo)
    # the remote really holds the memory: a fresh clone reads the note
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    git(clone, "fetch", "-q", "origin", "refs/edda/*:refs/edda/*")
    with Memory.open(clone) as mem:
        assert note.id in {e.id for e in mem.events(all_branches=True)}
    fsck(repo)


def test_hooks_work_in_a_path_with_spaces_and_quotes(tmp_path: Path) -> None:
    repo = setup_repo(tmp_path / 'it\'s a "repo" $HOME')
    with Memory.open(repo) as mem:
        mem.note("odd path")
    hgit(repo, "checkout", "-q", "-b", "feat")
    assert ref_tip(repo, "refs/edda/branches/feat") is not None, hooks_log(repo)
    sha = commit(repo, "a.txt")
    settle(repo)
    assert [e.field("sha") for e in of_type(events(repo), "commit_link")] == [sha]
    assert "failed" not in hooks_log(repo)


def test_hook_scripts_run_with_a_plain_sh(tmp_path: Path) -> None:
    """The scripts are POSIX sh (dash on Debian): ``sh -n`` accepts each one."""
    repo = setup_repo(tmp_path / "repo", pre_push=True)
    for hook in [*HOOKS, "pre-push"]:
        proc = subprocess.run(
            ["sh", "-n", str(repo / ".git" / "hooks" / hook)], capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))
