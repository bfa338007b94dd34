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
from gitmem.index.vectors import VECTORS_FILE, Vectors, rebuild

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
        self.path = state.directory / VECTORS_FILE

    def run(self, new: list[TextRow], redacted: list[EventRow], *, enabled: bool) -> None:
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
            if redacted and self.path.exists():
                self.path.unlink()  # its bytes may hold what was redacted
                self.manifest.model = None
            if self.manifest.model is None:
                self.manifest.unembedded = sum(1 for _ in self.state.text_rows())
            else:
                self.manifest.unembedded += len(new)
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
            if not switched and not redacted and self.path.exists():
                try:
                    vectors = Vectors(self.path, dim)
                except IndexDamagedError:
                    vectors = None
            if vectors is None:
                why = "model" if switched else "redaction" if redacted else "unreadable"
                self._rebuild(embedder, cache, dim, why=why)
            else:
                rows = [(r["key64"], r["text"]) for r in new]
                if self.manifest.unembedded:
                    rows = self._unembedded(vectors)
                self._add(vectors, embedder, cache, rows)
            self.manifest.model = embedder.model_id
            self.manifest.dim = dim
            self.manifest.unembedded = 0
        except GitmemError as exc:
            self.report.warnings.append(f"vectors not updated: {exc}")
            self.manifest.embed_error = str(exc)
            self.manifest.unembedded += len(new)

    def _unembedded(self, vectors: Vectors) -> list[tuple[int, str]]:
        rows = [(k, t) for _i, k, t in self.state.text_rows()]
        present = vectors.contains([k for k, _t in rows])
        return [row for row, ok in zip(rows, present, strict=True) if not ok]

    def _embed(
        self, embedder: Embedder, cache: EmbeddingCache, texts: list[str]
    ) -> NDArray[np.float32]:
        import numpy as np

        before = len(cache)
        parts = []
        for start in range(0, len(texts), CHUNK):
            parts.append(cache.embed_cached(embedder, texts[start : start + CHUNK]))
            self.progress("embeddings", min(start + CHUNK, len(texts)), len(texts))
        self.report.embedded += len(cache) - before
        if not parts:
            return np.zeros((0, int(embedder.dim)), dtype=np.float32)
        return np.concatenate(parts)

    def _add(
        self,
        vectors: Vectors,
        embedder: Embedder,
        cache: EmbeddingCache,
        rows: list[tuple[int, str]],
    ) -> None:
        if not rows:
            return
        keys = [k for k, _t in rows]
        present = vectors.contains(keys)
        rows = [row for row, ok in zip(rows, present, strict=True) if not ok]
        if not rows:
            return
        matrix = self._embed(embedder, cache, [t for _k, t in rows])
        vectors.add([k for k, _t in rows], matrix)
        vectors.save()
        self.report.vectors += len(rows)

    def _rebuild(self, embedder: Embedder, cache: EmbeddingCache, dim: int, why: str) -> None:
        rows = [(k, t) for _i, k, t in self.state.text_rows()]
        matrix = self._embed(embedder, cache, [t for _k, t in rows])
        self.progress("vector index", 0, len(rows))
        rebuild(self.path, dim, [k for k, _t in rows], matrix)
        self.progress("vector index", len(rows), len(rows))
        self.report.vectors += len(rows)
        if self.manifest.model is not None:
            self.report.rebuilt.append(f"vectors ({why})")
