"""The default embedder: all-MiniLM-L6-v2, a small transformer, run in numpy.

sentence-transformers' all-MiniLM-L6-v2 (6 layers, 384 dimensions, 12
attention heads, 22.7 M parameters) is the strongest sentence embedder small
enough to ship inside a Python package and run on one CPU core without
torch, onnxruntime or a download (``../research-embed/REPORT.md`` compared
the candidates on the development sets). A text's vector is the mean of its
last layer's token states (the attention mask's tokens: no padding is ever
added), L2-normalised. Inputs are cut at 128 word pieces, the length the
model was trained at (256 gave the same retrieval quality and costs more).

Both files ship inside gitmem (``gitmem/embed/data/``, with the Apache-2.0
licence and a NOTICE saying what was changed): the weights converted to int8
(every 64 weights of a matrix row scaled to [-127, 127] by a float32 scale of
their own; biases and LayerNorms kept in float32), 24 MB instead of 91 MB,
and the BERT uncased ``vocab.txt``. Both are pinned by size and SHA-256 (:mod:`gitmem.embed.pinned`).
``tools/make_minilm_int8.py`` rebuilds the weight file, byte for byte, from
the original float32 file. The tokenizer is :mod:`gitmem.embed.wordpiece`.

How it runs (all float32, numpy's BLAS):

* the weights are dequantised once per process (~40 MB of float32; the file
  stores the layers' matrices the way ``x @ w`` reads them, so that is one
  multiplication each, ~25 ms in all), except the 30,522-row word embedding
  table, whose rows are scaled as a text's tokens are looked up (so the
  table stays memory-mapped and mostly unread);
* every matrix product is one text's tokens (padded with zero rows to a
  multiple of :data:`ROW_BLOCK`) by a weight matrix, layer after
  layer for a chunk of texts (so a layer's weights stay in cache across the
  chunk). A text is never stacked with others: BLAS kernels round a row's
  sums differently depending on the rows around it, and a text must embed to
  the same bytes alone, in any batch and in any order. The attention sees
  only the text's own tokens, so there is nothing to mask, and the padding
  depends on the text alone;
* the attention scale 1/sqrt(32) is folded into the query weights, and GELU
  is the exact (erf) one, with erf from Abramowitz and Stegun 7.1.26
  (|error| < 1.5e-7, float32's own precision).
"""

from __future__ import annotations

import json
import math
import mmap
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gitmem.embed import pinned
from gitmem.embed.base import normalize_rows
from gitmem.embed.pinned import DATA_DIR, REINSTALL_HINT, PinnedFile
from gitmem.errors import DependencyError, UsageError

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np
    from numpy.typing import NDArray

    from gitmem.embed.wordpiece import WordPieceTokenizer

    Floats = NDArray[np.float32]

MODEL_NAME = "all-MiniLM-L6-v2"
DIM = 384
MAX_TOKENS = 128  # word pieces per text, [CLS] and [SEP] included
LAYERS = 6
HEADS = 12
HEAD_DIM = DIM // HEADS
INTERMEDIATE = 1536
VOCAB_SIZE = 30_522
POSITIONS = 512
LAYER_NORM_EPS = 1e-12
GROUP = 64  # int8 weights share a float32 scale per row and group of this many columns

# Converted from sentence-transformers/all-MiniLM-L6-v2's model.safetensors
# (sha256 53aa5117...28d9db) by tools/make_minilm_int8.py; see data/NOTICE.
WEIGHTS = PinnedFile(
    "minilm_l6_v2_int8.safetensors",
    24_082_272,
    "dd828413cb9e605af874831f0e7ab0430dacd1c78ee34d5d78ce7d1e9ef8cda1",
)
VOCAB = PinnedFile(
    "minilm_l6_v2_vocab.txt",
    231_508,
    "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
)
# The weights' digest is in the id: vectors of another conversion (or another
# cut-off length) are never mixed with these.
MODEL_ID = f"minilm:{MODEL_NAME}-int8-{MAX_TOKENS}@{WEIGHTS.sha256[:12]}"

STAMP_NAME = "minilm-embedder.verified"
PINS = pinned.PinnedSet(
    (WEIGHTS, VOCAB),
    STAMP_NAME,
    owner="the MiniLM embedder",
    origin=f"the pinned {MODEL_NAME} file",
)

