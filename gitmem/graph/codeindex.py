"""Code search: chunks of code (:mod:`gitmem.graph.chunks`) in the same
full-text and vector machinery as memory search.

A code index is a directory, ``<graph generation>/code/``, holding:

* ``chunks/NN.parquet``: one row per chunk (:func:`chunks_schema`), in
  shards by file like the graph's tables (:mod:`gitmem.graph.shards`; how
  many: ``code.json``), each sorted by path, first line, last line, id, so
  the same code gives the same files;
* ``fulltext/``: a Tantivy index of the chunks' texts
  (:class:`~gitmem.index.fulltext.FullText`: the same analyzers, typo
  tolerance and query building as memory search);
* ``vectors.usearch``: their embeddings (:class:`~gitmem.index.vectors.Vectors`),
  by the configured embedder (``edda.embed.*``), absent when embeddings are
  disabled;
* ``code.json``: what the rest holds (:class:`CodeMeta`), written last.

A chunk's id is the SHA-256 of its path, lines, symbol, kind and text, and
its key the first 64 bits of it, as for events. **Incremental.** Given the
previous index (``reuse``), a build links its full-text and vector files
(hard links: Tantivy and usearch never write into a file they wrote, they
write new ones and rename) and only deletes the chunks that went and adds
the ones that came: a changed file re-indexes its own chunks, nothing else.
The chunk shards holding no changed file are linked too. A process that
built the previous index keeps what it computed (each file's chunks, ids
and shard tables), so its next build hashes and sorts only the changed
files' chunks. Vectors come through an embedding
cache keyed by the text's SHA-256 (:class:`~gitmem.embed.cache.EmbeddingCache`),
so a chunk whose text is unchanged is never embedded again, even when it
moved. The cache is the code graph's own (``<cache_root>/embeddings/``), not
the memory index's: two builders under different locks must never append to
the same cache files. Removing vectors only frees their slots; once a
quarter of them are free the vector file is rebuilt from the cache.

An embedder that fails never fails the build (as for memory): the text
indexes are written, ``code.json`` says why vectors are missing, and vector
search then warns and answers lexically.

**Search** (:meth:`CodeIndex.query`) asks each engine for its best
candidates and fuses them as memory search does (:mod:`gitmem.index.fusion`:
score-aware by default, every candidate scored by both engines; reciprocal
rank fusion with ``fusion="rrf"``); there is no recency term. Ties break by
path and line, so the same index and query give the same hits.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from gitmem.errors import GitmemError, IndexDamagedError, NotFoundError, UsageError
from gitmem.graph.chunks import Chunk
from gitmem.graph.concurrent import Concurrent
from gitmem.index import fusion as fusions
from gitmem.index.fulltext import FULLTEXT_DIR
from gitmem.index.vectors import VECTORS_FILE, key64

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa
    from numpy.typing import NDArray

    from gitmem.embed.base import Embedder
    from gitmem.embed.cache import EmbeddingCache
    from gitmem.index.fulltext import FullText, TextDoc
    from gitmem.index.vectors import Vectors
    from gitmem.storage.gitconfig import Config

CODE_DIR = "code"
"""The code index's directory inside a graph generation."""
CHUNKS_DIR = "chunks"
META_FILE = "code.json"
CODE_INDEX_VERSION = 3  # 3: the full text has a head field (path and symbol)
CHUNK_ORDER = ["path", "start_line", "end_line", "id"]
# Fixed, so that the same rows give the same bytes: dictionaries only for the
# few-valued columns (texts and ids make poor ones, and trying costs), no
# statistics (the table is read whole). A shard of the standard library's
# (1,500 chunks) writes in 3.9 ms, 4.7 with pyarrow's defaults.
CHUNKS_PARQUET: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 1,
    "use_dictionary": ["path", "kind", "language"],
    "write_statistics": False,
}
MODES = ("hybrid", "lexical", "vector")
MAX_LIMIT = 10_000
SNIPPET_LINES = 12  # lines of a chunk shown in a hit's JSON and in context packs
REBUILD_FREE = 0.25  # rebuild the vector file once this share of its slots is free
EMBED_BATCH = 4096  # texts embedded per batch between progress reports

Mode = Literal["hybrid", "lexical", "vector"]
Progress = Callable[[str, int, int], None]


def chunks_schema() -> pa.Schema:
    """``chunks.parquet``: one row per chunk."""
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.string()),  # 64 hex digits: SHA-256 of path, lines, symbol, kind, text
            ("key", pa.uint64()),  # the first 64 bits of the id: full-text and vector key
            ("path", pa.string()),
            ("start_line", pa.int32()),
            ("end_line", pa.int32()),
            ("symbol", pa.string()),  # the definition's qualname ("" outside definitions)
            ("kind", pa.string()),  # the definition's kind, or "file"
            ("language", pa.string()),
            ("context", pa.string()),  # enclosing headers, one a line
            ("body", pa.string()),  # the chunk's lines
        ]
    )


def chunk_id(chunk: Chunk) -> str:
    """A chunk's id: what it is and where, hashed (:attr:`Chunk.id`)."""
    return chunk.id


