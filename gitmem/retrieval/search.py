"""Hybrid search: full-text and vector candidates fused by reciprocal rank, plus recency.

For a query, each engine returns its best ``candidates`` events among those
the filters allow (filters are applied *before* the candidate limit, so a
narrow filter never starves the result). The two ranked lists are fused with
reciprocal rank fusion (RRF, k = 60): an event's relevance is
``1/(k + rank_lexical) + 1/(k + rank_vector)``, divided by the best score any
event could get (``2/(k + 1)``). That normalisation is a constant, applied
after the candidate limits, so an event's score does not depend on how many
candidates were asked for or returned (Kindling normalised BM25 before its
limit and its ranks shifted with it). Recency adds a small term: a half-life
decay from ``now``. Ties break by event id, so output is deterministic for a
given store, query and ``now``.
"""

from __future__ import annotations

import time as _time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gitmem.errors import UsageError
from gitmem.index import fusion
from gitmem.index.fusion import MIN_COSINE
from gitmem.index.fusion import RRF_K as RRF_K  # re-exported: the CLI explains scores with it
from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg

RELEVANCE_WEIGHT = 0.9
RECENCY_WEIGHT = 0.1
HALF_LIFE_DAYS = 30.0
MODES = ("hybrid", "lexical", "vector")
DAY_US = 86_400_000_000
# Results and candidates reach Tantivy and usearch, which abort the process on
# absurd sizes; both are also clamped to the index size before those calls.
MAX_LIMIT = 1_000_000


@dataclass
class Hit:
    """One search result with how its score came about."""

    event: Event
    score: float
    lexical_rank: int | None = None
    lexical_score: float | None = None  # BM25
    vector_rank: int | None = None
    vector_score: float | None = None  # cosine similarity
    relevance: float = 0.0  # normalised RRF
    recency: float = 0.0
    provenance: dict[str, Any] = field(default_factory=dict)
    superseded_by: str | None = None  # a decision: the later decision on its key

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.event.id,
            "type": self.event.type,
            "time": self.event.time,
            "summary": self.event.summary(200),
            "score": round(self.score, 6),
            "components": {
                "lexical_rank": self.lexical_rank,
                "lexical_bm25": None
                if self.lexical_score is None
                else round(self.lexical_score, 4),
                "vector_rank": self.vector_rank,
                "vector_cosine": None if self.vector_score is None else round(self.vector_score, 4),
                "relevance": round(self.relevance, 6),
                "recency": round(self.recency, 6),
            },
            "provenance": self.provenance,
            "superseded_by": self.superseded_by,
        }


@dataclass
class SearchResult:
    query: str
    mode: str
    now: int
    hits: list[Hit]
    lexical_candidates: int = 0
    vector_candidates: int = 0
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "now": self.now,
            "candidates": {"lexical": self.lexical_candidates, "vector": self.vector_candidates},
            "hits": [h.to_json() for h in self.hits],
            "warnings": self.warnings,
        }


def recency(event_time: int, now: int) -> float:
    """1.0 now, 0.5 one half-life ago; future times count as now."""
    age_days = max(0, now - event_time) / DAY_US
    return float(0.5 ** (age_days / HALF_LIFE_DAYS))


def _allowed(view: Any, where: EventFilter | None, branch: Any, all_branches: bool) -> Any:
    """A numpy mask of the rows the filters allow, or None when every row is allowed."""
    import numpy as np

    from gitmem.memory.query import path_matches

    mask = view.filter_mask(where, branch=branch, all_branches=all_branches)
    chunks = mask.chunks if hasattr(mask, "chunks") else [mask]
    allowed = (
        np.concatenate([c.to_numpy(zero_copy_only=False) for c in chunks])
        if chunks
        else np.zeros(view.table.num_rows, dtype=bool)
    )
    if where is not None and (where.tags or where.paths):
        rows = np.nonzero(allowed)[0]
        tags_col = view.table.column("tags").to_pylist()
        paths_col = view.table.column("paths").to_pylist()
        for row in rows:
            tags, paths = tags_col[row], paths_col[row]
            ok = not where.tags or bool(set(where.tags) & set(tags or ()))
            if ok and where.paths:
                ok = any(path_matches(p, pattern) for p in paths or () for pattern in where.paths)
            allowed[row] = ok
    return None if allowed.all() else allowed


