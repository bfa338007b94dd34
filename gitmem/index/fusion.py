"""Hybrid fusion: how search turns full text and vectors into one ranking.

Shared by memory search (:mod:`gitmem.retrieval.search`) and code search
(:mod:`gitmem.graph.codeindex`), so a relevance means the same in both: 1.0
is "the best item of every engine asked", 0 is "no engine found anything in it".

**Score-aware fusion** (``"score"``, the default). Each engine's raw score is
put on a 0..1 scale and the two are added with equal weights:

    relevance = 0.5 * BM25 / BM25_top + 0.5 * clip((cos - floor) / (cos_top - floor), 0, 1)

* ``BM25_top`` is the best BM25 among the allowed items (the full-text
  engine's first hit); an item the query's words do not match scores 0.
* ``cos_top`` is the best cosine among the allowed items; ``floor``, the
  cosine that counts as "unrelated", is the lowest cosine among a fixed
  sample of :data:`FLOOR_SAMPLE` allowed items (all of them, in a smaller
  store or filter). The measurements this fusion comes from used the lowest
  cosine of the whole corpus; the sample's is the same statistic at a fixed
  cost at any store size, and as the sample's low end (about the 0.4th
  percentile) it does not move when one odd memory is added. A floor taken
  from the query's own neighbours instead (the 100th nearest) stretches the
  vector scale over the top candidates and let a weak embedder outvote full
  text: below lexical on both development sets. A fixed floor (cosine 0)
  would not adapt to embedders whose cosines all sit high (0.6-0.9).

Unlike reciprocal rank fusion, a list's confidence counts: a clear lexical
winner (BM25 far above the rest) keeps its lead, and a vector neighbour that
is barely closer than the tenth does not push it out. On the development
sets of ``../shared/evals`` equal-weight RRF ranked below full text alone;
this fusion ranks above it (README, Search).

Every hit is scored by **both** engines: an item one engine returned gets
its exact score from the other (a full-text query restricted to those ids,
the cosine of those keys), so a relevance never depends on how deep a list
was read. That lookup is skipped for a candidate that cannot reach the top
``limit`` whatever the other engine gives it (its score there is at most
what that engine's last read item scores). The candidate lists are deepened
until nothing outside them can reach the top ``limit`` (the threshold of
Fagin's algorithm: an unread item scores at most what the last read item of
each list scores), so hits and scores do not depend on the candidate limit
either, up to :data:`MAX_DEEPEN` (and :data:`TIME_DEEPEN` for a ranking
with recency, :class:`Bonus`).

**Reciprocal rank fusion** (``"rrf"``) is kept selectable: an item's
relevance is ``sum(1/(k + rank))`` over the engines that returned it,
divided by the best score any item could get (``engines/(k + 1)``).

Ties: equal scores share a rank (RRF), relevances are compared rounded to 9
decimals, and the caller breaks ties by its own order (memory: newer first,
then event id; code: path and line), never by chance.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from gitmem.index.vectors import Vectors
    from gitmem.index.vectorshards import VectorShards

FUSIONS = ("score", "rrf")
DEFAULT_FUSION = "score"
RRF_K = 60
MIN_COSINE = 0.1  # below this a static embedder's neighbours are noise: not candidates
LEXICAL_WEIGHT = 0.5
VECTOR_WEIGHT = 0.5
FLOOR_SAMPLE = 256
"""The vector side's floor is the lowest cosine among this many allowed items (see :func:`sample`)."""
MAX_DEEPEN = 64
"""Candidate lists are deepened at most to this many times the first depth."""
DECIMALS = 9  # relevances are compared at this precision: float noise is no ranking signal
TIME_DEEPEN = 4
"""How much deeper than the first depth a ranking with a :class:`Bonus` of
recency reads (memory search, a query about time). Recency weighs little
(0.1), yet an exact top by relevance and recency can need every candidate
whose relevance is within that weight of the top's: on a store where
thousands of events match a query about equally, thousands of candidates
(tail latency 2x in ``bench/retrieval.py``). Read four times deeper at most,
the top is exact whenever it is found there and otherwise the best by
relevance and recency of the candidates read: the same each time for the
same store, query and ``now``."""

K = TypeVar("K", bound=Hashable)

