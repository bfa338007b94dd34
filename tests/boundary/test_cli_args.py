"""Bad arguments are usage errors (issue 10, items 10 and 13): one line on
stderr, exit code 2, never an internal error or a native crash.

Covered: numeric options out of range (one of which aborted Tantivy with
SIGABRT), times out of range (an OverflowError), empty or invalid branch names
(an IsADirectoryError from the reflog), and output files that cannot be
written (a full disk, a missing directory, a directory).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from conftest import cli, git, isolated_environment, make_repo, run_cli


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One repository with three notes and a built index, shared by the module
    (every test here only reads it)."""
    root = tmp_path_factory.mktemp("cli_args")
    with isolated_environment(tmp_path_factory.mktemp("home")):
        path = make_repo(root / "repo", events=3)
        code, _out, err = run_cli(path, "index", "--no-embed")
        assert code == 0, err
    return path


def usage_error(repo: Path, *args: str) -> str:
    """Run in-process; assert exit 2 with exactly one line on stderr; return it."""
    code, _out, err = run_cli(repo, *args)
    assert code == 2, (args, code, err)
    assert len(err.splitlines()) == 1, err
    assert "internal error" not in err
    assert err.startswith("git edda: error: ") and "(hint: " in err
    return err


# numbers -------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("args", "range_text"),
    [
        (("search", "note", "--limit", "1000000000000"), "between 1 and 10,000"),
        (("search", "note", "--limit", "0"), "between 1 and 10,000"),
        (("search", "note", "--limit", "-3"), "between 1 and 10,000"),
        (("log", "--limit", "0"), "between 1 and 1,000,000,000"),
        (("log", "--limit", "-1"), "between 1 and 1,000,000,000"),
        (("log", "--limit", "10000000000000000000000"), "between 1 and 1,000,000,000"),
        (("context", "--budget", "100000000000000"), "between 1 and 1,000,000"),
        (("context", "--budget", "0"), "between 1 and 1,000,000"),
        (("ask", "pool", "--limit", "100000000000000"), "between 1 and 1,000"),
        (("ask", "--limit", "0"), "between 1 and 1,000"),
    ],
)
def test_numeric_options_out_of_range(repo: Path, args: tuple[str, ...], range_text: str) -> None:
    err = usage_error(repo, *args)
    assert range_text in err
    assert args[-2] in err  # names the option


def test_the_biggest_limits_still_work(repo: Path) -> None:
    for args in (
        ("search", "note", "--limit", "10000"),
        ("log", "--limit", "1000000000"),
        ("ask", "note", "--limit", "1000"),
        ("context", "--budget", "1000000"),
    ):
        code, _out, err = run_cli(repo, *args)
        assert code == 0, (args, err)


def test_library_search_bounds_the_limit_it_hands_to_tantivy(repo: Path) -> None:
    """Defence in depth: a caller of the library cannot abort the process either."""
    from gitmem.errors import UsageError
    from gitmem.index.view import IndexView
    from gitmem.retrieval.search import MAX_LIMIT, search

    with IndexView.open(repo, embed=False) as view:
        with pytest.raises(UsageError, match="between 1 and"):
            search(view, "note", limit=10**12, mode="lexical")
        with pytest.raises(UsageError, match="candidate count"):
            search(view, "note", limit=5, candidates=10**12, mode="lexical")
        # the largest accepted limit reaches Tantivy clamped to the documents it has
        hits = search(view, "note", limit=MAX_LIMIT, mode="lexical").hits
        assert len(hits) == 3


def test_search_limit_that_aborted_tantivy_in_a_real_process(repo: Path) -> None:
    code, out, err = cli(repo, "search", "note", "--limit", "1000000000000")
    assert code == 2, err
    assert out == ""
    assert err.count("\n") == 1 and "between 1 and 10,000" in err


# times ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ("search", "note", "--since", "99999999999d"),
        ("search", "note", "--until", "99999999999d"),
        ("search", "note", "--now", "99999999999999999999999"),
        ("log", "--since", "99999999999d"),
        ("log", "--until", "99999999999999999999999"),
        ("log", "--since", "9" * 5000),  # int() itself refuses this many digits
        ("log", "--since", "0001-01-01T00:00:00+01:00"),  # before year 1 in UTC
        ("context", "--now", "99999999999w"),
        ("pins", "--now", "99999999999d"),
    ],
)
def test_times_out_of_range(repo: Path, args: tuple[str, ...]) -> None:
    err = usage_error(repo, *args)
    assert "out of range" in err and "9999" in err


