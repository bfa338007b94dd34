"""The retrieval commands: ``index``, ``search``, ``context`` and ``ask``.

They read memory through the sidecar indexes (:mod:`gitmem.index`), which
each of them refreshes first when memory has moved.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

from gitmem.cli.commands import (
    DEFAULT_COMMON,
    MAX_ASK,
    MAX_BUDGET,
    MAX_RESULTS,
    Common,
    Output,
    app,
    check_branch,
    event_filter,
    in_range,
    now_or_wall,
)
from gitmem.memory.query import EventFilter
from gitmem.memory.timespec import format_time

if TYPE_CHECKING:
    from gitmem.index.view import IndexView


@contextmanager
def _progress_bar() -> Iterator[Callable[[str, int, int], None]]:
    """A progress callback drawing tqdm bars on stderr for builds that take a
    while (nothing appears for quick refreshes or when stderr is not a terminal)."""
    from tqdm import tqdm

    bars: dict[str, Any] = {}

    def update(stage: str, done: int, total: int) -> None:
        bar = bars.get(stage)
        if bar is None:
            # disable=None: no bar when stderr is not a terminal.
            unit = "commit" if "commits" in stage else "ev"
            bar = bars[stage] = tqdm(
                total=total, desc=stage, unit=unit, delay=0.5, file=sys.stderr, disable=None
            )
        bar.total = total
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        for bar in bars.values():
            bar.close()


def _view(common: Common, *, embed: bool = True) -> IndexView:
    from gitmem.index.view import IndexView

    return IndexView.open(common.repo, embed=embed)


@app.command
def index(
    *, rebuild: bool = False, no_embed: bool = False, common: Common = DEFAULT_COMMON
) -> Output:
    """Bring the search indexes up to date (--rebuild: from scratch).

    Queries refresh the indexes themselves; this is for building ahead of
    time (with a progress bar) or recovering from a damaged index. It checks
    every byte of the index against its checksums (queries re-read only files
    changed on disk since they were last checked).
    """
    from gitmem.index.refresh import refresh
    from gitmem.memory.api import Memory

    with Memory.open(common.repo) as mem, _progress_bar() as progress:
        report = refresh(mem, rebuild=rebuild, embed=not no_embed, progress=progress, deep=True)
    text = {
        "none": f"index up to date ({report.events} events)",
        "incremental": f"indexed {report.added} new events ({report.events} in all)",
        "full": f"built the index: {report.events} events ({report.reason})",
    }[report.mode]
    if report.redacted:
        text += f"; {report.redacted} redacted events removed"
    if report.vectors:
        text += f"; {report.vectors} vectors ({report.embedded} texts embedded)"
    if report.rebuilt:
        text += f"; rebuilt {', '.join(report.rebuilt)}"
    lines = [text + f" in {report.seconds:.2f} s", *(f"warning: {w}" for w in report.warnings)]
    return Output(report.to_json(), "\n".join(lines))


@app.command
def search(
    query: str,
    *,
    type: list[str] | None = None,
    branch: str | None = None,
    all_branches: bool = False,
    session: list[str] | None = None,
    capsule: list[str] | None = None,
    actor: list[str] | None = None,
    tag: list[str] | None = None,
    path: list[str] | None = None,
    since: str | None = None,
    until: str | None = None,
    limit: int = 10,
    mode: Literal["hybrid", "lexical", "vector"] = "hybrid",
    advanced: bool = False,
    explain: bool = False,
    now: str | None = None,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Search memory: full text and meaning, fused, with a little recency.

    Filters narrow what is searched before ranking. --advanced passes the
    query to Tantivy's syntax (field:value, AND, "phrases"); otherwise any
    text is safe. --explain shows each score's parts and where a hit came
    from; --now fixes the clock for reproducible output.
    """
    from gitmem.retrieval.search import search as run_search

    in_range("--limit", limit, 1, MAX_RESULTS)
    check_branch("--branch", branch)
    now_us = now_or_wall(now)
    with _view(common) as view:
        where = event_filter(
            view,
            include_redacted=False,
            type=type,
            session=session,
            capsule=capsule,
            actor=actor,
            tag=tag,
            path=path,
            since=since,
            until=until,
            now_us=now_us,
        )
        kw: dict[str, Any] = {"all_branches": all_branches}
        if branch is not None:
            kw["branch"] = branch
        result = run_search(
            view, query, limit=limit, where=where, now=now_us, mode=mode, advanced=advanced, **kw
        )
        if view.stale:
            result.warnings.append(
                "another process is updating the index: results may miss the newest events"
            )
    lines = []
    for rank, hit in enumerate(result.hits, 1):
        e = hit.event
        lines.append(f"{rank:>2}. [{e.id[:12]}] {format_time(e.time)} {e.type:<11} {e.summary(90)}")
        if explain:
            lines.extend("      " + part for part in _explain(hit))
    text = "\n".join(lines) or "no matches"
    if result.warnings:
        text += "".join(f"\nwarning: {w}" for w in result.warnings)
    data = result.to_json()
    return Output(data, text)


