"""Hybrid search: full-text and vector candidates fused by their scores.

For a query, each engine returns its best ``candidates`` events among those
the filters allow (filters are applied *before* the candidate limit, so a
narrow filter never starves the result). The two lists are fused by
:mod:`gitmem.index.fusion`: by default score-aware, ``0.5 * BM25/BM25_top +
0.5 * min-max(cosine)``, every candidate scored by both engines and the
lists read deep enough that neither the hits nor their scores depend on the
candidate limit; ``fusion="rrf"`` selects reciprocal rank fusion instead.

Recency only breaks ties: equal relevances rank the newer event first, then
the smaller event id, so the order depends on the store and the query alone,
never on the moment the query runs. A query that asks about time ("latest",
"recent", "yesterday" …, :func:`asks_about_time`) also weighs recency, a
half-life decay from ``now`` counted in whole days, so two runs on the same
day agree; the fusion then ranks by both (:class:`gitmem.index.fusion.Bonus`),
reading the lists as deep as that top needs, up to
:data:`gitmem.index.fusion.TIME_DEEPEN` times the first depth (read at once,
see :func:`_first_depth`).
"""

from __future__ import annotations

import bisect
import re
import time as _time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from gitmem.errors import UsageError
from gitmem.index import fusion as fusions
from gitmem.index.compute import to_numpy
from gitmem.index.fusion import DEFAULT_FUSION, FUSIONS, MIN_COSINE
from gitmem.index.fusion import RRF_K as RRF_K  # re-exported: the CLI explains scores with it
from gitmem.memory.event import Event
from gitmem.memory.query import EventFilter
from gitmem.records.brancharg import CURRENT_BRANCH, BranchArg
from gitmem.retrieval import overlap

RECENCY_WEIGHT = 0.1  # a query that asks about time: relevance and recency, weighed
RELEVANCE_WEIGHT = 1.0 - RECENCY_WEIGHT  # (0.9)
HALF_LIFE_DAYS = 30.0
MODES = ("hybrid", "lexical", "vector")
DAY_US = 86_400_000_000
# Results and candidates reach Tantivy and usearch, which abort the process on
# absurd sizes; both are also clamped to the index size before those calls.
MAX_LIMIT = 1_000_000
TIME_WORDS = frozenset(
    {"latest", "newest", "recent", "recently", "lately", "today", "yesterday", "newer", "newly"}
)
"""Words by which a query asks for what is new: recency then counts (see :func:`asks_about_time`)."""
_WORDS = re.compile(r"\w+")
# per open view: the floor sample's unit vectors when every row is allowed
_SAMPLES: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
# per open view: the numpy form of the masks it handed out (by identity)
_MASKS: weakref.WeakKeyDictionary[Any, dict[int, tuple[Any, Any]]] = weakref.WeakKeyDictionary()


@dataclass
class _Allowed:
    """What a search derives from an allowed mask, kept with it for the
    view's next searches (by the mask's identity: see :func:`_allowed`)."""

    mask: Any
    keys: Any = None  # sorted distinct key64 of the allowed rows
    sample: Any = None  # the floor's sample of them
    newest: int | None = None  # the newest allowed event's time (see _newest)


_LAST: weakref.WeakKeyDictionary[Any, _Allowed] = weakref.WeakKeyDictionary()
# per open view: its time column in numpy, and the newest event's time
_TIMES: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
_NEWEST: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()


def _derived(view: Any, allowed: Any) -> _Allowed:
    """The derived values of ``allowed``, reused while it is the view's last mask."""
    last = _LAST.get(view)
    if last is None or last.mask is not allowed:
        last = _LAST[view] = _Allowed(allowed)
    return last


