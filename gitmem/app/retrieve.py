"""Retrieval: bring the index up to date, search, build a context pack, ask about decisions.

Each reads through the sidecar indexes (:mod:`gitmem.index`), refreshed first
when memory has moved.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from gitmem.app.browse import EVERYTHING, Filters
from gitmem.app.session import Repo, check_branch_known, open_memory, open_view
from gitmem.errors import GitmemError
from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg

if TYPE_CHECKING:
    from gitmem.embed.base import Embedder
    from gitmem.graph.codeindex import CodeHit, CodeIndex, CodeSearchResult
    from gitmem.graph.view import GraphView
    from gitmem.index.refresh import RefreshReport
    from gitmem.index.view import IndexView
    from gitmem.retrieval.ask import AskResult
    from gitmem.retrieval.codesearch import MixedSearchResult
    from gitmem.retrieval.context import ContextPack
    from gitmem.retrieval.search import SearchResult
    from gitmem.retrieval.stale import StaleFn
    from gitmem.retrieval.why import WhyResult
    from gitmem.storage.gitconfig import Config
    from gitmem.storage.locate import RepoLocation

Progress = Callable[[str, int, int], None]
"""``(stage, done, total)``: how far a long index build has come."""

STALE_WARNING = "another process is updating the index: results may miss the newest events"
NO_CODE_INDEX = "no code index yet: 'git edda code index' builds it"


def index(
    repo: Repo = None,
    *,
    rebuild: bool = False,
    embed: bool = True,
    progress: Progress | None = None,
) -> RefreshReport:
    """Bring the search indexes up to date (``rebuild``: from scratch),
    checking every byte of them against their checksums, and embed every
    text still without a vector (queries embed only for ``edda.embed.budget``)."""
    from gitmem.index.refresh import refresh

    with open_memory(repo) as mem:
        return refresh(
            mem, rebuild=rebuild, embed=embed, progress=progress, deep=True, embed_all=True
        )


def _branch(view: IndexView, branch: BranchArg) -> BranchArg:
    """``branch``, checked to exist when it is named."""
    if isinstance(branch, str):
        check_branch_known(view.location, branch)
    return branch


def search(
    repo: Repo,
    query: str,
    *,
    now_us: int,
    filters: Filters = EVERYTHING,
    branch: BranchArg = CURRENT_BRANCH,
    all_branches: bool = False,
    limit: int = 10,
    mode: Literal["hybrid", "lexical", "vector"] = "hybrid",
    advanced: bool = False,
) -> SearchResult:
    """Full text and meaning, fused by their scores (newer first on a tie); filters narrow
    what is searched before ranking. ``advanced`` passes the query to
    Tantivy's syntax (field:value, AND, "phrases"); otherwise any text is safe."""
    with open_view(repo) as view:
        return _memory_search(
            view, query, now_us, filters, branch, all_branches, limit, mode, advanced
        )


def _memory_search(
    view: IndexView,
    query: str,
    now_us: int,
    filters: Filters,
    branch: BranchArg,
    all_branches: bool,
    limit: int,
    mode: Literal["hybrid", "lexical", "vector"],
    advanced: bool,
) -> SearchResult:
    """Memory search on an open view, with the stale-index warning."""
    from gitmem.retrieval.search import search as run_search

    where = filters.resolve(view, now_us=now_us, include_redacted=False)
    result = run_search(
        view,
        query,
        limit=limit,
        where=where,
        now=now_us,
        mode=mode,
        advanced=advanced,
        all_branches=all_branches,
        branch=_branch(view, branch),
    )
    if view.stale:
        result.warnings.append(STALE_WARNING)
    return result


def open_code_index(
    location: RepoLocation, config: Config, code_index: Path | None = None
) -> CodeIndex | None:
    """The code index: the directory ``code_index`` when given (one that
    :func:`~gitmem.graph.codeindex.build_code_index` wrote), else the code
    graph's; None when there is none."""
    from gitmem.graph.paths import has_graph

    if code_index is None and not has_graph(location):
        return None  # one stat, without loading the code graph's modules (~100 ms)

    from gitmem.graph.codeindex import CodeIndex
    from gitmem.index.manifest import index_root
    from gitmem.retrieval.codesearch import code_index_dir

    if code_index is None:
        # Brought up to date first when one was built and the code moved
        # (HEAD, or the uncommitted changes a --worktree graph follows).
        code_graph(location.cwd)
    directory = code_index if code_index is not None else code_index_dir(location)
    if directory is None:
        return None
    # The query embedder keeps its small caches with the search index's.
    return CodeIndex.open(Path(directory), config=config, stamp_dir=index_root(location))


