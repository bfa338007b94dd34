"""Connecting coding agents: install, uninstall, doctor."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Literal

from cyclopts import App, Parameter

from gitmem.cli.root import DEFAULT_COMMON, Common, Output, app
from gitmem.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from gitmem.agents.claude.install import FileChange, Scope

install_app = App(name="install", help="Connect a coding agent to gitmem (claude).")
uninstall_app = App(name="uninstall", help="Disconnect a coding agent from gitmem (claude).")
app.command(install_app)
app.command(uninstall_app)


def _scope(user: bool, local: bool) -> Scope:
    if user and local:
        raise UsageError("--user and --local exclude each other", "give one of them, or neither")
    return "user" if user else "local" if local else "project"


_VERBS = {
    "created": "created",
    "updated": "updated",
    "unchanged": "unchanged",
    "restored": "restored from its backup",
    "deleted": "deleted (gitmem had created it)",
    "absent": "not there",
}


def _line(change: FileChange) -> str:
    return f"{change.path}: {_VERBS[change.action]}"


@install_app.command(name="claude")
def install_claude(
    *,
    user: Annotated[bool, Parameter(negative="")] = False,
    local: Annotated[bool, Parameter(negative="")] = False,
    no_mcp: Annotated[bool, Parameter(negative="")] = False,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Register gitmem's hooks and MCP server with Claude Code (idempotent).

    Parameters
    ----------
    user
        Hooks in ~/.claude/settings.json (every project) instead of .claude/settings.json.
    local
        Hooks in .claude/settings.local.json (personal, not shared) instead of .claude/settings.json.
    no_mcp
        Leave .mcp.json alone (no MCP server).
    """
    from gitmem.agents.claude.install import install

    done = install(common.repo, scope=_scope(user, local), mcp=not no_mcp)
    lines = [f"hooks ({', '.join(done.events)}): {_line(done.settings)}"]
    if done.mcp is not None:
        lines.append(f"MCP server 'gitmem': {_line(done.mcp)}")
    if done.settings.backup:
        lines.append(f"backup of the files as they were: {done.settings.backup}")
    lines.append(f"every hook runs: {done.command}")
    lines.append("check with: git edda doctor")
    return Output(done.to_json(), "\n".join(lines))


@uninstall_app.command(name="claude")
def uninstall_claude(
    *,
    user: Annotated[bool, Parameter(negative="")] = False,
    local: Annotated[bool, Parameter(negative="")] = False,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Remove gitmem's hooks (and MCP server) from Claude Code's settings; a
    file nobody else changed since install gets its original bytes back.

    Parameters
    ----------
    user
        From ~/.claude/settings.json instead of .claude/settings.json.
    local
        From .claude/settings.local.json instead of .claude/settings.json.
    """
    from gitmem.agents.claude.install import uninstall

    done = uninstall(common.repo, scope=_scope(user, local))
    lines = [f"hooks: {_line(done.settings)}"]
    if done.mcp_kept_for:
        lines.append(f"MCP server 'gitmem' kept: still hooked in {', '.join(done.mcp_kept_for)}")
    elif done.mcp is not None:
        lines.append(f"MCP server 'gitmem': {_line(done.mcp)}")
    return Output(done.to_json(), "\n".join(lines))


_MARK = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}


@app.command
def doctor(*, common: Common = DEFAULT_COMMON) -> Output:
    """Check the agent integration: Claude Code hooks and MCP server, the
    commands they run, git hooks, the index, the mcp package (exit 1 on a failure)."""
    from gitmem.agents.claude.install import doctor as run_doctor

    report = run_doctor(common.repo)
    lines = []
    for check in report.checks:
        line = f"{_MARK[check.level]}  {check.name}: {check.detail}"
        if check.hint and check.level != "ok":
            line += f"\n      hint: {check.hint}"
        lines.append(line)
    lines.append("all good" if report.ok else "problems found")
    return Output(
        report.to_json(), "\n".join(lines), code=ExitCode.OK if report.ok else ExitCode.ERROR
    )


@app.command
def hook(agent: Literal["claude", "generic"], *, common: Common = DEFAULT_COMMON) -> Output:
    """Handle one hook event of an agent: its JSON on standard input, context to
    inject (if any) on standard output in the agent's own format.

    Claude Code runs 'git edda hook claude' for every event 'git edda install
    claude' registers; 'hook generic' reads the generic protocol (see the
    README). It always exits 0 and never blocks the agent: a failure is
    logged under the git common dir's edda/log/hooks.log. The command line
    routes here before loading anything heavy, so --json changes nothing: the
    output is the agent's protocol.

    Parameters
    ----------
    agent
        claude (Claude Code's hook payloads) or generic (the generic protocol).
    """
    from gitmem.agents.hooks import run_hook

    return Output(None, "", ExitCode(run_hook(agent, common.repo, [])))