@dataclass
class Hit:
    """One search result with how its score came about."""

    event: Event
    score: float
    lexical_rank: int | None = None  # rank in full text's candidate list (None: not in it)
    lexical_score: float | None = None  # BM25 (None: the query's words do not match it)
    vector_rank: int | None = None  # rank in the vector candidate list (None: not in it)
    vector_score: float | None = None  # cosine similarity
    relevance: float = 0.0  # the fused relevance, 0..1
    recency: float = 0.0  # 0.5^(whole days old / 30): breaks ties, weighed for time queries
    lexical: float | None = None  # score fusion: the BM25 on its 0..1 scale
    vector: float | None = None  # score fusion: the cosine on its 0..1 scale
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
                "lexical": None if self.lexical is None else round(self.lexical, 6),
                "vector": None if self.vector is None else round(self.vector, 6),
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
    fusion: str = DEFAULT_FUSION
    timely: bool = False  # the query asks about time: recency was weighed, not only a tie-break

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "now": self.now,
            "fusion": self.fusion,
            "recency_weighed": self.timely,
            "candidates": {"lexical": self.lexical_candidates, "vector": self.vector_candidates},
            "hits": [h.to_json() for h in self.hits],
            "warnings": self.warnings,
        }


def recency(event_time: int, now: int) -> float:
    """1.0 today, 0.5 one half-life ago, counted in whole days (so that two
    runs on the same day agree); future times count as now."""
    age_days = max(0, now - event_time) // DAY_US
    return float(0.5 ** (age_days / HALF_LIFE_DAYS))


def asks_about_time(query: str) -> bool:
    """Whether ``query`` asks for what is new ("the latest pool size", "what
    changed recently"): only then does recency weigh in the score. A question
    about *when* something happened is not one: its answer may be old."""
    return any(word in TIME_WORDS for word in _WORDS.findall(query.lower()))


def _allowed(view: Any, where: EventFilter | None, branch: Any, all_branches: bool) -> Any:
    """A numpy mask of the rows the filters allow, or None when every row is allowed."""
    import numpy as np

    from gitmem.memory.query import path_matches

    mask = view.filter_mask(where, branch=branch, all_branches=all_branches)
    plain = where is None or not (where.tags or where.paths)
    if plain:
        # The view hands out one mask per branch: its numpy form, the allowed
        # keys and the floor's sample are then computed once, not per query
        # (three passes over a million rows).
        cache = _MASKS.setdefault(view, {})
        known = cache.get(id(mask))
        if known is not None and known[0] is mask:
            return known[1]
    allowed = to_numpy(mask, "bool")
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
    found = None if allowed.all() else allowed
    if plain:
        if len(cache) >= 8:
            cache.clear()
        cache[id(mask)] = (mask, found)
    return found


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
    fusion: str = DEFAULT_FUSION,
) -> SearchResult:
    """Search memory through an :class:`~gitmem.index.view.IndexView`.

    ``mode`` is ``hybrid`` (default), ``lexical`` or ``vector``; ``advanced``
    passes the query to the full-text engine's own syntax (leniently).
    ``embedder`` overrides the configured one (tests, benchmarks); ``fusion``
    is ``score`` (default) or ``rrf`` (see :mod:`gitmem.index.fusion`).
    """
    if mode not in MODES:
        raise UsageError(f"search mode {mode!r} is not one of {', '.join(MODES)}")
    if fusion not in FUSIONS:
        raise UsageError(f"fusion {fusion!r} is not one of {', '.join(FUSIONS)}")
    if not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"the result limit must be between 1 and {MAX_LIMIT:,}, not {limit:,}")
    if candidates is not None and not 1 <= candidates <= MAX_LIMIT * 5:
        raise UsageError(
            f"the candidate count must be between 1 and {MAX_LIMIT * 5:,}, not {candidates:,}"
        )
    now = int(_time.time() * 1_000_000) if now is None else now
    result = SearchResult(query, mode, now, [], fusion=fusion, timely=asks_about_time(query))
    if not query.strip():
        return result
    pool = candidates or max(limit * 5, 50)
    if view.table.num_rows == 0:
        return result
    embedding = _query_vector(view, query, result, embedder) if mode != "lexical" else None
    allowed = _allowed(view, where, branch, all_branches)
    if allowed is not None and not allowed.any():
        return result
    first = _first_depth(pool, result.timely and fusion == "score")
    ahead: dict[int, overlap.Pending[list[tuple[int, float]]]] = {}
    lexical_read = _first_read(lambda depth: _lexical(view, query, depth, allowed, advanced, ahead))
    if mode != "vector" and embedding is not None:
        # The two sides overlap: a slow embedder (MiniLM, a model server)
        # embeds on the worker thread while Tantivy reads here; with a fast
        # one, Tantivy (which lets go of the GIL) reads there while the query
        # embeds and the vector side reads here.
        if embedding.background:
            lexical_read(first)
        else:
            want, fulltext = _lexical_want(first, allowed), view.fulltext
            ahead[want] = overlap.submit(
                lambda: fulltext.search_keys(query, want, advanced=advanced)
            )
    if fusion == "rrf":
        q = embedding() if embedding is not None else None
        lexical: list[tuple[int, float]] = []
        vector: list[tuple[int, float]] = []
        if q is not None:
            found = _vector(view, q, pool, allowed)
            vector = [(row, score) for row, score in found if score >= MIN_COSINE]
        if mode in ("hybrid", "lexical"):
            lexical = lexical_read(pool)
        result.lexical_candidates = len(lexical)
        result.vector_candidates = len(vector)
        result.hits = _fuse_rrf(view, lexical, vector, now, limit, mode, result.timely)
    else:
        result.hits = _fuse_scores(
            view, query, embedding, pool, first, allowed, advanced, now, limit, result,
            lexical_read, bool(ahead),
        )  # fmt: skip
    _provenance(view, result.hits)
    _supersession(view, result.hits, branch, all_branches)
    return result