Ranks = dict[str, tuple[int, float]]
"""engine name -> (rank in that engine, the engine's own score)."""


# -- reciprocal rank fusion -------------------------------------------------------------------
def ranks(lists: Sequence[tuple[str, Sequence[tuple[K, float]]]]) -> dict[K, Ranks]:
    """Each item's (rank, score) per engine, from ``(engine, [(item, score), ...])``
    lists ordered best first; equal scores share the rank of the first of them."""
    found: dict[K, Ranks] = {}
    for name, ranked in lists:
        rank, previous = 0, None
        for position, (item, score) in enumerate(ranked, 1):
            if previous is None or round(score, 6) != previous:
                rank, previous = position, round(score, 6)
            found.setdefault(item, {})[name] = (rank, score)
    return found


def relevance(found: Mapping[str, tuple[int, float]], engines: int) -> float:
    """The normalised RRF score of an item found with ``found`` ranks, when
    ``engines`` engines were asked (1.0: first in every one of them)."""
    best = engines / (RRF_K + 1)
    return sum(1.0 / (RRF_K + rank) for rank, _score in found.values()) / best


# -- score-aware fusion -----------------------------------------------------------------------
def sample(keys: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """The :data:`FLOOR_SAMPLE` smallest of ``keys`` (all of them when fewer),
    sorted: the sample whose lowest cosine is the vector side's floor.

    Keys are the leading bits of SHA-256 ids, so the smallest are a uniform
    random sample of the items, and the same items for the same store.
    """
    import numpy as np

    if len(keys) > FLOOR_SAMPLE:
        keys = np.partition(keys, FLOOR_SAMPLE - 1)[:FLOOR_SAMPLE]
    return np.sort(keys)


class FloorSample:
    """The stored vectors of a :func:`sample` of keys and their norms: the
    vector side's floor is the lowest cosine among them (see :meth:`floor`)."""

    def __init__(self, vectors: Vectors | VectorShards, keys: NDArray[np.uint64]) -> None:
        from gitmem.index.vectors import norms

        self.rows = vectors.stored(keys)  # those that have one
        self.norms = norms(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def floor(self, query: NDArray[np.float32]) -> float:
        """The lowest cosine of the sample with ``query`` (0.0 for an empty
        sample), computed as every cosine of the index is
        (:func:`gitmem.index.vectors.cosines`): the same sample gives the same
        floor, however its vectors are stored or ordered."""
        import numpy as np

        from gitmem.index.vectors import cosines

        if not len(self.rows):
            return 0.0
        q = np.asarray(query, dtype=np.float64).reshape(self.rows.shape[1])
        return float(np.min(cosines(self.rows, self.norms, q)))


@dataclass
class Side(Generic[K]):
    """One engine's answer to a query, as score-aware fusion reads it.

    ``read(depth)`` returns the engine's best ``depth`` allowed items, best
    first, with their raw scores (fewer: there are no more); ``lookup(items)``
    the raw scores of any allowed items (absent: the engine does not match
    them at all); ``candidate(score)`` whether a returned item may enter the
    fusion (the vector side leaves out cosines below :data:`MIN_COSINE`).
    """

    name: str
    read: Callable[[int], list[tuple[K, float]]]
    lookup: Callable[[Sequence[K]], dict[K, float]]
    vector: bool = False
    reference: Callable[[], float] | None = None  # the floor, computed once (vector side)
    ranked: list[tuple[K, float]] = field(default_factory=list)
    complete: bool = False  # reading deeper would bring no more candidates
    exhausted: bool = False  # every allowed item the engine scores at all was read
    last: float | None = None  # the best raw score an item left out of ``ranked`` may have
    top: float = 0.0
    floor: float = 0.0
    scores: dict[K, float] = field(default_factory=dict)

    def fetch(self, depth: int) -> None:
        """Read the engine's best ``depth``."""
        found = self.read(depth)
        self.ranked = [(i, s) for i, s in found if not self.vector or s >= MIN_COSINE]
        self.scores.update(self.ranked)
        self.exhausted = len(found) < depth
        # A vector read below the cut is no candidate, yet as a full-text
        # candidate it gets its cosine: the best of those bounds what is left.
        cut = len(self.ranked) < len(found)
        if cut:
            self.last = found[len(self.ranked)][1]
        else:
            self.last = None if self.exhausted or not found else found[-1][1]
        self.complete = self.exhausted or cut  # reading deeper brings no candidate
        self.top = found[0][1] if found else 0.0
        if self.reference is not None:
            floor, self.reference = self.reference(), None
            self.floor = min(floor, self.top)

    def normalised(self, raw: float | None) -> float:
        """``raw`` on the 0..1 scale (None: no score, 0)."""
        if raw is None:
            return 0.0
        span = self.top - self.floor
        if span <= 1e-12:  # every allowed item scores the same: all best
            return 1.0 if raw >= self.top - 1e-12 else 0.0
        return min(1.0, max(0.0, (raw - self.floor) / span))

    def bound(self) -> float:
        """The most an item this side did not return as a candidate can normalise to."""
        return self.normalised(self.last)


@dataclass
class Fused(Generic[K]):
    """An item with its relevance and each engine's part of it."""

    item: K
    relevance: float
    raw: dict[str, float]  # engine -> raw score (BM25, cosine); absent: no match
    normalised: dict[str, float]  # engine -> its 0..1 score
    ranks: dict[str, int]  # engine -> rank in that engine's list, when the item was in it
    score: float = 0.0  # what the items were ranked by: the relevance, or with a Bonus


@dataclass(frozen=True)
class Bonus(Generic[K]):
    """A term weighed into the ranking besides the relevance (memory search:
    recency, for a query that asks about time): an item ranks by
    ``(1 - weight) * relevance + weight * value(item)``, where ``value`` lies in
    0..1 and is at most ``best`` for any allowed item. Knowing ``best`` keeps
    the ranking exact: an unread item's score is bounded like its relevance,
    so the lists are read only as deep as the top ``limit`` by that score
    needs, not deep enough for a wider top by relevance alone."""

    weight: float
    value: Callable[[K], float]
    best: float = 1.0
    deepen: int = MAX_DEEPEN
    """Read the lists at most this many times deeper than the first depth:
    the top is exact when it is found within that depth, else the best of
    what was read (memory search caps a time query at
    :data:`TIME_DEEPEN`, see there)."""

    def score(self, relevance: float, item: K) -> float:
        return (1.0 - self.weight) * relevance + self.weight * self.value(item)

    def bound(self, relevance: float) -> float:
        return (1.0 - self.weight) * relevance + self.weight * self.best


def fuse_scores(
    sides: Sequence[Side[K]],
    limit: int,
    depth: int,
    prepare: Callable[[Sequence[K]], None],
    order: Callable[[K], tuple[object, ...]],
    bonus: Bonus[K] | None = None,
    *,
    start: int | None = None,
) -> list[Fused[K]]:
    """The best ``limit`` items by score-aware fusion of ``sides`` (each weighted
    :data:`LEXICAL_WEIGHT` / :data:`VECTOR_WEIGHT`, renormalised to 1 over the
    sides given), reading ``depth`` candidates per side first and deepening
    until no unread item can reach the top (see the module docstring).
    ``order`` breaks ties between equal scores (smaller first), once
    ``prepare`` was given every candidate (to read what it needs in one go).
    With a ``bonus``, items rank by the relevance with it (see :class:`Bonus`).
    ``start`` is the depth of the first reads when a caller knows the lists
    will be read deeper than ``depth``; how deep they may go still counts from
    ``depth`` (no read goes past that bound, whatever ``start`` is)."""
    if not sides:
        return []
    total = sum(_weight(s) for s in sides)
    weights = [_weight(s) / total for s in sides]
    deepest = depth * (MAX_DEEPEN if bonus is None else bonus.deepen)
    depth = min(max(depth, start or depth), deepest)
    while True:
        for side in sides:
            side.fetch(depth)
        items = list(dict.fromkeys(i for side in sides for i, _s in side.ranked))
        prepare(items)
        exact = _look_up(sides, weights, items, limit, bonus)
        top = _best(exact, limit)
        top.sort(key=lambda f: (-f[0], order(f[1])))
        bound = sum(w * s.bound() for w, s in zip(weights, sides, strict=True))
        threshold = round(bound if bonus is None else bonus.bound(bound), DECIMALS)
        enough = len(top) >= limit and top[limit - 1][0] > threshold
        if enough or all(s.complete for s in sides) or depth >= deepest:
            break
        depth = min(depth * 4, deepest)
    positions = ranks([(s.name, s.ranked) for s in sides])
    out = []
    for score, item, rel in top[:limit]:
        parts = {s.name: s.normalised(_known(s.scores.get(item))) for s in sides}
        raw = {s.name: v for s in sides if (v := _known(s.scores.get(item))) is not None}
        where = {name: rank for name, (rank, _score) in positions.get(item, {}).items()}
        out.append(Fused(item, round(rel, DECIMALS), raw, parts, where, score))
    return out


def _best(exact: Mapping[K, tuple[float, float]], limit: int) -> list[tuple[float, K, float]]:
    """``(score, item, relevance)`` of the items whose score is at least the
    ``limit``-th best (ties included), unsorted: only they can be in the top,
    so only they are put in the caller's order (one key per item)."""
    found = [(score, item, rel) for item, (score, rel) in exact.items()]
    if len(found) > limit:
        cut = _least_of_top(exact, limit)
        found = [f for f in found if f[0] >= cut]
    return found


def _least_of_top(exact: Mapping[K, tuple[float, float]], limit: int) -> float:
    """The ``limit``-th best score of ``exact`` (at least ``limit`` items)."""
    return heapq.nlargest(limit, (score for score, _rel in exact.values()))[-1]


def _look_up(
    sides: Sequence[Side[K]],
    weights: Sequence[float],
    items: Sequence[K],
    limit: int,
    bonus: Bonus[K] | None,
) -> dict[K, tuple[float, float]]:
    """Ask each side for the scores it has not given of those ``items`` that
    can still reach the top ``limit``; returns ``(score, relevance)`` of the
    items every side has scored (the score: what they rank by, see
    :func:`_ranking`). An unscored part is bounded by what its side left
    unread (an item one list returned and the other did not scores at most
    the other's last read score there), so an item whose bound is below the
    ``limit``-th exact score cannot reach the top and needs no lookup: deep
    lists (a time query) then ask the engines for a few scores, not for
    every candidate's. Highest bounds are asked first, then whatever can
    still reach the top once their scores are known. An item is scored
    once: its parts stay what they were once every side has given them."""
    # what an unscored part can reach: fixed once the sides were read
    bounds = [w * side.bound() for w, side in zip(weights, sides, strict=True)]
    parts = list(zip(weights, sides, bounds, strict=True))
    exact: dict[K, tuple[float, float]] = {}
    pending = list(items)
    while True:
        open_: list[tuple[float, K]] = []
        for item in pending:
            low, high, complete = 0.0, 0.0, True
            for w, side, bound in parts:
                raw = side.scores.get(item)
                if raw is None:
                    complete = False
                    high += bound
                else:
                    part = w * side.normalised(_known(raw))
                    low += part
                    high += part
            if complete:
                exact[item] = (_ranking(low, item, bonus), low)
            else:
                open_.append((_ranking(high, item, bonus), item))
        if not open_:
            return exact
        if len(exact) >= limit:
            least = _least_of_top(exact, limit)
            # (>=: an equal score may still win the tie on the caller's order)
            wanted = [item for high, item in open_ if high >= least]
        else:  # not yet ``limit`` exact scores: the best bounds first
            open_.sort(key=lambda p: -p[0])
            wanted = [item for _high, item in open_[: limit - len(exact)]]
        if not wanted:
            return exact
        for side in sides:
            missing = [i for i in wanted if i not in side.scores]
            if missing:
                found = side.lookup(missing)
                side.scores.update(found)
                # an item the engine does not match at all scores nothing there
                side.scores.update({i: float("-inf") for i in missing if i not in found})
        pending = [item for _high, item in open_]


def _ranking(relevance: float, item: K, bonus: Bonus[K] | None) -> float:
    """What ``item`` ranks by, at the precision rankings compare."""
    return round(relevance if bonus is None else bonus.score(relevance, item), DECIMALS)


def _weight(side: Side[K]) -> float:
    return VECTOR_WEIGHT if side.vector else LEXICAL_WEIGHT


def _known(value: float | None) -> float | None:
    return None if value is None or value == float("-inf") else value
