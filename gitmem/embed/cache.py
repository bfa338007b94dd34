"""A content-addressed cache of embeddings: a text is embedded once per model.

Vectors are keyed by ``(model_id, sha256(text))`` and stored per model in a
directory of their own (``<directory>/<slug of model_id>/``)::

    meta.json           {"format": 1, "model_id": ..., "dim": ..., "generation": g}
    digests.<g>.bin     32-byte SHA-256 digests, one record per vector
    vectors.<g>.f16     dim little-endian float16 values per record

Record ``i`` of both files belong together. Appends go to the end of both
files; after a crash only ``min(complete digest records, complete vector
records)`` are trusted and the torn tail is cut off before the next append.

Removing records (redaction) cannot rewrite two files atomically, so it
writes a new generation of both files and then switches ``meta.json`` to it
with one atomic ``os.replace``; a crash before the switch leaves the old
generation intact. The removed records are then zeroed in the old files
before they are deleted, so their bytes do not linger on disk.

A ``meta.json`` naming another model or dimension, or a missing or damaged
one, is never trusted: the cache starts empty under a new generation.

This is derived data (it can always be rebuilt by embedding again), so
appends are not fsynced. Callers serialise writers with their own lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.embed.base import normalize_rows
from gitmem.errors import UsageError

if TYPE_CHECKING:
    import mmap

    import numpy as np
    from numpy.typing import NDArray

    from gitmem.embed.base import Embedder

FORMAT = 1
DIGEST_SIZE = 32
META_NAME = "meta.json"
_DATA_FILE = re.compile(r"^(?:digests\.(\d+)\.bin|vectors\.(\d+)\.f16)$")
# Texts missing from the cache are embedded and stored this many at a time,
# so a long build keeps its progress if interrupted.
_EMBED_CHUNK = 4096


def digest(text: str) -> bytes:
    """The cache key of a text: SHA-256 of its UTF-8 bytes (lone surrogates
    are kept as-is, so every ``str`` has a key)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def model_slug(model_id: str) -> str:
    """A directory name for ``model_id``: readable, and unique thanks to a
    hash suffix (two ids may sanitise to the same text)."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id).strip("._-")[:48]
    return f"{readable}-{hashlib.sha256(model_id.encode()).hexdigest()[:12]}"


class EmbeddingCache:
    """Embeddings of one model, keyed by the SHA-256 of the text.

    ``directory`` holds the caches of all models; this object uses the
    sub-directory of ``model_id``. ``dim`` is the model's vector length.
    Vectors are stored as float16 (plenty for cosine similarity of unit
    vectors, half the space of float32).
    """

    def __init__(self, directory: Path | str, model_id: str, dim: int) -> None:
        if dim <= 0:
            raise UsageError(f"embedding dimension must be positive, got {dim}")
        self.directory = Path(directory) / model_slug(model_id)
        self.model_id = model_id
        self.dim = dim
        self._record_bytes = 2 * dim
        self._index: dict[bytes, int] = {}  # digest -> record number
        self._records = 0  # trusted records in the current generation
        self._generation = 0
        self._tail_clean = False  # files hold exactly the trusted records
        self._mapped: mmap.mmap | None = None
        self._view: NDArray[np.float16] | None = None  # rows 0.._view.shape[0] of the vectors
        self._load()

    # -- files --------------------------------------------------------------

    def _digests_path(self, generation: int) -> Path:
        return self.directory / f"digests.{generation}.bin"

    def _vectors_path(self, generation: int) -> Path:
        return self.directory / f"vectors.{generation}.f16"

    def _read_meta(self) -> dict[str, Any] | None:
        try:
            meta = json.loads((self.directory / META_NAME).read_bytes())
        except (OSError, ValueError):
            return None
        return meta if isinstance(meta, dict) else None

    def _write_meta(self, generation: int) -> None:
        meta = {
            "format": FORMAT,
            "model_id": self.model_id,
            "dim": self.dim,
            "generation": generation,
        }
        tmp = self.directory / f".{META_NAME}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(meta, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.directory / META_NAME)
        _fsync_dir(self.directory)

    def _load(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        meta = self._read_meta()
        generation = meta.get("generation") if meta else None
        if (
            meta is None
            or meta.get("format") != FORMAT
            or meta.get("model_id") != self.model_id
            or meta.get("dim") != self.dim
            or not isinstance(generation, int)
            or isinstance(generation, bool)
            or generation < 1
        ):
            # Never trust vectors we cannot vouch for: start empty under a
            # generation no existing file uses.
            previous = generation if isinstance(generation, int) else 0
            generation = 1 + max([previous, *self._generations_present()])
            self._write_meta(generation)
        self._generation = generation
        try:
            digests = self._digests_path(generation).read_bytes()
        except FileNotFoundError:
            digests = b""
        try:
            vector_bytes = self._vectors_path(generation).stat().st_size
        except FileNotFoundError:
            vector_bytes = 0
        records = min(len(digests) // DIGEST_SIZE, vector_bytes // self._record_bytes)
        index: dict[bytes, int] = {}
        for i in range(records):
            index.setdefault(digests[i * DIGEST_SIZE : (i + 1) * DIGEST_SIZE], i)
        self._index, self._records = index, records
        self._tail_clean = False
        self._drop_view()
        self._remove_stale_files()

    def _generations_present(self) -> list[int]:
        found = []
        for name in os.listdir(self.directory):
            match = _DATA_FILE.match(name)
            if match:
                found.append(int(match.group(1) or match.group(2)))
        return found

    def _remove_stale_files(self) -> None:
        """Delete data files of other generations (left by a crash) and temp files."""
        for name in os.listdir(self.directory):
            match = _DATA_FILE.match(name)
            stale = match is not None and int(match.group(1) or match.group(2)) != self._generation
            if stale or (name.startswith(".") and name.endswith(".tmp")):
                try:
                    os.unlink(self.directory / name)
                except OSError:
                    pass  # e.g. still mapped elsewhere on Windows: next open retries

    def _trim_tail(self) -> None:
        """Cut both files to the trusted records so appends stay aligned."""
        if self._tail_clean:
            return
        for path, size in (
            (self._digests_path(self._generation), self._records * DIGEST_SIZE),
            (self._vectors_path(self._generation), self._records * self._record_bytes),
        ):
            try:
                if path.stat().st_size > size:
                    os.truncate(path, size)
            except FileNotFoundError:
                pass
        self._tail_clean = True

    def _drop_view(self) -> None:
        self._view = None
        self._mapped = None  # unmapped once no returned array refers to it

    def _vectors(self, rows: int) -> NDArray[np.float16]:
        """A read-only view of at least the first ``rows`` vector records."""
        import mmap

        import numpy as np

        if self._view is None or self._view.shape[0] < rows:
            self._drop_view()
            with open(self._vectors_path(self._generation), "rb") as f:
                length = self._records * self._record_bytes
                self._mapped = mmap.mmap(f.fileno(), length, access=mmap.ACCESS_READ)
            self._view = np.frombuffer(self._mapped, dtype="<f2", count=self._records * self.dim)
            self._view = self._view.reshape(self._records, self.dim)
        return self._view

    # -- public API ---------------------------------------------------------

    def __len__(self) -> int:
        """How many distinct texts have a cached vector."""
        return len(self._index)

    def __contains__(self, key: object) -> bool:
        return key in self._index

    def get_many(self, digests: Iterable[bytes]) -> dict[bytes, NDArray[np.float32]]:
        """The cached vectors (float32 copies) of those ``digests`` that are present."""
        import numpy as np

        found = [(d, self._index[d]) for d in dict.fromkeys(digests) if d in self._index]
        if not found:
            return {}
        rows = np.fromiter((i for _, i in found), dtype=np.int64, count=len(found))
        vectors = self._vectors(int(rows.max()) + 1)[rows].astype(np.float32)
        return {d: vectors[k] for k, (d, _) in enumerate(found)}

    def put_many(self, items: Iterable[tuple[bytes, NDArray[Any]]]) -> int:
        """Store ``(digest, vector)`` pairs; digests already present (or
        repeated in ``items``) are skipped. Returns how many were added."""
        import numpy as np

        new: dict[bytes, NDArray[Any]] = {}
        for key, vector in items:
            if not isinstance(key, bytes) or len(key) != DIGEST_SIZE:
                raise UsageError(f"cache keys are {DIGEST_SIZE}-byte digests, got {key!r:.80}")
            if key in self._index or key in new:
                continue
            if np.shape(vector) != (self.dim,):
                raise UsageError(
                    f"vector of shape {np.shape(vector)} for a cache of dimension {self.dim}"
                )
            new[key] = vector
        if not new:
            return 0
        block = np.asarray(list(new.values()), dtype="<f2")
        self._trim_tail()
        start = self._records
        # Vectors first: a crash between the writes leaves digests behind
        # vectors, and min() of the two counts trusts only complete pairs.
        self._tail_clean = False
        with open(self._vectors_path(self._generation), "ab") as f:
            f.write(block.tobytes())
        with open(self._digests_path(self._generation), "ab") as f:
            f.write(b"".join(new))
        self._tail_clean = True
        for k, key in enumerate(new):
            self._index[key] = start + k
        self._records = start + len(new)
        return len(new)

    def embed_cached(self, embedder: Embedder, texts: Sequence[str]) -> NDArray[np.float32]:
        """Vectors of ``texts`` (float32, ``(len(texts), dim)``, in order),
        embedding only the distinct texts not cached yet, then storing them.

        Every row comes from the float16 store, renormalised, so a text gets
        the same vector whether it was cached before or not.
        """
        import numpy as np

        if embedder.model_id != self.model_id:
            raise UsageError(
                f"embedder {embedder.model_id!r} does not match the cache of {self.model_id!r}",
                "open the EmbeddingCache with the embedder's model_id",
            )
        keys = [digest(text) for text in texts]
        missing: dict[bytes, str] = {}
        for key, text in zip(keys, texts, strict=True):
            if key not in self._index and key not in missing:
                missing[key] = text
        pending = list(missing.items())
        for start in range(0, len(pending), _EMBED_CHUNK):
            chunk = pending[start : start + _EMBED_CHUNK]
            vectors = embedder.embed([text for _, text in chunk])
            if vectors.shape != (len(chunk), self.dim):
                raise UsageError(
                    f"embedder {embedder.model_id!r} returned shape {vectors.shape}, "
                    f"expected {(len(chunk), self.dim)}",
                    "open the EmbeddingCache with the embedder's dim",
                )
            self.put_many(zip((key for key, _ in chunk), vectors, strict=True))
        if not keys:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = np.fromiter((self._index[key] for key in keys), dtype=np.int64, count=len(keys))
        return normalize_rows(self._vectors(int(rows.max()) + 1)[rows].astype(np.float32))

    def remove(self, digests: Iterable[bytes]) -> int:
        """Remove the records of ``digests`` so their bytes are gone from disk
        (used by redaction). Returns how many cached texts were removed."""
        import numpy as np

        doomed = {d for d in digests if d in self._index}
        if not doomed:
            return 0
        old = self._generation
        old_digests = self._digests_path(old).read_bytes()[: self._records * DIGEST_SIZE]
        records = [
            old_digests[i * DIGEST_SIZE : (i + 1) * DIGEST_SIZE] for i in range(self._records)
        ]
        keep = [i for i, d in enumerate(records) if d not in doomed]
        gone = [i for i, d in enumerate(records) if d in doomed]
        kept_vectors = self._vectors(self._records)[np.asarray(keep, dtype=np.int64)]
        new = 1 + max([old, *self._generations_present()])
        _write_durably(self._digests_path(new), b"".join(records[i] for i in keep))
        _write_durably(self._vectors_path(new), kept_vectors.tobytes())
        del kept_vectors
        self._drop_view()
        self._write_meta(new)  # the switch: before it the old generation is intact
        self._generation = new
        self._index = {}
        for k, i in enumerate(keep):
            self._index.setdefault(records[i], k)
        self._records = len(keep)
        self._tail_clean = True
        # Zero the removed records in the old files before deleting them:
        # unlinking alone leaves the bytes in free disk blocks.
        _zero_records(self._digests_path(old), gone, DIGEST_SIZE)
        _zero_records(self._vectors_path(old), gone, self._record_bytes)
        self._remove_stale_files()
        return len(doomed)


def _write_durably(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _zero_records(path: Path, records: list[int], size: int) -> None:
    try:
        with open(path, "r+b") as f:
            end = os.fstat(f.fileno()).st_size
            zeros = bytes(size)
            for i in records:
                if (i + 1) * size <= end:
                    f.seek(i * size)
                    f.write(zeros)
            f.flush()
            os.fsync(f.fileno())
    except FileNotFoundError:
        pass


def _fsync_dir(path: Path) -> None:
    if os.name != "posix":
        return  # directories cannot be opened for fsync elsewhere
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