def _first_depth(pool: int, ranked_with_recency: bool) -> int:
    """How deep the candidate lists are read first for ``pool`` candidates.

    A query about time ranks by relevance and recency, and the fusion reads
    the lists deeper until that top is sure, up to ``TIME_DEEPEN`` times:
    on bench/retrieval.py's store every such query went that deep. So it
    reads that deep at once (the full-text side while the query embeds),
    not a first depth and then all again four times deeper: 2-3 ms of a
    15 ms query at 100,000 events."""
    return pool * fusions.TIME_DEEPEN if ranked_with_recency else pool


def _lexical_want(pool: int, allowed: Any) -> int:
    """How many full-text matches to read first for ``pool`` allowed ones."""
    return pool if allowed is None else pool * 4


def _lexical(
    view: Any,
    query: str,
    pool: int,
    allowed: Any,
    advanced: bool,
    ahead: dict[int, overlap.Pending[list[tuple[int, float]]]] | None = None,
) -> list[tuple[int, float]]:
    """(row, BM25) of the best allowed full-text matches (``ahead``: reads
    already started on the worker thread, by depth)."""
    want = _lexical_want(pool, allowed)
    while True:
        started = ahead.pop(want, None) if ahead else None
        if started is not None:
            found = started.result()
        else:
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


class _Scores:
    """One side's exact scores of given rows (its fusion lookup), remembered
    by row: a row's score does not depend on the rows asked with it, so the
    rows one side is sure to need from the other can be asked for ahead,
    the full-text ones on the worker thread (see :func:`_fuse_scores`)."""

    def __init__(
        self,
        prepare: Callable[[list[int]], Callable[[], dict[int, float]]],
    ) -> None:
        # prepare(rows), called here, returns the engine's call, which may run there
        self._prepare = prepare
        self._known: dict[int, float | None] = {}
        self._pending: list[tuple[list[int], overlap.Pending[dict[int, float]]]] = []
        self._staged: list[tuple[list[int], Callable[[], dict[int, float]]]] = []
        self._asked: set[int] = set()

    def _new(self, rows: Sequence[int]) -> list[int]:
        new = [row for row in dict.fromkeys(rows) if row not in self._asked]
        self._asked.update(new)
        return new

    def _record(self, rows: list[int], found: dict[int, float]) -> None:
        for row in rows:
            self._known[row] = found.get(row)

    def stage(self, rows: Sequence[int]) -> None:
        """Prepare the lookup of ``rows`` now (what it reads besides the
        query), and score them when scores are next asked for."""
        new = self._new(rows)
        if new:
            self._staged.append((new, self._prepare(new)))

    def ahead(self, rows: Sequence[int], *, there: bool) -> None:
        """Ask for the scores of ``rows`` now: on the worker thread (``there``) or here."""
        new = self._new(rows)
        if not new:
            return
        call = self._prepare(new)
        if there:
            self._pending.append((new, overlap.submit(call)))
        else:
            self._record(new, call())

    def __call__(self, rows: Sequence[int]) -> dict[int, float]:
        """row -> score of ``rows`` (absent: the engine does not match the row)."""
        for asked, pending in self._pending:
            self._record(asked, pending.result())
        self._pending = []
        for asked, call in self._staged:
            self._record(asked, call())
        self._staged = []
        self.ahead(rows, there=False)
        return {row: score for row in rows if (score := self._known[row]) is not None}


