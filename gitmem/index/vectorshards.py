"""The memory index's vectors in shards of at most :data:`SHARD_VECTORS`.

usearch builds its HNSW graph in memory, about 750 bytes a vector at 256
dimensions: one index of a million events is 750 MB, more than an index
build may hold with everything else. So the vectors are split into usearch
files (``vectors.usearch``, ``vectors.1.usearch``, …) of at most
:data:`SHARD_VECTORS` each. A build fills one shard at a time, saves it and
keeps it only memory-mapped; an incremental refresh loads the last shard
(the one it adds to) and maps the others. A search asks every shard for its
best ``limit`` (each scored exactly, see :mod:`gitmem.index.vectors`) and
keeps the best ``limit`` of them all: the same cosine for the same event
whichever shard holds it, ties by key. A store below
:data:`SHARD_VECTORS` texts has one shard, ``vectors.usearch``, as before.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.index.vectors import VECTORS_FILE, Keys, Vectors, key_array

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

SHARD_VECTORS = 262_144
_SHARD = re.compile(r"vectors(?:\.([1-9][0-9]*))?\.usearch")


def shard_name(number: int) -> str:
    return VECTORS_FILE if number == 0 else f"vectors.{number}.usearch"


def shard_number(name: str) -> int | None:
    """The shard's number, or None when ``name`` is not a shard's."""
    found = _SHARD.fullmatch(name)
    if found is None:
        return None
    return int(found.group(1) or 0)


def listed(names: Iterable[str]) -> list[str]:
    """The shard names among ``names``, in order."""
    numbered = [(n, name) for name in names if (n := shard_number(name)) is not None]
    return [name for _n, name in sorted(numbered)]


def on_disk(directory: Path) -> list[str]:
    """The shard files in ``directory``, in order."""
    return listed(p.name for p in directory.iterdir() if p.is_file()) if directory.is_dir() else []


def remove_all(directory: Path) -> None:
    for name in on_disk(directory):
        (directory / name).unlink(missing_ok=True)


class VectorShards:
    """A sequence of usearch shards read and searched as one index."""

    def __init__(self, directory: Path, dim: int, names: Sequence[str], *, view: bool) -> None:
        self.directory = directory
        self.dim = dim
        self.view = view
        self.names = list(names)
        self.shards: list[Vectors] = []
        self.dirty: set[int] = set()
        self.loaded: set[int] = set()  # shards in memory (not memory-mapped): they can change
        try:
            for name in self.names:
                if not view:
                    self.loaded.add(len(self.shards))
                self.shards.append(Vectors(directory / name, dim, view=view))
        except BaseException:
            self.close()
            raise

    @classmethod
    def for_update(cls, directory: Path, dim: int, names: Sequence[str]) -> VectorShards:
        """The shards ``names``, every full one memory-mapped, the last loaded
        to be added to (a refresh holds one shard in memory, not the index)."""
        shards = cls(directory, dim, [], view=True)
        shards.view = False
        shards.names = list(names)
        try:
            for number, name in enumerate(names):
                last = number == len(names) - 1
                index = Vectors(directory / name, dim, view=True)
                if last and len(index) < SHARD_VECTORS:
                    index.close()
                    index = Vectors(directory / name, dim)
                    shards.loaded.add(number)
                shards.shards.append(index)
        except BaseException:
            shards.close()
            raise
        return shards

    @classmethod
    def fresh(cls, directory: Path, dim: int) -> VectorShards:
        """An empty index in place of the shards in ``directory`` (those go
        first: their bytes may hold what was redacted)."""
        remove_all(directory)
        shards = cls(directory, dim, [], view=True)
        shards.view = False
        return shards

    def __len__(self) -> int:
        return sum(len(s) for s in self.shards)

    def contains(self, keys: Keys) -> list[bool]:
        import numpy as np

        if not len(keys):
            return []
        found = np.zeros(len(keys), dtype=bool)
        for shard in self.shards:
            found |= np.asarray(shard.contains(keys), dtype=bool)
        return [bool(x) for x in found]

    def stored(self, keys: Keys) -> NDArray[np.int8]:
        """The stored vectors of those of ``keys`` that have one, a row each
        (shard by shard)."""
        import numpy as np

        if len(self.shards) == 1:
            return self.shards[0].stored(keys)
        parts = [shard.stored(keys) for shard in self.shards]
        return np.concatenate(parts) if parts else np.zeros((0, self.dim), dtype=np.int8)

    def stored_by_key(self, keys: Keys) -> tuple[NDArray[np.uint64], NDArray[np.int8]]:
        """Those of ``keys`` that have a vector, and their stored vectors, a
        row each (shard by shard; a key in two shards: the first's, as
        :meth:`search` scores it)."""
        import numpy as np

        if len(self.shards) == 1:
            return self.shards[0].stored_by_key(keys)
        wanted = np.asarray(keys, dtype=np.uint64).reshape(-1)
        found_keys, found_rows = [], []
        for shard in self.shards:
            present, rows = shard.stored_by_key(wanted)
            found_keys.append(present)
            found_rows.append(rows)
            wanted = wanted[~np.isin(wanted, present)]
        if not found_keys:
            return wanted, np.zeros((0, self.dim), dtype=np.int8)
        return np.concatenate(found_keys), np.concatenate(found_rows)

    def remove(self, keys: Sequence[int]) -> int:
        """Remove the vectors of ``keys`` (absent ones are skipped); returns how
        many were there. A memory-mapped shard holding some is loaded first
        (to be saved by :meth:`save`). As :meth:`Vectors.remove`, the bytes
        stay in the files: for a redaction, a fresh index instead."""
        removed = 0
        for number, shard in enumerate(self.shards):
            if not any(shard.contains(keys)):
                continue
            if number not in self.loaded:
                shard.close()
                shard = self.shards[number] = Vectors(self.directory / self.names[number], self.dim)
                self.loaded.add(number)
            removed += shard.remove(keys)
            self.dirty.add(number)
        return removed

    def add(self, keys: Keys, vectors: NDArray[np.float32]) -> None:
        """Add to the last shard until it is full, then to new ones (each full
        shard saved and from then on only memory-mapped)."""
        import numpy as np

        keys = np.asarray(keys, dtype=np.uint64)
        start = 0
        while start < len(keys):
            if not self.shards or len(self.shards[-1]) >= SHARD_VECTORS:
                self._next()
            room = SHARD_VECTORS - len(self.shards[-1])
            self.shards[-1].add(keys[start : start + room], vectors[start : start + room])
            self.dirty.add(len(self.shards) - 1)
            start += room

    def _next(self) -> None:
        if self.shards:
            self._retire(len(self.shards) - 1)
        name = shard_name(len(self.names))
        self.names.append(name)
        self.loaded.add(len(self.shards))
        self.shards.append(Vectors(self.directory / name, self.dim))

    def _retire(self, number: int) -> None:
        """Save a full shard and keep it memory-mapped only."""
        if number in self.dirty:
            self.shards[number].save()
            self.dirty.discard(number)
        self.shards[number].close()
        self.shards[number] = Vectors(self.directory / self.names[number], self.dim, view=True)
        self.loaded.discard(number)

    def save(self) -> None:
        """Write the shards that changed (and an empty first one when there is none)."""
        if not self.shards:
            self._next()
            self.dirty.add(0)
        for number in sorted(self.dirty):
            self.shards[number].save()
        self.dirty = set()

    def search(
        self,
        query: NDArray[np.float32],
        limit: int,
        allowed: Keys | None = None,
        *,
        ordered: bool = False,
    ) -> list[tuple[int, float]]:
        """(key, cosine similarity) best first, ties (at 6 decimals) by key:
        the best ``limit`` of every shard's best ``limit`` (``ordered``: as
        for :meth:`Vectors.search`)."""
        if len(self.shards) == 1:
            return self.shards[0].search(query, limit, allowed, ordered=ordered)
        if allowed is not None and not ordered:
            allowed = key_array(allowed)  # once, not per shard
        found: dict[int, float] = {}
        for shard in self.shards:
            for key, score in shard.search(query, limit, allowed, ordered=True):
                found.setdefault(key, score)
        pairs = sorted(found.items(), key=lambda p: (-round(p[1], 6), p[0]))
        return pairs[:limit]

    def close(self) -> None:
        for shard in self.shards:
            shard.close()
        self.shards = []
