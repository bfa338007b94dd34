"""Building the code graph: scan -> facts (cached by blob, or parsed) ->
resolve -> three Parquet tables in a new sidecar generation.

Under the graph's builder lock (:mod:`gitmem.sidecar.lock`):

1. :func:`~gitmem.graph.scan.scan` lists the files to index at a commit
   (default HEAD), with the uncommitted changes over them for ``worktree``;
2. each file's facts come from the cache (:mod:`gitmem.graph.cache`) by
   blob id and language; the rest are read through one ``git cat-file
   --batch`` and parsed (:mod:`gitmem.graph.extraction`, a process per core
   when there are many) and cached;
3. :func:`gitmem.graph.resolve.resolve` turns every file's facts into the
   nodes and edges tables, in shards by file (:mod:`gitmem.graph.shards`);
4. ``files.parquet`` and the shards ``nodes/NN.parquet`` and
   ``edges/NN.parquet`` are written into a new generation, then the
   manifest naming it (last, atomically); the previous generation goes
   (readers that opened it keep their files).

A process that built the graph before (the daemon, a long-lived library
user) resolves only what the changed files can affect, keeps every other
shard's table object, and links the shards whose rows it did not change
from the previous generation instead of writing them again (their
checksums carried over, once the previous generation's files checked out);
the code index does the same with its own shards and full-text files.

Nothing is built when the graph is current (same files, same settings and
versions); when HEAD moved but every file is the same (an amended message,
a branch at the same tree), only a new manifest is written.

The same files give byte-identical tables, whether written or linked: rows
are sorted within each shard, ids derive from (path, qualified name, kind),
the number of shards from the number of files, and Parquet is written with
fixed options.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gitmem.errors import IndexDamagedError, UsageError
from gitmem.graph import extraction
from gitmem.graph.blobs import blob_sizes, read_blobs
from gitmem.graph.cache import CHUNKS_SUFFIX, Cached, FactsCache, cache_key, decode, encode
from gitmem.graph.concurrent import Concurrent
from gitmem.graph.facts import EXTRACTOR_VERSION, FileFacts
from gitmem.graph.manifest import (
    EDGES_TABLE,
    FILES_FILE,
    GRAPH_VERSION,
    NODES_TABLE,
    GraphManifest,
    check_generation,
    read_manifest,
    table_files,
    write_manifest,
)
from gitmem.graph.paths import WORKTREE_PREFIX, cache_path, graph_path, root_path
from gitmem.graph.scan import Entry, Scan, Settings, content_skip, scan
from gitmem.graph.schema import SCHEMA_VERSION, files_schema
from gitmem.graph.shards import shard_count, shard_name, write_all
from gitmem.sidecar import generations, integrity
from gitmem.sidecar.lock import LOCK_TIMEOUT, building, unless_busy
from gitmem.storage.gitconfig import Config, read_config
from gitmem.storage.locate import RepoLocation, object_format

if TYPE_CHECKING:
    import pyarrow as pa

    from gitmem.graph.chunks import Chunk

__all__ = ["LOCK_TIMEOUT", "BuildReport", "Progress", "build", "graph_root", "try_build"]

Progress = Callable[[str, int, int], None]
"""``(stage, done, total)``: how far a long build has come."""

# Parquet options, fixed so that the same rows give the same bytes. Measured
# on the standard library's graph (75,000 nodes, 290,000 edges): zstd level
# 1 with dictionaries only for the few-valued columns and no statistics
# writes in 110 ms and reads in 85 ms, 7.2 MB; pyarrow's defaults with zstd
# 3 took 190 and 130 ms for 7.1 MB (ids make poor dictionaries, and the
# tables are read whole, so per-page statistics save nothing).
PARQUET_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 1,
    "use_dictionary": ["kind", "reason", "path", "language", "source"],
    "write_statistics": False,
    "row_group_size": 128 * 1024,
    "data_page_size": 1 << 20,
}


@dataclass
class BuildReport:
    """What a build did."""

    built: bool  # False: the graph was current (or only HEAD's name for the same files moved)
    mode: str  # "head", "worktree" or "commit" (see gitmem.graph.manifest.MODES)
    commit: str | None
    worktree: bool
    reason: str = ""  # why it was built
    seen: int = 0  # files looked at: indexed + skipped
    files: int = 0  # files indexed
    parsed: int = 0  # blobs parsed by this build
    reused: int = 0  # files whose facts came from the cache
    errors: int = 0  # files indexed whose parsing failed (file nodes only)
    skipped: dict[str, int] = field(default_factory=dict)  # files not indexed, by reason
    nodes: int = 0
    edges: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def graph_root(location: RepoLocation) -> Path:
    """The sidecar root of this worktree's graph."""
    return Path(root_path(location))