def _lexical_scores(
    view: Any, query: str, advanced: bool
) -> Callable[[list[int]], Callable[[], dict[int, float]]]:
    """The lookup of rows' BM25 (absent: the query does not match them): the
    ids are read here, Tantivy may run on the worker thread."""
    from gitmem.index.vectors import key64

    def prepare(rows: list[int]) -> Callable[[], dict[int, float]]:
        fulltext = view.fulltext  # opened here: the worker only searches it
        ids = view.values_at("id", rows)
        row_of = {key64(eid): row for eid, row in zip(ids, rows, strict=True)}

        def call() -> dict[int, float]:
            found = fulltext.scores_of(query, ids, advanced=advanced)
            return {row_of[key]: score for key, score in found.items() if key in row_of}

        return call

    return prepare


@dataclass
class _Embedding:
    """The query's embedding, once asked for (None: the embedder failed);
    ``background``: it is computed on the worker thread."""

    wait: Callable[[], Any]
    background: bool

    def __call__(self) -> Any:
        return self.wait()


def _query_vector(view: Any, query: str, result: SearchResult, embedder: Any) -> _Embedding | None:
    """None (with a warning) when there is no usable vector index; else the
    query's embedding, None (with a warning) when the embedder fails. An
    embedder slow enough to be worth it (``background``: MiniLM, a model
    server) starts on the process's worker thread at once (see
    :mod:`gitmem.retrieval.overlap`); a fast one (the static embedder) runs
    when the embedding is asked for."""
    from gitmem.errors import GitmemError

    failed = view.manifest.embed_error  # why the last refresh could not embed
    if view.vectors is None:
        why = failed or "embeddings disabled or not built"
        result.warnings.append(f"no vector index ({why}): lexical results only")
        return None
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
        return None
    if view.manifest.unembedded:
        result.warnings.append(f"{view.manifest.unembedded} events have no vector yet")
    model = embedder
    background = bool(getattr(model, "background", False))

    def embed() -> Any:
        return model.embed([query])

    fetch = overlap.submit(embed).result if background else embed

    def wait() -> Any:
        try:
            return fetch()[0]
        except (GitmemError, OSError) as exc:  # an HTTP provider that went away
            detail = exc.message if isinstance(exc, GitmemError) else str(exc)
            result.warnings.append(
                f"the embedding provider could not embed the query ({detail}): lexical results only"
            )
            return None

    return _Embedding(wait, background)


def _first_read(
    read: Callable[[int], list[tuple[int, float]]],
) -> Callable[[int], list[tuple[int, float]]]:
    """``read``, remembering its answers by depth: the full-text candidates
    read while the query embeds are not read again by the fusion."""
    answers: dict[int, list[tuple[int, float]]] = {}

    def cached(depth: int) -> list[tuple[int, float]]:
        if depth not in answers:
            answers[depth] = read(depth)
        return answers[depth]

    return cached


