"""Blobs -> facts and search chunks, in this process or, for a cold build,
in a process per core (tree-sitter parsing is CPU-bound and holds the GIL).

Workers return each blob's cache entries already encoded (msgpack): its
facts, and its search chunks (:func:`gitmem.graph.chunks.chunk_file`, which
needs the bytes and the facts the worker has in hand; chunked in the
builder, they cost it 1.4 s of the standard library's cold build). Each
entry is written to the cache where it was encoded (the writes are spread
over the workers too), and the parent decodes it once. A file
whose extraction raises is still indexed, as a file node with the error; a
worker that dies (a crash inside a grammar) takes down only its batch,
whose files are then parsed one per task to find the culprit.
"""

from __future__ import annotations

import gc
import importlib
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager

from gitmem.graph.cache import CHUNKS_SUFFIX, Cached, FactsCache, encode
from gitmem.graph.facts import FileFacts
from gitmem.sidecar.cpus import usable_cpus

Extract = Callable[[str, bytes], FileFacts]
LanguageFor = Callable[..., "str | None"]
Item = tuple[str, str, bytes]  # (cache key, path, bytes)
Parsed = tuple[str, bytes, "bytes | None"]
"""(cache key, encoded facts entry, encoded chunks entry; None: the builder chunks the file)."""
Progress = Callable[[str, int, int], None]

POOL_MIN_FILES = 64  # fewer files than this are parsed here: starting workers costs more
POOL_MIN_BYTES = 256 * 1024
BATCH_FILES = 32  # files per task …
BATCH_BYTES = 512 * 1024  # … or bytes, whichever comes first
ERROR_CHARS = 300


def _line_count(data: bytes) -> int:
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


_LOADED: tuple[Extract, LanguageFor] | None = None


def load() -> tuple[Extract, LanguageFor]:
    """``(extract, language_for)``: :func:`gitmem.graph.extract.extract` and
    :func:`gitmem.graph.languages.language_for`."""
    global _LOADED
    if _LOADED is None:
        # Imported by name, not at the top: the grammars load in each worker.
        extract = importlib.import_module("gitmem.graph.extract").extract
        language_for = importlib.import_module("gitmem.graph.languages").language_for
        _LOADED = (extract, language_for)
    return _LOADED


def extract_one(path: str, data: bytes) -> tuple[bytes, bytes]:
    """The encoded cache entries of one blob's facts (never raises for the
    blob's sake: a failure becomes the facts' ``error``) and of its search
    chunks (:func:`gitmem.graph.chunks.encode_chunks`)."""
    from gitmem.graph.chunks import chunk_file, encode_chunks

    extract, language_for = load()
    try:
        facts = extract(path, data)
    except Exception as exc:  # a bug or a limit in one parser must not stop the build
        message = f"{type(exc).__name__}: {exc}"[:ERROR_CHARS]
        language = language_for(path, data[:256]) or "text"
        facts = FileFacts(language=language, lines=_line_count(data), error=message)
    return encode(Cached(facts=facts, size=len(data))), encode_chunks(chunk_file(path, data, facts))


def _store(cache: FactsCache | None, parsed: Parsed) -> Parsed:
    """Put a blob's entries in ``cache`` (when there is one)."""
    if cache is not None:
        key, facts, chunks = parsed
        cache.put(key, facts)
        if chunks is not None:
            cache.put(key + CHUNKS_SUFFIX, chunks)
    return parsed


def _cache(store: str | None) -> FactsCache | None:
    return None if store is None else FactsCache(store)


def extract_batch(items: list[Item], store: str | None = None) -> list[Parsed]:
    """``(key, facts entry, chunks entry)`` for each item, put in the cache at
    ``store`` (what a worker runs: the writes are spread over the workers too)."""
    cache = _cache(store)
    with gc_paused():
        return [_store(cache, (key, *extract_one(path, data))) for key, path, data in items]


_FROZEN = False  # whether a paused block of this process froze what it made


