"""Install and remove gitmem's git hooks, chaining whatever was there before.

Hooks go where git looks for them (``git rev-parse --git-path hooks``, so
``core.hooksPath`` is honoured). For each hook:

* absent: gitmem's script is written;
* gitmem's already (marker line): rewritten in place (idempotent; picks up
  a new interpreter path);
* someone else's (pre-commit, husky, lefthook, hand-written): renamed to
  ``<hook>.pre-gitmem`` and run first by gitmem's script, with the same
  arguments and standard input, its exit status kept;
* someone else's that already runs gitmem's script under another name (a
  hook manager that chained us, e.g. pre-commit's ``<hook>.legacy``): that
  copy is refreshed and the manager's hook left alone.

Uninstalling removes gitmem's scripts and renames ``<hook>.pre-gitmem`` back.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass, field
from typing import Any

from gitmem.errors import UsageError
from gitmem.githooks.script import CHAINED_SUFFIX, HOOKS, OPTIONAL_HOOKS, is_ours, render
from gitmem.storage.locate import RepoLocation, run_git

# The directory holding the gitmem package (what hooks put on sys.path).
PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@dataclass
class HookReport:
    """What installing or uninstalling did, hook by hook."""

    hooks_dir: str
    installed: list[str] = field(default_factory=list)  # new
    updated: list[str] = field(default_factory=list)  # ours, rewritten
    unchanged: list[str] = field(default_factory=list)
    chained: list[str] = field(default_factory=list)  # a foreign hook now runs first
    removed: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)  # a chained hook put back
    skipped: dict[str, str] = field(default_factory=dict)  # hook -> why

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def hooks_dir(location: RepoLocation) -> str:
    out = run_git(["rev-parse", "--git-path", "hooks"], location.cwd).decode().strip()
    return os.path.normpath(out if os.path.isabs(out) else os.path.join(location.cwd, out))


def _inside(path: str, directory: str) -> bool:
    path, directory = os.path.realpath(path), os.path.realpath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def shared_hooks_dir(location: RepoLocation, directory: str | None = None) -> str | None:
    """Why installing into the hooks directory would change the project's own
    files, or None when it is private to this clone.

    ``core.hooksPath`` may point into the work tree (husky's ``.husky``, a
    tracked ``githooks/``): scripts written there, with this machine's
    interpreter path, would show up in ``git status`` and be committed to the
    team. A hooks directory inside the git dir (the default) or outside every
    work tree (``~/.githooks``) is this user's own.
    """
    directory = directory or hooks_dir(location)
    trees = [location.work_path] if location.work_path else []
    if os.path.basename(location.common_path) == ".git":  # the main work tree, from a linked one
        trees.append(os.path.dirname(location.common_path))
    private = (location.common_path, location.git_path)
    if any(_inside(directory, tree) for tree in trees) and not any(
        _inside(directory, git_dir) for git_dir in private
    ):
        return (
            f"core.hooksPath points into the work tree ({directory}): gitmem's hooks"
            " would modify or add files there that the project shares"
        )
    return None


def check_hooks_dir(location: RepoLocation, directory: str | None = None) -> None:
    """UsageError when the hooks directory is shared with the project (see
    :func:`shared_hooks_dir`), with the flags that go ahead anyway."""
    why = shared_hooks_dir(location, directory)
    if why is not None:
        raise UsageError(
            why,
            "run 'git edda init --hooks-path-ok' to install there anyway,"
            " or 'git edda init --no-hooks' to set up without git hooks",
        )


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except (FileNotFoundError, IsADirectoryError):
        return None


def _write_script(path: str, text: str) -> None:
    tmp = f"{path}.gitmem-tmp"
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)


def _chained_by_other(directory: str, hook: str) -> str | None:
    """A sibling ``<hook>.*`` (not ours to manage) holding gitmem's script."""
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return None
    for name in names:
        if not name.startswith(hook + ".") or name in (hook + CHAINED_SUFFIX, hook + ".sample"):
            continue
        text = _read(os.path.join(directory, name))
        if text is not None and is_ours(text):
            return name
    return None


def installed_hooks(location: RepoLocation) -> list[str]:
    """Hooks whose gitmem script is installed (directly or chained by another manager)."""
    directory = hooks_dir(location)
    found = []
    for hook in (*HOOKS, *OPTIONAL_HOOKS):
        text = _read(os.path.join(directory, hook))
        if (text is not None and is_ours(text)) or _chained_by_other(directory, hook):
            found.append(hook)
    return found


def install(
    location: RepoLocation, *, pre_push: bool = False, shared_ok: bool = False
) -> HookReport:
    """Install gitmem's hooks (pre-push only when asked or already installed).

    A hooks directory inside the work tree (:func:`shared_hooks_dir`) is
    refused with a UsageError unless ``shared_ok``.
    """
    directory = hooks_dir(location)
    if not shared_ok:
        check_hooks_dir(location, directory)
    os.makedirs(directory, exist_ok=True)
    report = HookReport(directory)
    python = sys.executable
    pkgpath = PACKAGE_PARENT
    wanted = list(HOOKS)
    if pre_push or "pre-push" in installed_hooks(location):
        wanted.append("pre-push")
    for hook in wanted:
        path = os.path.join(directory, hook)
        script = render(hook, python, pkgpath)
        current = _read(path)
        if current is None:
            _write_script(path, script)
            report.installed.append(hook)
            continue
        if is_ours(current):
            if current == script:
                report.unchanged.append(hook)
            else:
                _write_script(path, script)
                report.updated.append(hook)
            continue
        other = _chained_by_other(directory, hook)
        if other is not None:
            _write_script(os.path.join(directory, other), script)
            report.unchanged.append(hook)
            continue
        chained = path + CHAINED_SUFFIX
        if os.path.exists(chained):
            report.skipped[hook] = (
                f"both {hook} and {hook}{CHAINED_SUFFIX} exist and neither is gitmem's; "
                f"combine them into {hook}{CHAINED_SUFFIX} and run 'git edda init' again"
            )
            continue
        mode = os.stat(path).st_mode
        os.replace(path, chained)
        if not mode & stat.S_IXUSR:
            os.chmod(chained, mode)  # kept as it was: git ignored it, so do we
        _write_script(path, script)
        report.chained.append(hook)
    return report


def uninstall(location: RepoLocation) -> HookReport:
    """Remove gitmem's hooks and put back the hooks they chained."""
    directory = hooks_dir(location)
    report = HookReport(directory)
    for hook in (*HOOKS, *OPTIONAL_HOOKS):
        path = os.path.join(directory, hook)
        current = _read(path)
        if current is not None and is_ours(current):
            os.unlink(path)
            report.removed.append(hook)
            chained = path + CHAINED_SUFFIX
            if os.path.exists(chained):
                os.replace(chained, path)
                report.restored.append(hook)
        other = _chained_by_other(directory, hook)
        if other is not None:
            os.unlink(os.path.join(directory, other))
            report.removed.append(f"{hook} ({other})")
    return report