def test_pin_expiry_out_of_range(repo: Path) -> None:
    code, out, _err = run_cli(repo, "log", "--json", "--limit", "1")
    assert code == 0
    event = json.loads(out)["events"][0]["id"]
    err = usage_error(repo, "pin", event, "--expires", "99999999999d")
    assert "out of range" in err


def test_times_at_the_edges_are_accepted(repo: Path) -> None:
    for args in (
        ("log", "--since", "0001-01-01"),
        ("log", "--until", "9999-12-31"),
        ("search", "note", "--since", "3000d"),
    ):
        code, _out, err = run_cli(repo, *args)
        assert code == 0, (args, err)


def test_time_overflow_in_a_real_process(repo: Path) -> None:
    code, _out, err = cli(repo, "search", "note", "--since", "99999999999d")
    assert code == 2
    assert err.count("\n") == 1 and "out of range" in err


# branches ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ("search", "note", "--branch", ""),
        ("log", "--branch", ""),
        ("log", "--branch", "main/"),
        ("log", "--branch", ".."),
        ("context", "--branch", ""),
        ("ask", "--branch", "a..b"),
        ("export", "--branch", ""),
        ("merge", "main", "--into", ""),
        ("merge", ""),
    ],
)
def test_branch_names_git_refuses(repo: Path, args: tuple[str, ...]) -> None:
    err = usage_error(repo, *args)
    assert "is not a branch name" in err


def test_empty_branch_in_a_real_process(repo: Path) -> None:
    code, _out, err = cli(repo, "log", "--branch", "")
    assert code == 2
    assert err.count("\n") == 1 and "is not a branch name: it is empty" in err


# output files --------------------------------------------------------------------------
def _is_full_device() -> bool:
    try:
        return stat.S_ISCHR(os.stat("/dev/full").st_mode)
    except OSError:
        return False


@pytest.mark.skipif(not _is_full_device(), reason="no /dev/full character device")
@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_export_to_a_full_disk(repo: Path, fmt: str) -> None:
    err = usage_error(repo, "export", "--format", fmt, "--output", "/dev/full")
    assert "cannot write /dev/full: No space left on device" in err
    # pyarrow deletes a path it failed to write: the device must survive
    assert _is_full_device()


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_export_into_a_missing_directory(repo: Path, tmp_path: Path, fmt: str) -> None:
    target = tmp_path / "missing" / "bundle.out"
    err = usage_error(repo, "export", "--format", fmt, "--output", str(target))
    assert "does not exist" in err
    assert not target.parent.exists()


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_export_onto_a_directory(repo: Path, tmp_path: Path, fmt: str) -> None:
    err = usage_error(repo, "export", "--format", fmt, "--output", str(tmp_path))
    assert "is a directory" in err


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permissions")
def test_export_into_a_read_only_directory(repo: Path, tmp_path: Path) -> None:
    locked = tmp_path / "ro"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        err = usage_error(repo, "export", "--output", str(locked / "bundle.json"))
        assert "cannot write" in err and "Permission denied" in err
    finally:
        locked.chmod(0o700)


def test_export_error_in_a_real_process(repo: Path, tmp_path: Path) -> None:
    code, out, err = cli(repo, "export", "--output", str(tmp_path / "no" / "such" / "f.json"))
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and "does not exist" in err


def test_export_still_writes(repo: Path, tmp_path: Path) -> None:
    target = tmp_path / "bundle.json"
    code, _out, err = run_cli(repo, "export", "--output", str(target))
    assert code == 0, err
    assert len(json.loads(target.read_bytes())["events"]) == 3


def test_a_branch_that_does_not_exist_is_an_error_not_an_empty_answer(tmp_path):
    repo = make_repo(tmp_path / "repo", events=2)
    for args in (("log",), ("search", "note"), ("context",), ("ask",)):
        code, out, err = cli(repo, *args, "--branch", "nope")
        assert code == 3, (args, code, err)
        assert err.count("\n") == 1 and "no branch 'nope'" in err and out == ""
    git(repo, "branch", "feature")  # a git branch without memory yet: reads what it inherits
    code, out, _ = cli(repo, "log", "--branch", "feature")
    assert code == 0 and out.count("\n") == 2
