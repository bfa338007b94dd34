"""Score-aware fusion (gitmem.index.fusion) against a brute-force ranking.

Whatever depth the candidate lists are first read at, the fused top must be
the one computed from every item's exact scores: the lists are read deeper
until nothing unread can reach it, and each candidate is scored by both engines.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import example, given, settings
from hypothesis import strategies as st

from gitmem.index import fusion
from gitmem.index.fusion import MIN_COSINE, Side, fuse_scores

SCORES = st.floats(min_value=0.0, max_value=30.0, allow_nan=False).map(lambda x: round(x, 2))
COSINES = st.floats(min_value=-0.3, max_value=1.0, allow_nan=False).map(lambda x: round(x, 2))
ITEMS = st.lists(
    st.tuples(st.one_of(st.none(), SCORES.filter(lambda x: x > 0)), st.one_of(st.none(), COSINES)),
    min_size=0,
    max_size=60,
)


def _sides(
    items: list[tuple[float | None, float | None]], reads: list[int], floor: float
) -> list[Side[int]]:
    bm25 = {i: s for i, (s, _c) in enumerate(items) if s is not None}
    cosine = {i: c for i, (_s, c) in enumerate(items) if c is not None}

    def reader(scores: dict[int, float]) -> object:
        ranked = sorted(scores.items(), key=lambda p: (-p[1], p[0]))

        def read(depth: int) -> list[tuple[int, float]]:
            reads.append(depth)
            return ranked[:depth]

        return read

    def lookup(scores: dict[int, float]) -> object:
        return lambda wanted: {i: scores[i] for i in wanted if i in scores}

    return [
        Side("lexical", reader(bm25), lookup(bm25)),  # type: ignore[arg-type]
        Side(
            "vector",
            reader(cosine),  # type: ignore[arg-type]
            lookup(cosine),  # type: ignore[arg-type]
            vector=True,
            reference=lambda: floor,
        ),
    ]


def _brute(
    items: list[tuple[float | None, float | None]], limit: int, floor: float
) -> list[tuple[int, float]]:
    bm25_top = max((s for s, _c in items if s is not None), default=0.0)
    cos_top = max((c for _s, c in items if c is not None), default=0.0)
    low = min(floor, cos_top)
    fused = []
    for i, (s, c) in enumerate(items):
        lexical = s / bm25_top if s is not None and bm25_top > 0 else 0.0
        if c is None:
            vector = 0.0
        elif cos_top - low <= 1e-12:
            vector = 1.0 if c >= cos_top - 1e-12 else 0.0
        else:
            vector = min(1.0, max(0.0, (c - low) / (cos_top - low)))
        candidate = s is not None or (c is not None and c >= MIN_COSINE)
        if candidate:
            fused.append((round(0.5 * lexical + 0.5 * vector, fusion.DECIMALS), i))
    fused.sort(key=lambda f: (-f[0], f[1]))
    return [(i, rel) for rel, i in fused[:limit]]


def _fused(
    sides: Sequence[Side[int]], limit: int, depth: int, start: int | None = None
) -> list[tuple[int, float]]:
    found = fuse_scores(sides, limit, depth, lambda _items: None, lambda i: (i,), start=start)
    return [(f.item, f.relevance) for f in found]


@settings(max_examples=300, deadline=None)
@given(
    items=ITEMS,
    limit=st.integers(1, 12),
    depth=st.integers(1, 8),
    reference=st.one_of(st.none(), COSINES),
    start=st.one_of(st.none(), st.integers(1, 40)),
)
# a long tie deepens to the cap; a start that is no power-of-4 multiple of
# the depth must not step past it (3, 12, 48, then 64, not 192)
@example(items=[(1.0, 0.5)] * 60, limit=3, depth=1, reference=None, start=3)
def test_the_fused_top_is_the_exact_one_whatever_the_first_depth(
    items: list[tuple[float | None, float | None]],
    limit: int,
    depth: int,
    reference: float | None,
    start: int | None,
) -> None:
    # the floor: the lowest cosine (of a sample that holds them all), or any other
    lowest = min((c for _s, c in items if c is not None), default=0.0)
    floor = lowest if reference is None else reference
    reads: list[int] = []
    got = _fused(_sides(items, reads, floor), limit, depth, start)
    expected = _brute(items, limit, floor)
    assert [i for i, _r in got] == [i for i, _r in expected], (got, expected)
    assert all(abs(r - dict(expected)[i]) < 1e-9 for i, r in got), (got, expected)
    assert reads[:2] == [max(depth, start or 0)] * 2  # both sides' first reads
    assert max(reads, default=0) <= max(depth * fusion.MAX_DEEPEN, start or 0)


@settings(max_examples=300, deadline=None)
@given(
    items=ITEMS,
    limit=st.integers(1, 12),
    depth=st.integers(1, 8),
    weight=st.sampled_from([0.1, 0.3, 0.9]),
    values=st.lists(st.floats(0.0, 1.0, allow_nan=False).map(lambda x: round(x, 3)), min_size=60),
    slack=st.sampled_from([0.0, 0.25]),
)
def test_with_a_bonus_the_top_is_the_exact_one_by_the_bonused_score(
    items: list[tuple[float | None, float | None]],
    limit: int,
    depth: int,
    weight: float,
    values: list[float],
    slack: float,
) -> None:
    # memory search's recency for a query about time: each item's value is at
    # most ``best`` (the newest allowed item's), which may also be a loose bound
    lowest = min((c for _s, c in items if c is not None), default=0.0)
    best = min(1.0, max(values[: len(items)], default=0.0) + slack)
    bonus = fusion.Bonus(weight, lambda i: values[i], best)
    reads: list[int] = []
    found = fuse_scores(
        _sides(items, reads, lowest), limit, depth, lambda _i: None, lambda i: (i,), bonus
    )
    relevance = dict(_brute(items, len(items), lowest))
    expected = sorted(
        relevance,
        key=lambda i: (
            -round((1 - weight) * relevance[i] + weight * values[i], fusion.DECIMALS),
            i,
        ),
    )[:limit]
    assert [f.item for f in found] == expected
    for f in found:
        assert abs(f.relevance - relevance[f.item]) < 1e-9
        assert abs(f.score - ((1 - weight) * relevance[f.item] + weight * values[f.item])) < 1e-9
    assert max(reads, default=0) <= depth * fusion.MAX_DEEPEN


def test_a_bonus_reads_no_deeper_than_its_top_needs() -> None:
    # 40 items, every one matched by both engines; the bonus is the same for
    # all: the top 3 by score is the top 3 by relevance, read at the first depth
    items: list[tuple[float | None, float | None]] = [
        (float(40 - i), round(0.9 - i / 100, 2)) for i in range(40)
    ]
    reads: list[int] = []
    bonus = fusion.Bonus(0.1, lambda _i: 0.5, 0.5)
    found = fuse_scores(_sides(items, reads, 0.0), 3, 5, lambda _i: None, lambda i: (i,), bonus)
    assert [f.item for f in found] == [0, 1, 2]
    assert reads == [5, 5]
    # a loose bound (some unread item might be newer) makes it read deeper
    reads.clear()
    loose = fusion.Bonus(0.1, lambda _i: 0.5, 1.0)
    fuse_scores(_sides(items, reads, 0.0), 3, 5, lambda _i: None, lambda i: (i,), loose)
    assert max(reads) > 5


def test_a_time_query_reads_at_most_four_times_deeper() -> None:
    # every item matches about equally and the newest are read last: an exact
    # top by relevance and recency would read all 400; capped, the best of
    # the first 4 x 5 read, the same every time
    items: list[tuple[float | None, float | None]] = [
        (round(10.0 - i / 1000, 3), round(0.8 - i / 10000, 4)) for i in range(400)
    ]
    newness = [i / 400 for i in range(400)]
    reads: list[int] = []
    capped = fusion.Bonus(0.1, lambda i: newness[i], 1.0, fusion.TIME_DEEPEN)
    found = fuse_scores(_sides(items, reads, 0.0), 3, 5, lambda _i: None, lambda i: (i,), capped)
    assert max(reads) == 5 * fusion.TIME_DEEPEN
    assert [f.item for f in found] == [19, 18, 17]  # the newest of those read
    again = fuse_scores(_sides(items, [], 0.0), 3, 5, lambda _i: None, lambda i: (i,), capped)
    assert [f.item for f in again] == [19, 18, 17]
    # read as deep as the cap at once (memory search, a query about time): one
    # read a side, the same top
    reads.clear()
    deep = fuse_scores(
        _sides(items, reads, 0.0), 3, 5, lambda _i: None, lambda i: (i,), capped, start=20
    )
    assert reads == [20, 20]
    assert [f.item for f in deep] == [19, 18, 17]
    exact = fusion.Bonus(0.1, lambda i: newness[i], 1.0, 1000)  # uncapped
    found = fuse_scores(_sides(items, reads, 0.0), 3, 5, lambda _i: None, lambda i: (i,), exact)
    assert [f.item for f in found] == [399, 398, 397]


def test_only_candidates_that_can_reach_the_top_are_looked_up() -> None:
    # the lists agree at the top and part ways below: an item one list ranks
    # low cannot reach the top 3 whatever the other engine gives it, so its
    # other score is not asked for
    items: list[tuple[float | None, float | None]] = []
    for i in range(60):
        bm25 = 30.0 - i / 2 if i < 30 or i % 2 == 0 else None
        cosine = round(0.9 - i / 100, 2) if i < 30 or i % 2 == 1 else None
        items.append((bm25, cosine))
    asked: list[int] = []
    sides = _sides(items, [], 0.0)
    for side in sides:
        lookup = side.lookup
        side.lookup = lambda wanted, lookup=lookup: asked.extend(wanted) or lookup(wanted)  # type: ignore[method-assign, misc]
    found = fuse_scores(sides, 3, 20, lambda _i: None, lambda i: (i,))
    assert [f.item for f in found] == [0, 1, 2]
    assert all(f.raw.keys() == {"lexical", "vector"} for f in found)
    assert len(asked) < 10, asked  # of the ~20 read by one list and not the other


def test_parts_raw_scores_and_ranks() -> None:
    items: list[tuple[float | None, float | None]] = [
        (10.0, 0.2),  # the best BM25
        (5.0, 0.9),  # the best cosine
        (None, 0.5),  # a paraphrase: vectors only
        (2.0, None),  # no vector yet
    ]
    found = fuse_scores(_sides(items, [], 0.0), 10, 1, lambda _i: None, lambda i: (i,))
    by = {f.item: f for f in found}
    assert by[0].normalised == {"lexical": 1.0, "vector": 0.2 / 0.9}
    assert by[1].relevance == 0.5 * 0.5 + 0.5 * 1.0 and by[1].raw == {"lexical": 5.0, "vector": 0.9}
    assert by[2].raw == {"vector": 0.5} and by[2].normalised["lexical"] == 0.0
    assert by[3].raw == {"lexical": 2.0} and by[3].normalised["vector"] == 0.0
    assert [f.item for f in found] == [1, 0, 2, 3]
    # ranks are positions in each engine's own list, as far as it was read
    assert by[0].ranks["lexical"] == 1 and by[1].ranks["vector"] == 1


def test_one_side_alone_and_no_side() -> None:
    items: list[tuple[float | None, float | None]] = [(3.0, 0.5), (6.0, 0.1), (None, 0.8)]
    lexical, _vector = _sides(items, [], 0.0)
    found = fuse_scores([lexical], 5, 1, lambda _i: None, lambda i: (i,))
    assert [(f.item, f.relevance) for f in found] == [(1, 1.0), (0, 0.5)]
    assert fuse_scores([], 5, 1, lambda _i: None, lambda i: (i,)) == []


def test_ties_follow_the_callers_order() -> None:
    items: list[tuple[float | None, float | None]] = [(4.0, 0.5)] * 6
    found = fuse_scores(
        _sides(items, [], 0.0), 6, 2, lambda _i: None, lambda i: (-i,)
    )  # e.g. newer first
    assert [f.item for f in found] == [5, 4, 3, 2, 1, 0]
    assert {f.relevance for f in found} == {1.0}
