"""``git edda install|uninstall claude`` and ``git edda doctor``: register
gitmem with Claude Code, take it out again, and report whether it works.

Where: the hooks go in one settings file, chosen by scope (``project``:
``.claude/settings.json``, shared with the team; ``local``:
``.claude/settings.local.json``, personal; ``user``:
``~/.claude/settings.json``, every project); the MCP server goes in the
project's ``.mcp.json``. The merge rules are in
:mod:`gitmem.agents.claude.settings`.

Backups: before the first change to a file, its bytes are kept in the
worktree's git directory (``.git/edda/claude-backup/``, not in the work
tree, where ``git status`` would list them), or a marker that the file did
not exist. ``uninstall`` compares the file without gitmem's entries to that
backup: when they are the same JSON (keys in the same order), it writes the
backup's bytes back, or deletes a file gitmem created; otherwise it writes
the file without gitmem's entries and keeps everything else. Then the
backup is removed.

Every write is atomic (a temporary file renamed over the old one), and
nothing is written unless every file involved could be read and merged.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from gitmem.agents.claude import settings as cs
from gitmem.app.session import Repo
from gitmem.errors import DependencyError, UsageError
from gitmem.storage.files import write_atomic
from gitmem.storage.locate import RepoLocation, locate

Scope = Literal["project", "local", "user"]
SCOPES: tuple[Scope, ...] = ("project", "local", "user")

Action = Literal["created", "updated", "unchanged", "restored", "deleted", "absent"]

BACKUP_DIR = ("edda", "claude-backup")
_BACKUP_NAMES = {
    "project": "settings.json",
    "local": "settings.local.json",
    "user": "user-settings.json",
    "mcp": "mcp.json",
}
_ABSENT = ".absent"  # marker suffix: the file did not exist before gitmem


def entry_point() -> str:
    """The absolute path of the installed ``git-edda`` script: beside this
    Python (a virtual environment's or pipx's ``bin``), else on PATH."""
    # not resolved: a venv's python is a symlink out of the venv's bin
    beside = Path(os.path.abspath(sys.executable)).parent / "git-edda"
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which("git-edda")
    if found:
        return os.path.abspath(found)
    raise DependencyError(
        "cannot find the git-edda script (neither beside this Python nor on PATH)",
        "install gitmem with pip, pipx or uv so that its git-edda script exists",
    )


def _project(repo: Repo) -> tuple[RepoLocation, Path]:
    location = locate(repo)
    if location.workdir is None:
        raise UsageError(
            "Claude Code works in a work tree; this repository is bare",
            "run the command in a clone with a work tree",
        )
    return location, location.workdir


def settings_path(scope: Scope, project: Path) -> Path:
    """The settings file of ``scope``."""
    if scope == "user":
        return Path(os.path.expanduser("~")) / ".claude" / "settings.json"
    return project / ".claude" / ("settings.local.json" if scope == "local" else "settings.json")


def mcp_path(project: Path) -> Path:
    return project / ".mcp.json"


def _backup_path(location: RepoLocation, which: str) -> Path:
    return Path(location.git_path).joinpath(*BACKUP_DIR, _BACKUP_NAMES[which])


def _same(a: Any, b: Any) -> bool:
    """The same JSON value, keys in the same order (1, 1.0 and true differ)."""
    return json.dumps(a) == json.dumps(b)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _show(path: Path, project: Path) -> str:
    """``path`` relative to the project when inside it, else with ~ for home."""
    try:
        return str(path.relative_to(project))
    except ValueError:
        home = Path(os.path.expanduser("~"))
        try:
            return str(Path("~") / path.relative_to(home))
        except ValueError:
            return str(path)


@dataclass(frozen=True)
class FileChange:
    """What a command did to one file."""

    path: str
    action: Action
    backup: str | None = None
    "Where the file's bytes from before gitmem are kept (install), or None."

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "action": self.action, "backup": self.backup}


@dataclass
class _Plan:
    """A file to write: its path, current bytes, the new value, its backup."""

    path: Path
    old: bytes | None
    new: dict[str, Any]
    backup: Path

    def changes(self) -> bool:
        return self.old is None or not _same(cs.parse(self.old, str(self.path)), self.new)

    def apply(self) -> FileChange:
        if not self.changes():
            return FileChange(str(self.path), "unchanged", _existing_backup(self.backup))
        self._keep_backup()
        _write(self.path, cs.dumps(self.new, like=self.old))
        return FileChange(
            str(self.path),
            "created" if self.old is None else "updated",
            _existing_backup(self.backup),
        )

    def _keep_backup(self) -> None:
        if _existing_backup(self.backup):
            return  # the bytes from before the first install are what counts
        self.backup.parent.mkdir(parents=True, exist_ok=True)
        if self.old is None:
            created = "dir" if not self.path.parent.exists() else ""
            write_atomic(str(self.backup) + _ABSENT, created.encode(), mode=0o600)
        else:
            write_atomic(str(self.backup), self.old, mode=0o600)


def _existing_backup(backup: Path) -> str | None:
    if backup.exists():
        return str(backup)
    if Path(str(backup) + _ABSENT).exists():
        return str(backup) + _ABSENT
    return None


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        mode = 0o644
    write_atomic(str(path), data, mode=mode)


@dataclass(frozen=True)
class Installed:
    """What ``install claude`` did."""

    scope: Scope
    command: str
    "The command every hook runs."
    events: list[str]
    settings: FileChange
    mcp: FileChange | None

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "command": self.command,
            "events": self.events,
            "settings": self.settings.to_json(),
            "mcp": self.mcp.to_json() if self.mcp else None,
        }


def install(
    repo: Repo = None,
    *,
    scope: Scope = "project",
    mcp: bool = True,
    executable: str | None = None,
) -> Installed:
    """Register gitmem's hooks in the settings file of ``scope`` and, with
    ``mcp``, its MCP server in the project's ``.mcp.json`` (idempotent).
    ``executable``: the entry point to register (default: :func:`entry_point`).

    Raises :class:`~gitmem.errors.UsageError`, before anything is written,
    when a file is not valid JSON or has a shape gitmem cannot merge into."""
    location, project = _project(repo)
    exe = executable or entry_point()
    command = cs.hook_command(exe)
    path = settings_path(scope, project)
    old = _read(path)
    plans = [
        _Plan(
            path,
            old,
            cs.with_ours(cs.parse(old or b"", str(path)), command, str(path)),
            _backup_path(location, scope),
        )
    ]
    if mcp:
        mpath = mcp_path(project)
        mold = _read(mpath)
        plans.append(
            _Plan(
                mpath,
                mold,
                cs.with_mcp(cs.parse(mold or b"", str(mpath)), exe, str(mpath)),
                _backup_path(location, "mcp"),
            )
        )
    done = [plan.apply() for plan in plans]
    return Installed(
        scope=scope,
        command=command,
        events=[spec.event for spec in cs.HOOKS],
        settings=done[0],
        mcp=done[1] if mcp else None,
    )


@dataclass(frozen=True)
class Uninstalled:
    """What ``uninstall claude`` did."""

    scope: Scope
    settings: FileChange
    mcp: FileChange | None
    mcp_kept_for: list[str] = field(default_factory=list)
    "Settings files that still register gitmem's hooks (the MCP server stays for them)."

    def to_json(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "settings": self.settings.to_json(),
            "mcp": self.mcp.to_json() if self.mcp else None,
            "mcp_kept_for": self.mcp_kept_for,
        }


def _undo(path: Path, backup: Path, remove: Any, has_ours: Any) -> tuple[Action, Any]:
    """What to do to ``path`` to take gitmem out: returns the action and a
    callable that does it (so every file is read and checked before any is written)."""
    old = _read(path)
    if old is None:
        return "absent", None
    current = cs.parse(old, str(path))
    original = _read(backup)
    marker = _read(Path(str(backup) + _ABSENT))
    baseline = cs.parse(original, str(backup)) if original is not None else None
    if not has_ours(current):
        return "unchanged", None
    new = remove(current, baseline)

    def run() -> None:
        _drop_backup(backup)

    if original is not None and _same(new, baseline):

        def restore() -> None:
            _write(path, original)
            run()

        return "restored", restore
    if marker is not None and new == {}:

        def delete() -> None:
            path.unlink()
            if marker == b"dir":
                try:
                    path.parent.rmdir()  # only when empty: gitmem made it
                except OSError:
                    pass
            run()

        return "deleted", delete

    def update() -> None:
        _write(path, cs.dumps(new, like=old))
        run()

    return "updated", update


def _has_our_server(config: dict[str, Any]) -> bool:
    servers = config.get("mcpServers")
    return isinstance(servers, dict) and cs.mcp_is_ours(servers.get(cs.MCP_SERVER))


def _drop_backup(backup: Path) -> None:
    for name in (backup, Path(str(backup) + _ABSENT)):
        try:
            name.unlink()
        except FileNotFoundError:
            pass
    try:
        backup.parent.rmdir()  # the last backup gone: no empty directory left behind
    except OSError:
        pass


def uninstall(repo: Repo = None, *, scope: Scope = "project") -> Uninstalled:
    """Take gitmem's hooks out of the settings file of ``scope``, restoring
    its bytes from the backup when nothing else changed since install, and
    its MCP server out of ``.mcp.json`` unless another settings file still
    registers gitmem's hooks. Reads and checks every file before writing any."""
    location, project = _project(repo)
    path = settings_path(scope, project)
    action, do = _undo(
        path,
        _backup_path(location, scope),
        lambda value, base: cs.without_ours(value, str(path), base),
        lambda value: cs.any_ours(value, str(path)),
    )
    still = []
    for other in SCOPES:
        if other == scope:
            continue
        other_path = settings_path(other, project)
        data = _read(other_path)
        try:
            if data is not None and cs.any_ours(cs.parse(data, str(other_path))):
                still.append(str(other_path))
        except UsageError:
            still.append(str(other_path))  # unreadable: it may need the server
    mpath = mcp_path(project)
    maction: Action = "unchanged"
    mdo = None
    if not still:
        maction, mdo = _undo(
            mpath,
            _backup_path(location, "mcp"),
            lambda value, base: cs.without_mcp(value, str(mpath), base),
            lambda value: _has_our_server(value),
        )
    for step in (do, mdo):
        if step is not None:
            step()
    return Uninstalled(
        scope=scope,
        settings=FileChange(str(path), action),
        mcp=FileChange(str(mpath), maction),
        mcp_kept_for=still,
    )