def search_code(
    repo: Repo,
    query: str,
    *,
    limit: int = 10,
    mode: Literal["hybrid", "lexical", "vector"] = "hybrid",
    paths: Sequence[str] = (),
    advanced: bool = False,
    code_index: Path | None = None,
) -> CodeSearchResult:
    """Search the code: chunks of the code graph's files, by full text and
    meaning, fused. ``paths`` keeps chunks of those files (exact, directory
    or glob); ``code_index`` reads that directory instead of the graph's."""
    from gitmem.errors import NotFoundError
    from gitmem.storage.gitconfig import read_config
    from gitmem.storage.locate import locate

    location = locate(repo)
    index = open_code_index(location, read_config(location), code_index)
    if index is None:
        raise NotFoundError(
            "this repository has no code index yet", "build it with 'git edda code index'"
        )
    with index:
        return index.query(query, limit, mode, paths=paths, advanced=advanced)


def search_all(
    repo: Repo,
    query: str,
    *,
    now_us: int,
    filters: Filters = EVERYTHING,
    branch: BranchArg = CURRENT_BRANCH,
    all_branches: bool = False,
    limit: int = 10,
    mode: Literal["hybrid", "lexical", "vector"] = "hybrid",
    advanced: bool = False,
    code_index: Path | None = None,
) -> MixedSearchResult:
    """Memory and code in one ranking (see :func:`gitmem.retrieval.codesearch.merge`):
    the filters narrow memory, and ``--path`` code too. Without a code
    index, memory alone, with a warning."""
    from gitmem.graph.codeindex import CodeSearchResult
    from gitmem.retrieval.codesearch import merge

    with open_view(repo) as view:
        memory = _memory_search(
            view, query, now_us, filters, branch, all_branches, limit, mode, advanced
        )
        index = open_code_index(view.location, view.config, code_index)
        if index is None:
            code = CodeSearchResult(query, mode, [], warnings=[NO_CODE_INDEX])
        else:
            with index:
                code = index.query(
                    query,
                    limit,
                    mode,
                    paths=filters.paths,
                    advanced=advanced,
                    embedder=_embedder(view) if mode != "lexical" else None,
                )
        return merge(memory, code, limit)


def _embedder(view: IndexView) -> Embedder | None:
    """The memory index's query embedder, for code search to share (None:
    code search loads the configured one itself)."""
    try:
        return view.embedder
    except GitmemError:
        return None


def search_fn(
    view: IndexView, now_us: int, branch: BranchArg = CURRENT_BRANCH
) -> Callable[[str, int, Sequence[str]], list[Event]]:
    """The hybrid search of ``branch`` as the context and ask builders call it."""
    from gitmem.retrieval.search import search as run_search

    def hits(query: str, limit: int, types: Sequence[str]) -> list[Event]:
        where = EventFilter(types=tuple(types), include_redacted=False)
        found = run_search(view, query, limit=limit, where=where, now=now_us, branch=branch)
        return [h.event for h in found.hits]

    return hits


def stale_fn(location: RepoLocation) -> StaleFn:
    """Whether decisions' code changed since they were made, in ``location``."""
    from functools import partial

    from gitmem.retrieval.stale import staleness

    return partial(staleness, location)


def files_in_play(location: RepoLocation) -> list[str]:
    """Files changed in the working tree (staged, unstaged, untracked)."""
    from gitmem.storage.locate import read_git_output

    if location.workdir is None:
        return []
    out = read_git_output(
        ["status", "--porcelain=v1", "-z", "--untracked-files=normal"], location.cwd
    )
    paths = []
    skip = False
    for entry in (out or b"").decode("utf-8", "replace").split("\0"):
        if skip:  # the source path of a rename
            skip = False
            continue
        if len(entry) > 3:
            paths.append(entry[3:])
            skip = entry[0] in "RC"
    return sorted(set(paths))