@dataclass
class CodeMeta:
    """``code.json``: what the code index holds."""

    version: int
    chunks: int
    model: str | None = None  # the embedder whose vectors vectors.usearch holds
    dim: int | None = None
    unembedded: int = 0  # chunks without a vector (embedding failed or disabled)
    embed_error: str | None = None
    free: int = 0  # vector slots freed by removals since the vector file was last rebuilt
    shards: int = 1  # chunks/00.parquet … (see gitmem.graph.shards)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_meta(directory: Path) -> CodeMeta | None:
    """The index's ``code.json``, or None when missing, unreadable or of another version."""
    try:
        data = json.loads((directory / META_FILE).read_bytes())
        if not isinstance(data, dict) or data.get("version") != CODE_INDEX_VERSION:
            return None
        return CodeMeta(**data)
    except (OSError, ValueError, TypeError):
        return None


def chunk_files(shards: int) -> list[str]:
    """The chunk shards of an index of ``shards`` shards, relative to its directory."""
    from gitmem.graph.shards import shard_names

    return shard_names(CHUNKS_DIR, shards)


def _lock(name: str) -> bool:
    return name.startswith(".tantivy-") and name.endswith(".lock")


def code_index_files(directory: Path) -> list[str]:
    """The files of a built code index, relative to ``directory`` (for a
    sidecar manifest's checksums): not Tantivy's lock files, which readers create."""
    names = [n for n in (META_FILE, VECTORS_FILE) if (directory / n).is_file()]
    for folder in (CHUNKS_DIR, FULLTEXT_DIR):
        if (directory / folder).is_dir():
            with os.scandir(directory / folder) as entries:
                for entry in entries:
                    if not _lock(entry.name) and entry.is_file(follow_symlinks=False):
                        names.append(f"{folder}/{entry.name}")
    return sorted(names)


# -- building ---------------------------------------------------------------------------


@dataclass
class CodeIndexReport:
    """What :func:`build_code_index` did."""

    chunks: int = 0
    added: int = 0  # chunks added to the full-text index
    removed: int = 0  # chunks removed from it
    embedded: int = 0  # texts embedded (not found in the embedding cache)
    vectors: int = 0  # vectors added to the vector index
    model: str | None = None
    reused: bool = False  # started from the previous index
    seconds: float = 0.0
    files: list[str] = field(default_factory=list)  # written, relative to the directory
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class _Row:
    id: str
    key: int
    chunk: Chunk


def _by_path(chunks: Sequence[Chunk]) -> dict[str, Sequence[Chunk]]:
    """The chunks of each file (a builder passes them file by file)."""
    import itertools
    import operator

    out: dict[str, Sequence[Chunk]] = {}
    for path, group in itertools.groupby(chunks, key=operator.attrgetter("path")):
        out[path] = [*out.get(path, ()), *group]
    return out


def _path_rows(chunks: Sequence[Chunk]) -> list[_Row]:
    """One file's rows, in the table's order. A chunk given twice is one row
    (two different chunks of a file whose keys are alike, once in 2**64, too)."""
    seen: set[int] = set()
    rows = []
    for chunk in chunks:
        cid = chunk_id(chunk)
        key = key64(cid)
        if key not in seen:
            seen.add(key)
            rows.append(_Row(cid, key, chunk))
    rows.sort(key=lambda r: (r.chunk.start_line, r.chunk.end_line, r.id))
    return rows


@dataclass
class _State:
    """What a build computed, for the next build in the same process."""

    meta: CodeMeta
    chunks: dict[str, Sequence[Chunk]]  # the chunks given, by file (compared by identity first)
    rows: dict[str, list[_Row]]  # their rows, by file
    tables: list[pa.Table]  # the chunk shards written


# The index each code directory holds, as the build in this process that
# wrote it left it: the next build from it diffs file by file, by identity
# of the chunk objects (a builder passes the same objects for an unchanged
# file), instead of hashing every chunk and reading the previous table.
_STATES: dict[str, _State] = {}


