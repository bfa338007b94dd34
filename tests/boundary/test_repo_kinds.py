"""Repositories people have (issue 10, item 14): SHA-256 object names, bare
repositories, and a ``core.hooksPath`` inside the work tree (husky).

Each is either supported or refused up front with a one-line usage error and
a hint: never an internal error, a misleading "locked" message, or files
changed behind the user's back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from conftest import capture_process, cli, git, init_repo, run_cli

from gitmem.memory.api import Memory


def refused(repo: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run in-process: exit 2, one line on stderr, a hint; return stderr."""
    saved = {k: os.environ.get(k) for k in env or {}}
    os.environ.update(env or {})
    try:
        code, out, err = run_cli(repo, *args)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    assert code == 2, (args, code, out, err)
    assert len(err.splitlines()) == 1 and "(hint: " in err, err
    assert "internal error" not in err and "locked" not in err
    return err


# SHA-256 --------------------------------------------------------------------------------
@pytest.fixture
def sha256_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "s256"
    repo.mkdir()
    git(repo, "init", "-q", "--object-format=sha256")
    git(repo, "commit", "-q", "--allow-empty", "-m", "initial")
    return repo


@pytest.mark.parametrize(
    "args",
    [("init",), ("note", "hello"), ("log",), ("status",), ("search", "x"), ("verify",)],
)
def test_sha256_repository_is_refused_by_every_command(
    sha256_repo: Path, args: tuple[str, ...]
) -> None:
    err = refused(sha256_repo, *args)
    assert "sha256" in err and "supports only SHA-1" in err
    assert not (sha256_repo / ".git" / "edda").exists()


def test_sha256_repository_with_the_git_cli_backend(sha256_repo: Path) -> None:
    """This used to end as exit 5, "refs stayed locked or kept moving"."""
    err = refused(sha256_repo, "note", "hello", env={"GITMEM_BACKEND": "git-cli"})
    assert "sha256" in err
    assert git(sha256_repo, "for-each-ref", "refs/edda/") == ""


def test_sha256_repository_refused_by_capture_without_spooling(sha256_repo: Path) -> None:
    proc = capture_process(sha256_repo, json.dumps({"type": "note", "body": {"text": "x"}}))
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == b""
    assert len(proc.stderr.splitlines()) == 1 and b"sha256" in proc.stderr
    assert not (sha256_repo / ".git" / "edda").exists()


def test_sha256_refusal_in_a_real_process(sha256_repo: Path) -> None:
    code, _out, err = cli(sha256_repo, "init")
    assert code == 2
    assert err.count("\n") == 1 and "sha256" in err


def test_object_format_is_read_from_the_repository_config(tmp_path: Path) -> None:
    from gitmem.storage.locate import object_format

    config = tmp_path / "config"
    config.write_text("[core]\n\tbare = false\n")
    assert object_format(str(tmp_path)) == "sha1"
    config.write_text('[core]\n[Extensions]\n\tObjectFormat = "sha256" ; comment\n')
    assert object_format(str(tmp_path)) == "sha256"
    config.write_text("[extensions] objectformat=sha256\n")
    assert object_format(str(tmp_path)) == "sha256"
    config.write_text("[other]\n\tobjectformat = sha256\n")
    assert object_format(str(tmp_path)) == "sha1"


# bare -----------------------------------------------------------------------------------
def test_bare_repository_init_needs_bare_ok(tmp_path: Path) -> None:
    bare = init_repo(tmp_path / "bare.git", bare=True)
    err = refused(bare, "init")
    assert "bare repository" in err and "--bare-ok" in err
    assert not (bare / "edda").exists()
    assert git(bare, "config", "--get", "edda.bareOk", check=False) == ""

    code, _out, err = run_cli(bare, "init", "--bare-ok")
    assert code == 0, err
    assert git(bare, "config", "--get", "edda.bareOk").strip() == "true"
    # the choice is remembered: writing commands work, and init again needs no flag
    code, out, err = run_cli(bare, "note", "on purpose", "--json")
    assert code == 0, err
    assert json.loads(out)["envelope"]["scope"]["branch"] == "main"
    assert run_cli(bare, "init")[0] == 0


