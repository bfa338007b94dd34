"""The code graph: build it (and, next, ask it about the code).

Code is read from git (a commit's tree, the uncommitted changes), never
from memory, so these use cases work in any repository, SHA-256 ones and
those where ``git edda init`` never ran included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gitmem.app.session import Repo

if TYPE_CHECKING:
    from gitmem.graph.build import BuildReport

Progress = Callable[[str, int, int], None]
"""``(stage, done, total)``: how far a long build has come."""


def index(
    repo: Repo = None,
    *,
    rebuild: bool = False,
    worktree: bool = False,
    commit: str | None = None,
    progress: Progress | None = None,
) -> BuildReport:
    """Bring this worktree's code graph up to date: the code at ``commit``
    (default HEAD), with the uncommitted changes when ``worktree``;
    ``rebuild``: every file parsed again. The graph's files are checked
    byte for byte against their checksums (queries re-read only files
    changed on disk since they were last checked)."""
    from gitmem.graph.build import build
    from gitmem.storage.locate import locate

    location = locate(repo, any_format=True)
    return build(
        location, rebuild=rebuild, worktree=worktree, commit=commit, progress=progress, deep=True
    )
