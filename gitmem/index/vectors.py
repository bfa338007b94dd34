"""The vector index: usearch HNSW over event texts, int8-quantised.

int8 measured smaller and faster than f16 at the same top-hit accuracy
(``../shared/BRIEF.md``). Keys are the first 64 bits of event ids (the
events table stores them in its ``key64`` column). usearch's ``remove`` only
marks a slot free and keeps its bytes in the saved file, so a redaction
rebuilds the index from the remaining vectors instead.

Scoring is exact wherever it can be: an index of at most :data:`EXACT_LIMIT`
vectors, or a filter allowing at most that many keys, is scored against
every candidate; a larger search walks the HNSW graph and rescores what it
found the same way. One function computes every cosine
(:func:`cosines`), from the stored int8 vector and the query in float64,
one row at a time in a fixed order (``einsum``, not BLAS, whose threads and
blocking vary with the matrix): an event's score is then the same whichever
path found it and whatever else was scored with it. A small index's vectors
are read from usearch once per opened index into one contiguous matrix
(usearch hands vectors out one array per key, ~2 µs each).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from gitmem.errors import IndexDamagedError
from gitmem.index import compute

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from usearch.index import Index

VECTORS_FILE = "vectors.usearch"
EXACT_LIMIT = 4096  # at most this many allowed keys: exact scoring beats a filtered ANN walk

Keys: TypeAlias = "Sequence[int] | NDArray[np.uint64]"
"""Keys as a list of ints or a numpy array (the latter costs no conversion)."""


def key64(event_id: str) -> int:
    """The usearch key of an event: the first 16 hex digits of its id."""
    return int(event_id[:16], 16)


def _new(dim: int) -> Index:
    from usearch.index import Index

    return Index(ndim=dim, metric="cos", dtype="i8", connectivity=16, expansion_add=64)


class _Matrix:
    """Vectors read out of usearch: keys ascending, their int8 rows and norms."""

    def __init__(self, keys: NDArray[np.uint64], rows: NDArray[np.int8]) -> None:
        self.keys = keys
        self.rows = rows
        self.norms = norms(rows)

    def take(self, positions: NDArray[np.intp]) -> _Matrix:
        part = _Matrix.__new__(_Matrix)
        part.keys, part.rows, part.norms = (
            self.keys[positions],
            self.rows[positions],
            self.norms[positions],
        )
        return part


def norms(rows: NDArray[np.int8]) -> NDArray[np.float64]:
    """Each row's Euclidean norm (exact: the squares are summed as integers);
    a zero vector gets 1.0, so its cosine is 0 instead of NaN."""
    import numpy as np

    squares = np.einsum("ij,ij->i", rows, rows, dtype=np.int64)
    result: NDArray[np.float64] = np.sqrt(squares.astype(np.float64))
    result[result == 0] = 1.0
    return result


def cosines(
    rows: NDArray[np.int8], row_norms: NDArray[np.float64], query: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The cosine similarity of each row with ``query``. Each row's dot product
    is summed in the same order whatever the other rows are (``einsum``'s own
    loop), so a row scores bit for bit the same in any selection of rows."""
    import numpy as np

    qnorm = max(float(np.sqrt(np.dot(query, query))), 1e-12)
    dots: NDArray[np.float64] = np.einsum("ij,j->i", rows, query, dtype=np.float64)
    result: NDArray[np.float64] = dots / row_norms / qnorm
    return result


def best(
    keys: NDArray[np.uint64], scores: NDArray[np.float64], limit: int
) -> list[tuple[int, float]]:
    """The ``limit`` best (key, score): score rounded to 6 decimals
    descending, then key. Only the candidates that can reach the top (the
    ``limit``-th score, less what rounding can tie with it) are sorted in Python."""
    import numpy as np

    if len(scores) > limit:
        threshold = float(np.partition(scores, len(scores) - limit)[len(scores) - limit])
        # round(s, 6) < round(threshold, 6) for every s below this: they cannot tie
        near = np.flatnonzero(scores >= threshold - 1e-6)
        keys, scores = keys[near], scores[near]
    pairs = [(int(k), float(s)) for k, s in zip(keys.tolist(), scores.tolist(), strict=True)]
    pairs.sort(key=lambda p: (-round(p[1], 6), p[0]))
    return pairs[:limit]


