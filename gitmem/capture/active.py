"""The active session and capsule of a worktree, for events git hooks record.

A git hook (post-commit linking a code commit) runs outside the agent and
cannot see its environment, so whoever opens a capsule writes it down here:
``<common dir>/edda/active/<worktree>.json`` = ``{"session", "capsule", "agent"}``.
``git edda capsule open`` sets it, ``capsule close`` clears it, and agent
hooks (Claude Code's SessionStart/SessionEnd) will do the same.
``$GITMEM_SESSION`` and ``$GITMEM_CAPSULE`` take precedence. Standard library only.
"""

from __future__ import annotations

import json
import os

from gitmem.storage import files
from gitmem.storage.locate import RepoLocation

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ACTIVE_DIR = "active"
FIELDS = ("session", "capsule", "agent")


def active_path(location: RepoLocation) -> str:
    """One file per worktree: linked worktrees have their own git dir name."""
    name = (
        "main" if location.git_path == location.common_path else os.path.basename(location.git_path)
    )
    return os.path.join(location.state_path, ACTIVE_DIR, f"{name}.json")


def read_active(location: RepoLocation) -> dict[str, str]:
    """The active context, with ``$GITMEM_SESSION``/``$GITMEM_CAPSULE`` on top."""
    data: Any = {}
    try:
        with open(active_path(location), encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        data = {}
    active = (
        {k: v for k, v in data.items() if k in FIELDS and isinstance(v, str) and v}
        if isinstance(data, dict)
        else {}
    )
    for key, env in (("session", "GITMEM_SESSION"), ("capsule", "GITMEM_CAPSULE")):
        if os.environ.get(env):
            active[key] = os.environ[env]
    return active


def write_active(location: RepoLocation, **values: str | None) -> None:
    path = active_path(location)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    record = {k: v for k, v in values.items() if k in FIELDS and v}
    files.write_atomic(path, json.dumps(record, sort_keys=True).encode("utf-8"), fsync=False)


def clear_active(location: RepoLocation, capsule: str | None = None) -> None:
    """Forget the active context (only if it is ``capsule``, when given)."""
    path = active_path(location)
    if capsule is not None:
        try:
            with open(path, encoding="utf-8") as handle:
                if json.load(handle).get("capsule") != capsule:
                    return
        except (OSError, ValueError, AttributeError):
            return
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