def context(
    repo: Repo,
    query: str | None = None,
    *,
    now_us: int,
    budget: int = 2000,
    paths: Sequence[str] | None = None,
    branch: BranchArg = CURRENT_BRANCH,
    code_index: Path | None = None,
) -> ContextPack:
    """What an agent should know now, within ``budget`` tokens: pins, the
    open capsule, the current checkpoint, decisions, learnings about the
    files in play (``paths``, else those changed in the working tree), hits
    for ``query``, code for ``query`` with its callers and callees (when
    there is a code index: the code graph's, or the directory
    ``code_index``), recent activity."""
    from contextlib import ExitStack

    from gitmem.app.record import idle_limit_us
    from gitmem.capture.active import read_active
    from gitmem.retrieval.context import build_context

    with open_view(repo) as view, ExitStack() as stack:
        active = read_active(view.location)
        code = None
        graph = None
        on = _branch(view, branch)
        if query and query.strip():
            index = open_code_index(view.location, view.config, code_index)
            if index is not None:
                stack.enter_context(index)
                embedder = _embedder(view)
                code = partial(_code_hits, index, embedder)
                graph = code_graph(repo)
        return build_context(
            view,
            query=query,
            budget=budget,
            now=now_us,
            search=search_fn(view, now_us, on),
            paths=list(paths) if paths is not None else files_in_play(view.location),
            active_capsule=active.get("capsule"),
            session=active.get("session"),
            capsule_idle=idle_limit_us(view.config),
            branch=on,
            stale=stale_fn(view.location),
            code=code,
            graph=graph,
        )


def _code_hits(
    index: CodeIndex, embedder: Embedder | None, query: str, limit: int
) -> list[CodeHit]:
    return index.search(query, limit, embedder=embedder)


def ask(
    repo: Repo,
    query: str | None = None,
    *,
    now_us: int,
    include_superseded: bool = False,
    branch: BranchArg = CURRENT_BRANCH,
    limit: int = 10,
) -> AskResult:
    """Decisions: an overview (no query), a key's timeline, or decisions
    ranked for the query with their related commits, notes and checkpoints."""
    from gitmem.retrieval.ask import ask as run_ask

    with open_view(repo) as view:
        on = _branch(view, branch)
        return run_ask(
            view,
            query,
            include_superseded=include_superseded,
            search=search_fn(view, now_us, on),
            limit=limit,
            branch=on,
            stale=stale_fn(view.location),
        )


def code_graph(repo: Repo) -> GraphView | None:
    """The code graph, brought up to date, when one has been built ('git edda
    code index'); None otherwise (readers that can do without it, like
    ``why``, then work on paths alone, rather than parse a whole repository
    unasked)."""
    from gitmem.graph.paths import has_graph
    from gitmem.storage.locate import locate

    try:
        location = locate(repo, any_format=True)
        if not has_graph(location):
            return None  # one stat, without loading the code graph's modules
        from gitmem.graph.build import graph_root
        from gitmem.graph.manifest import read_manifest
        from gitmem.graph.view import GraphView

        if read_manifest(graph_root(location)) is None:
            return None
        return GraphView.open(repo)
    except (GitmemError, OSError):
        return None


def why(
    repo: Repo,
    target: str,
    *,
    branch: BranchArg = CURRENT_BRANCH,
    limit: int = 20,
) -> WhyResult:
    """The decisions, learnings, mistakes, checkpoints, sessions and commits
    that touch a file or symbol (``path``, ``path:qualname`` or a name) or its
    close neighbours in the code graph; decisions whose code changed since
    they were made are flagged stale."""
    from gitmem.app.session import reader
    from gitmem.retrieval.why import why as run_why
    from gitmem.storage.locate import locate, read_git_output

    location = locate(repo)
    if isinstance(branch, str):
        check_branch_known(location, branch)
    listed = read_git_output(["ls-files", "-z"], location.cwd) or b""
    files_here = [p for p in listed.decode("utf-8", "surrogateescape").split("\0") if p]
    graph = code_graph(repo)
    with reader(repo) as source:
        return run_why(
            source, location, target, graph=graph, files_here=files_here, branch=branch, limit=limit
        )
