"""The README's promises: two commands in its first block, CI runs both, the
install leaves only gitmem's commands on PATH, and the git log hint works."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

from conftest import cli, git, init_repo

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
EXCLUDE = "--exclude='refs/edda*'"  # before --all, quoted for the shell


def first_block() -> list[str]:
    match = re.search(r"```sh\n(.*?)```", README, re.S)
    assert match, "README.md has no ```sh block"
    assert README.index(match.group(0)) < README.index("\n## "), "the command block must come first"
    return [line for line in match.group(1).splitlines() if line.strip()]


def entry_points() -> set[str]:
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(meta["project"]["scripts"])


def test_readme_first_block_has_exactly_two_commands():
    lines = first_block()
    assert len(lines) == 2
    install_and_run, test = lines
    assert re.search(r"pip\"? install", install_and_run) and "git edda" in install_and_run
    assert "pytest" in test and ".[dev]" in test


def test_the_install_puts_only_gitmems_commands_on_path() -> None:
    """pipx-style: an environment of its own, its entry points (all of them,
    nothing else) linked into ~/.local/bin, which is appended to PATH; no
    environment's bin/ (its python3, pip, ...) ever goes in front."""
    words = shlex.split(first_block()[0])
    assert not any(re.search(r"PATH=.*/bin:\$PATH", w) for w in words)
    assert [w for w in words if w.startswith("PATH=")] == ["PATH=$PATH:$HOME/.local/bin"]
    link = words.index("ln")
    sources, target = (
        words[link + 2 : words.index("&&", link) - 1],
        words[words.index("&&", link) - 1],
    )
    assert words[link + 1] == "-sf" and target == "~/.local/bin/"
    assert {Path(s).name for s in sources} == entry_points()
    assert all(s.startswith("$D/bin/") for s in sources)
    assert words.index("init") > link  # git edda runs from the linked command


def test_ci_runs_the_readme_commands_verbatim():
    install_and_run, test = first_block()
    assert test in (ROOT / ".ci" / "run").read_text().splitlines()
    assert install_and_run in (ROOT / ".ci" / "quickstart").read_text().splitlines()


def test_the_test_command_runs_every_test_slow_ones_included():
    """Nothing is deselected by the command or by pytest's configuration, and the
    plugin its ``-n`` needs comes with the dev dependencies."""
    import shlex
    import tomllib

    args = shlex.split(first_block()[1].split("-m pytest", 1)[1])
    assert not {"-m", "-k", "--lf", "--last-failed", "-x", "--exitfirst"} & set(args), args
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    addopts = meta["tool"]["pytest"]["ini_options"].get("addopts", "")
    assert "-m" not in shlex.split(addopts) and "slow" not in addopts, addopts
    if "-n" in args:
        dev = meta["project"]["optional-dependencies"]["dev"]
        assert any(d.startswith("pytest-xdist") for d in dev), dev


def test_install_hints_name_our_distribution() -> None:
    """'gitmem' on the package index is an unrelated project: every hint that
    installs or upgrades gitmem names the distribution git-edda."""
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["name"] == "git-edda"
    for path in (ROOT / "gitmem").rglob("*.py"):
        for line in path.read_text().splitlines():
            assert not re.search(r"pip install[^\"']*\bgitmem\b", line), (path, line)


def test_init_hints_how_git_log_leaves_memory_out(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo")
    git(repo, "commit", "-q", "--allow-empty", "-m", "code")
    code, out, _ = cli(repo, "init", "--no-hooks")
    assert code == 0
    hints = [line for line in out.splitlines() if "--exclude" in line]
    assert len(hints) == 1 and f"git log {EXCLUDE} --all" in hints[0]
    assert "--exclude" not in cli(repo, "init", "--no-hooks", "--json")[1]
    assert cli(repo, "note", "remembered")[0] == 0

    # What the hint and the README say, run as a reader would type it: code
    # commits only, where --all alone shows memory commits too.
    code_only = git(repo, "log", "--format=%H", "--branches", "--tags").split()
    everything = git(repo, "log", "--format=%H", "--all").split()
    assert len(everything) > len(code_only) == 2

    def commits(*args: str) -> list[str]:
        lines = git(repo, *args, "--format=%H").splitlines()
        return [line.strip("*| ") for line in lines if line.strip("*| ")]

    hinted = re.search(rf"(git log {re.escape(EXCLUDE)} --all)", hints[0])
    documented = re.search(rf"`(git log [^`]*{re.escape(EXCLUDE)} --all)`", README)
    assert hinted and documented
    for command in (hinted.group(1), documented.group(1)):
        assert commits(*shlex.split(command)[1:]) == code_only, command
    alias = re.search(r'git config --global alias\.(\w+) "([^"]*)"', README)
    assert alias and "--exclude=refs/edda* --all" in alias.group(2)
    git(repo, "config", f"alias.{alias.group(1)}", alias.group(2))  # git splits it, no shell
    assert commits(alias.group(1)) == code_only
