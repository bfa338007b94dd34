"""The vector index's search: exact scoring equals a brute force over the
stored vectors, ties break by key, a row scores the same in any selection,
and crossing the exact/HNSW threshold (by index size or by filter size)
keeps the top results."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitmem.index import vectors as vectors_module
from gitmem.index.vectors import EXACT_LIMIT, Vectors

DIM = 8


def _index(keys: list[int], rows: np.ndarray[Any, Any], dim: int = DIM) -> Vectors:
    # Never saved: a path that does not exist only names the index.
    index = Vectors(Path(tempfile.gettempdir()) / "never-written.usearch", dim)
    index.add(keys, np.asarray(rows, dtype=np.float32))
    return index


def _brute_force(
    index: Vectors, query: list[float], limit: int, allowed: list[int] | None
) -> list[tuple[int, float]]:
    """Every candidate read back one key at a time and scored in plain Python."""
    keys = [int(k) for k in index.index.keys]
    if allowed is not None:
        keys = [k for k in keys if k in set(allowed)]
    qnorm = max(math.sqrt(sum(x * x for x in query)), 1e-12)
    pairs = []
    for key in keys:
        stored = [int(v) for v in index.index.get(key, dtype="i8")]
        norm = math.sqrt(sum(v * v for v in stored)) or 1.0
        pairs.append((key, sum(v * q for v, q in zip(stored, query, strict=True)) / norm / qnorm))
    pairs.sort(key=lambda p: (-round(p[1], 6), p[0]))
    return pairs[:limit]


floats = st.floats(-1.0, 1.0, allow_nan=False, width=32)
vectors = st.lists(floats, min_size=DIM, max_size=DIM)


@settings(max_examples=150)
@given(
    rows=st.lists(vectors, min_size=1, max_size=60),
    keys=st.sets(st.integers(0, 2**64 - 1), min_size=60, max_size=60),
    query=vectors,
    limit=st.integers(1, 70),
    subset=st.one_of(st.none(), st.lists(st.integers(0, 59), max_size=40)),
    duplicate=st.booleans(),
)
def test_exact_search_is_the_brute_force(
    rows: list[list[float]],
    keys: set[int],
    query: list[float],
    limit: int,
    subset: list[int] | None,
    duplicate: bool,
) -> None:
    ordered = sorted(keys)[: len(rows)]
    if duplicate:  # equal vectors: their equal scores must break by key
        rows = [rows[0]] * len(rows)
    index = _index(ordered, np.array(rows))
    # allowed keys may name keys without a vector, and repeat
    allowed = None if subset is None else [sorted(keys)[i] for i in subset]
    q32 = [float(x) for x in np.asarray(query, dtype=np.float32)]
    found = index.search(np.asarray(query, dtype=np.float32), limit, allowed)
    expected = _brute_force(index, q32, limit, allowed)
    assert [k for k, _ in found] == [k for k, _ in expected]
    for (_, got), (_, want) in zip(found, expected, strict=True):
        assert got == pytest.approx(want, abs=1e-12)


def test_equal_vectors_break_ties_by_key() -> None:
    keys = [2**63 + 5, 7, 2**40, 3]
    index = _index(keys, np.ones((4, DIM)))
    found = index.search(np.ones(DIM, dtype=np.float32), 3)
    assert [k for k, _ in found] == [3, 7, 2**40]
    assert len({s for _, s in found}) == 1


def test_a_row_scores_the_same_in_any_selection() -> None:
    rng = np.random.default_rng(5)
    keys = list(range(1, 3001))
    index = _index(keys, rng.standard_normal((3000, 64)), dim=64)
    query = rng.standard_normal(64).astype(np.float32)
    everything = dict(index.search(query, 3000))
    for size in (1, 7, 500):
        allowed = rng.choice(keys, size, replace=False)
        for key, score in index.search(query, size, allowed):
            assert score == everything[key]  # bit for bit, not approximately


def _planted(rng: np.random.Generator, count: int, dim: int) -> tuple[np.ndarray[Any, Any], Any]:
    """``count`` random vectors, the first ten of them close to the query
    and each less close than the one before (so the top ten is unambiguous)."""
    query = rng.standard_normal(dim)
    query /= np.linalg.norm(query)
    rows = rng.standard_normal((count, dim))
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    for i in range(10):
        closeness = 0.98 - 0.03 * i
        noise = rows[i] - (rows[i] @ query) * query
        noise /= np.linalg.norm(noise)
        rows[i] = closeness * query + math.sqrt(1 - closeness**2) * noise
    return rows, query.astype(np.float32)


def test_crossing_the_threshold_keeps_the_top_results() -> None:
    rng = np.random.default_rng(11)
    rows, query = _planted(rng, EXACT_LIMIT + 300, 32)
    keys = [int(k) for k in rng.choice(2**62, len(rows), replace=False)]
    small = _index(keys[:EXACT_LIMIT], rows[:EXACT_LIMIT], dim=32)
    exact = small.search(query, 10)
    assert small._matrix is not None  # the exact path, from one matrix
    large = _index(keys, rows, dim=32)
    assert len(large) > EXACT_LIMIT
    approximate = large.search(query, 10)
    assert large._matrix is None  # the HNSW path
    assert approximate == exact
    assert [k for k, _ in exact] == keys[:10]
    # The same crossing by the size of a filter on the large index.
    allowed = keys[:EXACT_LIMIT]
    assert large.search(query, 10, allowed) == exact
    assert large.search(query, 10, [*allowed, *keys[-1:]]) == exact


def test_a_filter_on_a_large_index_widens_the_walk() -> None:
    """A filter that lets few of the nearest vectors through still gets
    ``limit`` results from the HNSW path (it asks usearch for more)."""
    rng = np.random.default_rng(2)
    rows, query = _planted(rng, EXACT_LIMIT * 2, 16)
    keys = list(range(1, len(rows) + 1))
    index = _index(keys, rows, dim=16)
    allowed = keys[10::2]  # none of the planted ten, half of the rest
    found = index.search(query, 20, allowed)
    assert len(found) == 20
    assert all(k in set(allowed) for k, _ in found)
    assert found == sorted(found, key=lambda p: (-round(p[1], 6), p[0]))


def test_the_matrix_is_read_again_after_a_change() -> None:
    index = _index([1, 2], np.eye(DIM)[:2])
    query = np.eye(DIM, dtype=np.float32)[2]
    assert [k for k, _ in index.search(query, 1)] in ([1], [2])
    index.add([3], np.eye(DIM, dtype=np.float32)[2:3])
    assert index.search(query, 1) == [(3, 1.0)]
    index.remove([3])
    assert 3 not in [k for k, _ in index.search(query, 3)]


def test_best_sorts_only_what_can_reach_the_top() -> None:
    keys = np.arange(10, dtype=np.uint64)
    scores = np.array([0.1, 0.5, 0.5000001, 0.9, 0.2, 0.5, 0.3, 0.4, 0.5, 0.0])
    # 0.5000001 rounds to 0.5: it ties with the other 0.5s and breaks by key
    assert vectors_module.best(keys, scores, 3) == [(3, 0.9), (1, 0.5), (2, 0.5000001)]
    assert vectors_module.best(keys, scores, 20)[-1] == (9, 0.0)
    # below the limit-th score, yet tied with it at 6 decimals: the lower key wins
    near = np.array([0.4999996, 0.9, 0.5000004])
    assert vectors_module.best(np.arange(3, dtype=np.uint64), near, 2) == [(1, 0.9), (0, 0.4999996)]


@given(st.lists(st.integers(0, 2**64 - 1), max_size=40), st.booleans())
def test_key_array_is_unique_sorted_whatever_it_is_given(keys: list[int], presorted: bool) -> None:
    from gitmem.index.vectors import key_array

    given_keys: Any = np.unique(np.asarray(keys, dtype=np.uint64)) if presorted else keys
    got = key_array(given_keys)
    assert got.dtype == np.uint64
    assert got.tolist() == sorted(set(keys))


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(1, 30),
    asked=st.lists(st.integers(0, 39), max_size=25),
    whole=st.booleans(),
    shard_size=st.sampled_from([0, 4, 7]),
)
def test_stored_by_key_gives_each_present_keys_vector(
    count: int, asked: list[int], whole: bool, shard_size: int
) -> None:
    """The hybrid search reads the full-text candidates' vectors this way
    while the query embeds: the keys that have one (absent ones and keys of
    other indexes left out), each with its stored row, in one index or in
    shards, before or after a small index was read whole."""
    from unittest import mock

    from gitmem.index import vectorshards

    rng = np.random.default_rng(count)
    keys = [1_000 + 7 * i for i in range(40)]
    rows = rng.standard_normal((count, DIM)).astype(np.float32)
    wanted = [keys[i] for i in asked]
    with tempfile.TemporaryDirectory() as tmp:
        if shard_size:
            with mock.patch.object(vectorshards, "SHARD_VECTORS", shard_size):
                index: Any = vectorshards.VectorShards.fresh(Path(tmp), DIM)
                index.add(keys[:count], rows)
        else:
            index = _index(keys[:count], rows)
            if whole:
                index.search(rows[0], 1)  # reads the small index whole
                assert index._matrix is not None
        present, stored = index.stored_by_key(wanted)
        expected = [k for k in wanted if k in set(keys[:count])]
        assert sorted(present.tolist()) == sorted(expected)
        if not shard_size:
            assert present.tolist() == expected  # in the order asked
        single = index if not shard_size else None
        for key, row in zip(present.tolist(), stored, strict=True):
            reference = _index(keys[:count], rows) if single is None else single
            assert np.array_equal(row, reference.index.get(key, dtype="i8"))
