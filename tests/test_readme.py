"""The README's promises: two commands in its first block, and CI runs the second."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def first_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"```sh\n(.*?)```", text, re.S)
    assert match, "README.md has no ```sh block"
    assert text.index(match.group(0)) < text.index("\n## "), "the command block must come first"
    return [line for line in match.group(1).splitlines() if line.strip()]


def test_readme_first_block_has_exactly_two_commands():
    lines = first_block()
    assert len(lines) == 2
    install_and_run, test = lines
    assert "pip install" in install_and_run and "git edda" in install_and_run
    assert "pytest" in test and ".[dev]" in test


def test_ci_runs_the_readme_test_command_verbatim():
    ci = (ROOT / ".ci" / "run").read_text()
    assert first_block()[1] in ci.splitlines()


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
    import re
    import tomllib

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["name"] == "git-edda"
    for path in (ROOT / "gitmem").rglob("*.py"):
        for line in path.read_text().splitlines():
            assert not re.search(r"pip install[^\"']*\bgitmem\b", line), (path, line)
