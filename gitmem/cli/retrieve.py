"""Retrieval commands: ``index``, ``search``, ``context`` and ``ask``.

They read memory through the sidecar indexes (:mod:`gitmem.index`), which
each of them refreshes first when memory has moved.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

from cyclopts import Parameter

from gitmem.cli.render import progress_bars, sid
from gitmem.cli.root import (
    DEFAULT_COMMON,
    DEFAULT_FILTERS,
    MAX_ASK,
    MAX_BUDGET,
    MAX_RESULTS,
    Common,
    FilterOptions,
    Output,
    app,
    check_branch,
    in_range,
    now_or_wall,
)
from gitmem.cli.terminal import markdown
from gitmem.errors import UsageError
from gitmem.memory.decisions import superseded_note
from gitmem.memory.describe import SHORT_ID, plural
from gitmem.memory.timespec import format_time
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg

if TYPE_CHECKING:
    from gitmem.graph.codeindex import CodeHit
    from gitmem.retrieval.search import Hit


def _branch(branch: str | None) -> BranchArg:
    check_branch("--branch", branch)
    return CURRENT_BRANCH if branch is None else branch


@app.command
def index(
    *,
    rebuild: bool = False,
    no_embed: Annotated[bool, Parameter(negative="")] = False,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Bring the search indexes up to date (--rebuild: from scratch).

    Queries refresh the indexes themselves; this is for building ahead of
    time (with a progress bar) or recovering from a damaged index. It checks
    every byte of the index against its checksums (queries re-read only files
    changed on disk since they were last checked). It also embeds every text
    still without a vector, however long that takes (a query's refresh embeds
    for edda.embed.budget seconds and leaves the rest for later).

    Parameters
    ----------
    rebuild
        Build from scratch.
    no_embed
        Skip embeddings (full-text search only until later refreshes embed them).
    """
    from gitmem.app import retrieve

    with progress_bars(lambda stage: "commit" if "commits" in stage else "ev") as progress:
        report = retrieve.index(common.repo, rebuild=rebuild, embed=not no_embed, progress=progress)
    text = {
        "none": f"index up to date ({plural(report.events, 'event')})",
        "incremental": f"indexed {plural(report.added, 'new event')} ({report.events} in all)",
        "full": f"built the index: {plural(report.events, 'event')} ({report.reason})",
    }[report.mode]
    if report.redacted:
        text += f"; {plural(report.redacted, 'redacted event')} removed"
    if report.vectors:
        text += f"; {plural(report.vectors, 'vector')} ({plural(report.embedded, 'text')} embedded)"
    if report.rebuilt:
        text += f"; rebuilt {', '.join(report.rebuilt)}"
    lines = [text + f" in {report.seconds:.2f} s", *(f"warning: {w}" for w in report.warnings)]
    return Output(report.to_json(), "\n".join(lines))


