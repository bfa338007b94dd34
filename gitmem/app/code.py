"""The code graph's use cases: build it, and ask it about the code.

Code is read from git (a commit's tree, the uncommitted changes), never
from memory, so these use cases work in any repository, SHA-256 ones and
those where ``git edda init`` never ran included. Each query opens the worktree's graph (:meth:`GraphView.open
<gitmem.graph.view.GraphView.open>`, which brings it up to date first when
HEAD moved) and runs one query of :mod:`gitmem.graph.query` or
:mod:`gitmem.graph.rank` on it. Results are the library's typed results,
each with ``to_json``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gitmem.app.session import Repo
from gitmem.errors import UsageError

if TYPE_CHECKING:
    from gitmem.graph.build import BuildReport
    from gitmem.graph.query import Match, Neighborhood, Traversal
    from gitmem.graph.rank import RepoMap
    from gitmem.graph.view import GraphView

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


# -- queries: find, callers, callees, impact, neighbors, map ---------------------------------------
NODE_KINDS = (
    "file",
    "module",
    "class",
    "interface",
    "type",
    "function",
    "method",
    "constant",
    "section",
)
MAX_FIND = 1_000
MAX_DEPTH = 20


@dataclass(frozen=True)
class Found:
    """``code find``: the matches, best first."""

    query: str
    matches: tuple[Match, ...]
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "matches": [m.to_json() for m in self.matches],
            "warnings": list(self.warnings),
        }

    def to_text(self) -> str:
        return "\n".join(m.to_text() for m in self.matches) or f"nothing named like {self.query!r}"


@dataclass(frozen=True)
class Walked:
    """``code callers|callees|impact``: the traversal."""

    traversal: Traversal
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return self.traversal.to_json() | {"warnings": list(self.warnings)}


@dataclass(frozen=True)
class Around:
    """``code neighbors``: one hop around a symbol."""

    neighborhood: Neighborhood
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return self.neighborhood.to_json() | {"warnings": list(self.warnings)}


@dataclass(frozen=True)
class Mapped:
    """``code map``: the repository map."""

    map: RepoMap
    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return self.map.to_json() | {"warnings": list(self.warnings)}


def graph_view(repo: Repo = None) -> GraphView:
    """The worktree's code graph, brought up to date first when it is stale."""
    from gitmem.graph.view import GraphView

    return GraphView.open(repo)


def _warnings(view: GraphView) -> tuple[str, ...]:
    if getattr(view, "stale", False):
        return ("another process is updating the code graph: this is its previous version",)
    return ()


def find(repo: Repo = None, name: str = "", *, kinds: Iterable[str] = (), limit: int = 20) -> Found:
    """Symbols named like ``name``: exact, then prefix, then substring matches."""
    from gitmem.graph import query

    wanted = tuple(kinds)
    unknown = sorted(set(wanted) - set(NODE_KINDS))
    if unknown:
        raise UsageError(
            f"no such kind: {', '.join(unknown)}", f"kinds are {', '.join(NODE_KINDS)}"
        )
    if not name.strip():
        raise UsageError("give a name to find", "git edda code find NAME")
    if not 1 <= limit <= MAX_FIND:
        raise UsageError(f"the limit must be between 1 and {MAX_FIND:,}, not {limit:,}")
    view = graph_view(repo)
    matches = query.find(view, name, kinds=wanted or None, limit=limit)
    return Found(name, tuple(matches), _warnings(view))


def callers(repo: Repo = None, symbol: str = "", *, depth: int = 3) -> Walked:
    """Who calls ``symbol`` (transitively, up to ``depth`` calls away)."""
    from gitmem.graph import query

    view = graph_view(repo)
    return Walked(query.callers(view, _named(symbol), _depth(depth)), _warnings(view))


def callees(repo: Repo = None, symbol: str = "", *, depth: int = 3) -> Walked:
    """What ``symbol`` calls (transitively, up to ``depth`` calls away)."""
    from gitmem.graph import query

    view = graph_view(repo)
    return Walked(query.callees(view, _named(symbol), _depth(depth)), _warnings(view))


def impact(repo: Repo = None, target: str = "", *, depth: int = 3) -> Walked:
    """What depends on ``target`` (a file or a symbol), the tests apart."""
    from gitmem.graph import query

    view = graph_view(repo)
    return Walked(query.impact(view, _named(target), _depth(depth)), _warnings(view))


def neighbors(repo: Repo = None, symbol: str = "") -> Around:
    """Every edge at ``symbol``, in and out, one hop."""
    from gitmem.graph import query

    view = graph_view(repo)
    return Around(query.neighbors(view, _named(symbol)), _warnings(view))


def repo_map(repo: Repo = None, *, focus: Iterable[str] = (), budget: int = 2000) -> Mapped:
    """The repository map within ``budget`` tokens, ranked around the
    ``focus`` files (paths from the repository root)."""
    from gitmem.graph import rank

    view = graph_view(repo)
    files = set(view.files.column("path").to_pylist())
    chosen = [f.strip().removeprefix("./") for f in focus if f.strip()]
    warnings = list(_warnings(view))
    missing = [f for f in chosen if f not in files]
    if missing:
        warnings.append(f"not in the code graph: {', '.join(missing)}")
    made = rank.repo_map(view, [f for f in chosen if f in files], budget_tokens=budget)
    return Mapped(made, tuple(warnings))


def _named(text: str) -> str:
    if not text.strip():
        raise UsageError(
            "name a symbol: a file path, PATH:QUALNAME, a qualified name or a name",
            "git edda code find NAME lists what there is",
        )
    return text.strip()


def _depth(depth: int) -> int:
    if not 1 <= depth <= MAX_DEPTH:
        raise UsageError(
            f"--depth must be between 1 and {MAX_DEPTH}, not {depth}",
            f"pass --depth N with N from 1 to {MAX_DEPTH}",
        )
    return depth
