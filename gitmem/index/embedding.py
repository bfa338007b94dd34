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
from gitmem.index.vectors import VECTORS_FILE, Vectors, rebuild
from gitmem.storage.gitconfig import Config, get_last

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from gitmem.embed.base import Embedder
    from gitmem.embed.cache import EmbeddingCache
    from gitmem.index.manifest import Manifest
    from gitmem.index.state import Progress, RefreshReport, RefreshState
    from gitmem.index.table import EventRow, TextRow
    from gitmem.memory.api import Memory

EMBED_DIR = "embeddings"
CHUNK = 4096  # texts embedded per batch between progress reports
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
    has its vector, as ``git edda index`` does)."""

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
        self.path = state.directory / VECTORS_FILE
        self.types: frozenset[str] | None = None
        self.deadline: float | None = None

    def run(
        self,
        new: list[TextRow],
        redacted: list[EventRow],
        *,
        enabled: bool,
        reconcile: bool = False,
    ) -> None:
        """Bring the vectors in step after ``new`` rows were added and the
        ``redacted`` ones lost their text. ``reconcile`` looks at every row
        (not only the new ones and those known to wait): after a change of
        ``edda.embed.types``, what lacks a vector is embedded and what should
        not have one loses it."""
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
        wanted = [r for r in new if self._wanted(r.get("type"))]
        if embedder is None:
            if redacted and self.path.exists():
                self.path.unlink()  # its bytes may hold what was redacted
                self.manifest.model = None
            if self.manifest.model is None:
                self.manifest.unembedded = self._count_wanted()
            else:
                self.manifest.unembedded += len(wanted)
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
            if not switched and not redacted and self.path.exists():
                try:
                    vectors = Vectors(self.path, dim)
                except IndexDamagedError:
                    vectors = None
            self.deadline = None if budget is None else time.monotonic() + budget
            if vectors is None:
                why = "model" if switched else "redaction" if redacted else "unreadable"
                left = self._rebuild(embedder, cache, dim, why=why)
            else:
                if reconcile:
                    self._drop_unwanted(vectors)
                if reconcile or self.manifest.unembedded:
                    rows = self._missing(vectors)
                else:
                    rows = [(r["key64"], r["text"]) for r in reversed(wanted)]  # newest first
                left = self._add(vectors, embedder, cache, rows)
            self.manifest.model = embedder.model_id
            self.manifest.dim = dim
            self.manifest.unembedded = left
            if left and budget is not None:
                self.manifest.embed_error = _deferral(left, budget)
        except GitmemError as exc:
            self.report.warnings.append(f"vectors not updated: {exc}")
            self.manifest.embed_error = str(exc)
            self.manifest.unembedded += len(wanted)

    # -- which rows ----------------------------------------------------------------------
    def _wanted(self, event_type: object) -> bool:
        return self.types is None or event_type in self.types

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

    def _missing(self, vectors: Vectors) -> list[Row]:
        """Rows that should have a vector and have none, newest first."""
        from gitmem.index import compute as pc

        rows = pc.filter(self.state.events.select(["key64", "text"]), self._mask())
        keys = rows.column("key64").to_pylist()
        present = vectors.contains(keys)
        positions = [i for i in range(len(keys) - 1, -1, -1) if not present[i]]
        texts = rows.column("text").take(positions).to_pylist() if positions else []
        return [(keys[i], t) for i, t in zip(positions, texts, strict=True)]

    def _drop_unwanted(self, vectors: Vectors) -> None:
        from gitmem.index import compute as pc

        if self.types is None:
            return
        keys = pc.filter(self.state.events.column("key64"), self._mask(wanted=False)).to_pylist()
        if keys and vectors.remove(keys):
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
                self.progress("embeddings", min(start + CHUNK, len(texts)), len(texts))
            done = list(range(len(rows)))
        else:
            done = self._embed_until_deadline(embedder, cache, texts)
            parts = [cache.embed_cached(embedder, [texts[i] for i in done])] if done else []
            self.progress("embeddings", len(done), len(texts))  # what fit in the budget
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
        vectors: Vectors,
        embedder: Embedder,
        cache: EmbeddingCache,
        rows: list[Row],
    ) -> int:
        """Add the vectors of ``rows`` not in the index yet; how many were left
        without one (the deadline passed)."""
        if not rows:
            return 0
        present = vectors.contains([k for k, _t in rows])
        rows = [row for row, ok in zip(rows, present, strict=True) if not ok]
        if not rows:
            return 0
        keys, matrix = self._embed(embedder, cache, rows)
        if keys:
            vectors.add(keys, matrix)
            vectors.save()
            self.report.vectors += len(keys)
        return len(rows) - len(keys)

    def _rebuild(self, embedder: Embedder, cache: EmbeddingCache, dim: int, why: str) -> int:
        """A new vector index of every row that gets one (newest first when
        the deadline cuts it short); how many were left without."""
        from gitmem.index import compute as pc

        table = pc.filter(self.state.events.select(["key64", "text"]), self._mask())
        rows = list(
            zip(
                reversed(table.column("key64").to_pylist()),
                reversed(table.column("text").to_pylist()),
                strict=True,
            )
        )
        keys, matrix = self._embed(embedder, cache, rows)
        self.progress("vector index", 0, len(keys))
        rebuild(self.path, dim, keys, matrix)
        self.progress("vector index", len(keys), len(keys))
        self.report.vectors += len(keys)
        if self.manifest.model is not None:
            self.report.rebuilt.append(f"vectors ({why})")
        return len(rows) - len(keys)