# A text's token rows go through the matrix products padded with zero rows to
# a multiple of this. BLAS kernels compute a block of rows at a time (OpenBLAS's
# float32 ones 4 or more), and the 1 to 3 rows left over take a slow edge path:
# unpadded, a 7-token query cost more than an 8-token one (6.0 against 4.8 ms)
# and an 11-token one as much as 15 tokens. Padded, a short query embeds ~1 ms
# faster (5.9 -> 4.8 ms, p50 of bench/retrieval.py's queries); indexing, whose
# texts are longer, was not measurably faster or slower. The padding changes
# no result beyond float32 rounding (at most ~7e-7 in a vector, as a BLAS
# upgrade does), so the model id and stored vectors stay.
ROW_BLOCK = 4

# Texts whose layers run together: enough that a layer's ~7 MB of weights are
# read from memory once for many texts, few enough that their activations
# (at most 32 x 128 x 1,536 floats, 25 MB) stay small.
CHUNK = 32

__all__ = [
    "DIM",
    "MAX_TOKENS",
    "MODEL_ID",
    "MODEL_NAME",
    "STAMP_NAME",
    "VOCAB",
    "WEIGHTS",
    "MiniLMEmbedder",
    "verify_files",
]


def verify_files(root: Path, stamp_dir: Path | None = None) -> int:
    """Check the pinned weights and vocabulary under ``root`` (size and
    SHA-256); how many files had to be hashed (see :func:`pinned.verify`)."""
    return pinned.verify(PINS, root, stamp_dir)


# -- the weights ----------------------------------------------------------------------


class Layer(NamedTuple):
    """One transformer layer, float32, matrices as (inputs, outputs)."""

    qkv: Floats  # (384, 1152): query (pre-scaled), key, value
    qkv_bias: Floats
    out: Floats  # (384, 384): attention output
    out_bias: Floats
    norm1: tuple[Floats, Floats]
    up: Floats  # (384, 1536)
    up_bias: Floats
    down: Floats  # (1536, 384)
    down_bias: Floats
    norm2: tuple[Floats, Floats]


class Weights(NamedTuple):
    """The model, ready to run."""

    words: NDArray[np.int8]  # (30522, 384), memory-mapped
    word_scales: Floats  # (30522, 384 / GROUP), memory-mapped
    positions: Floats  # (MAX_TOKENS, 384): position + token type 0 embeddings
    norm: tuple[Floats, Floats]
    layers: tuple[Layer, ...]


def _bad(path: Path, why: str) -> DependencyError:
    return DependencyError(f"{path} is not a usable MiniLM weight file: {why}", REINSTALL_HINT)


def _tensors(path: Path, mapped: mmap.mmap) -> dict[str, Any]:
    """Every tensor of a safetensors file as a read-only numpy view.

    The format: an 8-byte little-endian header length, a JSON header mapping
    tensor names to dtype, shape and byte offsets (from the end of the
    header), then the raw little-endian data. Only I8 and F32 occur here.
    """
    import numpy as np

    size = len(mapped)
    header_len = int.from_bytes(mapped[:8], "little")
    if not 0 < header_len <= size - 8:
        raise _bad(path, f"header length {header_len} does not fit a file of {size} bytes")
    try:
        header: dict[str, Any] = json.loads(mapped[8 : 8 + header_len])
    except ValueError as exc:
        raise _bad(path, f"bad header ({exc})") from None
    dtypes: dict[str, np.dtype[Any]] = {"I8": np.dtype("i1"), "F32": np.dtype("<f4")}
    out: dict[str, Any] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = dtypes[entry["dtype"]]
            shape = tuple(int(n) for n in entry["shape"])
            begin, end = (int(n) for n in entry["data_offsets"])
        except (KeyError, TypeError, ValueError) as exc:
            raise _bad(path, f"bad entry for {name} ({exc!r})") from None
        count = math.prod(shape)
        if end - begin != count * dtype.itemsize or 8 + header_len + end > size:
            raise _bad(path, f"{name}'s data offsets {begin}..{end} do not fit")
        out[name] = np.frombuffer(
            mapped, dtype=dtype, count=count, offset=8 + header_len + begin
        ).reshape(shape)
    return out


