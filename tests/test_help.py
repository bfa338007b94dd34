"""Help from the user's side: 'git edda help [COMMAND]', '-h', and the manual
pages that 'git edda --help' opens (git runs 'man git-edda')."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import ROOT, cli

from gitmem.cli.commands import app
from gitmem.cli.roff import man_pages

MAN_DIR = ROOT / "man" / "man1"


def leaf_commands() -> dict[str, object]:
    """Every command that runs something, by its words ("capsule open"),
    read from the cyclopts app itself rather than from the help code."""
    out: dict[str, object] = {}

    def walk(node: object, path: list[str]) -> None:
        for name in sorted(node):  # type: ignore[call-overload]
            if name.startswith("-"):
                continue
            sub = node[name]  # type: ignore[index]
            if sub.default_command is None:
                walk(sub, [*path, name])
            else:
                out[" ".join([*path, name])] = sub

    import gitmem.cli.manual  # noqa: F401  (registers 'help', as the CLI does)

    walk(app, [])
    return out


def option_names(sub: object) -> list[str]:
    """The option names a user types for a command (not cyclopts' --empty-X
    and --no-X negatives of options that are off by default)."""
    names = []
    for arg in sub.assemble_argument_collection().filter_by(show=True):  # type: ignore[attr-defined]
        if arg.index is None and arg.field_info.kind.name != "VAR_POSITIONAL":
            names += [n for n in arg.names if n not in arg.negatives]
    return names


def ok(tmp_path: Path, *args: str) -> str:
    code, out, err = cli(tmp_path, *args)
    assert code == 0, f"{args}: exit {code}: {err}"
    assert err == ""
    return out


# --- git edda help -------------------------------------------------------------


def test_help_lists_every_command_with_a_one_line_description(tmp_path):
    out = ok(tmp_path, "help")
    assert out.startswith("usage: git edda ")
    for words in leaf_commands():
        line = next((ln for ln in out.splitlines() if ln.startswith(f"   {words}  ")), None)
        assert line is not None, f"{words!r} missing from 'git edda help'"
        assert line[len(words) + 3 :].strip(), f"{words!r} has no description"
    assert "search" in leaf_commands() and "capsule open" in leaf_commands()


def test_help_for_a_command_gives_usage_description_and_every_option(tmp_path):
    out = ok(tmp_path, "help", "search")
    lines = out.splitlines()
    assert lines[0] == "usage: git edda search [OPTIONS] QUERY"
    assert "Search memory: full text and meaning" in out
    assert "Filters narrow what is searched before ranking" in out  # the long description too
    for name in option_names(leaf_commands()["search"]):
        assert re.search(rf"(^|[ ,]){re.escape(name)}\b", out, re.M), f"{name} missing"
    # Defaults, choices and help text come from the definitions.
    flat = " ".join(out.split())
    assert "--limit N How many results (1 to 10,000). Default: 10." in flat
    assert "--mode hybrid|lexical|vector" in out
    assert re.search(r"^\s+-C, --repo REPO\s+Run as if started in this directory\.$", out, re.M)


def test_help_for_a_command_with_subcommands_describes_each(tmp_path):
    out = ok(tmp_path, "help", "capsule")
    for usage in ("capsule open [OPTIONS] KIND", "capsule close [OPTIONS] ID", "capsule list"):
        assert f"usage: git edda {usage}" in out
    assert "One of: session, workflow, node." in " ".join(out.split())
    assert ok(tmp_path, "help", "capsule", "open").startswith(
        "usage: git edda capsule open [OPTIONS] KIND\n"
    )


def test_help_json_describes_the_command(tmp_path):
    data = json.loads(ok(tmp_path, "help", "note", "--json"))
    assert data["command"] == ["note"]
    options = {name: opt for opt in data["options"] for name in opt["names"]}
    assert options["-m"]["help"] == "The note, as with git commit -m."
    assert options["--tag"]["repeatable"] is True
    assert [a["names"] for a in data["arguments"]] == [["TEXT"]]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope"], "'nope' is not a git edda command"),
        (["serch"], "did you mean 'search'?"),
        (["capsule", "shut"], "'shut' is not a git edda capsule command"),
        (["search", "more"], "'search' has no subcommand 'more'"),
    ],
)
def test_help_for_an_unknown_command_is_a_usage_error(tmp_path, args, message):
    code, out, err = cli(tmp_path, "help", *args)
    assert code == 2  # ExitCode.USAGE
    assert out == ""
    assert err.count("\n") == 1 and err.startswith("git edda: error: "), err
    assert message in err
    assert "git edda help" in err


# --- -h and --help after the command -------------------------------------------


@pytest.mark.parametrize(
    ("args", "same_as"),
    [
        (["-h"], ["help"]),
        (["search", "-h"], ["help", "search"]),
        (["search", "some", "query", "--limit", "3", "--help"], ["help", "search"]),
        (["capsule", "open", "--help"], ["help", "capsule", "open"]),
        (["capsule", "-h"], ["help", "capsule"]),
        (["help", "-h"], ["help", "help"]),
    ],
)
def test_dash_h_prints_the_help_of_the_command_it_follows(tmp_path, args, same_as):
    assert ok(tmp_path, *args) == ok(tmp_path, *same_as)


def test_dash_h_after_an_unknown_command_says_so(tmp_path):
    code, out, err = cli(tmp_path, "nope", "-h")
    assert (code, out) == (2, "")
    assert "'nope' is not a git edda command" in err


def test_dash_h_after_double_dash_is_an_argument(repo):
    ok(repo, "init", "--no-hooks")
    # In the repository, not with -C: cli() puts -C last, after the "--".
    proc = subprocess.run(
        [sys.executable, "-m", "gitmem.cli.main", "note", "--", "-h"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("noted ")
    assert "-h" in ok(repo, "log")


def test_usage_errors_point_to_the_help_of_the_command(tmp_path):
    code, _, err = cli(tmp_path, "search", "--limt", "3", "x")
    assert code == 2
    assert err.rstrip().endswith("(see 'git edda help search')"), err
    code, _, err = cli(tmp_path, "capsule", "open", "--bogus")
    assert err.rstrip().endswith("(see 'git edda help capsule open')"), err
    code, _, err = cli(tmp_path, "frobnicate")
    assert err.rstrip().endswith("(see 'git edda help')"), err
    assert "--help" not in err


def git_edda_on_path(tmp_path: Path) -> dict[str, str]:
    """An environment laid out like an installed one: PREFIX/bin/git-edda and
    the shipped pages in PREFIX/share/man/man1, bin on PATH, no MANPATH."""
    prefix = tmp_path / "prefix"
    (prefix / "bin").mkdir(parents=True)
    script = prefix / "bin" / "git-edda"
    script.write_text(f'#!/bin/sh\nexec {sys.executable} -m gitmem.cli.main "$@"\n')
    script.chmod(0o755)
    shutil.copytree(MAN_DIR, prefix / "share" / "man" / "man1")
    env = {k: v for k, v in os.environ.items() if k not in ("MANPATH", "MANOPT", "PAGER")}
    env.update(
        PATH=f"{prefix / 'bin'}:{os.environ['PATH']}",
        MANPAGER="cat",
        GIT_PAGER="cat",
        MANWIDTH="80",
        LC_ALL="C",
    )
    return env


def test_git_passes_dash_h_through_to_git_edda(tmp_path):
    env = git_edda_on_path(tmp_path)
    for args, first in ((["-h"], "usage: git edda "), (["log", "-h"], "usage: git edda log ")):
        proc = subprocess.run(
            ["git", "edda", *args], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(first)


# --- manual pages --------------------------------------------------------------


def test_shipped_manual_pages_are_current():
    """The pages in man/man1 are what the command definitions generate now;
    after changing a command, regenerate: python tools/manpages.py man/man1"""
    shipped = {p.name: p.read_text(encoding="utf-8") for p in MAN_DIR.glob("*.1")}
    generated = man_pages()
    assert sorted(shipped) == sorted(generated)
    stale = [name for name in generated if shipped[name] != generated[name]]
    assert not stale, f"regenerate with: python tools/manpages.py man/man1 ({stale})"


def test_every_command_has_a_page():
    pages = set(man_pages())
    assert "git-edda.1" in pages
    for words in leaf_commands():
        assert f"git-edda-{words.split()[0]}.1" in pages


def test_wheel_installs_the_pages_into_share_man():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    shared = meta["tool"]["hatch"]["build"]["targets"]["wheel"]["shared-data"]
    assert shared == {"man/man1": "share/man/man1"}
    assert (ROOT / "man" / "man1" / "git-edda.1").is_file()


def render(page: Path) -> str:
    """A page as man shows it (or nroff where there is no man), plain text."""
    env = dict(os.environ, MANWIDTH="80", MANPAGER="cat", LC_ALL="C")
    if shutil.which("man"):
        cmd = ["man", "-l", str(page)]
    elif shutil.which("nroff"):
        cmd = ["nroff", "-man", str(page)]
    else:
        pytest.skip("neither man nor nroff is installed: cannot render a manual page")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr  # roff warnings: a malformed page
    return re.sub(r".\x08", "", proc.stdout)  # nroff's overstrike bold


def test_pages_render_and_name_every_option():
    commands = leaf_commands()
    for words, sub in commands.items():
        page = MAN_DIR / f"git-edda-{words.split()[0]}.1"
        text = render(page)
        assert f"git edda {words}" in text, (page.name, words)
        for name in option_names(sub):
            assert re.search(rf"(^|[ ,]){re.escape(name)}\b", text, re.M), (page.name, name)
    main = render(MAN_DIR / "git-edda.1")
    for words in commands:
        assert re.search(rf"^ {{7}}{re.escape(words)}\b", main, re.M), words
    assert "EXIT STATUS" in main


def test_git_edda_dash_dash_help_opens_the_manual_page(tmp_path):
    """git turns 'git edda --help' into 'git help edda', which runs 'man
    git-edda'; man finds the page in PREFIX/share/man beside PREFIX/bin, as
    installing the wheel lays them out."""
    if not shutil.which("man"):
        pytest.skip("man is not installed: 'git help' has nothing to show pages with")
    env = git_edda_on_path(tmp_path)
    proc = subprocess.run(
        ["git", "edda", "--help"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "GIT-EDDA(1)" in proc.stdout
    assert "git edda help [COMMAND]" in proc.stdout
    proc = subprocess.run(
        ["man", "git-edda-search"], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "--limit N" in proc.stdout


def test_the_options_help_calls_common_are_taken_by_every_command():
    from gitmem.cli.manual import common_options

    common = [n for opt in common_options() for n in opt.names]
    assert sorted(common) == ["--json", "--no-pager", "--repo", "-C", "-P"]
    for words, sub in leaf_commands().items():
        assert set(common) <= set(option_names(sub)), words