def build_code_index(
    directory: Path,
    chunks: Sequence[Chunk] | Mapping[str, Sequence[Chunk]],
    *,
    config: Config,
    stamp_dir: Path | None,
    reuse: Path | None = None,
    cache_root: Path | None = None,
    embed: bool = True,
    progress: Progress | None = None,
    shards: int = 1,
) -> CodeIndexReport:
    """Write the code index of ``chunks`` (a list, or each file's list by
    path) into ``directory`` (created if need be).

    ``reuse`` is the previous code index (another generation's, or
    ``directory`` itself): unchanged chunks are then kept, not indexed again.
    ``config`` chooses the embedder (``edda.embed.*``) and ``stamp_dir`` is
    where it may keep its small caches; the embedding cache lives in
    ``<cache_root>/embeddings/`` (default: ``stamp_dir``'s, else the
    directory's). ``embed=False`` writes no vectors. ``shards``: how many
    chunk shards (the graph's :func:`~gitmem.graph.shards.shard_count`).
    The caller holds the builder lock and records
    :attr:`CodeIndexReport.files` in its manifest.
    """
    started = time.monotonic()
    report = CodeIndexReport()
    notify: Progress = progress or (lambda stage, done, total: None)
    directory.mkdir(parents=True, exist_ok=True)
    in_place = reuse is not None and _same(reuse, directory)
    state = _STATES.pop(str(reuse), None) if reuse is not None else None
    _STATES.pop(str(directory), None)
    if state is None or reuse is None or in_place or read_meta(reuse) != state.meta:
        state = None  # in place (no diff kept), or another process built there since
    # Each file's chunks as given (a builder's lists are not copied: a copy
    # would touch every chunk of the repository).
    by_path = dict(chunks) if isinstance(chunks, Mapping) else _by_path(chunks)
    changed: list[str]
    if state is not None:
        rows_by_path = dict(state.rows)
        known = state.chunks
        changed = [
            p for p, given in by_path.items() if known.get(p) is not given and known.get(p) != given
        ]
        changed += [p for p in state.rows if p not in by_path]
        old_keys = {r.key: r.id for p in changed for r in state.rows.get(p, ())}
        for path in changed:
            if path in by_path:
                rows_by_path[path] = _path_rows(by_path[path])
            else:
                del rows_by_path[path]
        old: tuple[CodeMeta, dict[int, str]] | None = (state.meta, old_keys)
        new_rows = [r for p in sorted(changed) for r in rows_by_path.get(p, ())]
        total = state.meta.chunks + len(new_rows)
        total -= sum(len(state.rows.get(p, ())) for p in changed)
    else:
        rows_by_path = {p: _path_rows(given) for p, given in sorted(by_path.items())}
        changed = sorted(by_path)
        old = _previous(reuse)
        new_rows = [r for p in changed for r in rows_by_path[p]]
        total = len(new_rows)
    if in_place or old is None:
        # A build interrupted in place must not leave a code.json vouching for
        # half-updated files: without it the next build starts over.
        (directory / META_FILE).unlink(missing_ok=True)
    if old is None:
        _clear(directory)
    elif not in_place:
        assert reuse is not None
        _clear(directory)
        try:
            _link_tree(reuse / FULLTEXT_DIR, directory / FULLTEXT_DIR)
            if (reuse / VECTORS_FILE).is_file():
                _link(reuse / VECTORS_FILE, directory / VECTORS_FILE)
        except OSError:  # removed under us (an old generation going): start afresh
            _clear(directory)
            old = None
    if old is None:  # everything is new
        state = None
        changed = sorted(rows_by_path)
        new_rows = [r for p in changed for r in rows_by_path[p]]
        total = len(new_rows)
    report.reused = old is not None
    old_meta, old_keys = old if old is not None else (None, {})
    new_keys = {r.key for r in new_rows}
    # With a state, old_keys are the changed files' alone: nothing else went.
    gone = sorted(k for k in old_keys if k not in new_keys)
    came = [r for r in new_rows if r.key not in old_keys]
    report.chunks = total

    def every_row() -> list[_Row]:
        return [r for p in sorted(rows_by_path) for r in rows_by_path[p]]

    # The chunk shards are written while the full text indexes: both let go
    # of the GIL for most of their work (on the standard library's cold
    # build, the shards took 0.5 s after Tantivy's 2 s when written in turn).
    shard_state = state if state is not None and state.meta.shards == shards else None
    written = Concurrent(
        lambda: _write_chunks(
            directory,
            rows_by_path,
            changed,
            shard_state,
            None if in_place or reuse is None else reuse,
            shards,
        ),
        "gitmem code chunks",
    )
    try:
        try:
            _fulltext(directory, came, [old_keys[k] for k in gone], report, notify)
        except IndexDamagedError:
            # The copied index does not open: index everything afresh.
            _clear(directory, vectors=False)
            gone, old_meta = [], None
            report.reused = False
            _fulltext(directory, every_row(), [], report, notify)
        meta = CodeMeta(CODE_INDEX_VERSION, report.chunks, shards=shards)
        _vectors(
            directory,
            every_row,
            report.chunks,
            gone,
            old_meta,
            meta,
            report,
            config,
            stamp_dir,
            cache_root,
            embed,
            notify,
        )
    finally:
        tables = written.join()
    _write_meta(directory, meta)
    for gone_dir in [d for d in _STATES if not os.path.isdir(d)]:
        del _STATES[gone_dir]  # a generation removed since (or a build that failed after)
    _STATES[str(directory)] = _State(meta, by_path, rows_by_path, tables)
    report.model = meta.model
    report.files = code_index_files(directory)
    report.seconds = time.monotonic() - started
    return report


def _link(source: Path, target: Path) -> None:
    """``target`` as a hard link to ``source`` (a copy where links fail)."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _link_tree(source: Path, target: Path) -> None:
    """A directory of links to ``source``'s files (not Tantivy's lock files:
    a lock shared with the previous generation's readers would be theirs)."""
    target.mkdir(parents=True)
    with os.scandir(source) as entries:
        for entry in entries:
            if not _lock(entry.name) and entry.is_file(follow_symlinks=False):
                _link(Path(entry.path), target / entry.name)