# (path, blob) -> cache key, as the last build found them (per process).
_KEYS: dict[tuple[str, str], str] = {}


def _keys(entries: list[Entry]) -> dict[str, str]:
    """Each entry's cache key by path (the language its path gives, with its
    blob), named once per path and blob in a long-lived process."""
    global _KEYS
    _, language_for = extraction.load()
    known = _KEYS
    now: dict[tuple[str, str], str] = {}
    keys: dict[str, str] = {}
    for e in entries:
        pair = (e.path, e.blob)
        key = known.get(pair)
        if key is None:
            key = cache_key(e.blob, language_for(e.path))
        now[pair] = keys[e.path] = key
    _KEYS = now
    return keys


def _content_digest(entries: list[Entry], keys: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for e in entries:
        digest.update(f"{e.path}\0{keys[e.path]}\0{e.source}\n".encode())
    return digest.hexdigest()[:32]


def _write_table(table: pa.Table, path: Path) -> None:
    import pyarrow.parquet as pq

    pq.write_table(table, str(path), **PARQUET_OPTIONS)


class Builder:
    """One build of one worktree's graph, under its builder lock."""

    def __init__(
        self,
        location: RepoLocation,
        settings: Settings,
        root: Path,
        progress: Progress | None,
        *,
        deep: bool = False,
        config: Config | None = None,
    ) -> None:
        self.location = location
        self.config = config  # the git configuration read for this build (None: read when needed)
        self.deep = deep
        self.settings = settings
        self.root = root
        self.progress = _serialised(progress) if progress else (lambda stage, done, total: None)
        self.cache = FactsCache(cache_path(location))
        self.reparse = False  # --rebuild: the cache is written, never read
        self.previous: GraphManifest | None = None
        self.fresh: dict[str, bytes] = {}  # cache key -> bytes of blobs read but not chunked yet
        self.chunked: dict[str, list[Chunk]] = {}  # cache key -> chunks of the blobs parsed here

    def run(self, *, rebuild: bool, worktree: bool, commit: str | None) -> BuildReport:
        mode = "commit" if commit else "worktree" if worktree else "head"
        previous = self.previous = read_manifest(self.root)
        found = scan(self.location, self.settings, commit=commit, worktree=worktree)
        keys = _keys(found.entries)
        content = _content_digest(found.entries, keys)
        report = BuildReport(True, mode, found.commit, worktree)
        if rebuild:
            report.reason = "requested"
            self.reparse = True
        elif previous is None:
            report.reason = "no graph yet"
        else:
            report.reason = self._reuse(previous, found, mode, content, report)
            if not report.reason:
                return report
        self._full(found, keys, content, mode, report)
        return report

    def _reuse(
        self, previous: GraphManifest, found: Scan, mode: str, content: str, report: BuildReport
    ) -> str:
        """ "" when the previous generation serves (its manifest rewritten
        when only the commit or mode it is named by changed), else why not."""
        if previous.extractor != EXTRACTOR_VERSION:
            return f"extractor version {previous.extractor} -> {EXTRACTOR_VERSION}"
        if previous.schema != SCHEMA_VERSION:
            return f"table schema version {previous.schema} -> {SCHEMA_VERSION}"
        if previous.settings != self.settings.fingerprint:
            return "edda.code settings changed"
        if previous.object_format != object_format(self.location.common_path):
            return "object format changed"
        if previous.content != content:
            return "files changed"
        if previous.shards != shard_count(previous.counts.get("files", 0)):
            return "shards laid out otherwise"  # by another version of gitmem
        if previous.skipped.get("missing"):
            return "blobs were missing"  # a partial clone may have fetched them since
        try:
            check_generation(self.root / previous.generation, previous, deep=self.deep)
        except IndexDamagedError as exc:
            return f"damaged graph ({exc})"
        report.built = False
        report.files = previous.counts.get("files", 0)
        report.nodes = previous.counts.get("nodes", 0)
        report.edges = previous.counts.get("edges", 0)
        report.skipped = dict(previous.skipped)
        report.seen = report.files + sum(report.skipped.values())
        report.reused = report.files
        label = (found.commit, mode, found.worktree, found.status)
        if label != (previous.commit, previous.mode, previous.worktree, previous.status):
            previous.commit, previous.mode = found.commit, mode
            previous.worktree, previous.status = found.worktree, found.status
            write_manifest(self.root, previous)
        return ""

    # -- facts ---------------------------------------------------------------------------
    def _facts(
        self, found: Scan, keys: dict[str, str], report: BuildReport
    ) -> tuple[dict[str, FileFacts], dict[str, str]]:
        """Every indexed file's facts (and size, set on its entry), and every
        skipped file's reason."""
        skips = dict(found.skips)
        groups: dict[str, list[Entry]] = {}  # one key, several paths: copies of a file
        for entry in found.entries:
            groups.setdefault(keys[entry.path], []).append(entry)
        facts: dict[str, FileFacts] = {}

        def apply(key: str, cached: Cached) -> None:
            for entry in groups[key]:
                entry.size = cached.size
                reason = cached.skip or self.settings.size_skip(entry.size)
                if reason:
                    skips[entry.path] = reason
                else:
                    assert cached.facts is not None
                    facts[entry.path] = cached.facts

        def skip(key: str, reason: str) -> None:
            for entry in groups[key]:
                skips[entry.path] = reason

        missing: list[str] = []
        for key in groups:
            cached = None if self.reparse else self.cache.get(key)
            if cached is None:
                missing.append(key)
            else:
                apply(key, cached)
        # Blobs never seen: their size first, so that an oversized one is never read.
        unsized = sorted({groups[k][0].blob for k in missing if groups[k][0].size < 0})
        sizes = blob_sizes(self.location.cwd, unsized)
        wanted: list[str] = []
        expected = 0  # bytes to read
        for key in missing:
            first = groups[key][0]
            size = first.size if first.size >= 0 else sizes.get(first.blob)
            if size is None:
                skip(key, "missing")
            elif self.settings.size_skip(size):
                skip(key, "oversized")
            else:
                wanted.append(key)
                expected += size
        parsed_keys: list[str] = []

        def to_parse() -> Iterator[extraction.Item]:
            # Read as the parsers ask for more: reading overlaps parsing.
            for key, data in self._read(wanted, groups):
                if data is None:
                    skip(key, "missing")
                    continue
                reason = content_skip(data)
                if reason:
                    verdict = Cached(skip=reason, size=len(data))
                    self.cache.put(key, encode(verdict))
                    apply(key, verdict)
                else:
                    self.fresh[key] = data
                    parsed_keys.append(key)
                    yield key, groups[key][0].path, data

        from gitmem.graph.chunks import decode_chunks

        for key, encoded, chunks in extraction.extract_all(
            to_parse(),
            self.progress,
            expect=(len(wanted), expected),
            store=str(self.cache.root),
        ):
            parsed = decode(encoded)  # already in the cache, put there by its parser
            if parsed is None:  # cannot happen: encoded by the same code just now
                raise IndexDamagedError(f"the facts of {groups[key][0].path} do not decode")
            self.cache.remember(key, parsed)
            apply(key, parsed)
            if chunks is not None:  # chunked by the parser, beside the facts
                path = groups[key][0].path
                decoded = decode_chunks(chunks, path)
                for chunk in decoded:
                    # What the code index asks of each new chunk, computed now,
                    # while this thread waits for the parsers anyway: the code
                    # index is built while this thread resolves, and both hold
                    # the GIL for their Python.
                    chunk.id, chunk.searchable  # noqa: B018 (cached properties)
                self.chunked[key] = _remember_chunks(self.cache, key, decoded)
                del self.fresh[key]  # the bytes are needed no more
        report.parsed = len(parsed_keys)
        return facts, skips

    def _read(
        self, keys: list[str], groups: dict[str, list[Entry]]
    ) -> Iterator[tuple[str, bytes | None]]:
        """The bytes behind ``keys``: from disk for uncommitted files (read
        by the scan), else through one ``git cat-file --batch``."""
        from_git: dict[str, list[str]] = {}  # blob -> keys (one blob, two languages)
        for key in keys:
            first = groups[key][0]
            if first.data is not None:
                yield key, first.data
            else:
                from_git.setdefault(first.blob, []).append(key)
        for blob, data in read_blobs(self.location.cwd, sorted(from_git)):
            for key in from_git[blob]:
                yield key, data

    # -- the tables --------------------------------------------------------------------------
    def _full(
        self, found: Scan, keys: dict[str, str], content: str, mode: str, report: BuildReport
    ) -> None:
        import pyarrow as pa

        facts, skips = self._facts(found, keys, report)
        chunks = self._chunks(found, keys, facts)
        count = shard_count(len(facts))  # the resolver's too: one shard layout per build
        with generations.new_generation(self.root) as directory:
            # The code index is built while this thread resolves: Tantivy
            # indexes on threads of its own, outside the GIL, so the two
            # overlap (on the standard library's cold build, resolving took
            # 3 s of one core while the other idled, then Tantivy 2 s).
            code = Concurrent(
                lambda: self._code_index(directory, chunks, count), "gitmem code index"
            )
            try:
                self.progress("resolving", 0, 1)
                nodes, edges = self._resolve(facts)
                self.progress("resolving", 1, 1)
                if len(nodes) != count:  # cannot happen: both count the files indexed
                    raise AssertionError(f"{len(nodes)} shards resolved, {count} expected")
                indexed = [e for e in found.entries if e.path in facts]
                errors = [facts[e.path].error for e in indexed]
                files = pa.table(
                    {
                        "path": [e.path for e in indexed],
                        "blob": [e.blob for e in indexed],
                        "language": [facts[e.path].language for e in indexed],
                        "size": [e.size for e in indexed],
                        "lines": [facts[e.path].lines for e in indexed],
                        "source": [e.source for e in indexed],
                        "error": errors,
                    },
                    schema=files_schema(),
                )
                skipped = Counter(skips.values())
                report.files = len(indexed)
                report.reused = report.files - report.parsed
                report.errors = sum(1 for error in errors if error)
                report.skipped = dict(sorted(skipped.items()))
                report.seen = report.files + len(skips)
                report.nodes = sum(t.num_rows for t in nodes)
                report.edges = sum(t.num_rows for t in edges)
                tables = {NODES_TABLE: nodes, EDGES_TABLE: edges}
                linked = self._write_tables(directory, files, tables)
            finally:
                code.join()  # its failure raised here, unless this thread's is on its way
            checksums = generations.write_written(directory, table_files(count), linked)
            manifest = GraphManifest(
                version=GRAPH_VERSION,
                generation=directory.name,
                mode=mode,
                commit=found.commit,
                worktree=found.worktree,
                status=found.status,
                object_format=object_format(self.location.common_path),
                extractor=EXTRACTOR_VERSION,
                schema=SCHEMA_VERSION,
                settings=self.settings.fingerprint,
                content=content,
                counts={"files": report.files, "nodes": report.nodes, "edges": report.edges},
                skipped=report.skipped,
                shards=count,
                files=checksums,
            )
            write_manifest(self.root, manifest)
        # The previous generation's removal changed the links' ctime, nothing else.
        integrity.restamp(directory, sorted(linked))
        _WRITTEN[str(self.root)] = (
            directory.name,
            {
                shard_name(t, s): table
                for t, ts in ((NODES_TABLE, nodes), (EDGES_TABLE, edges))
                for s, table in enumerate(ts)
            },
        )
        used = [*keys.values(), *(k + CHUNKS_SUFFIX for k in keys.values())]
        self.cache.sweep(used)
        pairs = {(key, path) for path, key in keys.items()}
        _keep_only(str(self.root), {self.cache.path(k) for k in used}, pairs)
        _remove_orphans(self.location)

    def _resolve(self, facts: dict[str, FileFacts]) -> tuple[list[pa.Table], list[pa.Table]]:
        """Nodes and edges, by shard: in a process that built this graph
        before, only what the changed files can affect is resolved again
        (:meth:`~gitmem.graph.resolve.Resolver.update`), else everything."""
        from gitmem.graph.resolve import Resolver

        key = str(self.root)
        warm = _RESOLVERS.get(key)
        if warm is None or self.reparse:
            resolver = Resolver()
            resolver.resolve(facts)
        else:
            resolver, before = warm
            changed = [p for p, f in facts.items() if before.get(p) is not f]
            changed += [p for p in before if p not in facts]
            resolver.update(facts, changed)
        _RESOLVERS[key] = (resolver, dict(facts))
        return resolver.shards

    def _write_tables(
        self, directory: Path, files: pa.Table, tables: dict[str, list[pa.Table]]
    ) -> dict[str, str]:
        """Write ``files.parquet`` and every shard of ``tables`` into the new
        generation, but link the shards this process wrote into the previous
        generation with the same rows, once that file checks out against the
        previous manifest; returns the checksums of the linked shards
        (carried over)."""
        previous = self.previous
        last = _WRITTEN.get(str(self.root))
        same: dict[str, str] = {}
        if previous is not None and last is not None and last[0] == previous.generation:
            for table, shards in tables.items():
                for s, shard in enumerate(shards):
                    name = shard_name(table, s)
                    before = last[1].get(name)
                    want = previous.files.get(name)
                    if want and before is not None and (before is shard or before.equals(shard)):
                        same[name] = want
        old = self.root / previous.generation if previous is not None else directory
        linked = integrity.intact(old, same) if same and not self.reparse else {}
        jobs = [(files, directory / FILES_FILE)]
        for table, shards in tables.items():
            (directory / table).mkdir()
            for s, shard in enumerate(shards):
                name = shard_name(table, s)
                if name in linked:
                    try:
                        os.link(old / name, directory / name)
                        continue
                    except OSError:  # a file system without hard links
                        del linked[name]
                jobs.append((shard, directory / name))
        write_all(jobs, _write_table)
        return linked

    # -- code search -------------------------------------------------------------------------
    def _chunks(
        self, found: Scan, keys: dict[str, str], facts: dict[str, FileFacts]
    ) -> dict[str, list[Chunk]]:
        """Every indexed file's search chunks, by path: cached per blob like
        its facts (chunks depend on the bytes and the facts only), so a build
        reads the bytes of new blobs alone."""
        from gitmem.graph.chunks import placed_at

        pieces: dict[str, list[Chunk]] = {}
        unread: dict[str, str] = {}  # key -> a path with that blob
        for entry in found.entries:
            key = keys[entry.path]
            if entry.path not in facts or key in pieces or key in unread:
                continue
            cached = self.chunked.get(key)
            if cached is None and not self.reparse:
                cached = _decode_chunks(self.cache, key)
            if cached is not None:
                pieces[key] = cached
            elif key in self.fresh or entry.data is not None:
                data = self.fresh.get(key, entry.data or b"")
                pieces[key] = self._chunk_and_keep(key, entry.path, data, facts[entry.path])
            else:
                unread[key] = entry.path
        if unread:  # blobs parsed by an older build, before chunks were cached
            by_blob = {e.blob: keys[e.path] for e in found.entries if keys[e.path] in unread}
            for blob, content in read_blobs(self.location.cwd, sorted(by_blob)):
                key = by_blob[blob]
                path = unread[key]
                pieces[key] = self._chunk_and_keep(key, path, content or b"", facts[path])
        out: dict[str, list[Chunk]] = {}
        for entry in found.entries:
            if entry.path not in facts:
                continue
            key = keys[entry.path]
            blob_chunks = pieces.get(key, [])
            placed = _PLACED.get((key, entry.path))
            if placed is None or placed[0] is not blob_chunks:
                # The same chunk objects every build while the file is unchanged:
                # the code index then recognises them without hashing their text.
                placed = (blob_chunks, placed_at(blob_chunks, entry.path))
                _PLACED[(key, entry.path)] = placed
            out[entry.path] = placed[1]  # by file: the code index diffs file by file
        return out

    def _chunk_and_keep(self, key: str, path: str, data: bytes, facts: FileFacts) -> list[Chunk]:
        from gitmem.graph.chunks import chunk_file, encode_chunks

        chunks = chunk_file(path, data, facts)
        self.cache.put(key + CHUNKS_SUFFIX, encode_chunks(chunks))
        return _remember_chunks(self.cache, key, chunks)

    def _code_index(self, directory: Path, chunks: dict[str, list[Chunk]], shards: int) -> None:
        """The code search index of this generation, from the previous one."""
        from gitmem.graph.codeindex import CODE_DIR, build_code_index

        reuse = None
        if self.previous is not None and not self.reparse:
            candidate = self.root / self.previous.generation / CODE_DIR
            reuse = candidate if candidate.is_dir() else None
        build_code_index(
            directory / CODE_DIR,
            chunks,
            config=read_config(self.location) if self.config is None else self.config,
            stamp_dir=self.root,
            reuse=reuse,
            embed=self.settings.embed,
            progress=self.progress,
            shards=shards,
        )


def _serialised(progress: Progress) -> Progress:
    """``progress``, called by one thread at a time (the code index reports
    from a thread of its own while the builder's resolves)."""
    import threading

    lock = threading.Lock()

    def report(stage: str, done: int, total: int) -> None:
        with lock:
            progress(stage, done, total)

    return report


# Per process and graph root: the resolver of the last build and the facts it
# resolved (decoded entries are shared through the cache, so an unchanged file
# has the very same facts object).
_RESOLVERS: dict[str, tuple[Any, dict[str, FileFacts]]] = {}

# Per process and graph root: the generation the last build wrote and its
# shards' tables by name (what the next build may link instead of writing).
_WRITTEN: dict[str, tuple[str, dict[str, pa.Table]]] = {}

_CHUNKS: dict[str, list[Chunk]] = {}
# (cache key, path) -> (the blob's chunks, those chunks placed at the path), per process
_PLACED: dict[tuple[str, str], tuple[list[Chunk], list[Chunk]]] = {}


# Per process and graph root: the cache entries (paths) and keys its last build used.
_LIVE: dict[str, tuple[set[str], set[tuple[str, str]]]] = {}


def _keep_only(root: str, paths: set[str], pairs: set[tuple[str, str]]) -> None:
    """Forget the decoded cache entries and placed chunks that no graph
    root's latest build in this process uses: a long-lived process (the
    daemon, the MCP server) builds again after every branch switch, and
    would otherwise keep every version of every file it ever parsed."""
    _LIVE[root] = (paths, pairs)
    if len(_LIVE) == 1:
        live_paths, live_pairs = paths, pairs
    else:
        live_paths = set().union(*(p for p, _ in _LIVE.values()))
        live_pairs = set().union(*(k for _, k in _LIVE.values()))
    FactsCache.keep_only(live_paths)
    for path in [p for p in _CHUNKS if p not in live_paths]:
        del _CHUNKS[path]
    for pair in [pair for pair in _PLACED if pair not in live_pairs]:
        del _PLACED[pair]


def _decode_chunks(cache: FactsCache, key: str) -> list[Chunk] | None:
    """A blob's cached chunks (path left empty: the caller sets it), or None."""
    from gitmem.graph.chunks import decode_chunks

    path = cache.path(key + CHUNKS_SUFFIX)
    known = _CHUNKS.get(path)
    if known is not None and cache.present(path):
        return known
    try:
        with open(path, "rb") as handle:
            chunks = decode_chunks(handle.read())
    except (OSError, ValueError):
        return None
    _CHUNKS[path] = chunks  # content-addressed, like the facts: valid for the process
    return chunks


def _remember_chunks(cache: FactsCache, key: str, chunks: list[Chunk]) -> list[Chunk]:
    """Keep the chunks just put for ``key`` as the process's decoded entry
    (as the facts are): the next build in this process then places the very
    same objects, which the code index recognises without hashing them."""
    _CHUNKS[cache.path(key + CHUNKS_SUFFIX)] = chunks
    return chunks


def _remove_orphans(location: RepoLocation) -> None:
    """Remove the graphs of linked worktrees that no longer exist."""
    base = Path(graph_path(location))
    worktrees = Path(location.common_path) / "worktrees"
    try:
        entries = list(base.iterdir())
    except OSError:
        return
    for entry in entries:
        name = entry.name
        gone = not (worktrees / name[len(WORKTREE_PREFIX) :]).is_dir()
        if name.startswith(WORKTREE_PREFIX) and entry.is_dir() and gone:
            shutil.rmtree(entry, ignore_errors=True)


def build(
    location: RepoLocation,
    config: Config | None = None,
    *,
    rebuild: bool = False,
    worktree: bool = False,
    commit: str | None = None,
    progress: Progress | None = None,
    timeout: float = LOCK_TIMEOUT,
    deep: bool = False,
) -> BuildReport:
    """Bring this worktree's code graph up to date: at ``commit`` (default
    HEAD), with the uncommitted changes when ``worktree``; ``rebuild``:
    from scratch, every file parsed again (the cache's entries replaced);
    ``deep``: check every byte of the current generation against its
    checksums, not only files changed on disk since they were last checked."""
    if worktree and commit is not None:
        raise UsageError(
            "uncommitted changes are changes to HEAD, not to another commit",
            "leave out --worktree or --commit",
        )
    started = time.monotonic()
    config = read_config(location) if config is None else config
    settings = Settings.from_config(config)
    root = graph_root(location)
    # A process's first build of this graph (or a rebuild) makes the state the
    # process then keeps for the next builds: frozen, not walked by the collector.
    first = rebuild or str(root) not in _RESOLVERS
    with (
        building(root, timeout, what="code graph builder lock"),
        extraction.gc_paused(keep=first),
    ):
        report = Builder(location, settings, root, progress, deep=deep, config=config).run(
            rebuild=rebuild, worktree=worktree, commit=commit
        )
    report.seconds = round(time.monotonic() - started, 3)
    return report


def try_build(
    location: RepoLocation,
    config: Config | None = None,
    *,
    wait: float,
    worktree: bool = False,
    commit: str | None = None,
) -> BuildReport | None:
    """Build unless another process is building and ``wait`` runs out:
    then None, and the caller reads the previous version."""
    return unless_busy(
        lambda: build(location, config, worktree=worktree, commit=commit, timeout=wait)
    )