@contextmanager
def gc_paused(*, keep: bool = False) -> Iterator[None]:
    """Python's cyclic garbage collector paused for a block that allocates
    many objects and keeps most of them (parsing, a build): its collections
    walk every live object again and again, for no garbage (on the standard
    library's cold build, 1.2 s of the builder's 11 s CPU, 4% of a parser's).
    Cycles made meanwhile are collected after the block (with ``keep``,
    once a later block has unfrozen them).

    ``keep``: the process keeps what the block made (a first build: its
    resolver, facts and chunks stay in the process's memos), so those
    objects are frozen (:func:`gc.freeze`) rather than walked by the first
    collection after the block, which finds nothing to free (0.4 s at the
    end of the standard library's cold build). The next paused block
    unfreezes them into the oldest generation, so whatever the process
    drops of them later is still collected."""
    global _FROZEN
    if not gc.isenabled():
        yield
        return
    if _FROZEN:
        gc.unfreeze()
        _FROZEN = False
    gc.disable()
    try:
        yield
    finally:
        if keep:
            gc.freeze()
            _FROZEN = True
        gc.enable()


def _crashed(path: str, data: bytes) -> bytes:
    facts = FileFacts(language="text", lines=_line_count(data), error="the parser crashed")
    return encode(Cached(facts=facts, size=len(data)))


def _batches(items: Iterable[Item]) -> Iterator[list[Item]]:
    batch: list[Item] = []
    size = 0
    for item in items:
        batch.append(item)
        size += len(item[2])
        if len(batch) >= BATCH_FILES or size >= BATCH_BYTES:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def extract_all(
    items: Iterable[Item],
    progress: Progress | None = None,
    *,
    expect: tuple[int, int] | None = None,
    store: str | None = None,
) -> Iterator[Parsed]:
    """``(key, facts entry, chunks entry)`` for every item, in no particular
    order, each already put in the cache at ``store`` (when given).

    ``items`` may be lazy (blobs read as the workers ask for more, so that
    reading overlaps parsing); ``expect`` then says how many files and bytes
    it will hold at most, which decides between workers and this process."""
    if expect is None:
        items = list(items)
        expect = (len(items), sum(len(i[2]) for i in items))
    total, size = expect
    report = progress or (lambda stage, done, total: None)
    count = usable_cpus()  # worker processes: one per core this process may use
    done = 0
    if count < 2 or total < POOL_MIN_FILES or size < POOL_MIN_BYTES:
        cache = _cache(store)
        parsed: Iterable[Parsed] = (
            _store(cache, (key, *extract_one(path, data))) for key, path, data in items
        )
    else:
        parsed = _pooled(items, count, store)
    for done, one in enumerate(parsed, 1):
        yield one
        report("parsing files", done, total)
    if done < total:  # some of the files expected were not to be parsed after all
        report("parsing files", done, done)


def _pool(count: int) -> ProcessPoolExecutor:
    import multiprocessing

    # forkserver: a fork of this process would copy the threads it runs
    # (the blob reader's, a progress bar's) in whatever state they are in.
    # The server imports this module (and so the parsers) once; each worker
    # forked from it starts with them loaded. (Python 3.11's server ignores
    # the sys.path it is handed: it imports gitmem from the working directory
    # and PYTHONPATH, as an installed gitmem is found anyway.)
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(
        [__name__, "gitmem.graph.extract", "gitmem.graph.languages", "gitmem.graph.chunks"]
    )
    return ProcessPoolExecutor(count, mp_context=context)


def _pooled(items: Iterable[Item], count: int, store: str | None) -> Iterator[Parsed]:
    failed: list[list[Item]] = []
    with _pool(count) as pool:
        running: dict[Future[list[Parsed]], list[Item]] = {}
        batches = _batches(items)
        broken = False
        while True:
            while not broken and len(running) < 3 * count:
                batch = next(batches, None)
                if batch is None:
                    break
                try:
                    running[pool.submit(extract_batch, batch, store)] = batch
                except BrokenProcessPool:
                    failed.append(batch)
                    broken = True
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                batch = running.pop(future)
                try:
                    yield from future.result()
                except BrokenProcessPool:
                    failed.append(batch)
                    broken = True
        if broken:
            failed.extend(batches)
    if failed:
        yield from _isolated([item for batch in failed for item in batch], store)


def _isolated(items: list[Item], store: str | None) -> Iterator[Parsed]:
    """Each file alone, in a worker of its own pool until one crashes it."""
    pool = _pool(1)
    try:
        for key, path, data in items:
            try:
                [parsed] = pool.submit(extract_batch, [(key, path, data)], store).result()
            except BrokenProcessPool:
                pool.shutdown(wait=True)
                pool = _pool(1)
                parsed = _store(_cache(store), (key, _crashed(path, data), None))
            yield parsed
    finally:
        pool.shutdown(wait=True)