def _write_chunks(
    directory: Path,
    rows_by_path: dict[str, list[_Row]],
    changed: list[str],
    state: _State | None,
    reuse: Path | None,
    shards: int,
) -> list[pa.Table]:
    """Write the chunk shards: given the previous build's ``state`` (with as
    many shards), only those holding a ``changed`` file are built again,
    and of these only the ones whose rows differ are written; the others
    are linked from ``reuse`` (the previous index), or left in place."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from gitmem.graph.shards import shard_of, sort, split, write_all

    names = chunk_files(shards)
    folder = directory / CHUNKS_DIR
    if state is None:
        rows = [r for p in sorted(rows_by_path) for r in rows_by_path[p]]
        tables = split(_table(rows), shards, CHUNK_ORDER)
        rewrite = set(range(shards))
    else:
        tables = list(state.tables)
        by_shard: dict[int, list[str]] = {}
        for path in changed:
            by_shard.setdefault(shard_of(path, shards), []).append(path)
        rewrite = set()
        for s, paths in by_shard.items():
            old = tables[s]
            keep = pc.invert(pc.is_in(old.column("path"), value_set=pa.array(paths, pa.string())))
            fresh = _table([r for p in sorted(paths) for r in rows_by_path.get(p, ())])
            table = sort(pa.concat_tables([old.filter(keep), fresh]), CHUNK_ORDER)
            if not table.equals(old):
                tables[s] = table
                rewrite.add(s)
    if reuse is not None:
        shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(exist_ok=True)
    jobs = []
    for s, name in enumerate(names):
        if s not in rewrite and reuse is not None:
            try:
                os.link(reuse / name, directory / name)
                continue
            except OSError:  # gone: write it
                pass
        elif s not in rewrite and (directory / name).is_file():
            continue  # in place, unchanged
        jobs.append((tables[s], directory / name))
    write_all(jobs, _write_shard)
    wanted = {n.split("/", 1)[1] for n in names}
    for entry in os.scandir(folder):  # shards of another count, killed writes
        if entry.name not in wanted:
            os.unlink(entry.path)
    return tables


def _same(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _previous(reuse: Path | None) -> tuple[CodeMeta, dict[int, str]] | None:
    """The previous index's meta and its chunks (key -> id), when it can be reused."""
    if reuse is None or not (reuse / FULLTEXT_DIR).is_dir():
        return None
    meta = read_meta(reuse)
    if meta is None:
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pa.concat_tables(
            pq.read_table(reuse / name, columns=["id", "key"]) for name in chunk_files(meta.shards)
        )
    except (OSError, ValueError):  # missing, unreadable, columns that differ
        return None
    if table.num_rows != meta.chunks:
        return None
    ids = table.column("id").to_pylist()
    keys = table.column("key").to_pylist()
    return meta, dict(zip(keys, ids, strict=True))


def _clear(directory: Path, *, vectors: bool = True) -> None:
    shutil.rmtree(directory / FULLTEXT_DIR, ignore_errors=True)
    if vectors:
        (directory / VECTORS_FILE).unlink(missing_ok=True)


def _fulltext(
    directory: Path,
    came: Sequence[_Row],
    gone: Sequence[str],
    report: CodeIndexReport,
    notify: Progress,
) -> None:
    from gitmem.index.fulltext import FullText, TextDoc

    docs: list[TextDoc] = [TextDoc(r.id, r.key, searchable(r.chunk)) for r in came]
    notify("code full text", 0, len(docs))
    try:
        index = FullText(directory / FULLTEXT_DIR, create=True)
    except (ValueError, OSError) as exc:  # a copied index Tantivy cannot open
        raise IndexDamagedError(f"code full-text index: {exc}") from None
    try:
        report.added = index.update(docs, gone)
    except ValueError as exc:  # Tantivy's errors are ValueErrors
        raise IndexDamagedError(f"code full-text index: {exc}") from None
    finally:
        index.close()
    report.removed = len(gone)
    notify("code full text", len(docs), len(docs))


def searchable(chunk: Chunk) -> str:
    """A chunk's text as the full-text index holds it (:attr:`Chunk.searchable`)."""
    return chunk.searchable


