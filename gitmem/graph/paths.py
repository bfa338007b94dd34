"""Where the code graph lives on disk (standard library only: the git hooks
ask whether there is a graph to keep current without loading anything else).

``<git common dir>/edda/graph/`` holds

* ``cache/v<extractor version>/``: every blob's facts, shared by all
  worktrees (:mod:`gitmem.graph.cache`);
* one sidecar root per worktree: ``main`` for the main worktree (and a bare
  repository), ``wt-<name>`` for the linked worktree whose private git dir
  is ``.git/worktrees/<name>``. Worktrees check out different commits, so
  each has its own graph (one shared graph would be rebuilt whenever an
  agent in another worktree asked a question); the facts behind them are
  shared, so a second worktree parses nothing the first one parsed.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from gitmem.storage.locate import RepoLocation

GRAPH_DIR = "graph"
CACHE_DIR = "cache"
MAIN_WORKTREE = "main"
WORKTREE_PREFIX = "wt-"


def graph_path(location: RepoLocation) -> str:
    """``<common dir>/edda/graph``: the cache and every worktree's graph."""
    return os.path.join(location.state_path, GRAPH_DIR)


def worktree_key(location: RepoLocation) -> str:
    """The name of this worktree's graph directory."""
    if os.path.normpath(location.git_path) == os.path.normpath(location.common_path):
        return MAIN_WORKTREE
    return WORKTREE_PREFIX + os.path.basename(os.path.normpath(location.git_path))


def root_path(location: RepoLocation) -> str:
    """The sidecar root of this worktree's graph (manifest, lock, generations)."""
    return os.path.join(graph_path(location), worktree_key(location))


def cache_path(location: RepoLocation) -> str:
    """The facts cache shared by every worktree."""
    return os.path.join(graph_path(location), CACHE_DIR)


def has_graph(location: RepoLocation) -> bool:
    """Whether a graph was ever built for this worktree (one stat)."""
    return os.path.isdir(root_path(location))