def search(
    view: Any,
    query: str,
    *,
    limit: int = 10,
    where: EventFilter | None = None,
    branch: BranchArg = CURRENT_BRANCH,
    all_branches: bool = False,
    now: int | None = None,
    mode: str = "hybrid",
    advanced: bool = False,
    candidates: int | None = None,
    embedder: Any = None,
) -> SearchResult:
    """Search memory through an :class:`~gitmem.index.view.IndexView`.

    ``mode`` is ``hybrid`` (default), ``lexical`` or ``vector``; ``advanced``
    passes the query to the full-text engine's own syntax (leniently).
    ``embedder`` overrides the configured one (tests, benchmarks).
    """
    if mode not in MODES:
        raise UsageError(f"search mode {mode!r} is not one of {', '.join(MODES)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"the result limit must be between 1 and {MAX_LIMIT:,}, not {limit:,}")
    if candidates is not None and not 1 <= candidates <= MAX_LIMIT * 5:
        raise UsageError(
            f"the candidate count must be between 1 and {MAX_LIMIT * 5:,}, not {candidates:,}"
        )
    now = int(_time.time() * 1_000_000) if now is None else now
    result = SearchResult(query, mode, now, [])
    if not query.strip():
        return result
    pool = candidates or max(limit * 5, 50)
    if view.table.num_rows == 0:
        return result
    allowed = _allowed(view, where, branch, all_branches)
    if allowed is not None and not allowed.any():
        return result
    lexical: list[tuple[int, float]] = []
    vector: list[tuple[int, float]] = []
    if mode in ("hybrid", "lexical"):
        lexical = _lexical(view, query, pool, allowed, advanced)
    if mode in ("hybrid", "vector"):
        vector = _vector(view, query, pool, allowed, result, embedder)
    result.lexical_candidates = len(lexical)
    result.vector_candidates = len(vector)
    result.hits = _fuse(view, lexical, vector, now, limit, mode)
    _provenance(view, result.hits)
    _supersession(view, result.hits, branch, all_branches)
    return result


def _lexical(
    view: Any, query: str, pool: int, allowed: Any, advanced: bool
) -> list[tuple[int, float]]:
    """(row, BM25) of the best allowed full-text matches."""
    want = pool if allowed is None else pool * 4
    while True:
        found = view.fulltext.search_keys(query, want, advanced=advanced)
        rows = view.rows_for_keys([key for key, _score in found])
        kept = [
            (row, score)
            for row, (_key, score) in zip(rows, found, strict=True)
            if row is not None and (allowed is None or allowed[row])
        ]
        if len(kept) >= pool or len(found) < want:
            return kept[:pool]
        want *= 4


def _vector(
    view: Any, query: str, pool: int, allowed: Any, result: SearchResult, embedder: Any
) -> list[tuple[int, float]]:
    """(row, cosine) of the nearest allowed events."""
    import numpy as np

    from gitmem.errors import GitmemError

    failed = view.manifest.embed_error  # why the last refresh could not embed
    vectors = view.vectors
    if vectors is None:
        why = failed or "embeddings disabled or not built"
        result.warnings.append(f"no vector index ({why}): lexical results only")
        return []
    if embedder is None:
        embedder = view.embedder
    if embedder is None or embedder.model_id != view.manifest.model:
        result.warnings.append(
            f"the embedding provider failed ({failed}): lexical results only;"
            " 'git edda index' tries again"
            if failed
            else "the vector index was built by another embedding model: "
            "run 'git edda index' to re-embed; lexical results only"
        )
        return []
    if view.manifest.unembedded:
        result.warnings.append(f"{view.manifest.unembedded} events have no vector yet")
    try:
        q = embedder.embed([query])[0]
    except (GitmemError, OSError) as exc:  # an HTTP provider that went away
        detail = exc.message if isinstance(exc, GitmemError) else str(exc)
        result.warnings.append(
            f"the embedding provider could not embed the query ({detail}): lexical results only"
        )
        return []
    keys = None
    if allowed is not None:
        column = view.table.column("key64")
        values = np.concatenate([c.to_numpy(zero_copy_only=False) for c in column.chunks])
        keys = values[allowed]  # an array: 100,000 Python ints would cost ~5 ms
    found = vectors.search(q, pool, keys)
    rows = view.rows_for_keys([k for k, _s in found])
    return [
        (row, score)
        for row, (_k, score) in zip(rows, found, strict=True)
        if row is not None and score >= MIN_COSINE
    ]


def _fuse(
    view: Any,
    lexical: Sequence[tuple[int, float]],
    vector: Sequence[tuple[int, float]],
    now: int,
    limit: int,
    mode: str,
) -> list[Hit]:
    engines = 2 if mode == "hybrid" else 1
    # Equal scores share a rank: an id tie-break must not outweigh recency.
    parts = fusion.ranks((("lexical", lexical), ("vector", vector)))
    if not parts:
        return []
    rows = sorted(parts)
    scored = []
    ids, times = view.values_at("id", rows), view.values_at("time", rows)
    for row, eid, etime in zip(rows, ids, times, strict=True):
        found = parts[row]
        relevance = fusion.relevance(found, engines)
        fresh = recency(etime, now)
        score = RELEVANCE_WEIGHT * relevance + RECENCY_WEIGHT * fresh
        scored.append((-round(score, 9), eid, row, score, relevance, fresh))
    scored.sort()
    top = scored[:limit]
    events = view.events_at([t[2] for t in top])
    hits = []
    for (_neg, _eid, row, score, relevance, fresh), event in zip(top, events, strict=True):
        found = parts[row]
        hit = Hit(event, score, relevance=relevance, recency=fresh)
        if "lexical" in found:
            hit.lexical_rank, hit.lexical_score = found["lexical"]
        if "vector" in found:
            hit.vector_rank, hit.vector_score = found["vector"]
        hits.append(hit)
    return hits


def _provenance(view: Any, hits: list[Hit]) -> None:
    """Where each hit comes from: memory commit and branch, capsule, and the
    code commit linked in the same capsule or session at or after it."""
    links = view.commit_links() if hits else []
    for hit in hits:
        e = hit.event
        code = None
        if e.type == "commit_link":
            code = e.field("sha")
        else:
            session = e.scope.get("session")
            for time, link_session, link_capsule, sha in links:  # in (time, id) order
                if time < e.time:
                    continue
                if (e.capsule and link_capsule == e.capsule) or (
                    session and link_session == session
                ):
                    code = sha
                    break
        hit.provenance = {
            "event": e.id,
            "memory_commit": e.commit,
            "branch": e.branch,
            "capsule": e.capsule,
            "session": e.scope.get("session"),
            "code_commit": code,
        }


def _supersession(view: Any, hits: list[Hit], branch: BranchArg, all_branches: bool) -> None:
    """Mark each decision hit superseded on the branch it was found on, as
    ``ask`` and context packs see it (a later decision on its key)."""
    from gitmem.memory.source import branch_kwargs
    from gitmem.memory.window import DecisionBook

    decisions = [hit for hit in hits if hit.event.type == "decision"]
    if not decisions or not hasattr(view, "window"):
        return
    books: dict[Any, DecisionBook] = {}
    for hit in decisions:
        # Every branch's search: each decision as its own branch sees it.
        where = hit.event.branch if all_branches else branch
        key = where if isinstance(where, str | None) else "current"
        if key not in books:
            kwargs = {"branch": where} if all_branches else branch_kwargs(branch)
            window = view.window(kwargs)
            books[key] = window.book()  # computed once per window: views keep them
        standing = books[key].standing.get(hit.event.id)
        hit.superseded_by = standing.superseded_by if standing is not None else None