def _allowed_keys(view: Any, allowed: Any) -> Any:
    """The key64 of every allowed row as a sorted array without repeats, as
    the vector index takes them (100,000 Python ints would cost ~5 ms, and
    sorting a million keys per query ~140 ms: once the view has ordered its
    keys for lookups, the mask only picks from that order; before, as in a
    one-query process, only the allowed keys are sorted); None: every row is
    allowed."""
    import numpy as np

    if allowed is None:
        return None
    derived = _derived(view, allowed)
    if derived.keys is not None:
        return derived.keys
    if view.keys_ordered:
        ordered, rows = view.keys_in_order()
        picked = ordered[allowed[rows]]
    else:  # (np.sort: np.unique takes fifty times longer on these keys)
        picked = np.sort(view.key_values()[allowed])
    if len(picked) > 1:
        first = np.empty(len(picked), dtype=bool)
        first[0] = True
        np.not_equal(picked[1:], picked[:-1], out=first[1:])
        if not first.all():  # two events whose ids share their first 64 bits
            picked = picked[first]
    derived.keys = picked  # one search reads them several times
    return picked


def _newest(view: Any, allowed: Any) -> int:
    """The time of the newest allowed event (the view's table is not empty)."""
    import numpy as np

    if allowed is None:
        newest = _NEWEST.get(view)
        if newest is None:
            newest = _NEWEST[view] = int(np.max(_times(view)))
        return newest
    derived = _derived(view, allowed)
    if derived.newest is None:
        derived.newest = int(np.max(_times(view)[allowed]))
    return derived.newest


def _times(view: Any) -> Any:
    """Every row's time as one numpy array, read once per view."""
    times = _TIMES.get(view)
    if times is None:
        times = _TIMES[view] = to_numpy(view.table.column("time"), "int64")
    return times


def _vector_floor(view: Any, q: Any, allowed: Any) -> float:
    """The lowest cosine among a fixed sample of the allowed events (see
    :mod:`gitmem.index.fusion`): the cosine that normalises to 0."""
    if allowed is None:
        sample = _SAMPLES.get(view)
        if sample is None:
            sample = _SAMPLES[view] = fusions.FloorSample(
                view.vectors, fusions.sample(view.key_values())
            )
    else:
        derived = _derived(view, allowed)
        if derived.sample is None:
            import numpy as np

            ordered = derived.keys
            if ordered is not None and len(ordered) == np.count_nonzero(allowed):
                # no two allowed events share a key: the sample is the
                # smallest of the allowed keys the vector side sorted already
                chosen = ordered[: fusions.FLOOR_SAMPLE]
            else:
                chosen = fusions.sample(view.key_values()[allowed])
            derived.sample = fusions.FloorSample(view.vectors, chosen)
        sample = derived.sample
    return sample.floor(q)


def _vector(view: Any, q: Any, depth: int, allowed: Any) -> list[tuple[int, float]]:
    """(row, cosine) of the ``depth`` nearest allowed events, best first."""
    keys = _allowed_keys(view, allowed)
    found = view.vectors.search(q, depth, keys, ordered=keys is not None)
    rows = view.rows_for_keys([k for k, _s in found])
    return [(row, score) for row, (_k, score) in zip(rows, found, strict=True) if row is not None]


def _vector_scores(
    view: Any, query: Callable[[], Any]
) -> Callable[[list[int]], Callable[[], dict[int, float]]]:
    """The lookup of rows' cosines (absent: the event has no vector): the
    stored vectors are read when the rows are given, the query's embedding
    (``query()``) only when the cosines are computed, so the vectors can be
    read while the query embeds. The cosines are those the vector search
    gives the same events (:func:`gitmem.index.vectors.cosines`)."""
    import numpy as np

    from gitmem.index.vectors import cosines, norms

    def prepare(rows: list[int]) -> Callable[[], dict[int, float]]:
        keys = [int(k) for k in view.values_at("key64", rows)]
        row_of = dict(zip(keys, rows, strict=True))
        present, stored = view.vectors.stored_by_key(keys)
        lengths = norms(stored)

        def call() -> dict[int, float]:
            if not len(present):
                return {}
            q = np.asarray(query(), dtype=np.float64).reshape(stored.shape[1])
            found = cosines(stored, lengths, q)
            return {
                row_of[key]: score
                for key, score in zip(present.tolist(), found.tolist(), strict=True)
            }

        return call

    return prepare


