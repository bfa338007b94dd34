"""Keeping the vector index in step with the events table.

Each distinct text is embedded once: vectors are cached by the SHA-256 of
the text (per model) under ``index/embeddings/``, outside the generation
directories, so a full rebuild of the tables re-embeds nothing. Switching
the model (``edda.embed.*``) rebuilds the vector index and nothing else.
An embedder that fails (an HTTP provider that is down) never fails the
refresh: the text indexes are updated, the manifest counts the rows still
without vectors, and the next refresh retries them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from gitmem.errors import GitmemError, IndexDamagedError
from gitmem.index import vectorshards
from gitmem.index.vectorshards import VectorShards

if TYPE_CHECKING:
    from collections.abc import Iterable

    import numpy as np
    from numpy.typing import NDArray

    from gitmem.embed.base import Embedder
    from gitmem.embed.cache import EmbeddingCache
    from gitmem.index.manifest import Manifest
    from gitmem.index.segments import NewTexts
    from gitmem.index.state import Progress, RefreshReport, RefreshState
    from gitmem.index.table import EventRow, TextRow
    from gitmem.memory.api import Memory

EMBED_DIR = "embeddings"
CHUNK = 4096  # texts embedded per call of the embedder


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


class VectorSync:
    def __init__(
        self,
        mem: Memory,
        root: Path,
        state: RefreshState,
        manifest: Manifest,
        report: RefreshReport,
        progress: Progress,
    ) -> None:
        self.mem = mem
        self.root = root
        self.state = state
        self.manifest = manifest
        self.report = report
        self.progress = progress
        self.directory = state.directory

    def run(self, new: NewTexts, redacted: list[EventRow], *, enabled: bool) -> None:
        """Bring the vector index in step: add the vectors of ``new`` texts,
        or rebuild it (another model, ``redacted`` text, a damaged file).
        Texts are embedded and added a few thousand at a time: a build of a
        million events never holds their vectors all at once."""
        self.manifest.embed_error = None
        try:
            embedder = open_embedder(self.mem, self.root) if enabled else None
            if enabled and embedder is None:
                self.manifest.embed_error = "disabled (edda.embed.provider=none)"
        except GitmemError as exc:
            self.report.warnings.append(f"embeddings disabled: {exc}")
            self.manifest.embed_error = str(exc)
            embedder = None
        if embedder is None:
            if redacted and vectorshards.on_disk(self.directory):
                vectorshards.remove_all(self.directory)  # their bytes may hold what was redacted
                self.manifest.model = None
            if self.manifest.model is None:
                self.manifest.unembedded = self.state.count_texts()
            else:
                self.manifest.unembedded += new.count
            return
        from gitmem.embed.cache import EmbeddingCache, digest

        try:
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
            if vectors is None:
                why = "model" if switched else "redaction" if redacted else "unreadable"
                self._rebuild(embedder, cache, dim, why=why)
            else:
                # After a failed embedding, or more new rows than a refresh
                # keeps: every text of the table, those without a vector added.
                every = self.manifest.unembedded or new.overflow
                self._add(
                    vectors, embedder, cache, self.state.text_rows() if every else new.batches()
                )
            self.manifest.model = embedder.model_id
            self.manifest.dim = dim
            self.manifest.unembedded = 0
        except GitmemError as exc:
            self.report.warnings.append(f"vectors not updated: {exc}")
            self.manifest.embed_error = str(exc)
            self.manifest.unembedded += new.count

    def _embed(
        self, embedder: Embedder, cache: EmbeddingCache, texts: list[str]
    ) -> NDArray[np.float32]:
        import numpy as np

        before = len(cache)
        parts = []
        for start in range(0, len(texts), CHUNK):
            parts.append(cache.embed_cached(embedder, texts[start : start + CHUNK]))
        self.report.embedded += len(cache) - before
        if not parts:
            return np.zeros((0, int(embedder.dim)), dtype=np.float32)
        return np.concatenate(parts)

    def _add(
        self,
        vectors: VectorShards,
        embedder: Embedder,
        cache: EmbeddingCache,
        batches: Iterable[list[TextRow]],
    ) -> None:
        """Embed and add the texts of ``batches`` that have no vector yet."""
        added = 0
        for batch in batches:
            present = vectors.contains([r["key64"] for r in batch])
            rows = [r for r, ok in zip(batch, present, strict=True) if not ok]
            if not rows:
                continue
            matrix = self._embed(embedder, cache, [r["text"] for r in rows])
            vectors.add([r["key64"] for r in rows], matrix)
            added += len(rows)
            self.progress("embeddings", added, added)
        if added:
            vectors.save()
            self.report.vectors += added
        vectors.close()

    def _rebuild(self, embedder: Embedder, cache: EmbeddingCache, dim: int, why: str) -> None:
        total = self.state.count_texts()
        fresh = VectorShards.fresh(self.directory, dim)
        done = 0
        for batch in self.state.text_rows():
            matrix = self._embed(embedder, cache, [r["text"] for r in batch])
            fresh.add([r["key64"] for r in batch], matrix)
            done += len(batch)
            self.progress("embeddings", done, total)
        fresh.save()
        fresh.close()
        self.report.vectors += done
        if self.manifest.model is not None:
            self.report.rebuilt.append(f"vectors ({why})")