def _explain(hit: Any) -> list[str]:
    from gitmem.retrieval.search import RECENCY_WEIGHT, RELEVANCE_WEIGHT, RRF_K

    lex = (
        f"lexical #{hit.lexical_rank} (bm25 {hit.lexical_score:.3f}) -> 1/({RRF_K}+{hit.lexical_rank})"
        if hit.lexical_rank
        else "lexical: no match"
    )
    vec = (
        f"vector #{hit.vector_rank} (cosine {hit.vector_score:.3f}) -> 1/({RRF_K}+{hit.vector_rank})"
        if hit.vector_rank
        else "vector: no match"
    )
    p = hit.provenance
    return [
        lex,
        vec,
        f"score {hit.score:.4f} = {RELEVANCE_WEIGHT} x relevance {hit.relevance:.4f}"
        f" + {RECENCY_WEIGHT} x recency {hit.recency:.4f}",
        f"from event {p['event'][:12]} on {p['branch'] or 'detached HEAD'}"
        f" (memory commit {p['memory_commit'][:12]})"
        + (f", capsule {p['capsule'][:12]}" if p.get("capsule") else "")
        + (f", code commit {p['code_commit'][:12]}" if p.get("code_commit") else ""),
    ]


def _search_fn(view: Any, now_us: int) -> Any:
    """The hybrid search as the context and ask builders call it."""
    from gitmem.retrieval.search import search as run_search

    def hits(query: str, limit: int, types: Any) -> list[Any]:
        where = EventFilter(types=tuple(types), include_redacted=False)
        return [h.event for h in run_search(view, query, limit=limit, where=where, now=now_us).hits]

    return hits


def _files_in_play(view: Any) -> list[str]:
    """Files changed in the working tree (staged, unstaged, untracked)."""
    from gitmem.storage.locate import read_git_output

    if view.location.workdir is None:
        return []
    out = read_git_output(
        ["status", "--porcelain=v1", "-z", "--untracked-files=normal"], view.location.cwd
    )
    paths = []
    entries = (out or b"").decode("utf-8", "replace").split("\0")
    skip = False
    for entry in entries:
        if skip:  # the source path of a rename
            skip = False
            continue
        if len(entry) > 3:
            paths.append(entry[3:])
            skip = entry[0] in "RC"
    return sorted(set(paths))


@app.command
def context(
    query: str | None = None,
    *,
    budget: int = 2000,
    path: list[str] | None = None,
    branch: str | None = None,
    now: str | None = None,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """What an agent should know now, within --budget tokens (estimated as characters / 4).

    Tiers, highest priority first: pins, the open capsule, the current
    checkpoint or workflow, binding decisions, proposed (not binding)
    decisions, learnings and mistakes about the files in play (--path, else
    the files changed in the working tree), hits for QUERY, recent activity.
    Items are kept or dropped whole; a trailer says what was dropped. Every
    line carries an id that 'git edda show ID' expands.
    """
    from gitmem.capture.active import read_active
    from gitmem.retrieval.context import build_context

    in_range("--budget", budget, 1, MAX_BUDGET)
    check_branch("--branch", branch)
    now_us = now_or_wall(now)
    with _view(common) as view:
        active = read_active(view.location)
        kw: dict[str, Any] = {}
        if branch is not None:
            kw["branch"] = branch
        pack = build_context(
            view,
            query=query,
            budget=budget,
            now=now_us,
            search=_search_fn(view, now_us),
            paths=path if path is not None else _files_in_play(view),
            active_capsule=active.get("capsule"),
            session=active.get("session"),
            **kw,
        )
        return Output(pack.to_json(), pack.to_markdown())


@app.command
def ask(
    query: str | None = None,
    *,
    all: bool = False,
    branch: str | None = None,
    limit: int = 10,
    now: str | None = None,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Ask about decisions: no QUERY gives an overview of active decisions; a
    decision key gives its timeline (supersessions, ratifications); other text
    ranks decisions with their related commits, notes and checkpoints.
    --all includes superseded decisions.
    """
    from gitmem.retrieval.ask import ask as run_ask

    in_range("--limit", limit, 1, MAX_ASK)
    check_branch("--branch", branch)
    now_us = now_or_wall(now)
    with _view(common) as view:
        kw: dict[str, Any] = {}
        if branch is not None:
            kw["branch"] = branch
        result = run_ask(
            view, query, include_superseded=all, search=_search_fn(view, now_us), limit=limit, **kw
        )
        return Output(result.to_json(), result.to_markdown())