# -- doctor ----------------------------------------------------------------------------------

Level = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class Check:
    """One finding of ``doctor``: ``fail`` makes it exit non-zero, ``warn`` does not."""

    name: str
    level: Level
    detail: str
    hint: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "level": self.level, "detail": self.detail, "hint": self.hint}


@dataclass(frozen=True)
class SettingsState:
    """gitmem's hooks in one settings file."""

    scope: Scope
    path: str
    exists: bool
    events: list[str]
    "Events with a gitmem hook."
    missing: list[str]
    "Events gitmem registers that this file lacks (when it has any)."
    commands: list[str]
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Doctor:
    """What ``doctor`` found."""

    settings: list[SettingsState]
    mcp: dict[str, Any]
    health: dict[str, Any]
    checks: list[Check]

    @property
    def ok(self) -> bool:
        return all(check.level != "fail" for check in self.checks)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "settings": [s.to_json() for s in self.settings],
            "mcp": self.mcp,
            "repository": self.health,
            "checks": [c.to_json() for c in self.checks],
        }


def _runnable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def doctor(repo: Repo = None) -> Doctor:
    """Report what is installed for Claude Code where, and whether it works:
    hooks per settings file, the MCP server entry, whether the commands they
    name can run, gitmem's git hooks, the index, and the ``mcp`` package."""
    from gitmem.app.agents import health

    location, project = _project(repo)
    checks: list[Check] = []
    states: list[SettingsState] = []
    wanted = [spec.event for spec in cs.HOOKS]
    programs: dict[str, None] = {}
    for scope in SCOPES:
        path = settings_path(scope, project)
        shown = _show(path, project)
        data = _read(path)
        try:
            found = cs.ours(cs.parse(data or b"", str(path)), str(path))
            error = None
        except UsageError as exc:
            found, error = {}, exc.message
            checks.append(Check(f"settings {scope}", "fail", exc.message, exc.hint))
        commands = sorted({c for cmds in found.values() for c in cmds})
        missing = [e for e in wanted if e not in found] if found else []
        states.append(
            SettingsState(
                scope, str(path), data is not None, sorted(found), missing, commands, error
            )
        )
        for command in commands:
            programs[cs.executable_of(command)] = None
        if found and missing:
            checks.append(
                Check(
                    f"hooks {scope}",
                    "fail",
                    f"{shown} lacks gitmem hooks for {', '.join(missing)}",
                    f"git edda install claude{'' if scope == 'project' else ' --' + scope}",
                )
            )
        elif found:
            checks.append(Check(f"hooks {scope}", "ok", f"{shown}: {len(found)} events hooked"))
    if not any(s.events for s in states):
        checks.append(
            Check(
                "hooks",
                "fail",
                "no settings file registers gitmem's hooks",
                "git edda install claude (or --local, --user)",
            )
        )
    mpath = mcp_path(project)
    mdata = _read(mpath)
    entry: Any = None
    try:
        servers = cs.parse(mdata or b"", str(mpath)).get("mcpServers")
        entry = servers.get(cs.MCP_SERVER) if isinstance(servers, dict) else None
    except UsageError as exc:
        checks.append(Check("mcp server", "fail", exc.message, exc.hint))
    mcp_state = {"path": str(mpath), "server": cs.MCP_SERVER, "entry": entry}
    if entry is None:
        checks.append(
            Check(
                "mcp server",
                "warn",
                f"{_show(mpath, project)} has no {cs.MCP_SERVER!r} server",
                "git edda install claude",
            )
        )
    elif not cs.mcp_is_ours(entry):
        checks.append(
            Check(
                "mcp server",
                "fail",
                f"the {cs.MCP_SERVER!r} server in {_show(mpath, project)} does not run git-edda",
                "rename that server, then git edda install claude",
            )
        )
    else:
        programs[str(entry["command"])] = None
        checks.append(
            Check("mcp server", "ok", f"{_show(mpath, project)}: {cs.MCP_SERVER!r} server")
        )
    for program in programs:
        if _runnable(program):
            checks.append(Check("command", "ok", f"{program} runs"))
        else:
            checks.append(
                Check(
                    "command",
                    "fail",
                    f"{program} does not exist or is not executable",
                    "reinstall gitmem, then git edda install claude to register its new path",
                )
            )
    state = health(location.cwd)
    if state.git_hooks_missing:
        checks.append(
            Check(
                "git hooks",
                "fail",
                f"gitmem's git hooks are missing: {', '.join(state.git_hooks_missing)}",
                "git edda init",
            )
        )
    else:
        checks.append(Check("git hooks", "ok", f"installed: {', '.join(state.git_hooks)}"))
    if state.index == "fresh":
        checks.append(Check("index", "ok", "the search index is up to date"))
    else:
        what = "not built yet" if state.index == "absent" else "behind memory"
        checks.append(
            Check(
                "index",
                "warn",
                f"the search index is {what} (the next search refreshes it)",
                "git edda index",
            )
        )
    if state.mcp_importable:
        checks.append(Check("mcp package", "ok", "the mcp package is importable"))
    else:
        checks.append(
            Check(
                "mcp package",
                "fail" if entry is not None else "warn",
                "the mcp package is not installed (git edda mcp needs it)",
                "pip install 'git-edda[mcp]'",
            )
        )
    checks.append(_daemon_check(location))
    return Doctor(states, mcp_state, state.to_json(), checks)


def _daemon_check(location: RepoLocation) -> Check:
    """The warm daemon: running, or started on demand (never a failure: every
    hook and command works without it, only slower)."""
    from gitmem.ipc.client import enabled
    from gitmem.ipc.control import status
    from gitmem.storage.gitconfig import get_bool, read_config

    if not enabled():
        return Check("daemon", "warn", "turned off ($GITMEM_DAEMON is 0): hooks run cold", None)
    daemon = status(location)
    if daemon.running:
        return Check("daemon", "ok", f"running (pid {daemon.pid}, {daemon.requests} requests)")
    if daemon.reason == "mismatch":
        return Check(
            "daemon",
            "warn",
            "a daemon of another gitmem installation or environment serves this repository",
            "git edda daemon stop",
        )
    if not get_bool(read_config(location), "edda.daemon.autostart", True):
        return Check(
            "daemon",
            "warn",
            "not running, and edda.daemon.autostart is false: hooks run cold",
            "git edda daemon start, or git config edda.daemon.autostart true",
        )
    return Check("daemon", "ok", "not running; hooks and queries start it on demand")