def _vectors(
    directory: Path,
    every_row: Callable[[], Sequence[_Row]],
    total: int,
    gone: Sequence[int],
    old: CodeMeta | None,
    meta: CodeMeta,
    report: CodeIndexReport,
    config: Config,
    stamp_dir: Path | None,
    cache_root: Path | None,
    embed: bool,
    notify: Progress,
) -> None:
    """Bring ``vectors.usearch`` in step with ``rows``, recording the outcome in ``meta``."""
    from gitmem.index.vectors import Vectors, rebuild

    path = directory / VECTORS_FILE
    embedder: Embedder | None = None
    if embed:
        try:
            from gitmem.embed import get_embedder

            embedder = get_embedder(config, stamp_dir=stamp_dir, purpose="code")
            if embedder is None:
                meta.embed_error = "disabled (edda.embed.provider=none)"
        except GitmemError as exc:
            report.warnings.append(f"embeddings disabled: {exc.message}")
            meta.embed_error = exc.message
    else:
        meta.embed_error = "not embedded (built without embeddings)"
    if embedder is None:
        path.unlink(missing_ok=True)
        meta.unembedded = total
        return
    rows = every_row()
    vectors: Vectors | None = None
    try:
        from gitmem.embed.cache import EmbeddingCache
        from gitmem.index.embedding import cache_directory

        dim = int(embedder.dim)
        root = cache_root or stamp_dir or directory
        cache = EmbeddingCache(cache_directory(root, embedder.model_id), embedder.model_id, dim)
        meta.model, meta.dim = embedder.model_id, dim
        if old is not None and old.model == embedder.model_id and old.dim == dim and path.is_file():
            try:
                vectors = Vectors(path, dim)
            except IndexDamagedError:
                vectors = None
        if vectors is not None:
            meta.free = old.free if old is not None else 0
            meta.free += vectors.remove(gone)
            if meta.free > REBUILD_FREE * max(len(vectors) + meta.free, 1):
                vectors.close()
                vectors = None
        if vectors is None:
            matrix = _embed(embedder, cache, [r.chunk.text for r in rows], report, notify)
            vectors = rebuild(path, dim, [r.key for r in rows], matrix)
            report.vectors += len(rows)
            meta.free = 0
        else:
            present = vectors.contains([r.key for r in rows])
            missing = [r for r, ok in zip(rows, present, strict=True) if not ok]
            if missing:
                matrix = _embed(embedder, cache, [r.chunk.text for r in missing], report, notify)
                vectors.add([r.key for r in missing], matrix)
                report.vectors += len(missing)
            vectors.save()
        meta.unembedded = 0
    except GitmemError as exc:
        report.warnings.append(f"code vectors not updated: {exc.message}")
        meta.embed_error = exc.message
        if vectors is None or not path.is_file():
            path.unlink(missing_ok=True)
            meta.model = meta.dim = None
            meta.unembedded = len(rows)
        else:
            vectors.save()  # the removals: no vector of a chunk that went
            present = vectors.contains([r.key for r in rows])
            meta.unembedded = sum(1 for ok in present if not ok)
    finally:
        if vectors is not None:
            vectors.close()


def _embed(
    embedder: Embedder,
    cache: EmbeddingCache,
    texts: list[str],
    report: CodeIndexReport,
    notify: Progress,
) -> NDArray[np.float32]:
    import numpy as np

    before = len(cache)
    parts = []
    for start in range(0, len(texts), EMBED_BATCH):
        parts.append(cache.embed_cached(embedder, texts[start : start + EMBED_BATCH]))
        notify("code embeddings", min(start + EMBED_BATCH, len(texts)), len(texts))
    report.embedded += len(cache) - before
    if not parts:
        return np.zeros((0, int(embedder.dim)), dtype=np.float32)
    return np.concatenate(parts)


def _table(rows: Sequence[_Row]) -> pa.Table:
    import pyarrow as pa

    columns: dict[str, list[Any]] = {name: [] for name in chunks_schema().names}
    for r in rows:
        c = r.chunk
        columns["id"].append(r.id)
        columns["key"].append(r.key)
        columns["path"].append(c.path)
        columns["start_line"].append(c.start_line)
        columns["end_line"].append(c.end_line)
        columns["symbol"].append(c.symbol)
        columns["kind"].append(c.kind)
        columns["language"].append(c.language)
        columns["context"].append("\n".join(c.context))
        columns["body"].append(c.body)
    return pa.Table.from_pydict(columns, schema=chunks_schema())


def _write_shard(table: pa.Table, path: Path) -> None:
    import pyarrow.parquet as pq

    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp, **CHUNKS_PARQUET)
    os.replace(tmp, path)


def _write_meta(directory: Path, meta: CodeMeta) -> None:
    from gitmem.storage.files import write_atomic

    data = json.dumps(meta.to_json(), sort_keys=True).encode()
    # Derived data, rebuilt when lost: no fsync (the sidecar's manifest is the commit point).
    write_atomic(str(directory / META_FILE), data, fsync=False)


# -- searching --------------------------------------------------------------------------


@dataclass
class CodeHit:
    """One chunk found, with how its score came about."""

    path: str
    start_line: int
    end_line: int
    symbol: str
    kind: str
    language: str
    body: str
    score: float  # the fused relevance (1.0: the best of every engine asked)
    id: str = ""
    context: tuple[str, ...] = ()
    lexical_rank: int | None = None  # rank in full text's candidate list (None: not in it)
    lexical_score: float | None = None  # BM25 (None: the query's words do not match it)
    vector_rank: int | None = None  # rank in the vector candidate list (None: not in it)
    vector_score: float | None = None  # cosine similarity
    lexical: float | None = None  # score fusion: the BM25 on its 0..1 scale
    vector: float | None = None  # score fusion: the cosine on its 0..1 scale

    @property
    def lines(self) -> str:
        """``12-40`` (or ``12`` for one line)."""
        if self.start_line == self.end_line:
            return str(self.start_line)
        return f"{self.start_line}-{self.end_line}"

    @property
    def location(self) -> str:
        """``path:12-40``."""
        return f"{self.path}:{self.lines}"

    @property
    def headline(self) -> str:
        """The line that best says what the chunk is: the one naming its
        symbol (its definition's header), else its first line with a word."""
        name = self.symbol.rsplit(".", 1)[-1]
        lines = [line.strip() for line in self.body.split("\n")]
        if name:
            for line in lines:
                if name in line and not line.startswith(("#", "//", "/*", "*", "@", "--")):
                    return line
        return next((line for line in lines if any(c.isalnum() for c in line)), "")

    def snippet(self, lines: int = SNIPPET_LINES) -> str:
        """The chunk's first ``lines`` lines (a last line ``…`` when there are more)."""
        kept = self.body.split("\n")
        if len(kept) <= lines:
            return self.body
        return "\n".join([*kept[:lines], "…"])

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "symbol": self.symbol,
            "kind": self.kind,
            "language": self.language,
            "snippet": self.snippet(),
            "score": round(self.score, 6),
            "components": {
                "lexical_rank": self.lexical_rank,
                "lexical_bm25": None
                if self.lexical_score is None
                else round(self.lexical_score, 4),
                "vector_rank": self.vector_rank,
                "vector_cosine": None if self.vector_score is None else round(self.vector_score, 4),
                "lexical": None if self.lexical is None else round(self.lexical, 6),
                "vector": None if self.vector is None else round(self.vector, 6),
                "relevance": round(self.score, 6),
            },
        }


