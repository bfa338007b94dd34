"""The vector index: usearch HNSW over event texts, int8-quantised.

int8 measured smaller and faster than f16 at the same top-hit accuracy
(``../shared/BRIEF.md``). Keys are the first 64 bits of event ids (the
events table stores them in its ``key64`` column). usearch's ``remove`` only
marks a slot free and keeps its bytes in the saved file, so a redaction
rebuilds the index from the remaining vectors instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.errors import IndexDamagedError

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray
    from usearch.index import Index

VECTORS_FILE = "vectors.usearch"
EXACT_LIMIT = 4096  # at most this many allowed keys: exact scoring beats a filtered ANN walk


def key64(event_id: str) -> int:
    """The usearch key of an event: the first 16 hex digits of its id."""
    return int(event_id[:16], 16)


def _new(dim: int) -> Index:
    from usearch.index import Index

    return Index(ndim=dim, metric="cos", dtype="i8", connectivity=16, expansion_add=64)


class Vectors:
    """A usearch index file with the model it was built by."""

    def __init__(self, path: Path, dim: int, *, view: bool = False) -> None:
        self.path = path
        self.dim = dim
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
        self.index.reset()  # type: ignore[no-untyped-call]  # usearch leaves it unannotated

    def __len__(self) -> int:
        return len(self.index)

    def contains(self, keys: Sequence[int]) -> list[bool]:
        import numpy as np

        if not keys:
            return []
        found = self.index.contains(np.asarray(keys, dtype=np.uint64))
        return [bool(x) for x in np.atleast_1d(found)]

    def add(self, keys: Sequence[int], vectors: NDArray[np.float32]) -> None:
        import numpy as np

        if len(keys):
            self.index.add(np.asarray(keys, dtype=np.uint64), vectors, threads=2)

    def remove(self, keys: Sequence[int]) -> int:
        """Remove the vectors of ``keys`` (absent ones are skipped); returns how
        many were there. The slots are only marked free, their bytes stay in
        the saved file: for a redaction, :func:`rebuild` instead."""
        import numpy as np

        present = [k for k, ok in zip(keys, self.contains(keys), strict=True) if ok]
        if present:
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
        allowed: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:
        """(key, cosine similarity) best first, ties by key.

        ``allowed`` restricts the keys. Up to ``EXACT_LIMIT`` candidates (the
        allowed keys, or the whole index) are scored exactly; otherwise the
        approximate search widens until enough of its results are allowed, and
        those are rescored exactly.
        """
        import numpy as np

        if limit <= 0 or len(self.index) == 0:
            return []
        if allowed is None and len(self.index) <= EXACT_LIMIT:
            allowed = [int(k) for k in self.index.keys]
        if allowed is not None and len(allowed) <= EXACT_LIMIT:
            return self._exact(query, sorted(allowed), limit)
        permitted = None if allowed is None else set(allowed)
        count = min(len(self.index), max(limit * 4, 64))
        while True:
            result = self.index.search(np.asarray(query, dtype=np.float32), count)
            pairs = [
                (int(k), 1.0 - float(d))
                for k, d in zip(result.keys, result.distances, strict=True)
                if permitted is None or int(k) in permitted
            ]
            if len(pairs) >= limit or count >= len(self.index):
                break
            count = min(len(self.index), count * 4)
        # Rescore exactly: with and without a filter, the same event then gets
        # the same cosine (usearch's int8 distance differs by up to ~0.01).
        return self._exact(query, sorted(k for k, _d in pairs), limit)

    def _exact(
        self, query: NDArray[np.float32], keys: list[int], limit: int
    ) -> list[tuple[int, float]]:
        import numpy as np

        present = [k for k, ok in zip(keys, self.contains(keys), strict=True) if ok]
        if not present:
            return []
        stored = np.asarray(self.index.get(np.asarray(present, dtype=np.uint64)), np.float32)
        stored = stored.reshape(len(present), self.dim)
        norms = np.linalg.norm(stored, axis=1)
        norms[norms == 0] = 1.0
        q = np.asarray(query, dtype=np.float32).reshape(self.dim)
        scores = (stored @ q) / norms / max(float(np.linalg.norm(q)), 1e-12)
        pairs = [(k, float(s)) for k, s in zip(present, scores, strict=True)]
        pairs.sort(key=lambda p: (-round(p[1], 6), p[0]))
        return pairs[:limit]


def rebuild(path: Path, dim: int, keys: Sequence[int], vectors: NDArray[np.float32]) -> Vectors:
    """A fresh index of exactly these vectors (redaction, model switch, corruption)."""
    if path.exists():
        path.unlink()
    fresh = Vectors(path, dim)
    fresh.add(keys, vectors)
    fresh.save()
    return fresh