def _fuse_scores(
    view: Any,
    query: str,
    embedding: _Embedding | None,
    pool: int,
    first: int,
    allowed: Any,
    advanced: bool,
    now: int,
    limit: int,
    result: SearchResult,
    lexical_read: Callable[[int], list[tuple[int, float]]],
    lexical_there: bool = False,
) -> list[Hit]:
    """Score-aware fusion of the engines the mode asks for (see
    :mod:`gitmem.index.fusion`), once ``embedding`` (None: lexical only) is
    there: ``pool`` candidates a side is the depth the deepening counts
    from, ``first`` the depth of the first reads (see :func:`search`);
    ``lexical_there``: the full-text side's first read runs on the worker
    thread."""
    sides: list[fusions.Side[int]] = []
    lexical_scores = _Scores(_lexical_scores(view, query, advanced))
    if result.mode in ("hybrid", "lexical"):
        sides.append(fusions.Side("lexical", lexical_read, lexical_scores))
    embedded: list[Any] = []  # the query's embedding, once there
    vector_scores = _Scores(_vector_scores(view, lambda: embedded[0]))
    keys: dict[int, tuple[int, str]] = {}

    def order(rows: Sequence[int]) -> None:
        # ties: the newer event first, then the smaller id
        new = [row for row in rows if row not in keys]
        if new:
            times, ids = view.values_at("time", new), view.values_at("id", new)
            keys.update(zip(new, zip((-t for t in times), ids, strict=True), strict=True))

    if embedding is not None and embedding.background and sides:
        # While the query embeds there: what the full-text candidates need
        # besides it (their stored vectors, their order), from a warm cache.
        rows = [row for row, _score in lexical_read(first)]
        vector_scores.stage(rows)
        order(rows)
    q = embedding() if embedding is not None else None
    embedded.append(q)
    vector_read = _first_read(lambda depth: _vector(view, q, depth, allowed))
    if q is not None:
        sides.append(
            fusions.Side(
                "vector",
                vector_read,
                vector_scores,
                vector=True,
                reference=lambda: _vector_floor(view, q, allowed),
            )
        )
    if len(sides) == 2:
        # What the fusion's first round needs, in an order that keeps two
        # threads busy (Tantivy lets go of the GIL): while the full-text
        # side reads there, the vector side reads here, then Tantivy scores
        # its candidates here too; when the full-text side read here, Tantivy
        # scores the vector candidates there while the vectors score the
        # full-text ones here. (The fusion then finds these scores known.)
        ahead = [row for row, score in vector_read(first) if score >= MIN_COSINE]
        lexical_scores.ahead(ahead, there=not lexical_there)
        order(ahead)
        rows = [row for row, _score in lexical_read(first)]
        seen = set(ahead)
        vector_scores.ahead([row for row in rows if row not in seen], there=False)
        order(rows)

    bonus: fusions.Bonus[int] | None = None
    if result.timely:
        # A time query ranks by relevance and recency together, the lists
        # read as deep as that top needs (no event is more recent than the
        # newest allowed one), up to a bound (see fusion.TIME_DEEPEN).
        bonus = fusions.Bonus(
            RECENCY_WEIGHT,
            lambda row: recency(-keys[row][0], now),
            recency(_newest(view, allowed), now),
            fusions.TIME_DEEPEN,
        )
    fused = fusions.fuse_scores(
        sides, limit, pool, order, lambda row: keys[row], bonus, start=first
    )
    for side in sides:
        count = len(side.ranked)
        if side.name == "lexical":
            result.lexical_candidates = count
        else:
            result.vector_candidates = count
    events = view.events_at([f.item for f in fused])
    hits = []
    for f, event in zip(fused, events, strict=True):
        fresh = recency(-keys[f.item][0], now)
        hits.append(
            Hit(
                event,
                f.score,
                lexical_rank=f.ranks.get("lexical"),
                lexical_score=f.raw.get("lexical"),
                vector_rank=f.ranks.get("vector"),
                vector_score=f.raw.get("vector"),
                relevance=f.relevance,
                recency=fresh,
                lexical=f.normalised.get("lexical"),
                vector=f.normalised.get("vector"),
            )
        )
    return hits