@pytest.mark.parametrize(
    "args",
    [
        ("note", "x"),
        ("decide", "k", "v"),
        ("checkpoint", "--next", "n"),
        ("learn", "x"),
        ("capsule", "open", "session"),
        ("merge", "main"),
    ],
)
def test_bare_repository_refuses_writes_without_bare_ok(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    bare = init_repo(tmp_path / "bare.git", bare=True)
    err = refused(bare, *args)
    assert "git edda init --bare-ok" in err
    assert git(bare, "for-each-ref", "refs/edda/") == ""


def test_bare_repository_capture_asks_the_same_question(tmp_path: Path) -> None:
    bare = init_repo(tmp_path / "bare.git", bare=True)
    event = json.dumps({"type": "note", "body": {"text": "x"}, "branch": "main"})
    proc = capture_process(bare, event)
    assert proc.returncode == 2 and b"--bare-ok" in proc.stderr, proc.stderr
    assert not (bare / "edda" / "spool").exists()
    git(bare, "config", "edda.bareOk", "true")
    proc = capture_process(bare, event)
    assert proc.returncode == 0, proc.stderr


def test_bare_repository_still_works_through_the_library_and_reads(tmp_path: Path) -> None:
    """Sync pushes into bare remotes and tests use bare repositories: the
    library and read-only commands are not affected."""
    bare = init_repo(tmp_path / "bare.git", bare=True)
    with Memory.open(bare) as mem:
        event = mem.note("through the library", branch="main")
    for args in (("log", "--branch", "main"), ("show", event.id), ("status",), ("verify",)):
        code, _out, err = run_cli(bare, *args)
        assert code == 0, (args, err)


# core.hooksPath -------------------------------------------------------------------------
@pytest.fixture
def husky(tmp_path: Path) -> Path:
    """A repository whose hooks live in the tracked folder .husky, as husky sets it up."""
    repo = init_repo(tmp_path / "repo")
    hooks = repo / ".husky"
    hooks.mkdir()
    (hooks / "post-commit").write_text("#!/bin/sh\necho husky ran\n")
    (hooks / "post-commit").chmod(0o755)
    git(repo, "add", ".husky")
    git(repo, "commit", "-q", "-m", "husky")
    git(repo, "config", "core.hooksPath", ".husky")
    return repo


def test_hooks_path_in_the_work_tree_is_refused(husky: Path) -> None:
    err = refused(husky, "init")
    assert "core.hooksPath" in err and "--hooks-path-ok" in err and "--no-hooks" in err
    assert git(husky, "status", "--porcelain") == ""
    assert sorted(os.listdir(husky / ".husky")) == ["post-commit"]
    assert not (husky / ".git" / "edda").exists()


def test_hooks_path_in_the_work_tree_with_no_hooks(husky: Path) -> None:
    code, _out, err = run_cli(husky, "init", "--no-hooks")
    assert code == 0, err
    assert git(husky, "status", "--porcelain") == ""


def test_hooks_path_in_the_work_tree_with_the_flag(husky: Path) -> None:
    code, out, err = run_cli(husky, "init", "--hooks-path-ok")
    assert code == 0, err
    assert "chained existing hook, which still run first: post-commit" in out
    assert "post-commit.pre-gitmem" in os.listdir(husky / ".husky")


def test_hooks_path_outside_the_work_tree_keeps_working(husky: Path, tmp_path: Path) -> None:
    shared = tmp_path / "githooks"
    git(husky, "config", "core.hooksPath", str(shared))
    code, _out, err = run_cli(husky, "init")
    assert code == 0, err
    assert "post-commit" in os.listdir(shared)
    assert git(husky, "status", "--porcelain") == ""


def test_hooks_path_inside_the_git_dir_keeps_working(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    git(repo, "config", "core.hooksPath", ".git/my-hooks")
    code, _out, err = run_cli(repo, "init")
    assert code == 0, err
    assert "post-commit" in os.listdir(repo / ".git" / "my-hooks")