def _load_weights(path: Path) -> tuple[mmap.mmap, Weights]:
    import numpy as np

    with open(path, "rb") as f:
        mapped = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    raw = _tensors(path, mapped)

    def get(name: str, shape: tuple[int, ...], dtype: str = "<f4") -> Any:
        array = raw.get(name)
        if array is None or array.shape != shape or array.dtype != np.dtype(dtype):
            found = "missing" if array is None else f"{array.dtype} {list(array.shape)}"
            raise _bad(path, f"{name} is {found}, expected {dtype} {list(shape)}")
        return array

    def table(name: str, rows: int) -> tuple[Any, Any]:
        """An embedding table, (rows, 384) int8, and its (rows, 384 / GROUP) scales."""
        q = get(f"{name}.weight", (rows, DIM), "i1")
        return q, get(f"{name}.weight.scale", (rows, DIM // GROUP))

    def dequantised_table(name: str, rows: int) -> Floats:
        q, scale = table(name, rows)
        w: Floats = np.empty((rows, DIM // GROUP, GROUP), dtype=np.float32)
        np.multiply(q.reshape(rows, DIM // GROUP, GROUP), scale[:, :, None], out=w)
        return w.reshape(rows, DIM)

    def matrix(name: str, inputs: int, outputs: int) -> Floats:
        """A layer's matrix, stored (inputs, outputs) for ``x @ w`` with a
        scale per output and group of GROUP inputs: one multiplication."""
        q = get(f"{name}.weight_t", (inputs, outputs), "i1")
        scale = get(f"{name}.weight_t.scale", (inputs // GROUP, outputs))
        w: Floats = np.empty((inputs // GROUP, GROUP, outputs), dtype=np.float32)
        np.multiply(q.reshape(inputs // GROUP, GROUP, outputs), scale[:, None, :], out=w)
        return w.reshape(inputs, outputs)

    def vector(name: str, n: int = DIM) -> Floats:
        return np.array(get(name, (n,)), dtype=np.float32)  # a copy: the map may close

    def norm(prefix: str) -> tuple[Floats, Floats]:
        return vector(f"{prefix}.LayerNorm.weight"), vector(f"{prefix}.LayerNorm.bias")

    scale = np.float32(1.0 / math.sqrt(HEAD_DIM))
    layers = []
    for i in range(LAYERS):
        p = f"encoder.layer.{i}."
        qkv = np.concatenate(
            [matrix(f"{p}attention.self.{n}", DIM, DIM) for n in ("query", "key", "value")],
            axis=1,
        )
        qkv_bias = np.concatenate(
            [vector(f"{p}attention.self.{n}.bias") for n in ("query", "key", "value")]
        )
        qkv[:, :DIM] *= scale  # softmax(q k / sqrt(d)) == softmax((q / sqrt(d)) k)
        qkv_bias[:DIM] *= scale
        layers.append(
            Layer(
                qkv,
                qkv_bias,
                matrix(f"{p}attention.output.dense", DIM, DIM),
                vector(f"{p}attention.output.dense.bias"),
                norm(f"{p}attention.output"),
                matrix(f"{p}intermediate.dense", DIM, INTERMEDIATE),
                vector(f"{p}intermediate.dense.bias", INTERMEDIATE),
                matrix(f"{p}output.dense", INTERMEDIATE, DIM),
                vector(f"{p}output.dense.bias"),
                norm(f"{p}output"),
            )
        )
    words, word_scales = table("embeddings.word_embeddings", VOCAB_SIZE)
    positions = dequantised_table("embeddings.position_embeddings", POSITIONS)[:MAX_TOKENS]
    token_type = dequantised_table("embeddings.token_type_embeddings", 2)[0]
    positions += token_type  # every token is of type 0 (one sentence)
    weights = Weights(
        words,
        word_scales,
        positions,
        norm("embeddings"),
        tuple(layers),
    )
    return mapped, weights


# -- the forward pass ------------------------------------------------------------------

# erf(x) = 1 - t (A1 + t (A2 + t (A3 + t (A4 + t A5)))) exp(-x^2), t = 1 / (1 + P x), x >= 0
_P = 0.3275911
_A = (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


class _Workspace:
    """Scratch arrays for one text's pass through a layer, made once for the
    longest text and reused: a fresh array of more than 128 kB is fresh
    memory from the system, and its page faults cost more than the
    arithmetic (GELU over 128 x 1,536 values took 2.7 ms with new arrays,
    0.8 ms with these)."""

    def __init__(self) -> None:
        import numpy as np

        rows = _padded_rows(MAX_TOKENS)
        self._flat = {
            "qkv": np.empty(rows * 3 * DIM, dtype=np.float32),
            "scores": np.empty(HEADS * rows * rows, dtype=np.float32),
            "heads": np.empty(HEADS * rows * HEAD_DIM, dtype=np.float32),
            "context": np.empty(rows * DIM, dtype=np.float32),
            "hidden": np.empty(rows * DIM, dtype=np.float32),
            "square": np.empty(rows * DIM, dtype=np.float32),
            "up": np.empty(rows * INTERMEDIATE, dtype=np.float32),
            "abs": np.empty(rows * INTERMEDIATE, dtype=np.float32),
            "t": np.empty(rows * INTERMEDIATE, dtype=np.float32),
            "y": np.empty(rows * INTERMEDIATE, dtype=np.float32),
        }

    def get(self, name: str, *shape: int) -> Floats:
        """A C-contiguous ``shape`` view of the buffer ``name``."""
        view: Floats = self._flat[name][: math.prod(shape)].reshape(shape)
        return view


# Each thread's workspace, kept between calls (4.5 MB): a query embedded in a
# warm process then touches no new memory.
_WORK = threading.local()


def _gelu(h: Floats, work: _Workspace) -> None:
    """h <- h * Phi(h), in place (exact GELU, erf approximated to 1.5e-7).

    With z = |h| / sqrt(2) and y = 1 - erf(z): Phi(h) = 1 - y/2 for h >= 0 and
    y/2 for h < 0, so h * Phi(h) = max(h, 0) - |h| y / 2 either way."""
    import numpy as np

    a = np.abs(h, out=work.get("abs", *h.shape))
    t = np.multiply(a, np.float32(_P / math.sqrt(2.0)), out=work.get("t", *h.shape))
    t += np.float32(1.0)
    np.reciprocal(t, out=t)
    y = np.multiply(t, np.float32(_A[4]), out=work.get("y", *h.shape))
    for c in (_A[3], _A[2], _A[1], _A[0]):
        y += np.float32(c)
        y *= t
    np.multiply(a, a, out=t)  # t is free again: -z^2 = -h^2 / 2
    t *= np.float32(-0.5)
    np.exp(t, out=t)
    y *= t
    y *= a
    y *= np.float32(0.5)
    np.maximum(h, np.float32(0.0), out=h)
    h -= y


def _layer_norm(x: Floats, norm: tuple[Floats, Floats], work: _Workspace) -> Floats:
    """LayerNorm over the last axis, in place."""
    import numpy as np

    x -= x.mean(axis=-1, keepdims=True)
    var = np.square(x, out=work.get("square", *x.shape)).mean(axis=-1, keepdims=True)
    var += LAYER_NORM_EPS
    np.sqrt(var, out=var)
    x /= var
    x *= norm[0]
    x += norm[1]
    return x


def _padded_rows(tokens: int) -> int:
    """The rows a text of ``tokens`` word pieces takes in the matrix
    products: the next multiple of :data:`ROW_BLOCK`."""
    return -(-tokens // ROW_BLOCK) * ROW_BLOCK


def _layer(padded: Floats, n: int, w: Layer, work: _Workspace) -> None:
    """One transformer layer over one text's token states, in place:
    ``padded[:n]`` are its ``n`` tokens, the rest zero rows that only the
    matrix products see (see :data:`ROW_BLOCK`). Zero rows in give zero rows
    out, as no bias is added to them, so the padding stays zero."""
    import numpy as np

    rows = padded.shape[0]
    x = padded[:n]
    qkv = np.matmul(padded, w.qkv, out=work.get("qkv", rows, 3 * DIM))[:n]
    qkv += w.qkv_bias
    # (n, 3 * 384) -> (3, heads, n, 32): views, which BLAS reads with strides.
    q, k, v = qkv.reshape(n, 3, HEADS, HEAD_DIM).transpose(1, 2, 0, 3)
    scores = np.matmul(q, k.transpose(0, 2, 1), out=work.get("scores", HEADS, n, n))
    scores -= scores.max(axis=-1, keepdims=True)
    np.exp(scores, out=scores)
    scores /= scores.sum(axis=-1, keepdims=True)
    heads = np.matmul(scores, v, out=work.get("heads", HEADS, n, HEAD_DIM))
    context = work.get("context", rows, DIM)
    # Rows never mix in a product, so the rows a longer text left in this
    # shared buffer would change nothing; zeroed, they cannot be inf or NaN.
    context[n:] = 0.0
    context[:n].reshape(n, HEADS, HEAD_DIM)[...] = heads.transpose(1, 0, 2)
    hidden = np.matmul(context, w.out, out=work.get("hidden", rows, DIM))
    h = hidden[:n]
    h += w.out_bias
    h += x
    _layer_norm(h, w.norm1, work)
    up = np.matmul(hidden, w.up, out=work.get("up", rows, INTERMEDIATE))
    up_n = up[:n]
    up_n += w.up_bias
    _gelu(up_n, work)
    np.matmul(up, w.down, out=padded)  # the layer's input is no longer needed
    x += w.down_bias
    x += h
    _layer_norm(x, w.norm2, work)


def forward(weights: Weights, texts: Sequence[Sequence[int]]) -> Floats:
    """Mean-pooled last-layer states of each text's token ids (not
    normalised): float32 ``(len(texts), 384)``. Every text is computed on its
    own (see the module docstring), the layers in turn over all of them."""
    import numpy as np

    work = getattr(_WORK, "space", None)
    if work is None:
        work = _WORK.space = _Workspace()
    states: list[tuple[Floats, int]] = []
    for ids in texts:
        index = np.asarray(ids, dtype=np.intp)
        n = len(index)
        padded: Floats = np.zeros((_padded_rows(n), DIM), dtype=np.float32)
        x = padded[:n].reshape(n, DIM // GROUP, GROUP)
        np.multiply(
            weights.words[index].reshape(n, DIM // GROUP, GROUP),
            weights.word_scales[index][:, :, None],
            out=x,
        )
        tokens = padded[:n]
        tokens += weights.positions[:n]
        _layer_norm(tokens, weights.norm, work)
        states.append((padded, n))
    for layer in weights.layers:
        for padded, n in states:
            _layer(padded, n, layer, work)
    out = np.empty((len(texts), DIM), dtype=np.float32)
    for i, (padded, n) in enumerate(states):
        np.mean(padded[:n], axis=0, out=out[i])
    return out


# -- the embedder ----------------------------------------------------------------------


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (384 dimensions), int8 weights run in float32 numpy, offline.

    Construction is free; the files are verified and loaded on first use (or
    by :meth:`load`). ``root`` replaces the directory of the two files shipped
    with gitmem (tests use it with copies); ``stamp_dir`` is where a
    successful verification is remembered (``None``: hash every time).
    ``threads`` is how many threads embed a batch's chunks of texts at once:
    a text is computed on one thread, alone, so its vector is the same bytes
    whatever the count. More than one pays only where numpy's BLAS runs one
    thread, as in gitmem's commands (:func:`gitmem.embed.registry.get_embedder`
    decides); a multi-threaded BLAS would fight the extra threads for the cores.
    """

    model_id: str = MODEL_ID
    dim: int = DIM
    # A query takes milliseconds, mostly in BLAS with the GIL released: a
    # search embeds it on a worker thread beside the full-text side.
    background: bool = True

    def __init__(
        self, *, root: Path | None = None, stamp_dir: Path | None = None, threads: int = 1
    ) -> None:
        if threads < 1:
            raise UsageError(f"MiniLM needs at least one thread to embed on, not {threads}")
        self._root = root
        self._stamp_dir = stamp_dir
        self.threads = threads
        self._weights: Weights | None = None
        self._tokenizer: WordPieceTokenizer | None = None
        self._mapped: mmap.mmap | None = None

    def __repr__(self) -> str:
        return (
            f"MiniLMEmbedder({self.model_id!r}, root={self._root}, stamp_dir={self._stamp_dir},"
            f" threads={self.threads})"
        )

    def load(self) -> None:
        """Verify and load the weights and vocabulary now (idempotent).

        Raises :class:`DependencyError` when the files are missing or do not
        match the pinned checksums.
        """
        if self._weights is not None:
            return
        root = self._root if self._root is not None else DATA_DIR
        self._mapped, self._weights, self._tokenizer = _FILES.get(root, self._stamp_dir)

    def token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's word-piece ids, ``[CLS]`` and ``[SEP]`` included, at
        most :data:`MAX_TOKENS` (what :meth:`embed` runs the model on)."""
        self.load()
        assert self._tokenizer is not None
        encode = self._tokenizer.encode
        ids: list[list[int]] = []
        for text in texts:
            if not isinstance(text, str):
                raise UsageError(f"cannot embed a {type(text).__name__}: texts must be strings")
            ids.append(encode(text))
        return ids

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts``: float32 ``(len(texts), 384)``, unit rows; a text
        without word pieces (empty, or only spaces and control characters)
        gives a zero row."""
        import numpy as np

        if isinstance(texts, str):
            raise UsageError("embed() takes a sequence of texts, not one string", "wrap it: [text]")
        ids = self.token_ids(texts)
        assert self._weights is not None
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        todo = [i for i, x in enumerate(ids) if len(x) > 2]
        # Chunks of at most CHUNK texts, at least one a thread, each dealt
        # every n-th text by length: they cost about the same, so no thread
        # waits for another holding all the long ones. The order changes no
        # vector (each text is computed on its own).
        todo.sort(key=lambda i: -len(ids[i]))
        count = max(min(self.threads, len(todo)), -(-len(todo) // CHUNK))
        chunks = [todo[k::count] for k in range(count)]
        weights = self._weights

        def run(rows: list[int]) -> Floats:
            return forward(weights, [ids[i] for i in rows])

        if self.threads > 1 and len(chunks) > 1:
            # numpy lets go of the GIL in its matrix products, most of a
            # text's time: two threads embed 1.9 times as many texts a second
            # on two cores.
            pool = _pool(self.threads)
            for rows, vectors in zip(chunks, pool.map(run, chunks), strict=True):
                out[rows] = vectors
        else:
            for rows in chunks:
                out[rows] = run(rows)
        return normalize_rows(out)


# The process's embedding threads, kept between batches: each keeps its scratch
# buffers (_WORK), which a pool made per batch would fault in afresh (1-1.5 ms
# a call, most of a refresh's first batch of two texts). Replaced when another
# number of threads is asked for; a forked child makes its own.
_POOL: tuple[int, ThreadPoolExecutor] | None = None
_POOL_LOCK = threading.Lock()


def _pool(threads: int) -> ThreadPoolExecutor:
    global _POOL
    from concurrent.futures import ThreadPoolExecutor

    with _POOL_LOCK:
        if _POOL is None or _POOL[0] != threads:
            old = _POOL
            _POOL = (threads, ThreadPoolExecutor(threads, thread_name_prefix="gitmem-embed"))
            if old is not None:
                old[1].shutdown(wait=False)  # its threads finish what they hold, then exit
        return _POOL[1]


def _forget_pool() -> None:
    global _POOL, _POOL_LOCK
    _POOL = None  # the parent's threads do not exist in the child
    _POOL_LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def _load(root: Path) -> tuple[mmap.mmap, Weights, WordPieceTokenizer]:
    from gitmem.embed.wordpiece import WordPieceTokenizer

    path = root / WEIGHTS.relpath
    try:
        mapped, weights = _load_weights(path)
    except OSError as exc:
        raise DependencyError(f"cannot read {path}: {exc}", REINSTALL_HINT) from None
    try:
        tokenizer = WordPieceTokenizer.from_file(root / VOCAB.relpath, max_tokens=MAX_TOKENS)
    except (OSError, ValueError) as exc:
        raise DependencyError(
            f"cannot load the vocabulary {root / VOCAB.relpath}: {exc}", REINSTALL_HINT
        ) from None
    if tokenizer.vocab_size != VOCAB_SIZE:
        raise DependencyError(
            f"{root / VOCAB.relpath} has {tokenizer.vocab_size} tokens, expected {VOCAB_SIZE}",
            REINSTALL_HINT,
        )
    return mapped, weights, tokenizer


_FILES = pinned.Loaded(PINS, _load)
