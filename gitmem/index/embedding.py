"""Keeping the vector index in step with the events table.

Each distinct text is embedded once: vectors are cached by the SHA-256 of
the text (per model) under ``index/embeddings/``, outside the generation
directories, so a full rebuild of the tables re-embeds nothing. Switching
the model (``edda.embed.*``) rebuilds the vector index and nothing else.

Which events get a vector: those of the types ``edda.embed.types`` names,
by default every type but ``observation``. Observations are the tool calls
hooks record, most of a busy store's events: their words are found by the
full text, and embedding them would multiply the embedding work (a million
events would take a day at MiniLM's pace).

Embedding never holds a refresh up for long. A refresh embeds for at most
``edda.embed.budget`` seconds (0.25 by default), newest texts first, and
leaves the rest without vectors: the manifest counts them (``unembedded``)
and says why (``embed_error``, starting with :data:`DEFERRED`). Searches
meanwhile find those events by their words only, and do not refresh just
to embed them; the next refresh (memory moved), the daemon in the lulls
between requests, and ``git edda index`` (which has no budget) go on where
the last one stopped. An embedder that fails (an HTTP provider that is
down) never fails the refresh either: the text indexes are updated, the
manifest counts the rows still without vectors and says why, and the next
refresh retries them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.errors import GitmemError, IndexDamagedError, UsageError
from gitmem.index import vectorshards
from gitmem.index.vectorshards import VectorShards
from gitmem.storage.gitconfig import Config, get_last

if TYPE_CHECKING:
    from collections.abc import Iterable

    import numpy as np
    import pyarrow as pa
    from numpy.typing import NDArray

    from gitmem.embed.base import Embedder
    from gitmem.embed.cache import EmbeddingCache
    from gitmem.index.manifest import Manifest
    from gitmem.index.segments import NewTexts
    from gitmem.index.state import Progress, RefreshReport, RefreshState
    from gitmem.index.table import EventRow
    from gitmem.memory.api import Memory

EMBED_DIR = "embeddings"
CHUNK = 4096  # texts embedded per call of the embedder, between progress reports
DEFAULT_BUDGET = 0.25  # seconds of embedding per refresh (edda.embed.budget)
DEFAULT_SKIPPED = ("observation",)  # event types without vectors unless edda.embed.types says
# manifest.embed_error of a refresh whose budget ran out (not a failure: the
# daemon and the next refresh go on, queries do not wait for it)
DEFERRED = "deferred: "

Row = tuple[int, str]  # (key64, text)


def cache_directory(root: Path, model_id: str) -> Path:
    """Where the embedding cache lives. A file found where one of its
    directories belongs is damage: the cache is derived data, so it goes."""
    from gitmem.embed.cache import model_slug

    directory = root / EMBED_DIR
    for path in (directory, directory / model_slug(model_id)):
        if (path.exists() or path.is_symlink()) and not path.is_dir():
            path.unlink()
    return directory


def open_embedder(mem: Memory, root: Path) -> Embedder | None:
    """The configured embedder (None when vectors are disabled)."""
    from gitmem.embed import get_embedder

    return get_embedder(mem.config, stamp_dir=root)


def embed_budget(config: Config) -> float:
    """``edda.embed.budget``: seconds a refresh may spend embedding (default 0.25)."""
    value = get_last(config, "edda.embed.budget")
    if value is None:
        return DEFAULT_BUDGET
    try:
        seconds = float(value.strip().lower().removesuffix("s"))
    except ValueError:
        seconds = -1.0
    if not 0 < seconds < float("inf"):
        raise UsageError(
            f"git config edda.embed.budget = {value!r} is not a positive number of seconds",
            "set it to a number such as 0.25",
        )
    return seconds


def embed_types(config: Config) -> frozenset[str] | None:
    """The event types that get vectors (``edda.embed.types``: names separated
    by commas or spaces, or ``all``; None means every type). The default is
    every type but ``observation``."""
    from gitmem.records.names import EVENT_TYPES

    value = get_last(config, "edda.embed.types")
    if value is None:
        return frozenset(EVENT_TYPES) - set(DEFAULT_SKIPPED)
    names = value.replace(",", " ").split()
    if names == ["all"]:
        return None
    unknown = sorted(set(names) - set(EVENT_TYPES))
    if unknown or not names:
        raise UsageError(
            f"git config edda.embed.types = {value!r}: "
            + (f"unknown event type {', '.join(unknown)}" if unknown else "no event type"),
            f"name event types ({', '.join(EVENT_TYPES)}) separated by commas, or all",
        )
    return frozenset(names)


def deferred(manifest: Manifest) -> bool:
    """Whether texts wait for embedding because time ran out (or no refresh
    has embedded them yet), not because the embedder failed: what the daemon
    catches up with in its lulls."""
    if not manifest.unembedded:
        return False
    return manifest.embed_error is None or manifest.embed_error.startswith(DEFERRED)


def _deferral(count: int, budget: float) -> str:
    return (
        f"{DEFERRED}{count} texts wait for embedding (edda.embed.budget {budget:g} s); "
        "the next refresh, the daemon or 'git edda index' embeds them"
    )


class VectorSync:
    """One refresh's work on the vector index (see the module docstring).

    ``budget`` is how long it may embed, in seconds (None: until every text
    has its vector, as ``git edda index`` does). Texts are read, embedded
    and added a few thousand at a time, newest first: a build of a million
    events never holds their texts or vectors all at once."""

    def __init__(
        self,
        mem: Memory,
        root: Path,
        state: RefreshState,
        manifest: Manifest,
        report: RefreshReport,
        progress: Progress,
        *,
        budget: float | None = None,
    ) -> None:
        self.mem = mem
        self.root = root
        self.state = state
        self.manifest = manifest
        self.report = report
        self.progress = progress
        self.budget = budget
        self.directory = state.directory
        self.types: frozenset[str] | None = None
        self.deadline: float | None = None
        self.removed = 0  # vectors removed (types no longer embedded): the files changed

    def run(
        self,
        new: NewTexts,
        redacted: list[EventRow],
        *,
        enabled: bool,
        reconcile: bool = False,
    ) -> None:
        """Bring the vectors in step after the ``new`` texts were added and the
        ``redacted`` rows lost their text: add the new texts' vectors, or
        rebuild the index (another model, redacted text, a damaged file).
        ``reconcile`` looks at every row (not only the new ones and those
        known to wait): after a change of ``edda.embed.types``, what lacks a
        vector is embedded and what should not have one loses it."""
        self.manifest.embed_error = None
        embedder: Embedder | None = None
        try:
            self.types = embed_types(self.mem.config)
            embedder = open_embedder(self.mem, self.root) if enabled else None
            if enabled and embedder is None:
                self.manifest.embed_error = "disabled (edda.embed.provider=none)"
        except GitmemError as exc:
            self.report.warnings.append(f"embeddings disabled: {exc}")
            self.manifest.embed_error = str(exc)
        wanted = new.wanted(self.types)
        if embedder is None:
            if redacted and vectorshards.on_disk(self.directory):
                vectorshards.remove_all(self.directory)  # their bytes may hold what was redacted
                self.manifest.model = None
            if self.manifest.model is None:
                self.manifest.unembedded = self._count_wanted()
            else:
                self.manifest.unembedded += wanted
            return
        from gitmem.embed.base import Preloading
        from gitmem.embed.cache import EmbeddingCache, digest

        budget = self.budget
        try:
            if isinstance(embedder, Preloading):
                embedder.load()  # a process's first load is not embedding time
            dim = int(embedder.dim)
            directory = cache_directory(self.root, embedder.model_id)
            cache = EmbeddingCache(directory, embedder.model_id, dim)
            if redacted:
                cache.remove([digest(r.get("_old_text", "")) for r in redacted])
            switched = self.manifest.model != embedder.model_id or self.manifest.dim != dim
            vectors = None
            names = vectorshards.on_disk(self.directory)
            if not switched and not redacted and names:
                try:
                    vectors = VectorShards.for_update(self.directory, dim, names)
                except IndexDamagedError:
                    vectors = None
            self.deadline = None if budget is None else time.monotonic() + budget
            if vectors is None:
                why = "model" if switched else "redaction" if redacted else "unreadable"
                left = self._rebuild(embedder, cache, dim, why=why)
            else:
                try:
                    if reconcile:
                        self._drop_unwanted(vectors)
                    # After a failed or deferred embedding, or more new rows
                    # than a refresh keeps: every text of the table is looked at.
                    if reconcile or self.manifest.unembedded or new.overflow:
                        pieces = self._table_texts()
                        total = max(self.manifest.unembedded, wanted)
                    else:
                        pieces, total = new.newest_first(self.types), wanted
                    left = self._add(vectors, embedder, cache, pieces, total)
                finally:
                    vectors.close()
            self.manifest.model = embedder.model_id
            self.manifest.dim = dim
            self.manifest.unembedded = left
            if left and budget is not None:
                self.manifest.embed_error = _deferral(left, budget)
        except GitmemError as exc:
            self.report.warnings.append(f"vectors not updated: {exc}")
            self.manifest.embed_error = str(exc)
            self.manifest.unembedded += wanted

    # -- which rows ----------------------------------------------------------------------
    def _mask(self, wanted: bool = True) -> object:
        """Rows with text whose type gets (``wanted``) or does not get a vector."""
        from gitmem.index import compute as pc

        events = self.state.events
        mask = pc.not_equal(events.column("text"), "")
        if self.types is None:
            return mask if wanted else pc.invert(mask)  # unwanted: only rows without text
        of_type = pc.false_if_null(pc.is_in(events.column("type"), sorted(self.types)))
        return pc.and_(mask, of_type if wanted else pc.invert(of_type))

    def _count_wanted(self) -> int:
        from gitmem.index import compute as pc

        return len(pc.filter(self.state.events.column("key64"), self._mask()))

    def _table_texts(self) -> Iterable[pa.Table]:
        """The texts of every row that gets a vector, newest first, a few
        thousand at a time (one segment mapped at a time)."""
        from gitmem.index.segments import text_pieces

        return text_pieces(self.directory, self.state.segments, self.types, newest_first=True)

    def _drop_unwanted(self, vectors: VectorShards) -> None:
        from gitmem.index import compute as pc

        if self.types is None:
            return
        keys = pc.filter(self.state.events.column("key64"), self._mask(wanted=False)).to_pylist()
        if keys:
            self.removed = vectors.remove(keys)
            if self.removed:
                vectors.save()

    # -- embedding -------------------------------------------------------------------------
    def _embed(
        self, embedder: Embedder, cache: EmbeddingCache, rows: list[Row]
    ) -> tuple[list[int], NDArray[np.float32]]:
        """The keys of the rows embedded (all of them without a deadline, the
        cached ones and the first others that fit in the time left with one)
        and their vectors."""
        import numpy as np

        before = len(cache)
        texts = [t for _k, t in rows]
        if self.deadline is None:
            parts = []
            for start in range(0, len(texts), CHUNK):
                parts.append(cache.embed_cached(embedder, texts[start : start + CHUNK]))
            done = list(range(len(rows)))
        else:
            done = self._embed_until_deadline(embedder, cache, texts)
            parts = [cache.embed_cached(embedder, [texts[i] for i in done])] if done else []
        self.report.embedded += len(cache) - before
        if not parts:
            return [], np.zeros((0, int(embedder.dim)), dtype=np.float32)
        return [rows[i][0] for i in done], np.concatenate(parts)

    def _embed_until_deadline(
        self, embedder: Embedder, cache: EmbeddingCache, texts: list[str]
    ) -> list[int]:
        """Embed into the cache, in order, until the deadline; the positions
        of the texts that have a vector (cached ones always do)."""
        from gitmem.embed.cache import digest

        assert self.deadline is not None
        cached = [digest(t) in cache for t in texts]
        todo = [i for i, hit in enumerate(cached) if not hit]
        done = 0
        size = 2  # the first batch measures the embedder's pace (~40 ms for MiniLM)
        while done < len(todo):
            now = time.monotonic()
            if now >= self.deadline or size < 1:
                break
            batch = todo[done : done + size]
            cache.embed_cached(embedder, [texts[i] for i in batch])
            done += len(batch)
            took = time.monotonic() - now
            # As many as the pace so far says fit in what is left (never
            # more than CHUNK, so that a slow outlier cannot overrun much).
            pace = len(batch) / max(took, 1e-6)
            size = min(CHUNK, int(pace * (self.deadline - time.monotonic())))
        finished = set(todo[:done])
        return [i for i, hit in enumerate(cached) if hit or i in finished]

    def _add(
        self,
        vectors: VectorShards,
        embedder: Embedder,
        cache: EmbeddingCache,
        pieces: Iterable[pa.Table],
        total: int,
    ) -> int:
        """Add the vectors of the texts in ``pieces`` (newest first) not in the
        index yet; how many were left without one (the deadline passed)."""
        added = left = 0
        for piece in pieces:
            rows = self._absent(vectors, piece)
            if not rows:
                continue
            keys, matrix = self._embed(embedder, cache, rows)
            if keys:
                vectors.add(keys, matrix)
                added += len(keys)
            left += len(rows) - len(keys)
            self.progress("embeddings", added, max(total, added + left))
        if added:
            vectors.save()
            self.report.vectors += added
        return left

    @staticmethod
    def _absent(vectors: VectorShards, piece: pa.Table) -> list[Row]:
        """The (key64, text) of the rows of ``piece`` without a vector (texts
        read only for those)."""
        keys = piece.column("key64").to_pylist()
        present = vectors.contains(keys)
        positions = [i for i, ok in enumerate(present) if not ok]
        if not positions:
            return []
        texts = piece.column("text").take(positions).to_pylist()
        return [(keys[i], t) for i, t in zip(positions, texts, strict=True)]

    def _rebuild(self, embedder: Embedder, cache: EmbeddingCache, dim: int, why: str) -> int:
        """A new vector index of every row that gets one (newest first when
        the deadline cuts it short); how many were left without."""
        total = self._count_wanted()
        fresh = VectorShards.fresh(self.directory, dim)
        done = left = 0
        try:
            for piece in self._table_texts():
                keys = piece.column("key64").to_pylist()
                texts = piece.column("text").to_pylist()
                found, matrix = self._embed(embedder, cache, list(zip(keys, texts, strict=True)))
                if found:
                    fresh.add(found, matrix)
                done += len(found)
                left += len(keys) - len(found)
                self.progress("embeddings", done, total)
            fresh.save()
        finally:
            fresh.close()
        self.report.vectors += done
        if self.manifest.model is not None:
            self.report.rebuilt.append(f"vectors ({why})")
        return left