def _fuse_rrf(
    view: Any,
    lexical: Sequence[tuple[int, float]],
    vector: Sequence[tuple[int, float]],
    now: int,
    limit: int,
    mode: str,
    timely: bool,
) -> list[Hit]:
    """Reciprocal rank fusion of the two candidate lists (``fusion="rrf"``)."""
    engines = 2 if mode == "hybrid" else 1
    parts = fusions.ranks((("lexical", lexical), ("vector", vector)))
    if not parts:
        return []
    rows = sorted(parts)
    scored = []
    ids, times = view.values_at("id", rows), view.values_at("time", rows)
    for row, eid, etime in zip(rows, ids, times, strict=True):
        relevance = fusions.relevance(parts[row], engines)
        fresh = recency(etime, now)
        score = RELEVANCE_WEIGHT * relevance + RECENCY_WEIGHT * fresh if timely else relevance
        scored.append((-round(score, fusions.DECIMALS), -etime, eid, row, score, relevance, fresh))
    scored.sort()
    top = scored[:limit]
    events = view.events_at([t[3] for t in top])
    hits = []
    for (_neg, _t, _eid, row, score, relevance, fresh), event in zip(top, events, strict=True):
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
    scopes = [(h.event.capsule, h.event.scope.get("session")) for h in hits]
    links = _links_by_scope(
        view,
        sorted({c for c, _s in scopes if c}),
        sorted({s for _c, s in scopes if isinstance(s, str) and s}),
    )
    for hit in hits:
        e = hit.event
        code = None
        session = e.scope.get("session")
        capsule = e.capsule
        if e.type == "commit_link":
            code = e.field("sha")
        else:
            code = _linked_commit(links, e.time, capsule, session)
        hit.provenance = {
            "event": e.id,
            "memory_commit": e.commit,
            "branch": e.branch,
            "capsule": capsule,
            "session": session,
            "code_commit": code,
        }


def _linked_commit(
    links: tuple[dict[str, list[_Link]], dict[str, list[_Link]]],
    time: int,
    capsule: str | None,
    session: str | None,
) -> str | None:
    """The code commit of the first link in (time, id) order at or after
    ``time`` in the capsule or the session (see :func:`_links_by_scope`)."""
    first = min(
        (
            found
            for found in (
                _first_at(links[0].get(capsule) if capsule else None, time),
                _first_at(links[1].get(session) if session else None, time),
            )
            if found is not None
        ),
        default=None,
    )
    return None if first is None else first[2]


_Link = tuple[int, int, "str | None"]  # time, position in (time, id) order, sha


def _links_by_scope(
    view: Any, capsules: Sequence[str], sessions: Sequence[str]
) -> tuple[dict[str, list[_Link]], dict[str, list[_Link]]]:
    """The commit links in these capsules and sessions, by capsule and by
    session, each list in (time, id) order."""
    by_capsule: dict[str, list[_Link]] = {}
    by_session: dict[str, list[_Link]] = {}
    for position, (time, session, capsule, sha) in enumerate(view.commit_links(capsules, sessions)):
        link = (time, position, sha)
        if capsule:
            by_capsule.setdefault(capsule, []).append(link)
        if session:
            by_session.setdefault(session, []).append(link)
    return by_capsule, by_session


def _first_at(links: list[_Link] | None, time: int) -> _Link | None:
    """The first of ``links`` at or after ``time``."""
    if not links:
        return None
    at = bisect.bisect_left(links, time, key=lambda link: link[0])
    return links[at] if at < len(links) else None


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
