"""The default embedder: static token vectors, offline, no torch.

It uses WordLlama's "l2_supercat" static token embeddings (256 dimensions)
and their LLaMA 2 tokenizer: a text's vector is the mean of its tokens' rows,
L2-normalised. No network, no model download, no GPU.

Both files ship inside gitmem (``gitmem/embed/data/``, with their licence in
``NOTICE``), copied unchanged from the wordllama 0.4.0.post1 wheel, and are
pinned by size and SHA-256, so that nothing can silently change the vectors
stored under our ``model_id``. Neither the ``wordllama`` package nor the
``tokenizers`` wheel is needed: the safetensors header is read here and the
tokenizer is :mod:`gitmem.embed.bpe`, which keeps their dependencies
(pydantic, requests, huggingface_hub, hf-xet, ...) out of every install.

Cold start is dominated by the tokenizer (~40 ms to read its JSON);
the weights are memory-mapped, so only the rows a query touches are read.
Verifying the two files costs ~15 ms of hashing, so a caller may pass a
``stamp_dir`` where the result of a successful check is remembered
(:mod:`gitmem.embed.pinned`).

This was gitmem's default embedder until the MiniLM one
(:mod:`gitmem.embed.minilm`) replaced it; it stays selectable
(``edda.embed.provider static``): ~100 times faster to index, and weaker.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.embed import pinned
from gitmem.embed.base import normalize_rows
from gitmem.embed.pinned import DATA_DIR, REINSTALL_HINT, PinnedFile
from gitmem.errors import DependencyError, UsageError

if TYPE_CHECKING:
    import mmap

    import numpy as np
    from numpy.typing import NDArray

    from gitmem.embed.bpe import BPETokenizer

WORDLLAMA_VERSION = "0.4.0.post1"
MODEL_NAME = "wordllama-l2-supercat-256"
MODEL_ID = f"static:{MODEL_NAME}@{WORDLLAMA_VERSION}"
DIM = 256
VOCAB_SIZE = 32000
TENSOR_NAME = "embedding.weight"

# Byte-identical to wordllama 0.4.0.post1's weights/l2_supercat_256.safetensors
# and tokenizers/l2_supercat_tokenizer_config.json (see data/NOTICE).
WEIGHTS = PinnedFile(
    "l2_supercat_256.safetensors",
    16_384_096,
    "64b47a2dc493cb8e85944076601189739852d7b64e0e1eedcb1937a251cd9fd5",
)
TOKENIZER = PinnedFile(
    "l2_supercat_tokenizer_config.json",
    1_842_796,
    "93248f2a9ec36c7b35f700a033d5f36228aae48db61aee31007fa49062cdeb68",
)

STAMP_NAME = "static-embedder.verified"
PINS = pinned.PinnedSet(
    (WEIGHTS, TOKENIZER),
    STAMP_NAME,
    owner="the static embedder",
    origin=f"the pinned wordllama {WORDLLAMA_VERSION} file",
)

__all__ = [
    "DATA_DIR",
    "DIM",
    "MODEL_ID",
    "MODEL_NAME",
    "REINSTALL_HINT",
    "STAMP_NAME",
    "TOKENIZER",
    "WEIGHTS",
    "StaticEmbedder",
    "verify_files",
]

# Texts are tokenized this many at a time, and at most this many token rows
# are gathered into one float32 temporary (8192 x 256 x 4 = 8 MiB).
_TEXT_CHUNK = 1024
_TOKEN_SLICE = 8192


def verify_files(root: Path, stamp_dir: Path | None = None) -> int:
    """Check the pinned weights and tokenizer under ``root`` (size and SHA-256).

    Returns how many files had to be hashed (0 when ``stamp_dir`` holds a
    stamp for both files as they are now). Raises :class:`DependencyError`
    naming the file, the expected and the actual digest on any mismatch.
    """
    return pinned.verify(PINS, root, stamp_dir)


def _map_weights(path: Path) -> tuple[mmap.mmap, NDArray[np.float16]]:
    """Memory-map the embedding matrix of a safetensors file.

    The format: an 8-byte little-endian header length, a JSON header mapping
    tensor names to dtype, shape and byte offsets (relative to the end of the
    header), then the raw little-endian data.
    """
    import mmap

    import numpy as np

    def bad(why: str) -> DependencyError:
        return DependencyError(f"{path} is not a usable safetensors file: {why}", REINSTALL_HINT)

    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        header_len = int.from_bytes(f.read(8), "little")
        if not 0 < header_len <= size - 8:
            raise bad(f"header length {header_len} does not fit a file of {size} bytes")
        try:
            header: dict[str, Any] = json.loads(f.read(header_len))
            entry = header[TENSOR_NAME]
            dtype, shape = entry["dtype"], [int(n) for n in entry["shape"]]
            begin, end = (int(n) for n in entry["data_offsets"])
        except (ValueError, KeyError, TypeError) as exc:
            raise bad(f"bad header ({exc})") from None
        if dtype != "F16" or shape != [VOCAB_SIZE, DIM]:
            raise bad(f"{TENSOR_NAME} is {dtype} {shape}, expected F16 [{VOCAB_SIZE}, {DIM}]")
        start = 8 + header_len + begin
        if end - begin != VOCAB_SIZE * DIM * 2 or 8 + header_len + end > size:
            raise bad(f"{TENSOR_NAME} data offsets {begin}..{end} do not fit the file")
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    matrix = np.frombuffer(mapped, dtype="<f2", count=VOCAB_SIZE * DIM, offset=start)
    return mapped, matrix.reshape(VOCAB_SIZE, DIM)


class StaticEmbedder:
    """Mean of static token vectors (wordllama l2_supercat, 256 dims), offline.

    Construction is free; the files are verified and loaded on first use (or
    by :meth:`load`). ``root`` replaces the directory of the two files shipped
    with gitmem (tests use it with copies); ``stamp_dir`` is
    where a successful verification is remembered (``None``: hash every time).
    """

    model_id: str = MODEL_ID
    dim: int = DIM

    def __init__(self, *, root: Path | None = None, stamp_dir: Path | None = None) -> None:
        self._root = root
        self._stamp_dir = stamp_dir
        self._tokenizer: BPETokenizer | None = None
        self._weights: NDArray[np.float16] | None = None
        self._mapped: mmap.mmap | None = None

    def __repr__(self) -> str:
        return f"StaticEmbedder({self.model_id!r}, root={self._root}, stamp_dir={self._stamp_dir})"

    def load(self) -> None:
        """Verify and load the weights and tokenizer now (idempotent).

        Raises :class:`DependencyError` when the files are missing or do not
        match the pinned checksums.
        """
        if self._tokenizer is not None:
            return
        root = self._root if self._root is not None else DATA_DIR
        self._mapped, self._weights, self._tokenizer = _FILES.get(root, self._stamp_dir)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts``: float32 ``(len(texts), 256)``, unit rows; a text
        without tokens (the empty string) gives a zero row."""
        import numpy as np

        self.load()
        if isinstance(texts, str):
            raise UsageError("embed() takes a sequence of texts, not one string", "wrap it: [text]")
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for start in range(0, len(texts), _TEXT_CHUNK):
            chunk = texts[start : start + _TEXT_CHUNK]
            self._pool(self._token_ids(chunk), out[start : start + len(chunk)])
        return normalize_rows(out)

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        assert self._tokenizer is not None
        encode = self._tokenizer.encode
        ids: list[list[int]] = []
        for text in texts:
            if not isinstance(text, str):
                raise UsageError(f"cannot embed a {type(text).__name__}: texts must be strings")
            try:
                ids.append(encode(text))
            except UnicodeEncodeError:
                # Lone surrogates (e.g. undecodable file names) have no UTF-8
                # bytes to fall back to: replace them, as the tokenizers wheel
                # this replaces required (so their vectors did not change).
                ids.append(encode(text.encode("utf-8", "replace").decode("utf-8")))
        return ids

    def _pool(self, ids: list[list[int]], out: NDArray[np.float32]) -> None:
        """Write the mean token vector of each id list into the rows of ``out``.

        Token rows are gathered in bounded slices. A text's tokens are always
        summed in the same order, whatever else is in the batch, so a text
        gets identical bytes alone or batched: short texts are grouped whole
        (never split across slices), long ones are summed slice by slice from
        their own start.
        """
        import numpy as np

        assert self._weights is not None
        weights = self._weights
        lengths = [len(x) for x in ids]
        total = sum(lengths)
        if total == 0:
            return
        flat = np.fromiter(
            (i for x in ids for i in x), dtype=np.int64, count=total
        )  # all token ids of the chunk, text after text
        np.clip(flat, 0, VOCAB_SIZE - 1, out=flat)  # never index past the vocabulary
        offsets = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        n = len(ids)
        i = 0
        while i < n:
            if lengths[i] > _TOKEN_SLICE:
                row = out[i]
                for s in range(int(offsets[i]), int(offsets[i + 1]), _TOKEN_SLICE):
                    piece = flat[s : min(s + _TOKEN_SLICE, int(offsets[i + 1]))]
                    row += weights[piece].astype(np.float32).sum(axis=0)
                i += 1
                continue
            j, budget = i, 0
            while j < n and budget + lengths[j] <= _TOKEN_SLICE:
                budget += lengths[j]
                j += 1
            if budget:
                lo = int(offsets[i])
                rows = weights[flat[lo : int(offsets[j])]].astype(np.float32)
                nonempty = np.flatnonzero(np.asarray(lengths[i:j]))
                starts = offsets[i:j][nonempty] - lo
                out[i + nonempty] = np.add.reduceat(rows, starts, axis=0)
            i = j
        counts = np.asarray(lengths, dtype=np.float32)
        counts[counts == 0] = 1.0
        out /= counts[:, None]


def _load(root: Path) -> tuple[mmap.mmap, NDArray[np.float16], BPETokenizer]:
    """The weights (memory-mapped) and the tokenizer (reading its JSON is
    ~65 ms) under ``root``."""
    from gitmem.embed.bpe import BPETokenizer

    mapped, weights = _map_weights(root / WEIGHTS.relpath)
    try:
        tokenizer = BPETokenizer.from_file(root / TOKENIZER.relpath)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DependencyError(
            f"cannot load the tokenizer {root / TOKENIZER.relpath}: {exc}", REINSTALL_HINT
        ) from None
    return mapped, weights, tokenizer


_FILES = pinned.Loaded(PINS, _load)
