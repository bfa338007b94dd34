"""``git edda install|uninstall claude`` and ``git edda doctor`` (issue 12, item 1),
from the user's side: the files they end up with, byte for byte."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import cli, init_repo
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.agents.claude import settings as cs
from gitmem.agents.claude.install import entry_point, install, uninstall

EXE = entry_point()
CMD = f'"{EXE}" hook claude -C "$CLAUDE_PROJECT_DIR"'

# What a fresh install writes: every event, in lifecycle order; capture-only
# events in the background (async), the rest with a timeout.
GOLDEN_SETTINGS = """{
  "hooks": {
    "SessionStart": [{"hooks": [{"type": "command", "command": CMD, "timeout": 30}]}],
    "UserPromptSubmit": [{"hooks": [{"type": "command", "command": CMD, "timeout": 15}]}],
    "PreToolUse": [{"matcher": "Write|Edit|MultiEdit", "hooks": [{"type": "command", "command": CMD, "timeout": 10}]}],
    "PostToolUse": [{"hooks": [{"type": "command", "command": CMD, "timeout": 10}]}],
    "PostToolUseFailure": [{"hooks": [{"type": "command", "command": CMD, "timeout": 10}]}],
    "SubagentStart": [{"hooks": [{"type": "command", "command": CMD, "async": true}]}],
    "SubagentStop": [{"hooks": [{"type": "command", "command": CMD, "async": true}]}],
    "PreCompact": [{"hooks": [{"type": "command", "command": CMD, "timeout": 60}]}],
    "PostCompact": [{"hooks": [{"type": "command", "command": CMD, "timeout": 30}]}],
    "Stop": [{"hooks": [{"type": "command", "command": CMD, "async": true}]}],
    "StopFailure": [{"hooks": [{"type": "command", "command": CMD, "async": true}]}],
    "SessionEnd": [{"hooks": [{"type": "command", "command": CMD, "timeout": 30}]}]
  }
}"""


def golden() -> bytes:
    value = json.loads(GOLDEN_SETTINGS.replace("CMD", json.dumps(CMD)))
    return (json.dumps(value, indent=2) + "\n").encode()


GOLDEN_MCP = (
    json.dumps(
        {"mcpServers": {"gitmem": {"type": "stdio", "command": EXE, "args": ["mcp"]}}}, indent=2
    )
    + "\n"
).encode()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "repo")


def run(repo: Path, *args: str) -> tuple[int, str, str]:
    return cli(repo, *args)


def ok(repo: Path, *args: str) -> str:
    code, out, err = run(repo, *args)
    assert code == 0, (args, out, err)
    return out


def ok_json(repo: Path, *args: str) -> Any:
    return json.loads(ok(repo, *args, "--json"))


def shared(repo: Path) -> Path:
    return repo / ".claude" / "settings.json"


def files(repo: Path) -> dict[str, bytes]:
    """Every file in the work tree (not .git): what a user would see."""
    out = {}
    for path in sorted(repo.rglob("*")):
        if ".git" not in path.relative_to(repo).parts and path.is_file():
            out[str(path.relative_to(repo))] = path.read_bytes()
    return out


# -- a fresh install --------------------------------------------------------------------------
def test_fresh_install_writes_exactly_the_documented_files(repo: Path) -> None:
    out = ok(repo, "install", "claude")
    assert files(repo) == {".claude/settings.json": golden(), ".mcp.json": GOLDEN_MCP}
    assert "created" in out and CMD in out
    # nothing in the work tree but the two files (backups live in the git dir)
    assert subprocess.run(
        ["git", "status", "--porcelain", "-uall"], cwd=repo, capture_output=True, text=True
    ).stdout.split("\n")[:-1] == ["?? .claude/settings.json", "?? .mcp.json"]


def test_install_again_changes_no_byte(repo: Path) -> None:
    ok(repo, "install", "claude")
    before = files(repo)
    mtimes = {p: (repo / p).stat().st_mtime_ns for p in before}
    data = ok_json(repo, "install", "claude")
    assert data["settings"]["action"] == "unchanged" and data["mcp"]["action"] == "unchanged"
    assert files(repo) == before
    assert {p: (repo / p).stat().st_mtime_ns for p in before} == mtimes  # not even rewritten


def test_uninstall_after_a_fresh_install_leaves_the_work_tree_as_it_was(repo: Path) -> None:
    ok(repo, "install", "claude")
    data = ok_json(repo, "uninstall", "claude")
    assert data["settings"]["action"] == "deleted" and data["mcp"]["action"] == "deleted"
    assert files(repo) == {}
    assert not (repo / ".claude").exists()  # the directory gitmem made is gone too
    assert not (repo / ".git" / "edda" / "claude-backup").exists()


def test_the_hook_command_runs_in_any_directory_and_quotes_the_project_dir(
    tmp_path: Path,
) -> None:
    """The registered command, run by a real shell as Claude Code runs it:
    the entry point by absolute path (here in a directory with a space),
    the project directory passed whole whatever it holds."""
    bindir = tmp_path / "my tools"
    bindir.mkdir()
    fake = bindir / "git-edda"
    fake.write_text('#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done\n')
    fake.chmod(0o755)
    project = tmp_path / "it's a project (1)"
    command = cs.hook_command(str(fake))
    for shell in ("sh", "bash"):
        proc = subprocess.run(
            [shell, "-c", command],
            cwd=tmp_path,
            env={"PATH": "/usr/bin:/bin", "CLAUDE_PROJECT_DIR": str(project)},
            capture_output=True,
            text=True,
            check=True,
        )
        assert proc.stdout.splitlines() == ["hook", "claude", "-C", str(project)]
    assert cs.is_ours(command)


@pytest.mark.parametrize("bad", ["/opt/$HOME/git-edda", '/opt/a"b/git-edda', "relative/git-edda"])
def test_an_entry_point_path_no_shell_reads_literally_is_refused(bad: str) -> None:
    with pytest.raises(cs.UsageError):
        cs.hook_command(bad)


# -- merging with the user's settings ---------------------------------------------------------
USER_SETTINGS = """{
    "permissions": {
        "allow": ["Bash(npm test:*)"],
        "deny": []
    },
    "hooks": {
        "Stop": [
            {"hooks": [{"type": "command", "command": "notify-send done"}]}
        ],
        "PreToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
        ],
        "Notification": [
            {"hooks": [{"type": "command", "command": "say hi"}]}
        ]
    },
    "model": "opus",
    "x-unknown-key": {"z": 1, "a": [true, null, 1.5]}
}"""


def test_install_keeps_the_users_settings_their_order_and_layout(repo: Path) -> None:
    shared(repo).parent.mkdir()
    shared(repo).write_text(USER_SETTINGS)
    ok(repo, "install", "claude")
    text = shared(repo).read_text()
    value = json.loads(text)
    assert list(value) == ["permissions", "hooks", "model", "x-unknown-key"]
    assert value["permissions"] == {"allow": ["Bash(npm test:*)"], "deny": []}
    assert value["x-unknown-key"] == {"z": 1, "a": [True, None, 1.5]}
    assert list(value["x-unknown-key"]) == ["z", "a"]
    hooks = value["hooks"]
    # the user's events first, in their order; then gitmem's new ones, in lifecycle order
    assert list(hooks) == ["Stop", "PreToolUse", "Notification"] + [
        e for e in [s.event for s in cs.HOOKS] if e not in ("Stop", "PreToolUse")
    ]
    # on an event the user hooks, their group first, then gitmem's
    assert hooks["Stop"][0] == {"hooks": [{"type": "command", "command": "notify-send done"}]}
    assert hooks["Stop"][1] == {"hooks": [{"type": "command", "command": CMD, "async": True}]}
    assert hooks["PreToolUse"][0]["hooks"][0]["command"] == "./guard.sh"
    assert hooks["PreToolUse"][1]["matcher"] == "Write|Edit|MultiEdit"
    assert hooks["Notification"] == [{"hooks": [{"type": "command", "command": "say hi"}]}]
    assert text.startswith('{\n    "permissions"')  # their four-space indentation
    # once only, however often
    ok(repo, "install", "claude")
    assert shared(repo).read_text() == text
    assert sum(len(cmds) for cmds in cs.ours(value).values()) == len(cs.HOOKS)


def test_uninstall_gives_back_the_users_file_byte_for_byte(repo: Path) -> None:
    shared(repo).parent.mkdir()
    shared(repo).write_text(USER_SETTINGS)
    (repo / ".mcp.json").write_text('{"mcpServers": {"db": {"command": "db-mcp"}}}')
    before = files(repo)
    ok(repo, "install", "claude")
    assert files(repo) != before
    data = ok_json(repo, "uninstall", "claude")
    assert data["settings"]["action"] == "restored" and data["mcp"]["action"] == "restored"
    assert files(repo) == before


def test_uninstall_after_the_user_changed_something_else_removes_only_gitmems(
    repo: Path,
) -> None:
    shared(repo).parent.mkdir()
    shared(repo).write_text(USER_SETTINGS)
    ok(repo, "install", "claude")
    value = json.loads(shared(repo).read_text())
    value["model"] = "sonnet"
    value["hooks"]["Stop"].insert(0, {"hooks": [{"type": "command", "command": "mine"}]})
    shared(repo).write_text(json.dumps(value, indent=4))
    data = ok_json(repo, "uninstall", "claude")
    assert data["settings"]["action"] == "updated"
    after = json.loads(shared(repo).read_text())
    expected = json.loads(USER_SETTINGS)
    expected["model"] = "sonnet"
    expected["hooks"]["Stop"].insert(0, {"hooks": [{"type": "command", "command": "mine"}]})
    assert json.dumps(after) == json.dumps(expected)  # same value, same key order
    assert not cs.any_ours(after)
    assert not (repo / ".git" / "edda" / "claude-backup" / "settings.json").exists()


def test_a_reinstall_from_another_path_updates_in_place_and_removes_duplicates(
    repo: Path, tmp_path: Path
) -> None:
    old = str(tmp_path / "old venv" / "bin" / "git-edda")
    install(repo, executable=old)
    value = json.loads(shared(repo).read_text())
    # the user copied gitmem's handler into a group of their own, next to theirs
    value["hooks"]["Stop"].insert(
        0,
        {
            "hooks": [
                {"type": "command", "command": "mine"},
                {"type": "command", "command": cs.hook_command(old)},
            ]
        },
    )
    shared(repo).write_text(json.dumps(value, indent=2) + "\n")
    done = install(repo)
    assert done.settings.action == "updated"
    value = json.loads(shared(repo).read_text())
    assert cs.ours(value) == {spec.event: [CMD] for spec in cs.HOOKS}
    assert value["hooks"]["Stop"] == [
        {
            "hooks": [
                {"type": "command", "command": "mine"},
                {"type": "command", "command": CMD, "async": True},
            ]
        }
    ]
    mcp = json.loads((repo / ".mcp.json").read_text())
    assert mcp["mcpServers"]["gitmem"]["command"] == EXE


# -- where: --local and --user ------------------------------------------------------------------
def test_local_and_user_scopes_write_their_own_files(repo: Path) -> None:
    home = Path(os.environ["HOME"])
    data = ok_json(repo, "install", "claude", "--local")
    assert data["settings"]["path"] == str(repo / ".claude" / "settings.local.json")
    assert (repo / ".claude" / "settings.local.json").read_bytes() == golden()
    assert not shared(repo).exists()
    ok(repo, "install", "claude", "--user")
    assert (home / ".claude" / "settings.json").read_bytes() == golden()
    assert not shared(repo).exists()
    # the MCP server stays while another settings file still hooks gitmem
    data = ok_json(repo, "uninstall", "claude", "--local")
    assert data["settings"]["action"] == "deleted"
    assert data["mcp_kept_for"] == [str(home / ".claude" / "settings.json")]
    assert (repo / ".mcp.json").read_bytes() == GOLDEN_MCP
    data = ok_json(repo, "uninstall", "claude", "--user")
    assert data["mcp"]["action"] == "deleted"
    assert files(repo) == {} and not (home / ".claude").exists()


def test_user_and_local_together_is_a_usage_error(repo: Path) -> None:
    code, out, err = run(repo, "install", "claude", "--user", "--local")
    assert code == 2 and "exclude each other" in err and out == ""


# -- refusing what cannot be merged ---------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        '{"hooks": {',  # truncated
        '{"a": 1, "a": 2}',  # a key twice: json would keep one silently
        '{"a": NaN}',
        "[1, 2]",  # not an object
        '{"hooks": []}',  # hooks not an object
        '{"hooks": {"Stop": {}}}',  # an event gitmem hooks, not a list
        "\ufeff{}",  # a byte order mark: not what JSON allows
    ],
)
def test_a_settings_file_that_is_not_valid_json_is_refused_untouched(repo: Path, text: str) -> None:
    shared(repo).parent.mkdir()
    shared(repo).write_text(text)
    code, out, err = run(repo, "install", "claude")
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1 and "nothing was changed" in err
    assert files(repo) == {".claude/settings.json": text.encode()}  # and no .mcp.json either


def test_a_foreign_mcp_server_named_gitmem_is_refused(repo: Path) -> None:
    (repo / ".mcp.json").write_text('{"mcpServers": {"gitmem": {"command": "other"}}}')
    code, _, err = run(repo, "install", "claude")
    assert code == 2 and "not gitmem's" in err
    assert not shared(repo).exists()
    ok(repo, "install", "claude", "--no-mcp")
    assert shared(repo).read_bytes() == golden()


def test_mcp_json_merge_keeps_the_users_servers_and_extras(repo: Path) -> None:
    (repo / ".mcp.json").write_text(
        '{"mcpServers": {"db": {"command": "db-mcp", "args": []}}, "extra": 1}\n'
    )
    ok(repo, "install", "claude")
    value = json.loads((repo / ".mcp.json").read_text())
    assert list(value) == ["mcpServers", "extra"]
    assert list(value["mcpServers"]) == ["db", "gitmem"]
    assert value["mcpServers"]["gitmem"] == {"type": "stdio", "command": EXE, "args": ["mcp"]}
    assert (repo / ".mcp.json").read_text().count("\n") == 1  # a one-line file stays one line
    # an env the user gave gitmem's server survives a reinstall
    value["mcpServers"]["gitmem"]["env"] = {"GITMEM_AGENT": "me"}
    (repo / ".mcp.json").write_text(json.dumps(value))
    ok(repo, "install", "claude")
    again = json.loads((repo / ".mcp.json").read_text())
    assert again["mcpServers"]["gitmem"]["env"] == {"GITMEM_AGENT": "me"}


# -- doctor -------------------------------------------------------------------------------------
def test_doctor_reports_a_working_install(repo: Path) -> None:
    ok(repo, "init", "--no-fetch")
    ok(repo, "install", "claude")
    out = ok(repo, "doctor")
    assert "ok    hooks project: .claude/settings.json: 12 events hooked" in out
    assert f"ok    command: {EXE} runs" in out
    assert "ok    git hooks" in out and out.rstrip().endswith("all good")
    data = ok_json(repo, "doctor")
    assert data["ok"] is True
    project = next(s for s in data["settings"] if s["scope"] == "project")
    assert project["events"] == sorted(s.event for s in cs.HOOKS) and project["missing"] == []
    assert data["mcp"]["entry"]["command"] == EXE
    assert data["repository"]["git_hooks_missing"] == []


def test_doctor_fails_with_hints_when_something_is_missing(repo: Path, tmp_path: Path) -> None:
    code, out, _ = run(repo, "doctor")
    assert code == 1
    assert "FAIL  hooks: no settings file registers gitmem's hooks" in out
    assert "hint: git edda install claude" in out and "FAIL  git hooks" in out
    # a registered command that no longer exists (gitmem reinstalled elsewhere)
    gone = str(tmp_path / "gone" / "git-edda")
    install(repo, executable=gone, scope="local")
    code, out, _ = run(repo, "doctor", "--json")
    assert code == 1
    data = json.loads(out)
    failing = {c["name"]: c for c in data["checks"] if c["level"] == "fail"}
    assert failing["command"]["detail"] == f"{gone} does not exist or is not executable"
    assert "install claude" in failing["command"]["hint"]
    # a partial install: an event gitmem registers was taken out by hand
    value = json.loads((repo / ".claude" / "settings.local.json").read_text())
    del value["hooks"]["SessionStart"]
    (repo / ".claude" / "settings.local.json").write_text(json.dumps(value))
    code, out, _ = run(repo, "doctor")
    assert code == 1 and "lacks gitmem hooks for SessionStart" in out


# -- property: install then uninstall is the identity ------------------------------------------
_names = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=8)
_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | _names
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_names, inner, max_size=3),
    max_leaves=8,
)
_handler = st.fixed_dictionaries(
    {"type": st.just("command"), "command": st.sampled_from(["a", "./x.sh", "git edda note"])},
    optional={"timeout": st.integers(1, 600), "async": st.booleans()},
)
_group = st.fixed_dictionaries(
    {"hooks": st.lists(_handler, max_size=2)},
    optional={"matcher": st.sampled_from(["", "*", "Bash", "Write"])},
)
_events = st.sampled_from([s.event for s in cs.HOOKS] + ["Notification", "Setup"])
_hooks = st.dictionaries(_events, st.lists(_group, max_size=2), max_size=4)
_settings = st.dictionaries(
    st.sampled_from(["permissions", "model", "env", "x"]) | _names, _json, max_size=4
).flatmap(
    lambda base: st.one_of(
        st.just(base),
        _hooks.map(lambda hooks: {**base, "hooks": hooks}),
    )
)


@given(_settings)
def test_with_then_without_gitmems_hooks_is_the_identity(value: dict[str, Any]) -> None:
    added = cs.with_ours(value, CMD)
    assert cs.ours(added) == {spec.event: [CMD] for spec in cs.HOOKS}
    assert cs.with_ours(added, CMD) == added
    assert json.dumps(cs.without_ours(added, baseline=value)) == json.dumps(value)


@settings(max_examples=40)
@given(_settings, st.sampled_from([None, "  ", "\t", ""]))
def test_install_then_uninstall_gives_back_the_users_file(
    tmp_path_factory: pytest.TempPathFactory, value: dict[str, Any], indent: str | None
) -> None:
    repo = init_repo(tmp_path_factory.mktemp("prop") / "repo", commit=False)
    path = shared(repo)
    path.parent.mkdir()
    data = json.dumps(value, indent=indent, ensure_ascii=False).encode()
    path.write_bytes(data)
    install(repo, executable=EXE)
    installed = json.loads(path.read_bytes())
    assert cs.ours(installed) == {spec.event: [CMD] for spec in cs.HOOKS}
    uninstall(repo)
    assert path.read_bytes() == data