def _positions(ordered: NDArray[np.uint64], wanted: NDArray[np.uint64]) -> NDArray[np.intp]:
    """Positions in ``ordered`` (ascending) of the values of ``wanted`` it holds."""
    import numpy as np

    if not len(ordered) or not len(wanted):
        return np.zeros(0, dtype=np.intp)
    at = np.searchsorted(ordered, wanted)
    inside = at < len(ordered)
    at, wanted = at[inside], wanted[inside]
    found: NDArray[np.intp] = at[ordered[at] == wanted]
    return found


def key_array(keys: Keys) -> NDArray[np.uint64]:
    """``keys`` as a sorted array without repeats (an array that already is
    one is taken as it is: checking costs a millisecond for a million keys,
    sorting them again 140)."""
    import numpy as np

    array = np.asarray(keys, dtype=np.uint64)
    if array.ndim == 1 and (len(array) < 2 or bool(np.all(array[1:] > array[:-1]))):
        return array
    return compute.sorted_distinct(array)  # type: ignore[no-any-return]


class Vectors:
    """A usearch index file with the model it was built by."""

    def __init__(self, path: Path, dim: int, *, view: bool = False) -> None:
        self.path = path
        self.dim = dim
        self._matrix: _Matrix | None = None  # every vector, for a small index
        if path.exists():
            from usearch.index import Index

            try:
                index = Index.restore(str(path), view=view)
            except (ValueError, RuntimeError, OSError) as exc:
                raise IndexDamagedError(f"{path.name}: {exc}") from None
            if index is None or index.ndim != dim:
                raise IndexDamagedError(f"{path.name}: not a {dim}-dimension usearch index")
            self.index = index
        else:
            self.index = _new(dim)

    def close(self) -> None:
        """Unmap the file (for an index opened with ``view``) and free the
        memory; the object is unusable afterwards."""
        self._matrix = None
        self.index.reset()  # type: ignore[no-untyped-call]  # usearch leaves it unannotated

    def __len__(self) -> int:
        return len(self.index)

    def contains(self, keys: Keys) -> list[bool]:
        import numpy as np

        if not len(keys):
            return []
        found = self.index.contains(np.asarray(keys, dtype=np.uint64))
        return [bool(x) for x in np.atleast_1d(found)]

    def stored(self, keys: Keys) -> NDArray[np.int8]:
        """The stored int8 vectors of those of ``keys`` that have one, a row
        each, in the order of ``keys``."""
        return self.stored_by_key(keys)[1]

    def stored_by_key(self, keys: Keys) -> tuple[NDArray[np.uint64], NDArray[np.int8]]:
        """Those of ``keys`` that have a vector, and their stored int8
        vectors, a row each (in the order of ``keys``)."""
        import numpy as np

        wanted = np.asarray(keys, dtype=np.uint64).reshape(-1)
        if not len(wanted):
            return wanted, np.zeros((0, self.dim), dtype=np.int8)
        if self._matrix is not None:  # a small index read whole already
            at = _positions(self._matrix.keys, wanted)
            return self._matrix.keys[at], self._matrix.rows[at]
        present = wanted[np.atleast_1d(self.index.contains(wanted)).astype(bool)]
        return present, self._rows(present)

    def add(self, keys: Keys, vectors: NDArray[np.float32]) -> None:
        import numpy as np

        if len(keys):
            self._matrix = None
            self.index.add(np.asarray(keys, dtype=np.uint64), vectors, threads=2)

    def remove(self, keys: Sequence[int]) -> int:
        """Remove the vectors of ``keys`` (absent ones are skipped); returns how
        many were there. The slots are only marked free, their bytes stay in
        the saved file: for a redaction, :func:`rebuild` instead."""
        import numpy as np

        present = [k for k, ok in zip(keys, self.contains(keys), strict=True) if ok]
        if present:
            self._matrix = None
            self.index.remove(np.asarray(present, dtype=np.uint64))
        return len(present)

    def save(self) -> None:
        import os

        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        self.index.save(str(tmp))
        os.replace(tmp, self.path)

    def search(
        self,
        query: NDArray[np.float32],
        limit: int,
        allowed: Keys | None = None,
        *,
        ordered: bool = False,
    ) -> list[tuple[int, float]]:
        """(key, cosine similarity) best first, ties (at 6 decimals) by key.

        ``allowed`` restricts the keys (``ordered``: it is a numpy array
        already sorted without repeats, which checking again would cost a
        pass over it, ~0.3 ms for 400,000 keys). Up to ``EXACT_LIMIT`` candidates (the
        allowed keys, or the whole index) are scored exactly; otherwise the
        approximate search widens until enough of its results are allowed, and
        those are rescored exactly (see the module docstring).
        """
        import numpy as np

        size = len(self.index)
        if limit <= 0 or size == 0:
            return []
        q = np.asarray(query, dtype=np.float64).reshape(self.dim)
        if allowed is None or ordered:
            wanted = None if allowed is None else np.asarray(allowed, dtype=np.uint64)
        else:
            wanted = key_array(allowed)
        if size <= EXACT_LIMIT:
            matrix = self._everything()
            if wanted is not None:
                matrix = matrix.take(_positions(matrix.keys, wanted))
            return best(matrix.keys, cosines(matrix.rows, matrix.norms, q), limit)
        if wanted is not None and len(wanted) <= EXACT_LIMIT:
            return self._exact(q, wanted, limit)
        count = min(size, max(limit * 4, 64))
        q32 = np.asarray(query, dtype=np.float32).reshape(self.dim)
        while True:
            found = np.asarray(self.index.search(q32, count).keys, dtype=np.uint64)
            if wanted is not None:
                found = wanted[_positions(wanted, np.sort(found))]
            if len(found) >= limit or count >= size:
                break
            count = min(size, count * 4)
        # Rescore exactly: with and without a filter, the same event then gets
        # the same cosine (usearch's int8 distance differs by up to ~0.01).
        return self._exact(q, compute.sorted_distinct(found), limit)

    def _everything(self) -> _Matrix:
        """Every vector of the index, read once (see the module docstring)."""
        if self._matrix is None:
            import numpy as np

            keys = np.sort(np.asarray(self.index.keys, dtype=np.uint64))
            self._matrix = _Matrix(keys, self._rows(keys))
        return self._matrix

    def _rows(self, keys: NDArray[np.uint64]) -> NDArray[np.int8]:
        """The stored int8 vectors of ``keys`` (all present), one row each."""
        import numpy as np

        if not len(keys):
            return np.zeros((0, self.dim), dtype=np.int8)
        # one array per key (a tuple: every key is present, none is None)
        found: tuple[NDArray[np.int8], ...] = self.index.get(keys, dtype="i8")  # type: ignore[assignment]
        return np.vstack(found).reshape(len(keys), self.dim)

    def _exact(
        self, query: NDArray[np.float64], keys: NDArray[np.uint64], limit: int
    ) -> list[tuple[int, float]]:
        """The best ``limit`` of ``keys`` (sorted, distinct; absent ones skipped)."""
        import numpy as np

        if not len(keys):
            return []
        present = keys[np.atleast_1d(self.index.contains(keys)).astype(bool)]
        if not len(present):
            return []
        matrix = _Matrix(present, self._rows(present))
        return best(matrix.keys, cosines(matrix.rows, matrix.norms, query), limit)


def start_rebuild(path: Path, dim: int) -> Vectors:
    """A new, empty index in place of the file at ``path`` (redaction, model
    switch, corruption): add to it, then save. The old file goes first: its
    bytes may hold what was redacted."""
    if path.exists():
        path.unlink()
    return Vectors(path, dim)


def rebuild(path: Path, dim: int, keys: Keys, vectors: NDArray[np.float32]) -> Vectors:
    """A fresh index of exactly these vectors."""
    fresh = start_rebuild(path, dim)
    fresh.add(keys, vectors)
    fresh.save()
    return fresh