@app.command
def search(
    query: str,
    *,
    filters: FilterOptions = DEFAULT_FILTERS,
    branch: str | None = None,
    all_branches: bool = False,
    code: bool = False,
    all: bool = False,
    limit: int = 10,
    mode: Literal["hybrid", "lexical", "vector"] = "hybrid",
    advanced: bool = False,
    explain: bool = False,
    now: str | None = None,
    code_index: Annotated[Path | None, Parameter(show=False)] = None,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Search memory: full text and meaning, fused by their scores; newer first on a tie.

    Filters narrow what is searched before ranking. With --code it searches
    the code instead (the code graph's chunks: functions, classes, Markdown
    sections); with --all, memory and code in one ranking.

    Parameters
    ----------
    query
        What to look for (any text; see --advanced).
    branch
        Search this branch's memory instead of the current branch's.
    all_branches
        Search every branch's memory.
    code
        Search the code instead of memory (only --path narrows it; built by 'git edda code index').
    all
        Search memory and code, in one ranking (--path narrows both).
    limit
        How many results (1 to 10,000).
    mode
        hybrid (full text and meaning), lexical (full text only) or vector (meaning only).
    advanced
        Read the query in Tantivy's syntax (field:value, AND, "phrases").
    explain
        Show each score's parts and where a hit came from.
    now
        The time --since/--until and recency count from (recency weighs in only for queries
        asking for the latest; otherwise it breaks ties).
    code_index
        Read the code index in this directory instead of the code graph's (tests, tools).
    """
    from gitmem.app import retrieve

    in_range("--limit", limit, 1, MAX_RESULTS)
    if code and all:
        raise UsageError("--code and --all exclude each other", "pass one of them")
    if code:
        return _search_code(
            query, filters, branch, all_branches, limit, mode, advanced, explain, code_index, common
        )
    if all:
        mixed = retrieve.search_all(
            common.repo,
            query,
            now_us=now_or_wall(now),
            filters=filters.filters(),
            branch=_branch(branch),
            all_branches=all_branches,
            limit=limit,
            mode=mode,
            advanced=advanced,
            code_index=code_index,
        )
        lines = []
        for rank, mixed_hit in enumerate(mixed.hits, 1):
            if mixed_hit.memory is not None:
                lines.extend(_memory_lines(rank, mixed_hit.memory, explain))
            elif mixed_hit.code is not None:
                lines.extend(_code_lines(rank, mixed_hit.code, explain))
        return Output(mixed.to_json(), _with_warnings(lines, mixed.warnings), page=True)
    result = retrieve.search(
        common.repo,
        query,
        now_us=now_or_wall(now),
        filters=filters.filters(),
        branch=_branch(branch),
        all_branches=all_branches,
        limit=limit,
        mode=mode,
        advanced=advanced,
    )
    lines = []
    for rank, hit in enumerate(result.hits, 1):
        lines.extend(_memory_lines(rank, hit, explain))
    return Output(result.to_json(), _with_warnings(lines, result.warnings), page=True)


def _search_code(
    query: str,
    filters: FilterOptions,
    branch: str | None,
    all_branches: bool,
    limit: int,
    mode: Literal["hybrid", "lexical", "vector"],
    advanced: bool,
    explain: bool,
    code_index: Path | None,
    common: Common,
) -> Output:
    from dataclasses import replace

    from gitmem.app import retrieve

    memory_only = replace(filters, path=None) != DEFAULT_FILTERS or branch or all_branches
    if memory_only:
        raise UsageError(
            "--code searches the code: of the filters only --path applies to it",
            "drop the memory filters, or use --all to search memory and code",
        )
    result = retrieve.search_code(
        common.repo,
        query,
        limit=limit,
        mode=mode,
        paths=tuple(filters.path or ()),
        advanced=advanced,
        code_index=code_index,
    )
    lines = []
    for rank, hit in enumerate(result.hits, 1):
        lines.extend(_code_lines(rank, hit, explain))
    return Output(result.to_json(), _with_warnings(lines, result.warnings), page=True)


def _with_warnings(lines: list[str], warnings: list[str]) -> str:
    text = "\n".join(lines) or "no matches"
    return text + "".join(f"\nwarning: {w}" for w in warnings)


def _memory_lines(rank: int, hit: Hit, explain: bool) -> list[str]:
    e = hit.event
    by = hit.superseded_by
    mark = f" ({superseded_note(by, lambda i: f'[{sid(i)}]')})" if by else ""
    lines = [f"{rank:>2}. [{sid(e.id)}] {format_time(e.time)} {e.type:<11} {e.summary(90)}{mark}"]
    if explain:
        lines.extend("      " + part for part in _explain(hit))
    return lines


def _code_lines(rank: int, hit: CodeHit, explain: bool) -> list[str]:
    """``rank. code path:lines kind symbol``, then the chunk's headline."""
    what = f"{hit.kind} {hit.symbol}" if hit.symbol else "top-level code"
    lines = [f"{rank:>2}. code {hit.location} {what}"]
    if hit.headline:
        lines.append(f"      {hit.headline[:100]}")
    if explain:
        lines.extend("      " + part for part in _explain_code(hit))
    return lines


def _explain_code(hit: CodeHit) -> list[str]:
    return [*_explain_engines(hit, hit.score), "(no recency for code)"]


def _explain_engines(hit: Hit | CodeHit, relevance: float) -> list[str]:
    """Each engine's rank and raw score, and how they made the ``relevance``."""
    from gitmem.index.fusion import LEXICAL_WEIGHT, RRF_K, VECTOR_WEIGHT

    engines = (
        ("lexical", "bm25", hit.lexical_rank, hit.lexical_score, hit.lexical, LEXICAL_WEIGHT),
        ("vector", "cosine", hit.vector_rank, hit.vector_score, hit.vector, VECTOR_WEIGHT),
    )
    if hit.lexical is None and hit.vector is None:  # reciprocal rank fusion
        lines = [
            f"{name} #{rank} ({what} {raw:.3f}) -> 1/({RRF_K}+{rank})"
            if rank and raw is not None
            else f"{name}: no match"
            for name, what, rank, raw, _part, _weight in engines
        ]
        return [*lines, f"relevance {relevance:.4f} (reciprocal rank fusion)"]
    lines, terms = [], []
    asked = [e for e in engines if e[4] is not None]
    total = sum(e[5] for e in asked)
    for name, what, rank, raw, part, weight in engines:
        if part is None or raw is None:
            lines.append(f"{name}: no match")
        else:
            where = f"#{rank}" if rank else "beyond its candidates"
            lines.append(f"{name} {where} ({what} {raw:.3f}) -> {part:.4f} on its 0..1 scale")
        if part is not None:
            terms.append(f"{weight / total:g} x {name} {part:.4f}")
    return [*lines, f"relevance {relevance:.4f} = {' + '.join(terms)}"]


def _explain(hit: Hit) -> list[str]:
    from gitmem.retrieval.search import RECENCY_WEIGHT, RELEVANCE_WEIGHT

    if hit.score != hit.relevance:  # the query asks about time
        how = (
            f"score {hit.score:.4f} = {RELEVANCE_WEIGHT} x relevance {hit.relevance:.4f}"
            f" + {RECENCY_WEIGHT} x recency {hit.recency:.4f} (the query asks about time)"
        )
    else:
        how = f"score {hit.score:.4f} = relevance; recency {hit.recency:.4f} only breaks ties"
    p = hit.provenance
    return [
        *_explain_engines(hit, hit.relevance),
        how,
        f"from event {sid(p['event'])} on {p['branch'] or 'detached HEAD'}"
        f" (memory commit {p['memory_commit'][:SHORT_ID]})"
        + (f", capsule {sid(p['capsule'])}" if p.get("capsule") else "")
        + (f", code commit {p['code_commit'][:SHORT_ID]}" if p.get("code_commit") else ""),
    ]


@app.command
def context(
    query: str | None = None,
    *,
    budget: int = 2000,
    path: list[str] | None = None,
    branch: str | None = None,
    now: str | None = None,
    code_index: Annotated[Path | None, Parameter(show=False)] = None,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """What an agent should know now, within --budget tokens (estimated as characters / 4).

    Tiers, highest priority first: pins, the open capsule, the current
    checkpoint or workflow, binding decisions, proposed (not binding)
    decisions, learnings and mistakes about the files in play (--path, else
    the files changed in the working tree), hits for QUERY, code for QUERY
    with its callers and callees (once 'git edda code index' has built the
    code graph), recent activity.
    Items are kept or dropped whole; a trailer says what was dropped. Every
    line carries an id that 'git edda show ID' expands.

    Parameters
    ----------
    query
        What the agent is about to do (adds the best search hits).
    budget
        The pack's size in tokens (1 to 1,000,000).
    path
        A file in play (repeatable; default: the files changed in the working tree).
    branch
        Build the pack from this branch's memory.
    now
        The time the pack is built for (reproducible output).
    code_index
        Read the code index in this directory instead of the code graph's (tests, tools).
    """
    from gitmem.app import retrieve

    in_range("--budget", budget, 1, MAX_BUDGET)
    pack = retrieve.context(
        common.repo,
        query,
        now_us=now_or_wall(now),
        budget=budget,
        paths=path,
        branch=_branch(branch),
        code_index=code_index,
    )
    return Output(pack.to_json(), markdown(pack.to_markdown()), page=True)


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

    Parameters
    ----------
    query
        A decision key, or text to rank decisions by.
    all
        Include superseded decisions.
    branch
        Ask this branch's memory.
    limit
        How many decisions (1 to 1,000).
    now
        The time recency counts from (reproducible output).
    """
    from gitmem.app import retrieve

    in_range("--limit", limit, 1, MAX_ASK)
    result = retrieve.ask(
        common.repo,
        query,
        now_us=now_or_wall(now),
        include_superseded=all,
        branch=_branch(branch),
        limit=limit,
    )
    return Output(result.to_json(), markdown(result.to_markdown()), page=True)


@app.command
def why(
    target: str,
    *,
    branch: str | None = None,
    limit: int = 20,
    common: Common = DEFAULT_COMMON,
) -> Output:
    """Why is this code like this: the decisions (binding first, newest first),
    learnings, mistakes, checkpoints, sessions and commits that touch a file,
    a directory or a symbol, or its close neighbours in the code graph.

    A decision whose files changed (by blob id) since it was made is marked
    STALE. Without a code graph ('git edda code index'), files and
    directories still work; symbols need the graph.

    Parameters
    ----------
    target
        A file or directory, PATH:QUALNAME (src/cache.py:Cache.get), or a symbol name.
    branch
        Read this branch's memory.
    limit
        At most this many items per section (1 to 1,000).
    """
    from gitmem.app import retrieve

    in_range("--limit", limit, 1, MAX_ASK)
    result = retrieve.why(common.repo, target, branch=_branch(branch), limit=limit)
    return Output(result.to_json(), result.to_text(), page=True)
