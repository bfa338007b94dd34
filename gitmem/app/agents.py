"""What an agent integration needs from this repository to work: gitmem's
git hooks, a fresh index, the optional ``mcp`` package (``git edda doctor``
reports these beside the agent's own settings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from gitmem.app.session import Repo

IndexState = Literal["fresh", "stale", "absent"]


@dataclass(frozen=True)
class Health:
    """The repository side of an agent integration."""

    repository: str
    git_hooks: list[str] = field(default_factory=list)
    "gitmem's git hooks that are installed."
    git_hooks_missing: list[str] = field(default_factory=list)
    "Required git hooks that are not (``git edda init`` installs them)."
    index: IndexState = "absent"
    "The search index: up to date with memory, behind it (refreshed on the next read), or not built."
    mcp_importable: bool = False
    "Whether the ``mcp`` package, which ``git edda mcp`` needs, can be imported."

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def health(repo: Repo = None) -> Health:
    """Check the repository side of an agent integration (reads only: the
    index is not refreshed, the ``mcp`` package is looked up, not imported)."""
    import importlib.util

    from gitmem.githooks.install import installed_hooks
    from gitmem.githooks.script import HOOKS
    from gitmem.index.manifest import index_root, read_manifest
    from gitmem.index.refresh import is_fresh
    from gitmem.storage.locate import locate

    location = locate(repo)
    installed = installed_hooks(location)
    manifest = read_manifest(index_root(location))
    index: IndexState
    if manifest is None:
        index = "absent"
    else:
        index = "fresh" if is_fresh(location, manifest, vectors=False) else "stale"
    return Health(
        repository=str(location.workdir or location.git_dir),
        git_hooks=installed,
        git_hooks_missing=[hook for hook in HOOKS if hook not in installed],
        index=index,
        mcp_importable=importlib.util.find_spec("mcp") is not None,
    )
