"""Reciprocal rank fusion: how hybrid search turns ranked lists into one.

Shared by memory search (:mod:`gitmem.retrieval.search`) and code search
(:mod:`gitmem.graph.codeindex`), so a score means the same in both: an item's
relevance is ``sum(1/(k + rank))`` over the engines that found it, divided by
the best score any item could get (``engines/(k + 1)``), so 1.0 is "first in
every engine". Equal engine scores share a rank (rounded to 6 decimals): an
arbitrary tie-break must not decide which of two equally good items ranks
higher.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

RRF_K = 60
MIN_COSINE = 0.1  # below this a static embedder's neighbours are noise

K = TypeVar("K", bound=Hashable)

Ranks = dict[str, tuple[int, float]]
"""engine name -> (rank in that engine, the engine's own score)."""


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