@dataclass
class CodeSearchResult:
    """The hits for a query and what the engines found."""

    query: str
    mode: str
    hits: list[CodeHit]
    lexical_candidates: int = 0
    vector_candidates: int = 0
    warnings: list[str] = field(default_factory=list)
    fusion: str = fusions.DEFAULT_FUSION

    def to_json(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "mode": self.mode,
            "fusion": self.fusion,
            "candidates": {"lexical": self.lexical_candidates, "vector": self.vector_candidates},
            "hits": [{"source": "code", **h.to_json()} for h in self.hits],
            "warnings": self.warnings,
        }


class CodeIndex:
    """A built code index, open for searching (see the module docstring).

    Holds the chunks table (memory-mapped) and, once used, the full-text and
    vector indexes and the query embedder, until :meth:`close`.
    """

    def __init__(
        self,
        directory: Path,
        meta: CodeMeta,
        table: pa.Table,
        config: Config | None = None,
        stamp_dir: Path | None = None,
    ) -> None:
        self.directory = directory
        self.meta = meta
        self.table = table
        self.config: Config = config or {}
        self.stamp_dir = stamp_dir
        self._fulltext: FullText | None = None
        self._vectors: Vectors | None = None
        self._embedder: Embedder | None = None
        self._embedder_loaded = False
        self._rows: dict[int, int] | None = None
        self._sample: fusions.FloorSample | None = None  # the fusion floor's vectors

    @classmethod
    def open(
        cls, directory: Path, *, config: Config | None = None, stamp_dir: Path | None = None
    ) -> CodeIndex:
        """The code index in ``directory`` (NotFoundError when none was built
        there, IndexDamagedError when its files do not agree). ``config``
        chooses the query embedder, which must be the model the index was
        built by, and ``stamp_dir`` is where it may keep its small caches."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        meta = read_meta(directory)
        if meta is None:
            raise NotFoundError(
                f"no code index in {directory}", "build one with 'git edda code index'"
            )
        try:
            # the shards in order, read together (Arrow reads them in parallel)
            paths = [str(directory / name) for name in chunk_files(meta.shards)]
            table = pq.read_table(paths if len(paths) > 1 else paths[0], memory_map=True)
        except (OSError, pa.ArrowException) as exc:
            raise IndexDamagedError(f"{CHUNKS_DIR}: {exc}") from None
        if table.schema != chunks_schema():
            raise IndexDamagedError(f"{CHUNKS_DIR} does not have the chunks' columns")
        if table.num_rows != meta.chunks:
            raise IndexDamagedError(f"{CHUNKS_DIR} does not match {META_FILE}")
        return cls(directory, meta, table, config, stamp_dir)

    def close(self) -> None:
        """Release the files and the embedder (idempotent)."""
        if self._fulltext is not None:
            self._fulltext.close()
        if self._vectors is not None:
            self._vectors.close()
        self._fulltext = self._vectors = self._embedder = None
        self._rows = self._sample = None

    def __enter__(self) -> CodeIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __len__(self) -> int:
        return int(self.table.num_rows)

    @property
    def fulltext(self) -> FullText:
        if self._fulltext is None:
            from gitmem.index.fulltext import FullText

            self._fulltext = FullText(self.directory / FULLTEXT_DIR)
        return self._fulltext

    @property
    def vectors(self) -> Vectors | None:
        """The vector index, or None when the index has none."""
        if self._vectors is None and self.meta.model and self.meta.dim:
            from gitmem.index.vectors import Vectors

            path = self.directory / VECTORS_FILE
            if path.is_file():
                self._vectors = Vectors(path, self.meta.dim, view=True)
        return self._vectors

    @property
    def embedder(self) -> Embedder | None:
        """The configured query embedder, loaded once (None: vectors disabled)."""
        if not self._embedder_loaded:
            from gitmem.embed import get_embedder

            self._embedder = get_embedder(self.config, stamp_dir=self.stamp_dir, purpose="code")
            self._embedder_loaded = True
        return self._embedder

    def rows_for_keys(self, keys: Sequence[int]) -> list[int | None]:
        """The table rows of chunk keys (None for a key the table does not hold)."""
        if self._rows is None:
            column = self.table.column("key").to_pylist()
            self._rows = {int(k): row for row, k in enumerate(column)}
        return [self._rows.get(int(k)) for k in keys]

    def search(
        self,
        query: str,
        limit: int = 10,
        mode: Mode = "hybrid",
        *,
        paths: Sequence[str] = (),
        advanced: bool = False,
        embedder: Embedder | None = None,
    ) -> list[CodeHit]:
        """The best ``limit`` chunks for ``query`` (see :meth:`query`)."""
        return self.query(
            query, limit, mode, paths=paths, advanced=advanced, embedder=embedder
        ).hits

    def query(
        self,
        query: str,
        limit: int = 10,
        mode: Mode = "hybrid",
        *,
        paths: Sequence[str] = (),
        advanced: bool = False,
        embedder: Embedder | None = None,
        candidates: int | None = None,
        fusion: str = fusions.DEFAULT_FUSION,
    ) -> CodeSearchResult:
        """Search the chunks: ``mode`` hybrid (full text and meaning), lexical
        or vector; ``paths`` keeps chunks of those files (exact, directory
        prefix or glob, as ``--path`` does), applied before the candidate
        limits; ``embedder`` overrides the configured query embedder;
        ``fusion`` is ``score`` (default) or ``rrf`` (:mod:`gitmem.index.fusion`)."""
        if mode not in MODES:
            raise UsageError(f"search mode {mode!r} is not one of {', '.join(MODES)}")
        if fusion not in fusions.FUSIONS:
            raise UsageError(f"fusion {fusion!r} is not one of {', '.join(fusions.FUSIONS)}")
        if not 1 <= limit <= MAX_LIMIT:
            raise UsageError(f"the result limit must be between 1 and {MAX_LIMIT:,}, not {limit:,}")
        result = CodeSearchResult(query, mode, [], fusion=fusion)
        if not query.strip() or len(self) == 0:
            return result
        allowed = self._allowed(paths)
        if allowed is not None and not allowed:
            return result
        pool = candidates or max(limit * 5, 50)
        q = self._query_vector(query, result, embedder) if mode != "lexical" else None
        if fusion == "rrf":
            lexical: list[tuple[int, float]] = []
            vector: list[tuple[int, float]] = []
            if mode in ("hybrid", "lexical"):
                lexical = self._lexical(query, pool, allowed, advanced)
            if q is not None:
                vector = [
                    (row, score)
                    for row, score in self._vector(q, pool, allowed)
                    if score >= fusions.MIN_COSINE
                ]
            result.lexical_candidates, result.vector_candidates = len(lexical), len(vector)
            result.hits = self._fuse_rrf(lexical, vector, limit, 2 if mode == "hybrid" else 1)
        else:
            result.hits = self._fuse_scores(query, q, pool, allowed, advanced, limit, result)
        return result

    def _allowed(self, paths: Sequence[str]) -> set[int] | None:
        """The rows of chunks in ``paths`` (None: every row)."""
        if not paths:
            return None
        from gitmem.memory.query import path_matches

        column = self.table.column("path").to_pylist()
        return {
            row
            for row, path in enumerate(column)
            if any(path_matches(path, pattern) for pattern in paths)
        }

    def _lexical(
        self, query: str, pool: int, allowed: set[int] | None, advanced: bool
    ) -> list[tuple[int, float]]:
        want = pool if allowed is None else pool * 4
        while True:
            found = self.fulltext.search_keys(query, want, advanced=advanced)
            rows = self.rows_for_keys([key for key, _score in found])
            kept = [
                (row, score)
                for row, (_key, score) in zip(rows, found, strict=True)
                if row is not None and (allowed is None or row in allowed)
            ]
            if len(kept) >= pool or len(found) < want:
                return kept[:pool]
            want *= 4

    def _lexical_scores(self, query: str, rows: Sequence[int], advanced: bool) -> dict[int, float]:
        """row -> BM25 of these chunks (absent: the query does not match them)."""
        ids = [self.table.column("id")[row].as_py() for row in rows]
        row_of = {key64(cid): row for cid, row in zip(ids, rows, strict=True)}
        found = self.fulltext.scores_of(query, ids, advanced=advanced)
        return {row_of[key]: score for key, score in found.items() if key in row_of}

    def _query_vector(
        self, query: str, result: CodeSearchResult, embedder: Embedder | None
    ) -> NDArray[np.float32] | None:
        """The query's embedding, or None (with a warning) when vectors cannot answer."""
        vectors = self.vectors
        if vectors is None:
            why = self.meta.embed_error or "embeddings disabled or not built"
            result.warnings.append(f"no code vector index ({why}): lexical results only")
            return None
        if embedder is None or embedder.model_id != self.meta.model:
            embedder = self.embedder
        if embedder is None or embedder.model_id != self.meta.model:
            result.warnings.append(
                "the code index was built by another embedding model: "
                "run 'git edda code index' to re-embed; lexical results only"
            )
            return None
        if self.meta.unembedded:
            result.warnings.append(f"{self.meta.unembedded} code chunks have no vector yet")
        try:
            vector: NDArray[np.float32] = embedder.embed([query])[0]
        except (GitmemError, OSError) as exc:
            detail = exc.message if isinstance(exc, GitmemError) else str(exc)
            result.warnings.append(
                f"the embedding provider could not embed the query ({detail}): lexical results only"
            )
            return None
        return vector

    def _vector(
        self, q: NDArray[np.float32], depth: int, allowed: set[int] | None
    ) -> list[tuple[int, float]]:
        """(row, cosine) of the ``depth`` nearest allowed chunks, best first."""
        assert self.vectors is not None  # _query_vector gave a vector
        keys = None
        if allowed is not None:
            column = self.table.column("key").to_pylist()
            keys = [int(column[row]) for row in sorted(allowed)]
        found = self.vectors.search(q, depth, keys)
        rows = self.rows_for_keys([k for k, _s in found])
        return [
            (row, score) for row, (_k, score) in zip(rows, found, strict=True) if row is not None
        ]

    def _vector_floor(self, q: NDArray[np.float32], allowed: set[int] | None) -> float:
        """The lowest cosine among a fixed sample of the allowed chunks (see
        :mod:`gitmem.index.fusion`): the cosine that normalises to 0."""
        import numpy as np

        assert self.vectors is not None
        if allowed is None and self._sample is not None:
            sample = self._sample
        else:
            keys = np.asarray(self.table.column("key").to_numpy(), dtype=np.uint64)
            if allowed is not None:
                keys = keys[sorted(allowed)]
            sample = fusions.FloorSample(self.vectors, fusions.sample(keys))
            if allowed is None:
                self._sample = sample
        return sample.floor(q)

    def _vector_scores(self, q: NDArray[np.float32], rows: Sequence[int]) -> dict[int, float]:
        """row -> cosine of these chunks (absent: the chunk has no vector)."""
        assert self.vectors is not None
        keys = [int(self.table.column("key")[row].as_py()) for row in rows]
        row_of = dict(zip(keys, rows, strict=True))
        found = self.vectors.search(q, len(keys), keys)
        return {row_of[key]: score for key, score in found if key in row_of}

    def _fuse_scores(
        self,
        query: str,
        q: NDArray[np.float32] | None,
        pool: int,
        allowed: set[int] | None,
        advanced: bool,
        limit: int,
        result: CodeSearchResult,
    ) -> list[CodeHit]:
        """Score-aware fusion of the engines the mode asks for."""
        sides: list[fusions.Side[int]] = []
        if result.mode in ("hybrid", "lexical"):
            sides.append(
                fusions.Side(
                    "lexical",
                    lambda depth: self._lexical(query, depth, allowed, advanced),
                    lambda rows: self._lexical_scores(query, rows, advanced),
                )
            )
        if q is not None:
            vector = q
            sides.append(
                fusions.Side(
                    "vector",
                    lambda depth: self._vector(vector, depth, allowed),
                    lambda rows: self._vector_scores(vector, rows),
                    vector=True,
                    reference=lambda: self._vector_floor(vector, allowed),
                )
            )
        where: dict[int, tuple[str, int]] = {}

        def prepare(rows: Sequence[int]) -> None:
            paths, starts = self.table.column("path"), self.table.column("start_line")
            for row in rows:
                if row not in where:
                    where[row] = (paths[row].as_py(), starts[row].as_py())

        fused = fusions.fuse_scores(sides, limit, pool, prepare, lambda row: where[row])
        for side in sides:
            if side.name == "lexical":
                result.lexical_candidates = len(side.ranked)
            else:
                result.vector_candidates = len(side.ranked)
        hits = []
        for f in fused:
            hit = self._hit(f.item, f.relevance)
            hit.lexical_rank, hit.lexical_score = f.ranks.get("lexical"), f.raw.get("lexical")
            hit.vector_rank, hit.vector_score = f.ranks.get("vector"), f.raw.get("vector")
            hit.lexical, hit.vector = f.normalised.get("lexical"), f.normalised.get("vector")
            hits.append(hit)
        return hits

    def _fuse_rrf(
        self,
        lexical: Sequence[tuple[int, float]],
        vector: Sequence[tuple[int, float]],
        limit: int,
        engines: int,
    ) -> list[CodeHit]:
        parts = fusions.ranks((("lexical", lexical), ("vector", vector)))
        if not parts:
            return []
        paths = self.table.column("path")
        starts = self.table.column("start_line")
        scored = []
        for row, found in parts.items():
            relevance = fusions.relevance(found, engines)
            where = (paths[row].as_py(), starts[row].as_py())
            scored.append((-round(relevance, fusions.DECIMALS), where, row, relevance))
        scored.sort()
        hits = []
        for _neg, _where, row, relevance in scored[:limit]:
            found = parts[row]
            hit = self._hit(row, relevance)
            if "lexical" in found:
                hit.lexical_rank, hit.lexical_score = found["lexical"]
            if "vector" in found:
                hit.vector_rank, hit.vector_score = found["vector"]
            hits.append(hit)
        return hits

    def _hit(self, row: int, score: float) -> CodeHit:
        r = self.table.slice(row, 1).to_pylist()[0]
        context = tuple(r["context"].split("\n")) if r["context"] else ()
        return CodeHit(
            r["path"],
            r["start_line"],
            r["end_line"],
            r["symbol"],
            r["kind"],
            r["language"],
            r["body"],
            score,
            id=r["id"],
            context=context,
        )
